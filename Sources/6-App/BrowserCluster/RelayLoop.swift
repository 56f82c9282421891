import ClusterCore
import Foundation
import HTTPServer
import Sockets
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The relay's event loop: every connection to every owner, on one thread, with one epoll set — the
/// thin shell that carries out ``RelayMachine``'s decisions.
///
/// A request is handed over from any thread (``submit(_:)``: a lock and, only when the loop sleeps,
/// an eventfd write). Each turn the loop gives the machine the requests that arrived and does what it
/// says: open a connection (non-blocking, to an address resolved before the request was submitted:
/// no DNS on this thread), enclose a turn's reads to one owner in one request (``Encloser``), append a
/// request to a connection's bytes (every request a connection got in one turn written with one
/// `send`), complete a request with its answer or a failure, close a connection. Answers are read as
/// they come (``RelayAnswer``), several per `recv`, and each one read whole is told to the machine,
/// which says whose it is. Nothing blocks and no thread waits per request.
///
/// Which connection, when to pipeline, enclose, send again, give up or close: the machine's rules
/// (unit-tested without sockets, ``RelayMachine``). Only bytes are decided here: a pipelined read
/// written behind another bodyless read not yet written marks that one as followed by more, so the
/// owner sends their answers together (`HTTPServer+Coalescing`).
///
/// The thread, its epoll set, the eventfd and the hand-over are an ``EventLoopCore``'s (shared with the
/// HTTP edge's stream loops); each connection is registered under its id (a tag), never a descriptor.
///
/// Thread confinement: `machine`, `pending`, `connections` and every socket belong to the loop's
/// thread; other threads hand jobs over through the core.
final class RelayLoop: @unchecked Sendable {
    // `@unchecked Sendable`: `machine`, `pending`, `connections`, `addresses` and `unwritten` are
    // confined to the loop's thread (see above); the rest is immutable or the core (Sendable).

    /// One request to relay.
    struct Job: Sendable {
        var request: [UInt8]
        var isHead: Bool
        /// Whether it may be pipelined: a `GET` or `HEAD`, which may be sent again.
        var pipelines = false
        /// Whether `request` ends with its head's blank line (no body): it may be enclosed, or marked as
        /// followed by more.
        var bodyless = false
        /// The owner's address, resolved by the caller (never on the loop).
        var address: SocketAddress
        /// The owner's connections' key (its authority), made once per owner by the caller.
        var key: String
        var completion: @Sendable (Result<Relay.Answer, RelayFailure>) -> Void
    }

    /// Makes the head of a pipeline of reads (a `POST` with its `Host`, type, proof and length), given
    /// the owner's key (its authority) and the length of the body that follows.
    typealias Encloser = @Sendable (_ key: String, _ length: Int) -> [UInt8]

    /// A request under way, as the shell keeps it: its bytes and completion (an enclosure has no
    /// completion of its own: its members' are called).
    private struct Pending {
        var request: [UInt8]
        var isHead: Bool
        var bodyless: Bool
        var completion: (@Sendable (Result<Relay.Answer, RelayFailure>) -> Void)?
        var members: [RelayMachine.JobID] = []
    }

    /// One connection's socket and bytes, owned by the loop's thread.
    private final class Connection {
        let id: RelayMachine.ConnectionID
        let socket: Socket
        let pipelined: Bool
        /// Requests not yet written whole, and how much of them was.
        var outgoing: [UInt8] = []
        var sent = 0
        /// Where the last request in `outgoing` ends, when it is a bodyless read not yet written: the
        /// next read put behind it marks it as followed by more.
        var markableEnd: Int?
        let received: ReceiveBuffer

        init(id: RelayMachine.ConnectionID, socket: Socket, pipelined: Bool) {
            self.id = id
            self.socket = socket
            self.pipelined = pipelined
            received = ReceiveBuffer(capacity: pipelined ? 64 * 1024 : ReceiveBuffer.readSize)
        }
    }

    /// The header line that marks a pipelined read as followed by more.
    static let followedByMore = Array("\(HTTPServer.pipelinedHeader): more\r\n".utf8)

    let connectionLimit: Int
    private let core = EventLoopCore<Job>(capacity: 256, refusesAfterStop: true)
    private var machine: RelayMachine
    private var pending: [RelayMachine.JobID: Pending] = [:]
    private var connections: [RelayMachine.ConnectionID: Connection] = [:]
    /// The last address seen for each owner (what a new connection to it connects to).
    private var addresses: [String: SocketAddress] = [:]
    /// Connections given requests since the last write.
    private var unwritten: [Connection] = []
    private let encloser: Encloser?

    init(timing: ClusterTiming, connectionLimit: Int = 4096, name: String = "bd-relay", encloser: Encloser? = nil) {
        self.encloser = encloser
        self.connectionLimit = connectionLimit
        machine = RelayMachine(
            settings: .init(
                connectionLimit: connectionLimit, reuseWithin: min(timing.forwardIdleTimeout, .seconds(20)), deadline: timing.forwardDeadline,
                connectTimeout: timing.forwardConnectTimeout, encloses: encloser != nil))
        let thread = Thread { [self] in
            Thread.current.name = name
            run()
        }
        thread.start()
    }

    /// Hands `job` to the loop; its completion is called once, on the loop's thread (it must not
    /// block), or at once with ``RelayFailure/closed`` once the loop has stopped.
    func submit(_ job: Job) {
        guard core.submit(job) else { return job.completion(.failure(.closed)) }
    }

    /// Stops the loop: requests waiting or under way fail with ``RelayFailure/closed``, every
    /// connection is closed. Safe to call twice.
    func stop() { core.stop() }

    // MARK: The loop's thread

    /// A connection's registration: its id (from 1; a late event of a closed connection finds none).
    private static func tag(_ id: RelayMachine.ConnectionID) -> EventLoopCore<Job>.Tag { .init(UInt64(id) &+ 1) }

    private func run() {
        var batch: [Job] = []
        var nextSweep = ContinuousClock.now + .milliseconds(100)
        while true {
            // Sleeps only when nothing came and no read waits to be sent again.
            let stopped = core.take(into: &batch, whenIdle: { !machine.hasWaitingReads })
            if stopped { break }
            let idle = batch.isEmpty && !machine.hasWaitingReads
            var requests: [RelayMachine.Request] = []
            requests.reserveCapacity(batch.count)
            for job in batch {
                let id = machine.makeJobID()
                pending[id] = Pending(request: job.request, isHead: job.isHead, bodyless: job.bodyless, completion: job.completion)
                if addresses[job.key] != job.address {
                    if addresses.count >= 4096 { addresses.removeAll() }
                    addresses[job.key] = job.address
                }
                requests.append(.init(id: id, key: job.key, pipelines: job.pipelines, bodyless: job.bodyless))
            }
            batch.removeAll(keepingCapacity: true)
            perform(machine.turn(requests, now: .now))
            flushWrites()
            // Deadlines are checked every 100 ms while any connection is open.
            let waitMs: Int32 = idle ? (machine.connectionCount == 0 ? 1000 : 100) : 0
            let count = core.wait(milliseconds: waitMs) { event in
                guard let connection = connections[Int(event.tag.rawValue &- 1)] else { return }
                handle(connection, event)
            }
            // Reads sent again on new connections meanwhile.
            if count > 0 { flushWrites() }
            let now = ContinuousClock.now
            if now >= nextSweep {
                perform(machine.tick(now: now))
                nextSweep = now + .milliseconds(100)
            }
        }
        // Stopped: what waits or is under way fails; every connection closes.
        for job in batch + core.takeLeft() { job.completion(.failure(.closed)) }
        perform(machine.stop())
    }

    /// Carries the machine's actions out, in order. `answer` and `frame`: the answer just read (and its
    /// bytes), for ``RelayMachine/Action/answer(_:)``.
    private func perform(_ actions: [RelayMachine.Action], answer: Relay.Answer? = nil, frame: UnsafeBufferPointer<UInt8>? = nil) {
        for action in actions {
            switch action {
            case .open(let id, let key, let pipelined):
                open(id, key: key, pipelined: pipelined)
            case .enclose(let id, let members, let key):
                let length = members.reduce(0) { $0 + (pending[$1]?.request.count ?? 0) }
                var request = encloser!(key, length)
                request.reserveCapacity(request.count + length)
                for member in members { request.append(contentsOf: pending[member]?.request ?? []) }
                pending[id] = Pending(request: request, isHead: false, bodyless: false, completion: nil, members: members)
            case .send(let id, let connectionID):
                guard let connection = connections[connectionID], let job = pending[id] else { continue }
                append(job, to: connection)
            case .discard(let id):
                pending[id] = nil
            case .answer(let id):
                guard let job = pending.removeValue(forKey: id), let answer else { continue }
                if job.members.isEmpty {
                    job.completion?(.success(answer))
                } else {
                    answerMembers(job.members, frame: frame)
                }
            case .fail(let id, let failure):
                guard let job = pending.removeValue(forKey: id) else { continue }
                job.completion?(.failure(failure))
                for member in job.members { pending.removeValue(forKey: member)?.completion?(.failure(failure)) }
            case .close(let id):
                guard let connection = connections.removeValue(forKey: id) else { continue }
                // Unregistered first, so its number is never used after another socket takes it.
                core.deregister(connection.socket)
                connection.socket.close()
            }
        }
    }

    /// A request's bytes behind what the connection has to write.
    private func append(_ job: Pending, to connection: Connection) {
        if let end = connection.markableEnd, end == connection.outgoing.count, end - 2 >= connection.sent {
            // The read before this one says more follow, so the owner sends their answers together
            // (`HTTPServer+Coalescing`): the header goes before its head's blank line.
            connection.outgoing.insert(contentsOf: Self.followedByMore, at: end - 2)
        }
        connection.outgoing.append(contentsOf: job.request)
        connection.markableEnd = connection.pipelined && job.bodyless && job.members.isEmpty ? connection.outgoing.count : nil
        if connection.outgoing.count == job.request.count { unwritten.append(connection) }
    }

    /// Completes an enclosure's members with the answers enclosed in its answer (`frame`: the whole
    /// answer as received).
    private func answerMembers(_ members: [RelayMachine.JobID], frame: UnsafeBufferPointer<UInt8>?) {
        let jobs = members.map { pending.removeValue(forKey: $0) }
        do {
            guard let frame, let bodyStart = RelayAnswer.bodyStart(in: frame) else { throw RelayFailure.malformed("an enclosure without a body") }
            let answers = try RelayAnswer.enclosed(UnsafeBufferPointer(rebasing: frame[bodyStart...]), heads: jobs.map { $0?.isHead ?? false })
            for (job, answer) in zip(jobs, answers) { job?.completion?(.success(answer)) }
        } catch {
            for job in jobs { job?.completion?(.failure(error as? RelayFailure ?? .malformed("\(error)"))) }
        }
    }

    /// Writes every connection given requests since the last time: one `send` for all the reads a
    /// pipelined connection got in one turn.
    private func flushWrites() {
        guard !unwritten.isEmpty else { return }
        let due = unwritten
        unwritten.removeAll(keepingCapacity: true)
        for connection in due where !machine.isConnecting(connection.id) && connections[connection.id] === connection { write(connection) }
    }

    /// A non-blocking socket connecting to the owner of `key`, watched for reads, writes and hang-ups
    /// (edge-triggered: it is registered once and read and written until the kernel says wait). A
    /// failure is told to the machine at once.
    private func open(_ id: RelayMachine.ConnectionID, key: String, pipelined: Bool) {
        do throws(SocketError) {
            guard let address = addresses[key] else { throw .resolve("no address for \(key)") }
            let socket = try Socket.tcp(family: address.family)
            let connected = try socket.startConnecting(to: address)
            try core.register(socket, as: Self.tag(id), events: [.readable, .writable, .hangUp, .edgeTriggered])
            connections[id] = Connection(id: id, socket: socket, pipelined: pipelined)
            if connected { machine.connected(id) }
        } catch {
            perform(machine.connectFailed(id, reason: error.description))
        }
    }

    private func handle(_ connection: Connection, _ event: EventLoop.Event) {
        if machine.isConnecting(connection.id) {
            guard event.writable || event.hungUp else { return }
            let failure = connection.socket.pendingError()
            if failure != 0 { return perform(machine.connectFailed(connection.id, reason: String(cString: strerror(failure)))) }
            machine.connected(connection.id)
            write(connection)
            return
        }
        if event.readable || event.hungUp {
            read(connection, hungUp: event.hungUp)
        }
        if event.writable, connections[connection.id] === connection, connection.sent < connection.outgoing.count {
            write(connection)
        }
    }

    /// Writes what is left of the requests, until done or the socket is full (its next writable edge
    /// resumes it).
    private func write(_ connection: Connection) {
        while connection.sent < connection.outgoing.count {
            let n = connection.outgoing.withUnsafeBytes { bytes in
                connection.socket.send(UnsafeRawBufferPointer(rebasing: bytes[connection.sent...]))
            }
            if n > 0 {
                connection.sent += n
            } else if n < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return
            } else if n < 0, errno == EINTR {
                continue
            } else {
                return perform(machine.lost(connection.id, receivedNothing: connection.received.isEmpty, now: .now))
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
        while true {
            let (n, full) = connection.received.receive(from: connection.socket)
            var ended = false
            if n == 0 {
                ended = true
            } else if n < 0 {
                if errno == EINTR { continue }
                ended = errno != EAGAIN && errno != EWOULDBLOCK
            }
            guard answer(connection, ended: ended) else { return }
            if n <= 0 || (!full && !hungUp) { break }
        }
        // Bytes nobody asked for: the connection is not used again.
        if machine.head(of: connection.id) == nil, !connection.received.isEmpty { perform(machine.failed(connection.id, .closed)) }
    }

    /// Completes the exchanges whose answers are whole in what was received; false when the
    /// connection is gone (the owner closed it, or its answer was malformed).
    private func answer(_ connection: Connection, ended: Bool) -> Bool {
        var consumed = 0
        defer {
            if consumed > 0, connections[connection.id] === connection { connection.received.consume(consumed) }
        }
        while let id = machine.head(of: connection.id), consumed < connection.received.count {
            guard let job = pending[id] else {
                perform(machine.failed(connection.id, .malformed("an answer for a request not under way")))
                return false
            }
            let reading: RelayAnswer.Reading
            let bytes = UnsafeBufferPointer(rebasing: connection.received.bytes[consumed...])
            do {
                reading = try RelayAnswer.read(bytes, isHead: job.isHead, ended: ended, takingBody: job.members.isEmpty)
            } catch .closed {
                perform(machine.lost(connection.id, receivedNothing: false, now: .now))
                return false
            } catch {
                perform(machine.failed(connection.id, error))
                return false
            }
            guard case .complete(let answer, let keepAlive, let length) = reading else { break }
            consumed += length
            perform(
                machine.answered(connection.id, status: answer.status, keepAlive: keepAlive, now: .now), answer: answer,
                frame: UnsafeBufferPointer(rebasing: bytes[..<length]))
            if !keepAlive {
                // The owner closes after this answer: the machine sent what was behind it elsewhere.
                consumed = 0
                return false
            }
        }
        guard ended else { return true }
        // The owner closed: a connection without exchanges just closes; exchanges under way are lost.
        if machine.head(of: connection.id) == nil {
            perform(machine.failed(connection.id, .closed))
        } else {
            perform(machine.lost(connection.id, receivedNothing: connection.received.count == consumed, now: .now))
        }
        return false
    }
}
