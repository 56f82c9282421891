/// Reads one answer of another instance off the bytes received so far: a pure function of the bytes,
/// tested apart from the sockets (`RelayTests`), so the relay loop only moves bytes.
///
/// Answers are framed by `Content-Length`, or run to the connection's end when they have none; a
/// chunked answer is refused (event streams are relayed by ``Forwarder``'s streaming client).
enum RelayAnswer {
    /// What the bytes received so far say.
    enum Reading: Equatable {
        /// More bytes are needed.
        case incomplete
        /// A whole answer of `length` bytes (what follows is the next answer's, on a pipelined
        /// connection): `keepAlive` when the connection may carry the next request (HTTP/1.1, no
        /// `Connection: close`, the owner did not close it).
        case complete(Relay.Answer, keepAlive: Bool, length: Int)
    }

    /// The head may not grow past this without its blank line.
    static let headLimit = 64 * 1024

    /// Answer headers not passed back: the framing and hop-by-hop ones, and those the local server
    /// sets itself.
    static let droppedHeaders: [[UInt8]] = ["content-length", "transfer-encoding", "connection", "keep-alive", "date", "server"]
        .map { Array($0.utf8) }

    /// - Parameters:
    ///   - bytes: what was received on the connection from this exchange's answer on.
    ///   - isHead: the request was a `HEAD` (no body follows, whatever `Content-Length` says).
    ///   - ended: the owner closed the connection (an answer without a length ends there).
    ///   - takingBody: whether the answer takes a copy of its body (a pipeline's answers are read from
    ///     the bytes themselves: ``enclosed(_:heads:)``).
    /// - Returns: the answer with its headers as sent, less ``droppedHeaders``.
    static func read(_ bytes: [UInt8], isHead: Bool, ended: Bool) throws(Relay.Failure) -> Reading {
        try bytes.withUnsafeBufferPointer { buffer throws(Relay.Failure) -> Reading in
            try read(buffer, isHead: isHead, ended: ended)
        }
    }

    static func read(_ bytes: UnsafeBufferPointer<UInt8>, isHead: Bool, ended: Bool, takingBody: Bool = true) throws(Relay.Failure) -> Reading {
        guard let headEnd = headEnd(in: bytes) else {
            if bytes.count > headLimit { throw .malformed("head over 64 KiB") }
            if ended { throw .closed }
            return .incomplete
        }
        // "HTTP/1.x NNN ...": the version and the status from fixed places.
        guard headEnd >= 12, bytes[0] == 72, bytes[1] == 84, bytes[2] == 84, bytes[3] == 80, bytes[4] == 47, bytes[5] == 49,
            bytes[6] == 46, bytes[8] == 32, (48...57).contains(bytes[9]), (48...57).contains(bytes[10]), (48...57).contains(bytes[11])
        else {
            throw .malformed("status line")
        }
        let status = Int(bytes[9] - 48) * 100 + Int(bytes[10] - 48) * 10 + Int(bytes[11] - 48)
        var keepAlive = bytes[7] == 49  // HTTP/1.1
        var length: Int?
        var headers: [(name: String, value: String)] = []
        var lineStart = 0
        while lineStart < headEnd, let lineEnd = index(of: 13, in: bytes, from: lineStart, before: headEnd + 2) {
            defer { lineStart = lineEnd + 2 }
            guard lineStart > 0, let colon = index(of: 58, in: bytes, from: lineStart, before: lineEnd) else { continue }
            var valueStart = colon + 1
            while valueStart < lineEnd, bytes[valueStart] == 32 || bytes[valueStart] == 9 { valueStart += 1 }
            var valueEnd = lineEnd
            while valueEnd > valueStart, bytes[valueEnd - 1] == 32 || bytes[valueEnd - 1] == 9 { valueEnd -= 1 }
            let name = UnsafeBufferPointer(rebasing: bytes[lineStart..<colon])
            let value = UnsafeBufferPointer(rebasing: bytes[valueStart..<valueEnd])
            if let dropped = droppedHeaders.firstIndex(where: { equalsIgnoringCase(name, $0) }) {
                switch dropped {
                case 0:
                    guard let declared = decimal(value) else { throw .malformed("Content-Length \(String(decoding: value, as: UTF8.self))") }
                    length = declared
                case 1: throw .malformed("a chunked answer (streams are relayed otherwise)")
                case 2: if String(decoding: value, as: UTF8.self).lowercased().contains("close") { keepAlive = false }
                default: break
                }
                continue
            }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        let bodyStart = headEnd + 4
        let bodiless = isHead || status == 204 || status == 304 || (100..<200).contains(status)
        guard let length = bodiless ? 0 : length else {
            // No length: the body runs to the connection's end.
            guard ended else { return .incomplete }
            return .complete(Relay.Answer(status: status, headers: headers, body: Array(bytes[bodyStart...])), keepAlive: false, length: bytes.count)
        }
        guard bytes.count >= bodyStart + length else {
            if ended { throw .closed }
            return .incomplete
        }
        let answer = Relay.Answer(status: status, headers: headers, body: takingBody ? Array(bytes[bodyStart..<(bodyStart + length)]) : [])
        return .complete(answer, keepAlive: keepAlive && !ended, length: bodyStart + length)
    }

    /// Where the body of the answer at the start of `bytes` starts (after its head's blank line).
    static func bodyStart(in bytes: UnsafeBufferPointer<UInt8>) -> Int? { headEnd(in: bytes).map { $0 + 4 } }

    /// The answers enclosed in a pipeline's answer body (``EnclosedPipeline`` on the owner): one per
    /// enclosed read, in order, each framed by its `Content-Length`.
    /// - Parameter heads: for each read, whether it was a `HEAD`.
    /// - Throws: ``Relay/Failure/malformed(_:)`` unless the body holds exactly that many whole answers.
    static func enclosed(_ body: UnsafeBufferPointer<UInt8>, heads: [Bool]) throws(Relay.Failure) -> [Relay.Answer] {
        var answers: [Relay.Answer] = []
        answers.reserveCapacity(heads.count)
        var offset = 0
        for isHead in heads {
            guard case .complete(let answer, _, let length) = try read(UnsafeBufferPointer(rebasing: body[offset...]), isHead: isHead, ended: false)
            else {
                throw .malformed("enclosed answer \(answers.count + 1) of \(heads.count) is cut short")
            }
            answers.append(answer)
            offset += length
        }
        guard offset == body.count else { throw .malformed("a pipeline's answer holds more answers than it enclosed reads") }
        return answers
    }

    /// Where the blank line that ends the head starts.
    private static func headEnd(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        while index + 3 < bytes.count {
            if bytes[index + 3] != 10 {
                index += bytes[index + 3] == 13 ? 1 : 4
                continue
            }
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13 { return index }
            index += 1
        }
        return nil
    }

    private static func index(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int, before end: Int) -> Int? {
        var index = start
        while index < end {
            if bytes[index] == byte { return index }
            index += 1
        }
        return nil
    }

    /// Whether `name` is `lowercase` (ASCII letters compared without case).
    private static func equalsIgnoringCase(_ name: UnsafeBufferPointer<UInt8>, _ lowercase: [UInt8]) -> Bool {
        guard name.count == lowercase.count else { return false }
        for index in 0..<name.count where name[index] | 0x20 != lowercase[index] && name[index] != lowercase[index] { return false }
        return true
    }

    /// A non-negative decimal of at most 18 digits.
    private static func decimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value = 0
        for byte in bytes {
            guard (48...57).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 48)
        }
        return value
    }
}

extension Relay.Answer: Equatable {
    static func == (left: Relay.Answer, right: Relay.Answer) -> Bool {
        left.status == right.status && left.body == right.body
            && left.headers.map { "\($0.name): \($0.value)" } == right.headers.map { "\($0.name): \($0.value)" }
    }
}
