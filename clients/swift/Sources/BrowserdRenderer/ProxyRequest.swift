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

    /// Parses the head at the start of `bytes`; returns it and how many bytes it took.
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> (request: ProxyRequest, headLength: Int) {
        guard let end = headEnd(in: bytes) else {
            throw bytes.count > maximumHeadBytes ? .tooLarge : .incomplete
        }
        guard end <= maximumHeadBytes else { throw .tooLarge }
        let text = String(decoding: bytes[..<(end - 4)], as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { throw .malformed("request line") }
        let (method, target, version) = (requestLine[0], requestLine[1], requestLine[2])
        if method == "CONNECT" {
            let (host, port) = try authority(target, defaultPort: nil)
            return (ProxyRequest(kind: .tunnel, host: host, port: port), end)
        }
        guard let schemeEnd = target.range(of: "://"), target[..<schemeEnd.lowerBound].lowercased() == "http" else {
            throw .malformed("not an absolute http URL")
        }
        let rest = target[schemeEnd.upperBound...]
        let pathStart = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var path = String(rest[pathStart...])
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        let authorityText = String(rest[..<pathStart])
        guard !authorityText.contains("@") else { throw .malformed("credentials in the URL") }
        let (host, port) = try authority(authorityText, defaultPort: 80)
        var head = "\(method) \(path) \(version)\r\n"
        let hopByHop: Set<String> = ["connection", "proxy-connection", "keep-alive", "proxy-authorization", "te", "trailer", "upgrade"]
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed("header line") }
            if hopByHop.contains(line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()) { continue }
            head += line + "\r\n"
        }
        head += "Connection: close\r\n\r\n"
        return (ProxyRequest(kind: .forward(head: Array(head.utf8)), host: host, port: port), end)
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
