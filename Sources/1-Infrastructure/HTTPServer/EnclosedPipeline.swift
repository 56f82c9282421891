/// Reads enclosed in one request's body, and their answers enclosed in its answer's: HTTP/1.1
/// messages back to back, the `application/http` media type (RFC 9112 §10.2: "a pipeline of one or
/// more HTTP request or response messages").
///
/// A route whose responder is ``Responder/enclosing(_:)`` answers such a pipeline: the server reads
/// each enclosed request as if it had come on its own connection, answers it through its own router
/// (the same guard, handlers and errors as any request), and sends every answer back in one answer, in
/// order. Another instance's relay sends a run of forwarded reads this way: one pass through HTTP on
/// the owner for the run instead of one per read (`bench/scale_out.py --hop-only`).
///
/// Only reads are enclosed (`GET`, `HEAD`, without a body): they change nothing, so a pipeline sent
/// again after a broken connection is harmless, and no enclosed request can wait on another's change.
public enum EnclosedPipeline {
    /// The `Content-Type` of a pipeline of requests.
    public static let requestType = "application/http; msgtype=request"
    /// The `Content-Type` of the pipeline of answers.
    public static let responseType = "application/http; msgtype=response"

    /// Who may send a pipeline, and how long it may be.
    public struct Policy: Sendable {
        /// The most requests one pipeline may enclose.
        public var maxRequests: Int
        /// Whether the (outer) request may have its enclosed ones answered; refused with a 403.
        public var admits: @Sendable (HTTPRequest) -> Bool

        public init(maxRequests: Int = 64, admits: @escaping @Sendable (HTTPRequest) -> Bool) {
            self.maxRequests = maxRequests
            self.admits = admits
        }
    }

    /// The requests enclosed in `body`, each with its method, decoded path and query, headers and raw
    /// target, as libmicrohttpd would have given them had it come on its own.
    /// - Throws: a 400 problem that says what is wrong (and where) when `body` is not a pipeline of at
    ///   most `limit` bodiless reads with origin-form targets.
    public static func requests(in body: [UInt8], limit: Int) throws(HTTPError) -> [HTTPRequest] {
        var requests: [HTTPRequest] = []
        var offset = 0
        while offset < body.count {
            guard requests.count < limit else { throw malformed("A pipeline may enclose at most \(limit) requests.") }
            let (request, end) = try request(in: body, from: offset, number: requests.count + 1)
            requests.append(request)
            offset = end
        }
        guard !requests.isEmpty else { throw malformed("The pipeline encloses no request.") }
        return requests
    }

    /// The enclosed request that starts at `start`, and where it ends. One pass over the bytes: a
    /// pipeline's reads are parsed on the owner's server thread, once per forwarded read.
    private static func request(in body: [UInt8], from start: Int, number: Int) throws(HTTPError) -> (HTTPRequest, Int) {
        func fail(_ what: String) -> HTTPError { malformed("Enclosed request \(number): \(what)") }
        return try body.withUnsafeBufferPointer { bytes throws(HTTPError) -> (HTTPRequest, Int) in
            // The request line: METHOD SP target SP HTTP/1.1 CRLF.
            guard let lineEnd = lineEnd(in: bytes, from: start) else { throw fail("its head does not end with an empty line (CRLF).") }
            guard lineEnd > start else { throw fail("no request line.") }
            guard let space = bytes[start..<lineEnd].firstIndex(of: 32), let secondSpace = bytes[(space + 1)..<lineEnd].firstIndex(of: 32),
                bytes[(secondSpace + 1)..<lineEnd].firstIndex(of: 32) == nil,
                equals(bytes, secondSpace + 1, lineEnd, "HTTP/1.1")
            else {
                throw fail("the request line must read `METHOD /target HTTP/1.1`.")
            }
            let method: HTTPMethod
            if equals(bytes, start, space, "GET") {
                method = .get
            } else if equals(bytes, start, space, "HEAD") {
                method = .head
            } else {
                throw fail("only reads (GET, HEAD) may be enclosed.")
            }
            let target = UnsafeBufferPointer(rebasing: bytes[(space + 1)..<secondSpace])
            guard target.first == UInt8(ascii: "/"), !target.contains(where: { $0 <= 32 || $0 == 127 }) else {
                throw fail("the target must be a path (origin form) without spaces or control characters.")
            }
            // Header lines up to the empty one.
            var fields: [(name: String, value: String)] = []
            fields.reserveCapacity(8)
            var cursor = lineEnd + 2
            while true {
                guard let end = Self.lineEnd(in: bytes, from: cursor) else { throw fail("its head does not end with an empty line (CRLF).") }
                defer { cursor = end + 2 }
                if end == cursor { break }
                guard let colon = bytes[cursor..<end].firstIndex(of: UInt8(ascii: ":")), colon > cursor,
                    bytes[cursor..<colon].allSatisfy(isTokenByte)
                else {
                    throw fail("a header line must read `Name: value`.")
                }
                var (valueStart, valueEnd) = (colon + 1, end)
                while valueStart < valueEnd, bytes[valueStart] == 32 || bytes[valueStart] == 9 { valueStart += 1 }
                while valueEnd > valueStart, bytes[valueEnd - 1] == 32 || bytes[valueEnd - 1] == 9 { valueEnd -= 1 }
                guard !bytes[valueStart..<valueEnd].contains(where: { ($0 < 32 && $0 != 9) || $0 == 127 }) else {
                    throw fail("a header value holds a control character.")
                }
                let isLength = equalsIgnoringCase(bytes, cursor, colon, "content-length")
                if equalsIgnoringCase(bytes, cursor, colon, "transfer-encoding") || (isLength && !equals(bytes, valueStart, valueEnd, "0")) {
                    throw fail("an enclosed read carries no body.")
                }
                fields.append(
                    (
                        String(decoding: UnsafeBufferPointer(rebasing: bytes[cursor..<colon]), as: UTF8.self),
                        String(decoding: UnsafeBufferPointer(rebasing: bytes[valueStart..<valueEnd]), as: UTF8.self)
                    ))
            }
            let (path, query) = try decode(target: target, fail: fail)
            var request = HTTPRequest(method: method, path: path, query: query, headers: HTTPHeaders(fields))
            request.rawTarget = String(decoding: target, as: UTF8.self)
            return (request, cursor)
        }
    }

    /// Whether `bytes[start..<end]` is `text` (ASCII).
    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ text: StaticString) -> Bool {
        guard end - start == text.utf8CodeUnitCount else { return false }
        let expected = text.utf8Start
        for offset in 0..<(end - start) where bytes[start + offset] != expected[offset] { return false }
        return true
    }

    /// Whether `bytes[start..<end]` is `lowercase` with ASCII letters compared without case.
    private static func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ lowercase: StaticString) -> Bool {
        guard end - start == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for offset in 0..<(end - start) {
            let byte = bytes[start + offset]
            if byte != expected[offset], (byte | 0x20) != expected[offset] || !(65...90).contains(byte) { return false }
        }
        return true
    }

    /// The target's path and query, decoded as libmicrohttpd decodes them: `%XX` in both (a `%` not
    /// followed by two hex digits stays as it is), `+` as a space in the query only; `a&&b` has three
    /// arguments (the second without name or value), a last empty one is none, and `?a` alone has the
    /// value "" (`EnclosedPipelineTests` compares both ways for each such target).
    static func decode(target: UnsafeBufferPointer<UInt8>, fail: (String) -> HTTPError) throws(HTTPError) -> (path: String, query: [(name: String, value: String)]) {
        let question = target.firstIndex(of: UInt8(ascii: "?"))
        let pathBytes = UnsafeBufferPointer(rebasing: target[0..<(question ?? target.count)])
        let path: String
        if pathBytes.contains(UInt8(ascii: "%")) {
            let decoded = percentDecoded(pathBytes[...], plusIsSpace: false)
            guard !decoded.contains(0) else { throw fail("the path holds a NUL (%00).") }
            path = String(decoding: decoded, as: UTF8.self)
        } else {
            path = String(decoding: pathBytes, as: UTF8.self)
        }
        var query: [(name: String, value: String)] = []
        if let question {
            var arguments = target[(question + 1)...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
            if arguments.last?.isEmpty == true { arguments.removeLast() }
            for argument in arguments {
                let equals = argument.firstIndex(of: UInt8(ascii: "="))
                let name = percentDecoded(argument[argument.startIndex..<(equals ?? argument.endIndex)], plusIsSpace: true)
                let value = equals.map { percentDecoded(argument[($0 + 1)...], plusIsSpace: true) } ?? []
                query.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            }
        }
        return (path, query)
    }

    private static func percentDecoded(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, plusIsSpace: Bool) -> [UInt8] {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                decoded.append(high << 4 | low)
                index += 3
                continue
            }
            decoded.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index += 1
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A header name's characters (RFC 9110 §5.6.2 `tchar`).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"),
            UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// Where the line that starts at `start` ends (its CR), or nil when no CRLF follows.
    private static func lineEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 13 { return bytes[index + 1] == 10 ? index : nil }
            if bytes[index] == 10 { return nil }
            index += 1
        }
        return nil
    }

    private static func malformed(_ detail: String) -> HTTPError {
        HTTPError(400, kind: "malformed-pipeline", title: "Malformed Pipeline", detail: detail)
    }

    /// Appends `response` to a pipeline of answers: its status line, its headers (without framing ones),
    /// those of `serverHeaders` it lacks, its `Content-Length`, and its body unless it answers a `HEAD`.
    /// A stream cannot be enclosed: it is answered with a problem instead.
    static func append(_ response: HTTPResponse, toHead isHead: Bool, serverHeaders: HTTPHeaders, to bytes: inout [UInt8]) {
        var (status, headers, body) = (response.status, response.headers, [UInt8]())
        switch response.body {
        case .bytes(let bytes): body = bytes
        case .shared(let shared): (status, headers, body) = (shared.status, shared.headers, shared.body)
        case .stream:
            let refusal = HTTPError(
                400, kind: "not-enclosable", title: "Not Enclosable",
                detail: "An event stream cannot be enclosed in a pipeline: ask for it on its own."
            ).response(instance: nil)
            return Self.append(refusal, toHead: isHead, serverHeaders: serverHeaders, to: &bytes)
        }
        func append(_ text: String) { bytes.append(contentsOf: text.utf8) }
        append("HTTP/1.1 \(status) \(HTTPServer.reason(status))\r\n")
        for field in headers where !isFraming(field.name) {
            append("\(field.name): \(field.value)\r\n")
        }
        for field in serverHeaders where headers[field.name] == nil {
            append("\(field.name): \(field.value)\r\n")
        }
        append("Content-Length: \(body.count)\r\n\r\n")
        if !isHead { bytes.append(contentsOf: body) }
    }

    private static func isFraming(_ name: String) -> Bool {
        HTTPHeaders.equalsIgnoringCase(name, "Content-Length") || HTTPHeaders.equalsIgnoringCase(name, "Transfer-Encoding")
            || HTTPHeaders.equalsIgnoringCase(name, "Connection")
    }
}
