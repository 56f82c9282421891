import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The hop of a forwarded request, as thin as it can be: the request's bytes written as they are on a
/// pooled keep-alive connection to the owner, its answer read back (`Content-Length` bodies; event
/// streams go through ``Forwarder``'s streaming client). Blocking sockets, each exchange on a thread
/// of the relay's own (never on the cooperative pool), the awaiting task resumed when it is done.
///
/// Why hand-written: async-http-client's request path (URL parsing, its state machines, NIO's
/// pipeline and llhttp) cost ~130 µs of CPU per forwarded `GET` here (`bench/scale_out.py --hop-only`,
/// perf: 37 % of the forwarding instance's CPU in its event loop); this relay does a `send` and one or
/// two `recv`s. `bench/scale_out.py` measures both paths' rates beside the direct one.
final class Relay: Sendable {
    /// An answer as read off the wire.
    struct Answer: Sendable {
        var status: Int
        /// Header fields as sent (name, value).
        var headers: [(name: String, value: String)]
        var body: [UInt8]
    }

    enum Failure: Error, CustomStringConvertible {
        case connect(String)
        case closed
        case timedOut
        case malformed(String)

        var description: String {
            switch self {
            case .connect(let reason): "cannot connect: \(reason)"
            case .closed: "the connection closed"
            case .timedOut: "timed out"
            case .malformed(let what): "malformed answer: \(what)"
            }
        }
    }

    private let timing: ClusterTiming
    private let workers: RelayWorkers
    /// A kept connection older than this is closed rather than used (the owner may have closed it).
    private let reuseWithin: Duration

    init(timing: ClusterTiming, threads: Int = 64) {
        self.timing = timing
        self.workers = RelayWorkers(threads: threads)
        self.reuseWithin = min(timing.forwardIdleTimeout, .seconds(20))
    }

    func shutdown() { workers.stop() }

    /// Sends `request` (a complete HTTP/1.1 request: head and body) to `host:port` and reads the answer,
    /// on the connection the relay thread keeps to that owner. A kept connection the owner closed
    /// meanwhile is retried once on a new one (nothing of the answer was read: the owner had not taken
    /// the request).
    /// - Parameter isHead: a `HEAD` request (its answer has no body, whatever its `Content-Length`).
    func exchange(_ request: [UInt8], isHead: Bool = false, host: String, port: Int) async throws -> Answer {
        let key = "\(host):\(port)"
        let (timing, reuseWithin) = (self.timing, self.reuseWithin)
        return try await workers.run { kept in
            var reused: RelayConnection?
            if let entry = kept.removeValue(forKey: key) {
                if ContinuousClock.now - entry.since < reuseWithin { reused = entry.connection } else { entry.connection.close() }
            }
            while true {
                let connection =
                    try reused
                    ?? RelayConnection(
                        host: host, port: port, connectTimeout: timing.forwardConnectTimeout,
                        readTimeout: timing.forwardDeadline)
                do {
                    let (answer, keepAlive) = try connection.exchange(request, isHead: isHead)
                    if keepAlive { kept[key] = (connection, .now) } else { connection.close() }
                    return answer
                } catch Relay.Failure.closed where reused != nil && !connection.receivedAnything {
                    connection.close()
                    reused = nil
                } catch {
                    connection.close()
                    throw error
                }
            }
        }
    }
}

/// One keep-alive connection to another instance.
///
/// `@unchecked Sendable`: it is used by one exchange at a time — taken from the pool's idle list under
/// its lock, used on one relay thread, then put back — so its buffer is never touched concurrently.
final class RelayConnection: @unchecked Sendable {
    /// The socket, or -1 once closed (a closed number may belong to another thread's socket by then).
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var isOpen = true
    /// Whether the current exchange read any byte of an answer.
    private(set) var receivedAnything = false

    init(host: String, port: Int, connectTimeout: Duration, readTimeout: Duration) throws {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else {
            throw Relay.Failure.connect("cannot resolve \(host)")
        }
        defer { freeaddrinfo(result) }
        fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            isOpen = false
            throw Relay.Failure.connect(String(cString: strerror(errno)))
        }
        if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else {
                let reason = String(cString: strerror(errno))
                close()  // once: the deinit of a throwing init closes nothing more
                throw Relay.Failure.connect(reason)
            }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let milliseconds = Int32(connectTimeout.components.seconds * 1000 + connectTimeout.components.attoseconds / 1_000_000_000_000_000)
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard poll(&poller, 1, max(1, milliseconds)) == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) == 0,
                failure == 0
            else {
                close()  // once: the deinit of a throwing init closes nothing more
                throw Relay.Failure.connect(failure != 0 ? String(cString: strerror(failure)) : "no answer within \(connectTimeout)")
            }
        }
        // Blocking from here on, with a deadline on every read and write.
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags & ~Int32(O_NONBLOCK))
        var tv = timeval(tv_sec: Int(readTimeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    func close() {
        if isOpen {
            isOpen = false
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Writes `request`, reads one answer. - Returns: the answer, and whether the connection may be reused.
    func exchange(_ request: [UInt8], isHead: Bool) throws -> (Relay.Answer, keepAlive: Bool) {
        receivedAnything = false
        buffer.removeAll(keepingCapacity: true)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? Relay.Failure.timedOut : Relay.Failure.closed }
            sent += n
        }
        // The head: up to the blank line.
        var headEnd = -1
        var scanned = 0
        while headEnd < 0 {
            try receive()
            var index = max(0, scanned - 3)
            while index + 3 < buffer.count {
                if buffer[index] == 13, buffer[index + 1] == 10, buffer[index + 2] == 13, buffer[index + 3] == 10 {
                    headEnd = index
                    break
                }
                index += 1
            }
            scanned = buffer.count
            if headEnd < 0, buffer.count > 64 * 1024 { throw Relay.Failure.malformed("head over 64 KiB") }
        }
        let lines = buffer[..<headEnd].split(separator: 10, omittingEmptySubsequences: false).map {
            String(decoding: $0.last == 13 ? $0.dropLast() : $0, as: UTF8.self)
        }
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
            let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else {
            throw Relay.Failure.malformed("status line")
        }
        var headers: [(name: String, value: String)] = []
        var length: Int?
        var keepAlive = statusLine.hasPrefix("HTTP/1.1")
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[..<colon])
            let value = String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
            switch name.lowercased() {
            case "content-length": length = Int(value)
            case "transfer-encoding": throw Relay.Failure.malformed("a chunked answer (streams are relayed otherwise)")
            case "connection": if value.lowercased().contains("close") { keepAlive = false }
            default: break
            }
            headers.append((name, value))
        }
        let bodyStart = headEnd + 4
        let bodiless = isHead || status == 204 || status == 304 || (100..<200).contains(status)
        let bodyLength = bodiless ? 0 : length ?? 0
        if length == nil, !bodiless {
            // No length: the body runs to the connection's end.
            while (try? receive()) != nil {}
            return (Relay.Answer(status: status, headers: headers, body: Array(buffer[bodyStart...])), false)
        }
        while buffer.count < bodyStart + bodyLength { try receive() }
        let answer = Relay.Answer(status: status, headers: headers, body: Array(buffer[bodyStart..<(bodyStart + bodyLength)]))
        // Anything past the answer would be a protocol error of the owner: do not reuse then.
        return (answer, keepAlive && buffer.count == bodyStart + bodyLength)
    }

    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)

    private func receive() throws {
        let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw errno == EAGAIN || errno == EWOULDBLOCK ? Relay.Failure.timedOut : Relay.Failure.closed }
        if n == 0 { throw Relay.Failure.closed }
        buffer.append(contentsOf: scratch[..<n])
        receivedAnything = true
    }
}

/// A fixed set of threads that run blocking jobs (socket exchanges) off the cooperative pool: the
/// next idle thread takes the next job (a slow exchange never holds up the ones behind it), and each
/// thread keeps its own connection to each owner (so no connection pool is shared: a thread's
/// connections are used by that thread alone). The thread count bounds the exchanges in flight.
final class RelayWorkers: Sendable {
    /// What a thread keeps between jobs: a connection per owner, with when it was last used.
    typealias Kept = [String: (connection: RelayConnection, since: ContinuousClock.Instant)]
    typealias Job = @Sendable (inout Kept) -> Void

    private let queue: JobQueue

    init(threads: Int) {
        queue = JobQueue()
        for index in 0..<max(1, threads) {
            let thread = Thread { [queue] in
                var kept: Kept = [:]
                while let job = queue.take() { job(&kept) }
                for entry in kept.values { entry.connection.close() }
            }
            thread.name = "browserd-relay-\(index)"
            thread.start()
        }
    }

    /// Runs `job` on a relay thread (with that thread's kept connections) and returns what it returns.
    func run<T: Sendable>(_ job: @escaping @Sendable (inout Kept) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = queue.put { kept in continuation.resume(with: Result { try job(&kept) }) }
            if !accepted { continuation.resume(throwing: Relay.Failure.closed) }
        }
    }

    func stop() { queue.close() }

    /// Jobs waiting for a thread: a plain (non-priority-inheriting) mutex and a condition variable,
    /// which cost less than `Synchronization.Mutex`'s PI futex when many threads wait.
    ///
    /// `@unchecked Sendable`: every field is read and written only with `mutex` held; the pthread
    /// objects are heap-allocated, never moved, and destroyed in `deinit`.
    final class JobQueue: @unchecked Sendable {
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        private var jobs: [Job] = []
        private var head = 0
        private var closed = false

        init() {
            pthread_mutex_init(mutex, nil)
            pthread_cond_init(condition, nil)
        }

        deinit {
            pthread_cond_destroy(condition)
            pthread_mutex_destroy(mutex)
            condition.deallocate()
            mutex.deallocate()
        }

        /// - Returns: false once closed (the job is not run).
        func put(_ job: @escaping Job) -> Bool {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            guard !closed else { return false }
            jobs.append(job)
            pthread_cond_signal(condition)
            return true
        }

        /// The next job, waiting for one; nil once closed and empty.
        func take() -> Job? {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            while head == jobs.count {
                if closed { return nil }
                pthread_cond_wait(condition, mutex)
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            return job
        }

        func close() {
            pthread_mutex_lock(mutex)
            closed = true
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
    }
}
