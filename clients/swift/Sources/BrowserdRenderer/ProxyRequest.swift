/// One request Chromium sends its proxy (``FencingProxy``), parsed from its head: a tunnel
/// (`CONNECT host:port`: HTTPS, and WebSockets of either scheme) or a plain HTTP request in absolute
/// form (`GET http://host:port/path HTTP/1.1`), which goes on in origin form with `Connection: close`
/// (one request per connection: each request's destination is judged on its own).
public struct ProxyRequest: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case tunnel
        /// The head to send the destination (origin form, hop-by-hop headers dropped).
        case forward(head: [UInt8])
    }

    public var kind: Kind
    /// The destination's host as the request names it (brackets removed from an IPv6 literal).
    public var host: String
    public var port: Int

    /// The most a request's head may hold.
    public static let maximumHeadBytes = 64 * 1024

    public enum ParseError: Error, Equatable {
        /// The head is not complete yet: more bytes are needed.
        case incomplete
        case tooLarge
        case malformed(String)
    }

    /// Where the head ends in `bytes` (the index after its blank line), nil while it is incomplete.
    public static func headEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// Parses the head at the start of `bytes`; returns it and how many bytes it took. Read as bytes
    /// (a page's every request goes through here: a load brings dozens); the header lines go on as
    /// Chromium wrote them, hop-by-hop ones dropped.
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> (request: ProxyRequest, headLength: Int) {
        guard let end = headEnd(in: bytes) else {
            throw bytes.count > maximumHeadBytes ? .tooLarge : .incomplete
        }
        guard end <= maximumHeadBytes else { throw .tooLarge }
        let head = bytes[..<(end - 4)]
        let lineEnd = Self.lineEnd(in: head, from: head.startIndex)
        let requestLine = head[..<lineEnd].split(separator: space, maxSplits: 3, omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2].starts(with: Self.httpVersionPrefix) else { throw .malformed("request line") }
        let (method, target, version) = (requestLine[0], requestLine[1], requestLine[2])
        if method.elementsEqual("CONNECT".utf8) {
            let (host, port) = try authority(String(decoding: target, as: UTF8.self), defaultPort: nil)
            return (ProxyRequest(kind: .tunnel, host: host, port: port), end)
        }
        guard target.count >= Self.httpScheme.count,
            zip(target.prefix(Self.httpScheme.count), Self.httpScheme).allSatisfy({ Self.lowercased($0) == $1 })
        else {
            throw .malformed("not an absolute http URL")
        }
        let rest = target.dropFirst(Self.httpScheme.count)
        let pathStart = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let authorityBytes = rest[..<pathStart]
        guard !authorityBytes.contains(UInt8(ascii: "@")) else { throw .malformed("credentials in the URL") }
        let (host, port) = try authority(String(decoding: authorityBytes, as: UTF8.self), defaultPort: 80)
        var forward: [UInt8] = []
        forward.reserveCapacity(end + 24)
        forward += method
        forward.append(space)
        if pathStart == rest.endIndex || rest[pathStart] == UInt8(ascii: "?") { forward.append(UInt8(ascii: "/")) }
        forward += rest[pathStart...]
        forward.append(space)
        forward += version
        forward += crlf
        var index = lineEnd + 2
        while index < head.endIndex {
            let next = Self.lineEnd(in: head, from: index)
            let line = head[index..<next]
            index = next + 2
            guard !line.isEmpty else { continue }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .malformed("header line") }
            if Self.isHopByHop(line[..<colon]) { continue }
            forward += line
            forward += crlf
        }
        forward += Array("Connection: close\r\n\r\n".utf8)
        return (ProxyRequest(kind: .forward(head: forward), host: host, port: port), end)
    }

    private static let space = UInt8(ascii: " ")
    private static let crlf: [UInt8] = [13, 10]
    private static let httpVersionPrefix = Array("HTTP/1.".utf8)
    private static let httpScheme = Array("http://".utf8)
    /// The hop-by-hop headers a proxy does not pass on (lower case).
    private static let hopByHop = ["connection", "proxy-connection", "keep-alive", "proxy-authorization", "te", "trailer", "upgrade"].map {
        Array($0.utf8)
    }

    /// Where the line starting at `start` ends (its CR), or the head's end.
    private static func lineEnd(in head: ArraySlice<UInt8>, from start: Int) -> Int {
        var index = start
        while index < head.endIndex {
            if head[index] == 13, index + 1 < head.endIndex, head[index + 1] == 10 { return index }
            index += 1
        }
        return head.endIndex
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    /// Whether a header's name (spaces and tabs around it ignored, any case) is hop-by-hop.
    private static func isHopByHop(_ name: ArraySlice<UInt8>) -> Bool {
        let isBlank = { (byte: UInt8) in byte == space || byte == 9 }
        guard let first = name.firstIndex(where: { !isBlank($0) }), let last = name.lastIndex(where: { !isBlank($0) }) else { return false }
        let trimmed = name[first...last]
        return hopByHop.contains { known in known.count == trimmed.count && zip(trimmed, known).allSatisfy { lowercased($0) == $1 } }
    }

    /// `host:port` (`[v6]:port`); the port may be left out only where `defaultPort` is given.
    static func authority(_ text: String, defaultPort: Int?) throws(ParseError) -> (String, Int) {
        var host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .malformed("authority") }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .malformed("authority") }
                portText = after.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = Substring(text)
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "/" }) else { throw .malformed("host") }
        let port: Int? = if let portText { Int(portText) } else { defaultPort }
        guard let port, (1...65535).contains(port) else { throw .malformed("port") }
        return (String(host), port)
    }
}
