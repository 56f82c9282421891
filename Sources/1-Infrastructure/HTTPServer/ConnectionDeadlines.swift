import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The time limits a connection's request must keep, beyond libmicrohttpd's idle timeout (which a
/// client resets with every byte it sends, so one byte every few seconds would hold a request open
/// for ever):
/// - a keep-alive connection waiting for a request: idle timeout plus the head timeout for the
///   whole request line, so a request line dribbled one byte at a time ends too;
/// - the request head, from its request line to its last header: the head timeout;
/// - the body: the head timeout, plus one second for each `minimumBodyRate` bytes received
///   (Apache's `RequestReadTimeout body=…,MinRate=…` rule).
/// A request being handled or answered has no deadline here (handlers and streams bound themselves).
public struct RequestDeadlines: Sendable, Equatable {
    /// Where a connection's current request stands.
    public enum Phase: Int, Sendable {
        /// Connected, or answered and kept alive: no request line yet.
        case idle = 0
        /// The request line arrived; headers are being read.
        case head = 1
        /// The head is complete; the body is being read.
        case body = 2
        /// Read completely: handled, answered, or its socket taken over for a stream.
        case handling = 3
    }

    public var idleTimeout: Duration
    public var headTimeout: Duration
    /// Bytes per second a body must keep up, after the first `headTimeout`.
    public var minimumBodyRate: Int

    public init(idleTimeout: Duration, headTimeout: Duration, minimumBodyRate: Int) {
        self.idleTimeout = idleTimeout
        self.headTimeout = headTimeout
        self.minimumBodyRate = minimumBodyRate
    }

    /// Whether a request in `phase` since `elapsed`, having received `bodyBytes` of its body, is past
    /// its deadline.
    public func isExpired(phase: Phase, elapsed: Duration, bodyBytes: Int) -> Bool {
        switch phase {
        case .idle: return elapsed > idleTimeout + headTimeout
        case .head: return elapsed > headTimeout
        case .body:
            guard minimumBodyRate > 0 else { return elapsed > headTimeout + idleTimeout }
            return elapsed > headTimeout + .seconds(Double(bodyBytes) / Double(minimumBodyRate))
        case .handling: return false
        }
    }
}

/// One libmicrohttpd connection as the deadline thread sees it, kept in the connection's socket
/// context from its start to its close.
///
/// Written by the connection's worker thread, read by the deadline thread: each field is atomic, and
/// `since` is stored before `phase`, so a reader that sees a new phase sees its start (or a later one,
/// which only makes the deadline later).
final class WatchedConnection: Sendable {
    let fd: Int32
    /// The request target of the connection's current request, as sent (set when its request line is
    /// read). `nonisolated(unsafe)`: written and read only by the worker thread that owns the
    /// connection (libmicrohttpd calls every callback of one connection on one thread); the deadline
    /// thread never touches it.
    nonisolated(unsafe) var requestTarget: String?
    /// Whether answers are held in the socket (`HTTPServer+Coalescing`). `nonisolated(unsafe)`: as
    /// ``requestTarget``, the owning worker thread's alone.
    nonisolated(unsafe) var corked = false
    private let phaseValue = Atomic<Int>(RequestDeadlines.Phase.idle.rawValue)
    private let sinceNanoseconds = Atomic<UInt64>(0)
    private let bodyBytesValue = Atomic<Int>(0)
    /// When the current request's body must be complete (CLOCK_MONOTONIC ns; 0: no such deadline).
    /// Set for an upload after its head (``setBodyDeadline(after:)``); every new phase clears it.
    private let bodyDeadline = Atomic<UInt64>(0)

    init(fd: Int32, now: UInt64) {
        self.fd = fd
        sinceNanoseconds.store(now, ordering: .relaxed)
    }

    func enter(_ phase: RequestDeadlines.Phase, now: UInt64 = WatchedConnection.now()) {
        bodyBytesValue.store(0, ordering: .relaxed)
        bodyDeadline.store(0, ordering: .relaxed)
        sinceNanoseconds.store(now, ordering: .releasing)
        phaseValue.store(phase.rawValue, ordering: .releasing)
    }

    func received(_ bytes: Int) { bodyBytesValue.add(bytes, ordering: .relaxed) }

    /// The body being read must be complete within `limit` from now, however steadily it arrives.
    func setBodyDeadline(after limit: Duration, now: UInt64 = WatchedConnection.now()) {
        let (seconds, attoseconds) = limit.components
        let nanoseconds = UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(clamping: attoseconds / 1_000_000_000)
        bodyDeadline.store(now &+ max(1, nanoseconds), ordering: .relaxed)
    }

    var phase: RequestDeadlines.Phase { RequestDeadlines.Phase(rawValue: phaseValue.load(ordering: .acquiring)) ?? .handling }

    func isExpired(_ deadlines: RequestDeadlines, now: UInt64) -> Bool {
        let phase = self.phase
        if phase == .body {
            let deadline = bodyDeadline.load(ordering: .relaxed)
            if deadline != 0 && now > deadline { return true }
        }
        let since = sinceNanoseconds.load(ordering: .acquiring)
        // A phase entered after the sweep read the clock has not started yet for it.
        let elapsed = Duration.nanoseconds(now > since ? Int64(clamping: now - since) : 0)
        return deadlines.isExpired(phase: phase, elapsed: elapsed, bodyBytes: bodyBytesValue.load(ordering: .relaxed))
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

/// Every open libmicrohttpd connection, and the thread that ends those past their deadline.
///
/// A connection is ended with `shutdown(2)` on its socket, under the same lock under which the
/// connection is forgotten when libmicrohttpd closes it: libmicrohttpd calls the connection-closed
/// notification before it closes the descriptor, so the descriptor shut down is never one that was
/// already reused by another connection. libmicrohttpd then sees the hang-up and closes it itself.
final class ConnectionWatch: Sendable {
    private let connections = Mutex<[ObjectIdentifier: WatchedConnection]>([:])
    private let stopped = Atomic<Bool>(false)
    private let ended = Atomic<Int>(0)
    let deadlines: RequestDeadlines

    init(deadlines: RequestDeadlines) {
        self.deadlines = deadlines
    }

    func opened(_ connection: WatchedConnection) {
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
    }

    func closed(_ connection: WatchedConnection) {
        connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// Connections ended for missing a deadline since start.
    var endedCount: Int { ended.load(ordering: .relaxed) }

    /// Ends every connection past its deadline; returns how many.
    @discardableResult
    func sweep(now: UInt64 = WatchedConnection.now()) -> Int {
        connections.withLock { connections in
            var count = 0
            for connection in connections.values where connection.isExpired(deadlines, now: now) {
                _ = shutdown(connection.fd, Int32(SHUT_RDWR))
                // Not again: libmicrohttpd closes it at its next turn.
                connection.enter(.handling, now: now)
                count += 1
            }
            if count > 0 { ended.add(count, ordering: .relaxed) }
            return count
        }
    }

    /// Sweeps every quarter second on a thread of its own until ``stop()``.
    func start(onEnded: @escaping @Sendable (Int) -> Void) {
        let thread = Thread { [self] in
            Thread.current.name = "bd-deadlines"
            while !stopped.load(ordering: .relaxed) {
                usleep(250_000)
                let count = sweep()
                if count > 0 { onEnded(count) }
            }
        }
        thread.start()
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
}
