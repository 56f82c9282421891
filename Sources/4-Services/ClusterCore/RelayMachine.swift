/// Why a relayed request got no answer.
public enum RelayFailure: Error, CustomStringConvertible, Equatable, Sendable {
    /// No connection to the owner could be made (refused, unreachable, no answer to the connect).
    case connect(String)
    /// The relay holds as many connections as it may: the owner was not tried.
    case busy(String)
    case closed
    case timedOut
    case malformed(String)

    public var description: String {
        switch self {
        case .connect(let reason): "cannot connect: \(reason)"
        case .busy(let reason): "busy: \(reason)"
        case .closed: "the connection closed"
        case .timedOut: "timed out"
        case .malformed(let what): "malformed answer: \(what)"
        }
    }

    /// Whether the owner's address may be stale (a connection to it could not be made: it may have come
    /// back elsewhere under the same name), so it is resolved again before the next request to it. A
    /// busy relay, a broken connection or a bad answer say nothing of the address.
    public var addressMayBeStale: Bool {
        if case .connect = self { return true }
        return false
    }
}

/// The relay's decisions as a value state machine (`mutating func event(...) -> [Action]`, as
/// postgres-nio's `ConnectionStateMachine`): which connection a request goes on, when reads are
/// pipelined or enclosed, when one is sent again, when a connection is stalled, kept, or closed, and
/// when a request fails. It holds ids and times, never a socket or a byte: `RelayLoop` (the shell)
/// tells it what happened (a turn's requests, a connection up or broken, an answer read, time
/// passing) and carries its actions out in order (open, enclose, send, fail, close).
///
/// The rules:
/// - Reads (`GET`, `HEAD`: ``Request/pipelines``) share up to ``pipelineConnections`` connections per
///   owner, up to ``pipelineDepth`` in flight on each: an idle one first, else a new one, else the
///   least busy one that is not stalled; past that a read takes a connection of its own. A pipelined
///   connection whose oldest exchange has waited ``stalledAfter`` without an answer takes no more reads:
///   one slow answer (a cold profile's load on the owner) holds up no other tenant's reads.
/// - With enclosing on, the bodyless reads to one owner that arrive in one turn go as one request
///   (``Action/enclose(_:members:key:)``, at most ``maxEnclosed`` each); an owner that refuses one (an
///   answer other than 200) gets its reads one by one, next turn and for ``unenclosedFor``.
/// - Any other request has a connection to itself: a kept one (used within ``Settings/reuseWithin``,
///   else closed) or a new one, while fewer than ``Settings/connectionLimit`` are open (else it fails).
/// - A connection that breaks under its exchanges (``lost(_:receivedNothing:now:)``): a read is sent
///   again, up to ``pipelinedAttempts`` times within its deadline; another request once, when it was
///   the first on a kept connection and nothing of its answer came (the owner closed the connection
///   before taking it); the rest fail with ``RelayFailure/closed``.
/// - Time (``tick(now:)``): a connection still connecting past ``Settings/connectTimeout`` fails its
///   exchanges; an exchange past its deadline (``Settings/deadline`` after it began) fails with
///   ``RelayFailure/timedOut`` and the reads behind it go elsewhere; a kept connection unused for
///   ``Settings/reuseWithin`` closes.
public struct RelayMachine: Sendable {
    public typealias JobID = Int
    public typealias ConnectionID = Int

    public struct Settings: Sendable, Equatable {
        /// The most connections open at once, to all owners together.
        public var connectionLimit: Int
        /// A kept connection unused longer than this is closed rather than used.
        public var reuseWithin: Duration
        /// How long a request may take, from when it began.
        public var deadline: Duration
        /// How long connecting may take.
        public var connectTimeout: Duration
        /// Whether a turn's reads to one owner are enclosed in one request.
        public var encloses: Bool

        public init(connectionLimit: Int, reuseWithin: Duration, deadline: Duration, connectTimeout: Duration, encloses: Bool) {
            self.connectionLimit = connectionLimit
            self.reuseWithin = reuseWithin
            self.deadline = deadline
            self.connectTimeout = connectTimeout
            self.encloses = encloses
        }
    }

    /// One request to relay, as the machine sees it (its bytes and completion stay with the shell).
    public struct Request: Sendable, Equatable {
        public var id: JobID
        /// The owner (its connections' key).
        public var key: String
        /// A `GET` or `HEAD`: it may share a connection and be sent again.
        public var pipelines: Bool
        /// It ends with its head (no body): it may be enclosed.
        public var bodyless: Bool

        public init(id: JobID, key: String, pipelines: Bool, bodyless: Bool) {
            self.id = id
            self.key = key
            self.pipelines = pipelines
            self.bodyless = bodyless
        }
    }

    public enum Action: Sendable, Equatable {
        /// Open a connection to `key` without blocking (then ``connected(_:)`` or ``connectFailed(_:reason:)``).
        case open(ConnectionID, key: String, pipelined: Bool)
        /// Make request `id` of `members` (reads to `key`) enclosed in one: it is sent as a read, and its
        /// answer answers them.
        case enclose(JobID, members: [JobID], key: String)
        /// Append the request's bytes to the connection's (written once the turn's actions are done).
        case send(JobID, on: ConnectionID)
        /// Complete the request with the answer just read (an enclosure: each member with its own answer,
        /// from those it encloses).
        case answer(JobID)
        /// Forget the request without completing it: a refused enclosure (its members go again one by one).
        case discard(JobID)
        /// Complete the request with this failure (an enclosure's: each of its members).
        case fail(JobID, RelayFailure)
        /// Close the connection (its exchanges were failed or moved by the actions before this one).
        case close(ConnectionID)
    }

    /// At most this many pipelined connections per owner.
    public static let pipelineConnections = 4
    /// At most this many reads in flight on one connection.
    public static let pipelineDepth = 16
    /// A read lost with its connection is sent again at most this many times (within its deadline).
    public static let pipelinedAttempts = 3
    /// A pipelined connection whose oldest exchange has waited this long takes no more reads.
    public static let stalledAfter = Duration.milliseconds(5)
    /// At most this many reads in one enclosure.
    public static let maxEnclosed = 16
    /// How long an owner that refused an enclosure gets its reads one by one.
    public static let unenclosedFor = Duration.seconds(60)

    private struct Connection: Sendable {
        let key: String
        let pipelined: Bool
        var connecting = true
        /// Its exchanges, in the order their requests were sent.
        var inFlight: [JobID] = []
        /// When it last moved: its first exchange began, or an answer came.
        var progressed: ContinuousClock.Instant
        /// It carried an exchange before (a kept connection).
        var reused = false
        /// When it was opened or last given back.
        var since: ContinuousClock.Instant
        let connectDeadline: ContinuousClock.Instant
    }

    private struct Job: Sendable {
        let key: String
        let pipelines: Bool
        let bodyless: Bool
        var attempts = 0
        var deadline: ContinuousClock.Instant
        /// An enclosure's reads (empty for any other request).
        var members: [JobID] = []
    }

    public let settings: Settings
    private var connections: [ConnectionID: Connection] = [:]
    /// Kept connections without an exchange, by owner (most recently kept last).
    private var idle: [String: [ConnectionID]] = [:]
    /// The pipelined connections, by owner.
    private var pipelined: [String: [ConnectionID]] = [:]
    /// Every request under way: sent, waiting to be sent again, or a member of an enclosure.
    private var jobs: [JobID: Job] = [:]
    /// Owners that refused an enclosure, and until when.
    private var unenclosed: [String: ContinuousClock.Instant] = [:]
    /// Reads of a refused enclosure, begun again next turn.
    private var again: [JobID] = []
    private var nextConnection: ConnectionID = 1
    private var nextJob: JobID = 1

    public init(settings: Settings) {
        self.settings = settings
    }

    // MARK: What the shell asks

    /// A new request's id (the shell names its requests with these; enclosures take them too).
    public mutating func makeJobID() -> JobID {
        defer { nextJob += 1 }
        return nextJob
    }

    /// The request whose answer comes next on `connection` (nil when none is under way).
    public func head(of connection: ConnectionID) -> JobID? { connections[connection]?.inFlight.first }

    /// How many connections are open.
    public var connectionCount: Int { connections.count }

    /// Whether reads begun again are waiting for the next turn.
    public var hasWaitingReads: Bool { !again.isEmpty }

    /// Whether `connection` is open and still connecting.
    public func isConnecting(_ connection: ConnectionID) -> Bool { connections[connection]?.connecting ?? false }

    // MARK: Events

    /// A turn of the loop: the reads begun again first, then the requests that arrived, placed.
    public mutating func turn(_ requests: [Request], now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        if !again.isEmpty {
            let retried = again
            again.removeAll()
            for id in retried { begin(id, now: now, into: &actions) }
        }
        place(requests, now: now, into: &actions)
        return actions
    }

    /// The connection is up: its requests can be written.
    public mutating func connected(_ connection: ConnectionID) {
        connections[connection]?.connecting = false
    }

    /// Connecting failed: its exchanges fail.
    public mutating func connectFailed(_ connection: ConnectionID, reason: String) -> [Action] {
        var actions: [Action] = []
        close(connection, failing: .connect(reason), into: &actions)
        return actions
    }

    /// The answer to ``head(of:)`` was read whole, with `status`; `keepAlive`: the owner keeps the
    /// connection open after it. An enclosure answered other than 200 was refused: its reads go again
    /// one by one next turn, and the owner's reads for ``unenclosedFor``.
    public mutating func answered(_ connection: ConnectionID, status: Int, keepAlive: Bool, now: ContinuousClock.Instant) -> [Action] {
        guard var state = connections[connection], let id = state.inFlight.first else { return [] }
        state.inFlight.removeFirst()
        state.progressed = now
        connections[connection] = state
        var actions: [Action] = []
        if let job = jobs[id], !job.members.isEmpty, status != 200 {
            jobs[id] = nil
            unenclosed[job.key] = now + Self.unenclosedFor
            again += job.members
            actions.append(.discard(id))
        } else {
            forget(id)
            actions.append(.answer(id))
        }
        if !keepAlive {
            // The owner closes after this answer: what was sent behind it goes again elsewhere.
            lost(connection, receivedNothing: true, now: now, into: &actions)
        } else if state.inFlight.isEmpty {
            keep(connection, now: now)
        }
        return actions
    }

    /// The connection broke under its exchanges (the owner closed it, a write or read failed).
    /// `receivedNothing`: no byte of an answer had come on it since its last complete one.
    public mutating func lost(_ connection: ConnectionID, receivedNothing: Bool, now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        lost(connection, receivedNothing: receivedNothing, now: now, into: &actions)
        return actions
    }

    /// The connection must close with its exchanges failing (an answer that cannot be read, bytes that
    /// nobody asked for).
    public mutating func failed(_ connection: ConnectionID, _ failure: RelayFailure) -> [Action] {
        var actions: [Action] = []
        close(connection, failing: failure, into: &actions)
        return actions
    }

    /// Time passed: connects, deadlines and kept connections are checked.
    public mutating func tick(now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        for id in connections.keys.sorted() {
            guard let state = connections[id] else { continue }
            if let first = state.inFlight.first {
                if state.connecting, now >= state.connectDeadline {
                    close(id, failing: .connect("no answer within \(settings.connectTimeout)"), into: &actions)
                } else if let job = jobs[first], now >= job.deadline {
                    // The first one is late: it fails; reads pipelined behind it go again elsewhere.
                    connections[id]?.inFlight.removeFirst()
                    fail(first, .timedOut, into: &actions)
                    lost(id, receivedNothing: false, now: now, into: &actions)
                }
            } else if now - state.since >= settings.reuseWithin {
                close(id, failing: nil, into: &actions)
            }
        }
        return actions
    }

    /// The loop stops: every request under way fails, every connection closes.
    public mutating func stop() -> [Action] {
        var actions: [Action] = []
        for id in connections.keys.sorted() { close(id, failing: .closed, into: &actions) }
        for id in again { fail(id, .closed, into: &actions) }
        again = []
        return actions
    }

    // MARK: Decisions

    private mutating func place(_ requests: [Request], now: ContinuousClock.Instant, into actions: inout [Action]) {
        for request in requests {
            jobs[request.id] = Job(key: request.key, pipelines: request.pipelines, bodyless: request.bodyless, deadline: now + settings.deadline)
        }
        guard settings.encloses, requests.count > 1 else {
            for request in requests { begin(request.id, now: now, into: &actions) }
            return
        }
        var runs: [String: [JobID]] = [:]
        var order: [String] = []
        for request in requests {
            if request.pipelines, request.bodyless {
                if runs[request.key] == nil { order.append(request.key) }
                runs[request.key, default: []].append(request.id)
            } else {
                begin(request.id, now: now, into: &actions)
            }
        }
        for key in order {
            let run = runs[key]!
            if let until = unenclosed[key] {
                if now < until {
                    for id in run { begin(id, now: now, into: &actions) }
                    continue
                }
                unenclosed[key] = nil
            }
            var start = 0
            while start < run.count {
                let end = min(start + Self.maxEnclosed, run.count)
                if end - start == 1 {
                    begin(run[start], now: now, into: &actions)
                } else {
                    let id = makeJobID()
                    let members = Array(run[start..<end])
                    jobs[id] = Job(key: key, pipelines: true, bodyless: false, deadline: now + settings.deadline, members: members)
                    actions.append(.enclose(id, members: members, key: key))
                    begin(id, now: now, into: &actions)
                }
                start = end
            }
        }
    }

    /// Sends the request on a pipelined connection (a read), a kept one, or a new one.
    private mutating func begin(_ id: JobID, now: ContinuousClock.Instant, into actions: inout [Action]) {
        guard let job = jobs[id] else { return }
        if job.pipelines, let connection = pipelinedConnection(to: job.key, now: now, into: &actions) {
            return start(id, on: connection, now: now, into: &actions)
        }
        while var kept = idle[job.key], let connection = kept.popLast() {
            idle[job.key] = kept.isEmpty ? nil : kept
            guard let state = connections[connection], now - state.since < settings.reuseWithin else {
                close(connection, failing: nil, into: &actions)
                continue
            }
            connections[connection]?.reused = true
            return start(id, on: connection, now: now, into: &actions)
        }
        guard connections.count < settings.connectionLimit else {
            return fail(id, .busy("the relay holds \(settings.connectionLimit) connections already"), into: &actions)
        }
        start(id, on: open(job.key, pipelined: false, now: now, into: &actions), now: now, into: &actions)
    }

    /// The pipelined connection a read to `key` goes on: an idle one, else a new one while there are
    /// fewer than ``pipelineConnections``, else the least busy one under ``pipelineDepth`` that is not
    /// stalled; nil when none will do.
    private mutating func pipelinedConnection(to key: String, now: ContinuousClock.Instant, into actions: inout [Action]) -> ConnectionID? {
        let open = pipelined[key] ?? []
        var least: (id: ConnectionID, load: Int)?
        for id in open {
            guard let state = connections[id], state.inFlight.isEmpty || now - state.progressed < Self.stalledAfter else { continue }
            if least == nil || state.inFlight.count < least!.load { least = (id, state.inFlight.count) }
        }
        if let least, least.load == 0 { return least.id }
        if open.count < Self.pipelineConnections, connections.count < settings.connectionLimit {
            return self.open(key, pipelined: true, now: now, into: &actions)
        }
        if let least, least.load < Self.pipelineDepth { return least.id }
        return nil
    }

    private mutating func open(_ key: String, pipelined isPipelined: Bool, now: ContinuousClock.Instant, into actions: inout [Action]) -> ConnectionID {
        let id = nextConnection
        nextConnection += 1
        connections[id] = Connection(key: key, pipelined: isPipelined, progressed: now, since: now, connectDeadline: now + settings.connectTimeout)
        if isPipelined { pipelined[key, default: []].append(id) }
        actions.append(.open(id, key: key, pipelined: isPipelined))
        return id
    }

    private mutating func start(_ id: JobID, on connection: ConnectionID, now: ContinuousClock.Instant, into actions: inout [Action]) {
        guard var state = connections[connection] else { return }
        if state.inFlight.isEmpty { state.progressed = now }
        state.inFlight.append(id)
        state.since = now
        connections[connection] = state
        actions.append(.send(id, on: connection))
    }

    /// An answered connection with nothing under way: kept for the next request to its owner.
    private mutating func keep(_ connection: ConnectionID, now: ContinuousClock.Instant) {
        guard var state = connections[connection] else { return }
        state.since = now
        state.reused = true
        connections[connection] = state
        if !state.pipelined { idle[state.key, default: []].append(connection) }
    }

    private mutating func lost(_ connection: ConnectionID, receivedNothing: Bool, now: ContinuousClock.Instant, into actions: inout [Action]) {
        guard let state = connections[connection] else { return }
        connections[connection]?.inFlight = []
        close(connection, failing: nil, into: &actions)
        for (index, id) in state.inFlight.enumerated() {
            guard var job = jobs[id] else { continue }
            let again =
                job.pipelines
                ? job.attempts < Self.pipelinedAttempts && now < job.deadline
                : index == 0 && state.reused && receivedNothing && job.attempts == 0
            if again {
                job.attempts += 1
                jobs[id] = job
                begin(id, now: now, into: &actions)
            } else {
                fail(id, .closed, into: &actions)
            }
        }
    }

    /// Closes the connection (out of every list) and fails what is under way on it.
    private mutating func close(_ connection: ConnectionID, failing failure: RelayFailure?, into actions: inout [Action]) {
        guard let state = connections.removeValue(forKey: connection) else { return }
        if var kept = idle[state.key], let index = kept.firstIndex(of: connection) {
            kept.remove(at: index)
            idle[state.key] = kept.isEmpty ? nil : kept
        }
        if state.pipelined, var open = pipelined[state.key], let index = open.firstIndex(of: connection) {
            open.remove(at: index)
            pipelined[state.key] = open.isEmpty ? nil : open
        }
        actions.append(.close(connection))
        for id in state.inFlight { fail(id, failure ?? .closed, into: &actions) }
    }

    private mutating func fail(_ id: JobID, _ failure: RelayFailure, into actions: inout [Action]) {
        forget(id)
        actions.append(.fail(id, failure))
    }

    /// The request is done: it leaves, and so do an enclosure's members (the shell completes them with it).
    private mutating func forget(_ id: JobID) {
        guard let job = jobs.removeValue(forKey: id) else { return }
        for member in job.members { jobs[member] = nil }
    }
}
