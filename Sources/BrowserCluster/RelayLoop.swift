import CLinuxEvents
import ClusterCore
import Foundation
import HTTPServer
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
/// Reads (`GET`, `HEAD`: ``Job/pipelines``) are pipelined (HTTP/1.1, RFC 9112 §9.3.2): they share a
/// few connections per owner (``pipelineConnections``, up to ``pipelineDepth`` in flight on each),
/// every read that arrived in one turn of the loop written with one `send`, their answers read back in
/// order, several per `recv`. A forwarded read then costs the owner and this instance a share of a
/// packet and of a wake-up instead of its own (`bench/scale_out.py --hop-only`). Other requests have a
/// connection to themselves, as a changing request may not be sent twice.
///
/// With an ``Encloser``, the reads to one owner that arrived in one turn go as one request, a pipeline
/// enclosed in its body (``EnclosedPipeline``, at most ``maxEnclosed`` each): the owner answers them
/// all in one pass through HTTP and one answer instead of one each. An owner that refuses pipelines
/// (an older version) gets its reads one by one, and no pipeline for ``unenclosedFor``.
///
/// A kept connection that the owner closed meanwhile is retried once on a new one (nothing of the
/// answer came: the owner had not taken the request; a pipelined read, safe to send again, whatever
/// came); a request past its deadline fails with ``Relay/Failure/timedOut`` and its connection is
/// closed.
///
/// Thread confinement: `connections`, `idle` and every socket call belong to the loop's thread;
/// other threads touch `incoming` (under its mutex) and the eventfd.
final class RelayLoop: @unchecked Sendable {
    // `@unchecked Sendable`: `connections`, `idle`, `pipelines` and `unwritten` are confined to the loop's thread
    // (see above); the rest is immutable or a Mutex.

    /// One request to relay.
    struct Job: Sendable {
        var request: [UInt8]
        var isHead: Bool
        /// Whether it may be pipelined: a `GET` or `HEAD`, which may be sent again.
        var pipelines = false
        /// Whether `request` ends with its head's blank line (no body): a pipelined one may then be
        /// marked as followed by more (``RelayLoop/start(_:on:)``).
        var bodyless = false
        var host: String
        var port: Int
        var completion: @Sendable (Result<Relay.Answer, Relay.Failure>) -> Void
        /// Set by the loop: when it must have its answer.
        var deadline = ContinuousClock.Instant.now
        /// How often it was sent again on a new connection (a changing request once at most, a
        /// pipelined read up to ``RelayLoop/pipelinedAttempts`` times).
        var attempts = 0

        /// The owner's connections' key (`host:port`), made once per owner by the caller.
        var key: String
        /// The reads a pipeline encloses (empty for any other request): their completions are called
        /// with their own answers, `completion` only with a failure of the whole.
        var members: [Job] = []
    }

    /// Makes the head of a pipeline of reads (a `POST` with its `Host`, type, proof and length), given
    /// the owner's key (its authority) and the length of the body that follows.
    typealias Encloser = @Sendable (_ key: String, _ length: Int) -> [UInt8]

    /// One connection to an owner, owned by the loop's thread.
    private final class Connection {
        let fd: Int32
        let key: String
        var connecting: Bool
        /// Whether it carries pipelined reads (never a changing request).
        let pipelined: Bool
        /// The exchanges under way, in the order their requests were written (one unless pipelined).
        var jobs: [Job] = []
        /// Requests not yet written whole, and how much of them was.
        var outgoing: [UInt8] = []
        var sent = 0
        /// Where the last request in `outgoing` ends, when it is a bodyless read not yet written: the
        /// next read put behind it marks it as followed by more.
        var markableEnd: Int?
        let received: ReceiveBuffer
        /// When it last moved: its first exchange began or an answer came. A pipelined connection that
        /// has not moved for ``RelayLoop/stalledAfter`` takes no more reads.
        var progressed = ContinuousClock.now
        /// Whether it carried an exchange before this one (a kept connection).
        var reused = false
        /// When it was last given back (kept) or opened.
        var since = ContinuousClock.now
        /// When connecting gives up.
        var connectDeadline: ContinuousClock.Instant

        init(fd: Int32, key: String, connecting: Bool, pipelined: Bool, connectDeadline: ContinuousClock.Instant) {
            self.fd = fd
            self.key = key
            self.connecting = connecting
            self.pipelined = pipelined
            self.connectDeadline = connectDeadline
            received = ReceiveBuffer(capacity: pipelined ? 64 * 1024 : ReceiveBuffer.readSize)
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
    /// Kept connections without an exchange, by owner (`host:port`), for changing requests.
    private var idle: [String: [Connection]] = [:]
    /// The connections that carry pipelined reads, by owner.
    private var pipelines: [String: [Connection]] = [:]
    /// Connections given requests in this turn of the loop: written once the turn's jobs are placed.
    private var unwritten: [Connection] = []
    private let encloser: Encloser?
    /// Owners that refused a pipeline, and until when their reads go one by one.
    private var unenclosed: [String: ContinuousClock.Instant] = [:]
    /// Reads of a refused pipeline, sent again one by one in the loop's next turn.
    private var again: [Job] = []
    /// At most this many pipelined connections per owner (the owner's worker threads each take some).
    static let pipelineConnections = 4
    /// At most this many reads in flight on one connection (past it, a read takes a connection of its own).
    static let pipelineDepth = 16
    /// The header line that marks a pipelined read as followed by more.
    static let followedByMore = Array("\(HTTPServer.pipelinedHeader): more\r\n".utf8)
    /// A pipelined read lost with its connection is sent again at most this many times (within its deadline).
    static let pipelinedAttempts = 3
    /// A pipelined connection whose first read has waited this long takes no more reads: one slow
    /// answer (a cold profile's load on the owner) must not hold up other tenants' reads behind it.
    static let stalledAfter = Duration.milliseconds(5)
    /// At most this many reads in one pipeline.
    static let maxEnclosed = 16
    /// How long an owner that refused a pipeline gets its reads one by one.
    static let unenclosedFor = Duration.seconds(60)

    init(timing: ClusterTiming, connectionLimit: Int = 4096, name: String = "bd-relay", encloser: Encloser? = nil) {
        self.timing = timing
        self.encloser = encloser
        self.connectionLimit = connectionLimit
        reuseWithin = min(timing.forwardIdleTimeout, .seconds(20))
        var wake: Int32 = -1
        epoll = CLinuxEvents_create_loop(&wake)
        wakeFD = wake
        let thread = Thread { [self] in
            Thread.current.name = name
            run()
        }
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
                if !batch.isEmpty || !again.isEmpty || incoming.stopped { return (incoming.stopped, 0) }
                incoming.sleeping = true
                // Deadlines are checked every 100 ms while any connection is open.
                return (false, connections.isEmpty ? 1000 : 100)
            }
            if stopped { break }
            if !again.isEmpty {
                let retried = again
                again.removeAll()
                for job in retried { begin(job) }
            }
            place(batch)
            batch.removeAll(keepingCapacity: true)
            flushWrites()
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
                // Reads retried on new connections meanwhile.
                flushWrites()
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
        for job in batch + left + again { job.completion(.failure(.closed)) }
        for connection in Array(connections.values) { close(connection, failing: .closed) }
        Glibc.close(wakeFD)
        Glibc.close(epoll)
    }

    /// Starts a turn's jobs: the reads to one owner as pipelines of up to ``maxEnclosed`` when there
    /// are several and the owner takes pipelines, the rest one by one.
    private func place(_ jobs: [Job]) {
        guard encloser != nil, jobs.count > 1 else {
            for job in jobs { begin(job) }
            return
        }
        var runs: [String: [Job]] = [:]
        for job in jobs {
            if job.pipelines, job.bodyless, job.members.isEmpty {
                runs[job.key, default: []].append(job)
            } else {
                begin(job)
            }
        }
        let now = ContinuousClock.now
        for (key, run) in runs {
            if let until = unenclosed[key] {
                if now < until {
                    for job in run { begin(job) }
                    continue
                }
                unenclosed[key] = nil
            }
            var start = 0
            while start < run.count {
                let end = min(start + Self.maxEnclosed, run.count)
                begin(end - start == 1 ? run[start] : enclosing(Array(run[start..<end])))
                start = end
            }
        }
    }

    /// One request that carries `members` (reads to one owner) as a pipeline. It is a read itself:
    /// sent again, like one, when its connection breaks.
    private func enclosing(_ members: [Job]) -> Job {
        let first = members[0]
        let length = members.reduce(0) { $0 + $1.request.count }
        var request = encloser!(first.key, length)
        request.reserveCapacity(request.count + length)
        for member in members { request.append(contentsOf: member.request) }
        var job = Job(
            request: request, isHead: false, pipelines: true, host: first.host, port: first.port,
            completion: { result in
                guard case .failure(let failure) = result else { return }
                for member in members { member.completion(.failure(failure)) }
            }, key: first.key)
        job.members = members
        return job
    }

    /// Starts `job` on a kept connection to its owner, or a new one; a read joins a pipelined one.
    private func begin(_ job: Job) {
        var job = job
        if job.attempts == 0 { job.deadline = .now + timing.forwardDeadline }
        let key = job.key
        if job.pipelines, let connection = pipelinedConnection(to: key, host: job.host, port: job.port) {
            return start(job, on: connection)
        }
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
            let connection = try open(job.host, job.port, key: key, pipelined: false)
            start(job, on: connection)
        } catch {
            job.completion(.failure(error))
        }
    }

    /// The pipelined connection to `key` a read goes on: an unused one, else a new one while there are
    /// fewer than ``pipelineConnections``, else the least busy one under ``pipelineDepth`` that is not
    /// stalled (``stalledAfter``); nil when none will do (the read then takes a connection of its own).
    private func pipelinedConnection(to key: String, host: String, port: Int) -> Connection? {
        let open = pipelines[key] ?? []
        let now = ContinuousClock.now
        var least: Connection?
        for connection in open where connection.jobs.isEmpty || now - connection.progressed < Self.stalledAfter {
            if least == nil || connection.jobs.count < least!.jobs.count { least = connection }
        }
        if let least, least.jobs.isEmpty { return least }
        if open.count < Self.pipelineConnections, connections.count < connectionLimit,
            let connection = try? self.open(host, port, key: key, pipelined: true)
        {
            pipelines[key, default: []].append(connection)
            return connection
        }
        if let least, least.jobs.count < Self.pipelineDepth { return least }
        return nil
    }

    private func start(_ job: Job, on connection: Connection) {
        if connection.jobs.isEmpty {
            connection.received.clear()
            connection.progressed = .now
        }
        connection.jobs.append(job)
        if let end = connection.markableEnd, end == connection.outgoing.count, end - 2 >= connection.sent {
            // The read before this one says more follow, so the owner sends their answers together
            // (`HTTPServer+Coalescing`): the header goes before its head's blank line.
            connection.outgoing.insert(contentsOf: Self.followedByMore, at: end - 2)
        }
        connection.outgoing.append(contentsOf: job.request)
        connection.markableEnd = connection.pipelined && job.bodyless ? connection.outgoing.count : nil
        connection.since = .now
        if connection.outgoing.count == job.request.count { unwritten.append(connection) }
    }

    /// Writes every connection given requests since the last time: one `send` for all the reads a
    /// pipelined connection got in one turn.
    private func flushWrites() {
        guard !unwritten.isEmpty else { return }
        let due = unwritten
        unwritten.removeAll(keepingCapacity: true)
        for connection in due where !connection.connecting && connections[connection.fd] === connection { write(connection) }
    }

    /// A non-blocking socket connecting to `host:port`, watched for reads, writes and hang-ups
    /// (edge-triggered: it is registered once and read and written until the kernel says wait).
    private func open(_ host: String, _ port: Int, key: String, pipelined: Bool) throws(Relay.Failure) -> Connection {
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
        let connection = Connection(
            fd: fd, key: key, connecting: connecting, pipelined: pipelined, connectDeadline: .now + timing.forwardConnectTimeout)
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
            read(connection, hungUp: events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0)
        }
        if events & EPOLLOUT.rawValue != 0, connections[connection.fd] === connection, connection.sent < connection.outgoing.count {
            write(connection)
        }
    }

    /// Writes what is left of the requests, until done or the socket is full (its next writable edge
    /// resumes it).
    private func write(_ connection: Connection) {
        while connection.sent < connection.outgoing.count {
            let n = connection.outgoing.withUnsafeBytes { bytes in
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
        connection.outgoing.removeAll(keepingCapacity: true)
        connection.sent = 0
        connection.markableEnd = nil
    }

    /// Reads what arrived; completes each exchange, in order, once its answer is whole.
    ///
    /// Answers are taken off after every read, so the buffer holds at most one partial answer and a
    /// read's room. The socket is read until a read comes back short (a stream socket then has
    /// nothing more buffered, and its next data raises a new edge) or says wait; after a hang-up it
    /// is read to its end, which raises no further edge.
    private func read(_ connection: Connection, hungUp: Bool) {
        var answered = false
        while true {
            let (n, full) = connection.received.receive(from: connection.fd)
            var ended = false
            if n == 0 {
                ended = true
            } else if n < 0 {
                if errno == EINTR { continue }
                ended = errno != EAGAIN && errno != EWOULDBLOCK
            }
            guard answer(connection, ended: ended, answered: &answered) else { return }
            if n <= 0 || (!full && !hungUp) { break }
        }
        if connection.jobs.isEmpty {
            // Bytes nobody asked for: the connection is not used again.
            if !connection.received.isEmpty { return close(connection, failing: nil) }
            guard answered else { return }
            connection.since = .now
            connection.reused = true
            if !connection.pipelined { idle[connection.key, default: []].append(connection) }
        }
    }

    /// Completes the exchanges whose answers are whole in what was received; false when the
    /// connection is gone (the owner closed it, or its answer was malformed).
    private func answer(_ connection: Connection, ended: Bool, answered: inout Bool) -> Bool {
        var consumed = 0
        defer {
            if consumed > 0, connections[connection.fd] === connection { connection.received.consume(consumed) }
        }
        while let job = connection.jobs.first, consumed < connection.received.count {
            let reading: RelayAnswer.Reading
            let bytes = UnsafeBufferPointer(rebasing: connection.received.bytes[consumed...])
            do {
                reading = try RelayAnswer.read(bytes, isHead: job.isHead, ended: ended, takingBody: job.members.isEmpty)
            } catch .closed {
                lost(connection)
                return false
            } catch {
                close(connection, failing: error)
                return false
            }
            guard case .complete(let answer, let keepAlive, let length) = reading else { break }
            consumed += length
            connection.jobs.removeFirst()
            connection.progressed = .now
            answered = true
            if job.members.isEmpty {
                job.completion(.success(answer))
            } else {
                answerMembers(of: job, status: answer.status, frame: UnsafeBufferPointer(rebasing: bytes[..<length]))
            }
            if !keepAlive {
                // The owner closes after this answer: what was sent behind it is sent again elsewhere.
                connection.received.clear()
                consumed = 0
                lost(connection)
                return false
            }
        }
        guard ended else { return true }
        // The owner closed: a connection without exchanges just closes; exchanges under way are lost.
        if connection.jobs.isEmpty { close(connection, failing: nil) } else { lost(connection) }
        return false
    }

    /// Completes the reads of a pipeline with the answers enclosed in its answer (`frame`: the whole
    /// answer as received). An answer other than 200 says the owner refused the pipeline: its reads
    /// go again one by one (next turn), and so do the owner's reads for ``unenclosedFor``.
    private func answerMembers(of job: Job, status: Int, frame: UnsafeBufferPointer<UInt8>) {
        guard status == 200, let bodyStart = RelayAnswer.bodyStart(in: frame) else {
            unenclosed[job.key] = .now + Self.unenclosedFor
            again.append(contentsOf: job.members)
            return
        }
        do {
            let answers = try RelayAnswer.enclosed(UnsafeBufferPointer(rebasing: frame[bodyStart...]), heads: job.members.map(\.isHead))
            for (member, answer) in zip(job.members, answers) { member.completion(.success(answer)) }
        } catch {
            for member in job.members { member.completion(.failure(error)) }
        }
    }

    /// The connection broke under its exchanges: a pipelined read is sent again on another connection
    /// (up to ``pipelinedAttempts`` times, within its deadline); another request once, when it was on a
    /// kept connection and nothing of its answer came (the owner closed it before taking the request);
    /// the rest fail.
    private func lost(_ connection: Connection) {
        let jobs = connection.jobs
        connection.jobs = []
        close(connection, failing: nil)
        for (index, job) in jobs.enumerated() {
            let again =
                job.pipelines
                ? job.attempts < Self.pipelinedAttempts && ContinuousClock.now < job.deadline
                : index == 0 && connection.reused && connection.received.isEmpty && job.attempts == 0
            if again {
                var job = job
                job.attempts += 1
                begin(job)
            } else {
                job.completion(.failure(.closed))
            }
        }
    }

    /// Closes `connection` (unregistered first, so its number is never used after another socket
    /// takes it) and fails its exchange, if any, with `failure`.
    private func close(_ connection: Connection, failing failure: Relay.Failure?) {
        // This very connection: once closed, its number may already be another connection's.
        guard connections[connection.fd] === connection else { return }
        connections.removeValue(forKey: connection.fd)
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, connection.fd, nil)
        Glibc.close(connection.fd)
        if var kept = idle[connection.key], let index = kept.firstIndex(where: { $0 === connection }) {
            kept.remove(at: index)
            idle[connection.key] = kept.isEmpty ? nil : kept
        }
        if connection.pipelined, var open = pipelines[connection.key], let index = open.firstIndex(where: { $0 === connection }) {
            open.remove(at: index)
            pipelines[connection.key] = open.isEmpty ? nil : open
        }
        let jobs = connection.jobs
        connection.jobs = []
        for job in jobs { job.completion(.failure(failure ?? .closed)) }
    }

    /// Fails what is past its deadline (or still connecting past the connect timeout); closes kept
    /// connections unused too long.
    private func sweep(now: ContinuousClock.Instant) {
        for connection in Array(connections.values) {
            if let job = connection.jobs.first {
                if connection.connecting, now >= connection.connectDeadline {
                    close(connection, failing: .connect("no answer within \(timing.forwardConnectTimeout)"))
                } else if now >= job.deadline {
                    // The first one is late: it fails; reads pipelined behind it go again elsewhere.
                    connection.jobs.removeFirst()
                    job.completion(.failure(.timedOut))
                    lost(connection)
                }
            } else if now - connection.since >= reuseWithin {
                close(connection, failing: nil)
            }
        }
    }
}
