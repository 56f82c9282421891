#if canImport(Glibc)
    public import Glibc
#endif

/// A resolved socket address (IPv4 or IPv6), a value: resolving a name (``resolve(host:port:)``, which
/// blocks on DNS) happens where blocking is allowed, never on an event loop's thread.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    private var storage: sockaddr_storage
    private let length: socklen_t

    /// The address family (`AF_INET`, `AF_INET6`).
    public var family: Int32 { Int32(storage.ss_family) }

    /// The first address `getaddrinfo` gives for `host:port` (TCP). Blocks while the name resolves.
    public static func resolve(host: String, port: Int) throws(SocketError) -> SocketAddress {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let info = result else {
            throw .resolve("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        var storage = sockaddr_storage()
        let length = min(Int(info.pointee.ai_addrlen), MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: length)) }
        return SocketAddress(storage: storage, length: socklen_t(length))
    }

    private init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    /// Calls `body` with the address as `connect` and `bind` take it.
    public func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafeBytes(of: storage) { bytes in body(bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        a.length == b.length
            && withUnsafeBytes(of: a.storage) { x in withUnsafeBytes(of: b.storage) { y in x.prefix(Int(a.length)).elementsEqual(y.prefix(Int(a.length))) } }
    }

    /// `host:port` as numbers (what was resolved).
    public var description: String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withSockaddr { getnameinfo($0, $1, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV) }
        guard status == 0 else { return "?" }
        let name = String(cString: host)
        return family == AF_INET6 ? "[\(name)]:\(String(cString: service))" : "\(name):\(String(cString: service))"
    }
}
