import CLinuxEvents
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The relay's event loop: every connection to every owner, on one thread, with one epoll set.
///
/// A request is handed over from any thread (``submit(_:)``: a lock and, only when the loop sleeps,
/// an eventfd write); the loop takes a kept connection to that owner (or opens one, without blocking),
/// writes the request, reads the answer as it comes (``RelayAnswer``) and calls the request's
/// completion. Nothing blocks and no thread waits per request: under load one `epoll_wait` returns
/// many answers, so a forwarded request costs its bytes and a share of a wake-up, not a thread hop.
///
/// A kept connection that the owner closed meanwhile is retried once on a new one (nothing of the
/// answer came: the owner had not taken the request); a request past its deadline fails with
/// ``Relay/Failure/timedOut`` and its connection is closed.
///
/// Thread confinement: `connections`, `idle` and every socket call belong to the loop's thread;
/// other threads touch `incoming` (under its mutex) and the eventfd.
final class RelayLoop: @unchecked Sendable {
    // `@unchecked Sendable`: `connections`, `idle` and `scratch` are confined to the loop's thread
    // (see above); the rest is immutable or a Mutex.

    /// One request to relay.
    struct Job: Sendable {
        var request: [UInt8]
        var isHead: Bool
        var host: String
        var port: Int
        var completion: @Sendable (Result<Relay.Answer, Relay.Failure>) -> Void
        /// Set by the loop: when it must have its answer.
        var deadline = ContinuousClock.Instant.now
        /// Whether it was already retried on a new connection.
        var retried = false

        var key: String { "\(host):\(port)" }
    }

    /// One connection to an owner, owned by the loop's thread.
    private final class Connection {
        let fd: Int32
        let key: String
        var connecting: Bool
        var job: Job?
        var sent = 0
        var received: [UInt8] = []
        /// Whether it carried an exchange before this one (a kept connection).
        var reused = false
        /// When it was last given back (kept) or opened.
        var since = ContinuousClock.now
        /// When connecting gives up.
        var connectDeadline: ContinuousClock.Instant

        init(fd: Int32, key: String, connecting: Bool, connectDeadline: ContinuousClock.Instant) {
            self.fd = fd
            self.key = key
            self.connecting = connecting
            self.connectDeadline = connectDeadline
        }
    }

    private let timing: ClusterTiming
    /// A kept connection older than this is closed rather than used (the owner may have closed it).
    private let reuseWithin: Duration
    /// The most connections open at once (to all owners together); past it a request fails at once.
    let connectionLimit: Int
    private let epoll: Int32
    private let wakeFD: Int32
    private let incoming = Mutex<(jobs: [Job], sleeping: Bool, stopped: Bool)>(([], false, false))
    private var connections: [Int32: Connection] = [:]
    private var idle: [String: [Connection]] = [:]
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    init(timing: ClusterTiming, connectionLimit: Int = 4096, name: String = "browserd-relay") {
        self.timing = timing
        self.connectionLimit = connectionLimit
        reuseWithin = min(timing.forwardIdleTimeout, .seconds(20))
        var wake: Int32 = -1
        epoll = CLinuxEvents_create_loop(&wake)
        wakeFD = wake
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Hands `job` to the loop; its completion is called once, on the loop's thread (it must not
    /// block), or at once with ``Relay/Failure/closed`` once the loop has stopped.
    func submit(_ job: Job) {
        let (accepted, sleeping) = incoming.withLock { incoming -> (Bool, Bool) in
            guard !incoming.stopped else { return (false, false) }
            incoming.jobs.append(job)
            defer { incoming.sleeping = false }
            return (true, incoming.sleeping)
        }
        guard accepted else { return job.completion(.failure(.closed)) }
        if sleeping { wake() }
    }

    /// Stops the loop: requests waiting or under way fail with ``Relay/Failure/closed``, every
    /// connection is closed. Safe to call twice.
    func stop() {
        let first = incoming.withLock { incoming -> Bool in
            defer { incoming.stopped = true }
            return !incoming.stopped
        }
        if first { wake() }
    }

    private func wake() { CLinuxEvents_wake(wakeFD) }

    // MARK: The loop's thread

    private func run() {
        let capacity = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        var batch: [Job] = []
        var nextSweep = ContinuousClock.now + .milliseconds(100)
        while true {
            let (stopped, waitMs) = incoming.withLock { incoming -> (Bool, Int32) in
                swap(&batch, &incoming.jobs)
                if !batch.isEmpty || incoming.stopped { return (incoming.stopped, 0) }
                incoming.sleeping = true
                // Deadlines are checked every 100 ms while any connection is open.
                return (false, connections.isEmpty ? 1000 : 100)
            }
            if stopped { break }
            for job in batch { begin(job) }
            batch.removeAll(keepingCapacity: true)
            let count = epoll_wait(epoll, events, Int32(capacity), waitMs)
            incoming.withLock { $0.sleeping = false }
            if count > 0 {
                for index in 0..<Int(count) {
                    let event = events[index]
                    if event.data.fd == wakeFD {
                        CLinuxEvents_drain(wakeFD)
                        continue
                    }
                    guard let connection = connections[event.data.fd] else { continue }
                    handle(connection, events: event.events)
                }
            }
            let now = ContinuousClock.now
            if now >= nextSweep {
                sweep(now: now)
                nextSweep = now + .milliseconds(100)
            }
        }
        // Stopped: what waits or is under way fails; every connection closes.
        let left = incoming.withLock { incoming -> [Job] in
            defer { incoming.jobs = [] }
            return incoming.jobs
        }
        for job in batch + left { job.completion(.failure(.closed)) }
        for connection in Array(connections.values) { close(connection, failing: .closed) }
        Glibc.close(wakeFD)
        Glibc.close(epoll)
    }

    /// Starts `job` on a kept connection to its owner, or a new one.
    private func begin(_ job: Job) {
        var job = job
        if !job.retried { job.deadline = .now + timing.forwardDeadline }
        let key = job.key
        while var kept = idle[key], let connection = kept.popLast() {
            idle[key] = kept.isEmpty ? nil : kept
            guard ContinuousClock.now - connection.since < reuseWithin else {
                close(connection, failing: nil)
                continue
            }
            connection.reused = true
            start(job, on: connection)
            return
        }
        guard connections.count < connectionLimit else {
            return job.completion(.failure(.connect("the relay holds \(connectionLimit) connections already")))
        }
        do {
            let connection = try open(job.host, job.port, key: key)
            start(job, on: connection)
        } catch {
            job.completion(.failure(error))
        }
    }

    private func start(_ job: Job, on connection: Connection) {
        connection.job = job
        connection.sent = 0
        connection.received.removeAll(keepingCapacity: true)
        if !connection.connecting { write(connection) }
    }

    /// A non-blocking socket connecting to `host:port`, watched for reads, writes and hang-ups
    /// (edge-triggered: it is registered once and read and written until the kernel says wait).
    private func open(_ host: String, _ port: Int, key: String) throws(Relay.Failure) -> Connection {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else {
            throw .connect("cannot resolve \(host)")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .connect(String(cString: strerror(errno))) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var connecting = false
        if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else {
                let reason = String(cString: strerror(errno))
                Glibc.close(fd)
                throw .connect(reason)
            }
            connecting = true
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue
        event.data.fd = fd
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .connect(reason)
        }
        let connection = Connection(fd: fd, key: key, connecting: connecting, connectDeadline: .now + timing.forwardConnectTimeout)
        connections[fd] = connection
        return connection
    }

    private func handle(_ connection: Connection, events: UInt32) {
        if connection.connecting {
            guard events & (EPOLLOUT.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 else { return }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(connection.fd, SOL_SOCKET, SO_ERROR, &failure, &length) != 0 || failure != 0 {
                return close(connection, failing: .connect(String(cString: strerror(failure != 0 ? failure : errno))))
            }
            connection.connecting = false
            write(connection)
            return
        }
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            read(connection)
        }
        if events & EPOLLOUT.rawValue != 0, connections[connection.fd] != nil, let job = connection.job, connection.sent < job.request.count {
            write(connection)
        }
    }

    /// Writes what is left of the request, until done or the socket is full (its next writable edge
    /// resumes it).
    private func write(_ connection: Connection) {
        guard let job = connection.job else { return }
        while connection.sent < job.request.count {
            let n = job.request.withUnsafeBytes { bytes in
                Glibc.send(connection.fd, bytes.baseAddress! + connection.sent, bytes.count - connection.sent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                connection.sent += n
            } else if n < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return
            } else if n < 0, errno == EINTR {
                continue
            } else {
                return lost(connection)
            }
        }
    }

    /// Reads what arrived; completes the exchange once its answer is whole.
    private func read(_ connection: Connection) {
        var ended = false
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                connection.received.append(contentsOf: scratch[..<n])
            } else if n == 0 {
                ended = true
                break
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                break
            } else if errno == EINTR {
                continue
            } else {
                ended = true
                break
            }
        }
        guard let job = connection.job else {
            // A kept connection the owner closed (or wrote to unasked): it is not used again.
            if ended || !connection.received.isEmpty { close(connection, failing: nil) }
            return
        }
        if connection.received.isEmpty {
            if ended { lost(connection) }
            return
        }
        do {
            switch try RelayAnswer.read(connection.received, isHead: job.isHead, ended: ended) {
            case .incomplete:
                if ended { lost(connection) }
            case .complete(let answer, let keepAlive):
                connection.job = nil
                if keepAlive {
                    connection.since = .now
                    connection.reused = true
                    idle[connection.key, default: []].append(connection)
                } else {
                    close(connection, failing: nil)
                }
                job.completion(.success(answer))
            }
        } catch {
            close(connection, failing: error)
        }
    }

    /// The connection broke under an exchange: retried once on a new connection when it was a kept
    /// one and nothing of the answer came (the owner closed it before taking the request), else failed.
    private func lost(_ connection: Connection) {
        guard var job = connection.job else { return close(connection, failing: nil) }
        if connection.reused, connection.received.isEmpty, !job.retried {
            connection.job = nil
            close(connection, failing: nil)
            job.retried = true
            begin(job)
        } else {
            close(connection, failing: .closed)
        }
    }

    /// Closes `connection` (unregistered first, so its number is never used after another socket
    /// takes it) and fails its exchange, if any, with `failure`.
    private func close(_ connection: Connection, failing failure: Relay.Failure?) {
        guard connections.removeValue(forKey: connection.fd) != nil else { return }
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, connection.fd, nil)
        Glibc.close(connection.fd)
        if var kept = idle[connection.key], let index = kept.firstIndex(where: { $0 === connection }) {
            kept.remove(at: index)
            idle[connection.key] = kept.isEmpty ? nil : kept
        }
        if let job = connection.job {
            connection.job = nil
            job.completion(.failure(failure ?? .closed))
        }
    }

    /// Fails what is past its deadline (or still connecting past the connect timeout); closes kept
    /// connections unused too long.
    private func sweep(now: ContinuousClock.Instant) {
        for connection in Array(connections.values) {
            if let job = connection.job {
                if connection.connecting, now >= connection.connectDeadline {
                    close(connection, failing: .connect("no answer within \(timing.forwardConnectTimeout)"))
                } else if now >= job.deadline {
                    close(connection, failing: .timedOut)
                }
            } else if now - connection.since >= reuseWithin {
                close(connection, failing: nil)
            }
        }
    }
}
