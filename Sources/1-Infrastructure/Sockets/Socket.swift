import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A socket's file descriptor, owned: closed exactly once, by ``close()`` or when the last reference
/// goes. Its descriptor is not handed out: code outside this module reaches it only for the length of
/// a closure (``withDescriptor(_:)``, as NIO's `withUnsafeHandle`), which fails once the socket is
/// closed, so a call made through a closed socket never reaches whatever socket took its number
/// meanwhile (a raw `Int32` shared by two owners can be closed twice).
///
/// The descriptor is atomic: a close from one thread while another still reads it (a client's reader
/// and the test that ends it) closes it once, and the reader then sees -1.
public final class Socket: Sendable {
    private let state: Atomic<Int32>

    /// The descriptor while open, -1 once closed or released (this module's; others use
    /// ``withDescriptor(_:)``).
    var descriptor: Int32 { state.load(ordering: .acquiring) }

    /// Runs `body` with the open descriptor (for a system call this type does not wrap: epoll, `poll`,
    /// `recv` into a caller's buffer). `body` must not close it or keep it.
    /// - Throws: ``SocketError/closed`` when the socket is closed.
    public func withDescriptor<T>(_ body: (Int32) -> T) throws(SocketError) -> T {
        let fd = descriptor
        guard fd >= 0 else { throw .closed }
        return body(fd)
    }

    /// Owns `descriptor` from now on (an accepted connection, one made elsewhere).
    public init(adopting descriptor: Int32) {
        state = Atomic(descriptor)
    }

    deinit { close() }

    public var isOpen: Bool { descriptor >= 0 }

    /// A new close-on-exec TCP socket of `family` with `TCP_NODELAY` set, non-blocking unless `blocking`.
    public static func tcp(family: Int32, blocking: Bool = false) throws(SocketError) -> Socket {
        let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | (blocking ? 0 : Int32(SOCK_NONBLOCK.rawValue))
        let fd = socket(family, flags, 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return Socket(adopting: fd)
    }

    /// Starts connecting to `address` without blocking: true when connected at once, false while in
    /// progress (writable once done; ``pendingError()`` then says how it went).
    public func startConnecting(to address: SocketAddress) throws(SocketError) -> Bool {
        let result = address.withSockaddr { connect(descriptor, $0, $1) }
        if result == 0 { return true }
        guard errno == EINPROGRESS else { throw .system("connect", errno) }
        return false
    }

    /// The socket's pending error (`SO_ERROR`): 0 when a connect in progress succeeded.
    public func pendingError() -> Int32 {
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) != 0 { return errno }
        return failure
    }

    /// `send` with `MSG_NOSIGNAL`: the count written, or -1 with `errno`.
    public func send(_ bytes: UnsafeRawBufferPointer) -> Int {
        Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// `recv` into `buffer`: the count read, 0 at the peer's end, or -1 with `errno`.
    public func receive(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        recv(descriptor, buffer, count, 0)
    }

    /// Gives the descriptor up without closing it (handed to another owner, e.g. libmicrohttpd): the
    /// socket is closed from then on, as far as this object is concerned.
    public func release() -> Int32 {
        state.exchange(-1, ordering: .acquiringAndReleasing)
    }

    /// Closes it (once; later calls do nothing).
    public func close() {
        let fd = state.exchange(-1, ordering: .acquiringAndReleasing)
        if fd >= 0 { _ = Glibc.close(fd) }
    }
}

/// Why a socket call failed: the call's name and `errno`.
public enum SocketError: Error, Equatable, CustomStringConvertible, Sendable {
    case system(String, Int32)
    case resolve(String)
    /// The socket was closed (``Socket/withDescriptor(_:)`` on a closed socket).
    case closed

    public var description: String {
        switch self {
        case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
        case .resolve(let what): what
        case .closed: "the socket is closed"
        }
    }
}
