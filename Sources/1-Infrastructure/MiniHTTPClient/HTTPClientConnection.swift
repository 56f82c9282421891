import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small blocking HTTP/1.1 client over one TCP connection: for health probes and tests.
///
/// It keeps the connection open between requests (keep-alive), decodes `Content-Length` and chunked
/// bodies, and can read a streaming body chunk by chunk. Not for production traffic.
public final class HTTPClientConnection {
    /// A response as read off the wire.
    public struct Response: Sendable {
        public var status: Int
        /// Header fields with names lowercased.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public func header(_ name: String) -> String? {
            let name = name.lowercased()
            return headers.first { $0.name == name }?.value
        }

        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Why a request failed.
    public enum ClientError: Error, CustomStringConvertible {
        case connectFailed(String)
        case closed
        case timedOut
        case malformed(String)

        public var description: String {
            switch self {
            case .connectFailed(let reason): "connect failed: \(reason)"
            case .closed: "connection closed by the server"
            case .timedOut: "timed out"
            case .malformed(let what): "malformed response: \(what)"
            }
        }
    }

    /// The socket, closed exactly once (``Socket``): a closed connection never uses its old descriptor
    /// number again, which by then may belong to another thread's socket (reading it would steal that
    /// socket's data; writing it would corrupt that socket's stream).
    private let socket: Socket
    /// The descriptor for this connection's own calls (its one thread): -1 once closed, so a call
    /// fails with `EBADF` instead of reaching another socket.
    private var fd: Int32 { (try? socket.withDescriptor { $0 }) ?? -1 }

    /// Runs `body` with the socket's descriptor (for tests that poke it directly); nil once closed.
    public func withDescriptor<T>(_ body: (Int32) -> T) -> T? { try? socket.withDescriptor(body) }
    private var buffer: [UInt8] = []
    private var isChunkedStream = false
    public var isOpen: Bool { socket.isOpen }

    /// Connects to `host:port` (an IPv4 or IPv6 literal).
    /// - Parameters:
    ///   - timeout: for connect and for every later read.
    ///   - receiveBufferSize: a small kernel receive buffer (`SO_RCVBUF`), to play a slow client.
    ///   - sourceAddress: an IPv4 address to connect from (e.g. `127.0.0.2`, to play another client on loopback).
    public init(
        host: String, port: Int, timeout: Duration = .seconds(10), receiveBufferSize: Int? = nil,
        sourceAddress: String? = nil
    ) throws {
        let isIPv6 = host.contains(":")
        do {
            socket = try Socket.tcp(family: isIPv6 ? AF_INET6 : AF_INET, blocking: true)
        } catch {
            throw ClientError.connectFailed(error.description)
        }
        var tv = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if let receiveBufferSize {
            var size = Int32(receiveBufferSize)
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let sourceAddress {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, sourceAddress, &local.sin_addr) == 1 else {
                throw ClientError.connectFailed("bad source address \(sourceAddress)")
            }
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let reason = String(cString: strerror(errno))
                throw ClientError.connectFailed("cannot bind \(sourceAddress): \(reason)")
            }
        }
        var storage = sockaddr_storage()
        let length: socklen_t
        if isIPv6 {
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            let ok = withUnsafeMutableBytes(of: &storage) { raw -> Bool in
                let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                a.pointee.sin6_family = sa_family_t(AF_INET6)
                a.pointee.sin6_port = UInt16(port).bigEndian
                return inet_pton(AF_INET6, host, &a.pointee.sin6_addr) == 1
            }
            guard ok else {
                throw ClientError.connectFailed("bad address \(host)")
            }
        } else {
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutableBytes(of: &storage) { raw -> Bool in
                let a = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                a.pointee.sin_family = sa_family_t(AF_INET)
                a.pointee.sin_port = UInt16(port).bigEndian
                return inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &a.pointee.sin_addr) == 1
            }
            guard ok else {
                throw ClientError.connectFailed("bad address \(host)")
            }
        }
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            throw ClientError.connectFailed(reason)
        }
    }

    /// Closes the connection; later sends and reads throw ``ClientError/closed``.
    public func close() { socket.close() }

    /// Sends a request and reads the whole response.
    public func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) throws -> Response {
        try send(method, path, headers: headers, body: body)
        return try readResponse(method: method)
    }

    /// Sends a request without reading the answer.
    public func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try sendRaw(Array(head.utf8) + (body ?? []))
    }

    /// Sends bytes as they are (for malformed-request tests).
    public func sendRaw(_ bytes: [UInt8]) throws {
        guard isOpen else { throw ClientError.closed }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw ClientError.closed }
            sent += n
        }
    }

    /// Reads one response. For a chunked body of a streaming response, pass `headOnly` and then
    /// call ``readChunk()``.
    public func readResponse(method: String = "GET", headOnly: Bool = false) throws -> Response {
        let headEnd = try readUntil([13, 10, 13, 10])
        let headBytes = Array(buffer[..<headEnd])
        buffer.removeFirst(headEnd + 4)
        let lines = String(decoding: headBytes, as: UTF8.self).components(separatedByCRLF: ())
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
            let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else {
            throw ClientError.malformed("status line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            headers.append((name, value))
        }
        var response = Response(status: status, headers: headers, body: [])
        let chunked = response.header("transfer-encoding")?.lowercased().contains("chunked") ?? false
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) { return response }
        if chunked {
            isChunkedStream = true
            if headOnly { return response }
            while let chunk = try readChunk() { response.body += chunk }
        } else if let length = response.header("content-length").flatMap({ Int($0) }) {
            try fill(length)
            response.body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else {
            // Read to end of stream.
            while try receive() > 0 {}
            response.body = buffer
            buffer = []
        }
        if response.header("connection")?.lowercased() == "close" { close() }
        return response
    }

    /// The next chunk of a chunked body, or nil at its end.
    public func readChunk() throws -> [UInt8]? {
        let lineEnd = try readUntil([13, 10])
        let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
        guard let size = Int(sizeText.trimmingSpaces(), radix: 16) else { throw ClientError.malformed("chunk size") }
        buffer.removeFirst(lineEnd + 2)
        if size == 0 {
            _ = try readUntil([13, 10])
            buffer.removeFirst(2)
            return nil
        }
        try fill(size + 2)
        let chunk = Array(buffer[..<size])
        buffer.removeFirst(size + 2)
        return chunk
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                var i = searchFrom
                while i + marker.count <= buffer.count {
                    if buffer[i] == marker[0] && Array(buffer[i..<(i + marker.count)]) == marker { return i }
                    i += 1
                }
                searchFrom = max(0, buffer.count - marker.count + 1)
            }
            if try receive() == 0 { throw ClientError.closed }
        }
    }

    private func fill(_ count: Int) throws {
        while buffer.count < count {
            if try receive() == 0 { throw ClientError.closed }
        }
    }

    @discardableResult
    private func receive() throws -> Int {
        guard isOpen else { return 0 }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { throw ClientError.timedOut }
            throw ClientError.closed
        }
        buffer.append(contentsOf: chunk[..<n])
        return n
    }
}

extension String {
    fileprivate func components(separatedByCRLF: ()) -> [String] {
        var result: [String] = []
        var current = ""
        for scalar in self.unicodeScalars {
            if scalar == "\n" {
                result.append(current)
                current = ""
            } else if scalar == "\r" {
                continue
            } else {
                current.unicodeScalars.append(scalar)
            }
        }
        result.append(current)
        return result
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        String(self.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
