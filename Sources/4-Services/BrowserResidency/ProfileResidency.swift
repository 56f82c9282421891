public import BrowserAccess
public import BrowserModel
public import BrowserRecords
public import BrowserServices
public import Logging
public import Metrics
import Synchronization

/// How a store brings a regular profile into this instance's memory and lets it go: all that differs
/// between the embedded store (nothing to take: read it) and a cluster (take its lease, then read it).
public protocol ResidencyBackend: Sendable {
    /// Puts the stored regular profile `id` into the service, taking what the store asks first (a
    /// lease; `unreachable`: the instance that held it stopped answering, so its lease may be taken).
    /// - Returns: false when there was nothing to load (nothing stores it, or it is here).
    /// - Throws: when it could not be read (nothing of it is held then), or it lives elsewhere.
    func acquire(_ id: ProfileID, replacing unreachable: InstanceID?) async throws -> Bool

    /// Whether something the model does not see keeps `id` in memory (a WebDriver session).
    func keeps(_ id: ProfileID) -> Bool

    /// Before `id` leaves memory (idle): what it queued must be on disk. - Throws: when it is not; the
    /// profile then stays, and its next idle sweep tries again (issue 53: a failed final flush never
    /// drops what was acknowledged).
    func flushBeforeRelease(_ id: ProfileID) async throws

    /// `id` has left memory: what it queued must reach the store before anyone loads it again (and
    /// a lease is given back, so another instance may take it at once).
    func released(_ id: ProfileID) async

    /// Around each idle sweep that drops something (the allocator's settings, the readers' caches).
    func evictionsBegin()
    func evictionsEnd()
}

extension ResidencyBackend {
    public func keeps(_ id: ProfileID) -> Bool { false }
    public func flushBeforeRelease(_ id: ProfileID) async throws {}
    public func evictionsBegin() {}
    public func evictionsEnd() {}
}

/// Which regular profiles are in this instance's memory, whatever the store: the one owner of
/// "is this profile here". The embedded store and a cluster instance differ only in their
/// ``ResidencyBackend``.
///
/// Its rules:
/// - **Single flight.** Concurrent first touches of a profile share one ``bringIn(_:)``; a failed
///   one leaves nothing held and the next touch tries again.
/// - **Served only whole.** A profile still loading, or being dropped, is not served at once
///   (``touch(_:)`` is false): the request waits for ``bringIn(_:)``. A load publishes its windows
///   before the profile itself, so a request that found one of them meanwhile would answer 404.
/// - **Idle eviction.** A profile untouched for `idle` that nothing keeps (an open stream, an
///   incognito profile, which exists only in memory, or what the backend keeps) is dropped; loads
///   and drops of one profile never overlap, and a drop ends with the backend's ``ResidencyBackend/released(_:)``.
public final class ProfileResidency: Sendable {
    struct State {
        /// What each profile is doing: the decisions (``ResidencyMachine``).
        var machine = ResidencyMachine()
        /// Loads under way, shared by every request that waits for the profile.
        var loading: [ProfileID: Task<Bool, any Error>] = [:]
        /// Drops under way (true: it left memory); loading one waits for this first.
        var dropping: [ProfileID: Task<Bool, Never>] = [:]
    }

    public let service: BrowserService
    /// How long an untouched profile stays; nil: for ever.
    public let idle: Duration?
    let backend: any ResidencyBackend
    let logger: Logger
    private let state = Mutex(State())
    private let loads: Counter
    private let evictions: Counter
    private let loadTime: Timer
    private let loaded: Gauge

    public init(service: BrowserService, backend: any ResidencyBackend, idle: Duration?, factory: any MetricsFactory, logger: Logger) {
        self.service = service
        self.backend = backend
        self.idle = idle
        self.logger = logger
        loads = Counter(label: "browserd_profile_loads_total", factory: factory)
        evictions = Counter(label: "browserd_profile_evictions_total", factory: factory)
        loadTime = Timer(label: "browserd_profile_load_seconds", preferredDisplayUnit: .seconds, factory: factory)
        loaded = Gauge(label: "browserd_profiles_loaded", factory: factory)
        loaded.record(Double(service.heldProfiles.count))
    }

    // MARK: Finding

    /// The regular profile in memory that holds `subject` (nil: none here). An off-the-record
    /// profile, or what it holds, answers with its regular profile.
    public func root(of subject: RequestSubject) -> ProfileID? {
        switch subject {
        case .profile(let id): service.rootProfile(of: ProfileID(rawValue: id))
        case .window(let id): service.rootProfile(ofWindow: BrowserID(rawValue: id))
        case .tab(let id): service.rootProfile(ofTab: TabID(rawValue: id))
        case .group(let id): service.rootProfile(ofGroup: TabGroupID(rawValue: id))
        }
    }

    /// The profile a new WebDriver session uses when it names none, as the facade picks it: the oldest
    /// regular profile named "webdriver" among `profiles`.
    public static func sharedWebDriverProfile(among profiles: [ProfileSnapshot]) -> ProfileSnapshot? {
        profiles.filter { !$0.incognito && $0.name == "webdriver" }.min { ($0.createdAt, $0.id.rawValue) < ($1.createdAt, $1.id.rawValue) }
    }

    // MARK: Touching and loading

    /// Marks the regular profile `root` (in memory) as used now. False when it is still loading or
    /// being dropped: the caller must wait for ``bringIn(_:)``.
    public func touch(_ root: ProfileID, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { $0.machine.touch(root, now: now) }
    }

    /// Brings the regular profile `id` into memory unless it is there (waiting for its drop to end
    /// first, or joining the load under way, whose own acquire decides), and marks it used.
    /// - Parameter unreachable: on a cluster, the instance that held it and stopped answering.
    /// - Throws: what the backend's ``ResidencyBackend/acquire(_:)`` threw; nothing of it is held.
    public func bringIn(_ id: ProfileID, replacing unreachable: InstanceID? = nil) async throws {
        while true {
            let held = service.holdsProfile(id)
            let (wait, load) = state.withLock { state -> (Task<Bool, Never>?, Task<Bool, any Error>?) in
                switch state.machine.want(id, held: held, now: .now) {
                case .waitForDrop: return (state.dropping[id], nil)
                case .joinLoad: return (nil, state.loading[id])
                case .here: return (nil, nil)
                case .startLoad:
                    let load = Task { try await self.load(id, replacing: unreachable) }
                    state.loading[id] = load
                    return (nil, load)
                }
            }
            if let wait {
                _ = await wait.value
                continue
            }
            guard let load else { return }
            let result = await load.result
            let heldNow = service.holdsProfile(id)
            state.withLock { state in
                guard state.loading[id] == load else { return }
                state.loading[id] = nil
                state.machine.loadEnded(id, held: heldNow, now: .now)
            }
            _ = try result.get()
            return
        }
    }

    private func load(_ id: ProfileID, replacing unreachable: InstanceID?) async throws -> Bool {
        let started = ContinuousClock.now
        guard try await backend.acquire(id, replacing: unreachable) else { return false }
        let duration = ContinuousClock.now - started
        loads.increment()
        loadTime.record(duration: duration)
        loaded.record(Double(service.heldProfiles.count))
        if duration > .seconds(1) {
            logger.notice("loaded a large profile", metadata: ["profile": "\(id)", "duration": "\(duration)"])
        } else {
            logger.debug("loaded a profile", metadata: ["profile": "\(id)", "duration": "\(duration)"])
        }
        return true
    }

    // MARK: Dropping

    /// Drops every regular profile untouched for `idle` that nothing keeps.
    /// - Returns: the profiles dropped.
    @discardableResult
    public func evictIdle(now: ContinuousClock.Instant = .now) async -> [ProfileID] {
        guard let idle else { return [] }
        let candidates = service.heldProfiles.filter {
            !service.hasOffTheRecord($0) && service.events.openStreams(profile: $0) == 0 && !backend.keeps($0)
        }
        var dropped: [ProfileID] = []
        var began = false
        // One at a time: a profile is marked only when its turn comes (until then it is served).
        for id in candidates {
            let task = state.withLock { state in
                state.machine.sweep([id], idle: idle, now: now).first.map { startDrop($0, reason: .idle, in: &state) }
            }
            guard let task else { continue }
            if !began { backend.evictionsBegin() }
            began = true
            if await task.value { dropped.append(id) }
        }
        if began { backend.evictionsEnd() }
        return dropped
    }

    /// The one door out of memory for another reason than idleness (the cluster's: a lease lost, a
    /// fenced commit, a refusal, a failed commit): unloads `id` at once (no flush: memory may be ahead
    /// of what may be written), after a load under way, or joins a drop under way.
    /// - Returns: whether this drop unloaded it.
    @discardableResult
    public func drop(_ id: ProfileID, reason: ResidencyMachine.DropReason) async -> Bool {
        while true {
            let (wait, load, task) = state.withLock { state -> (Task<Bool, Never>?, Task<Bool, any Error>?, Task<Bool, Never>?) in
                switch state.machine.drop(id, reason: reason) {
                case .alreadyDropping: return (state.dropping[id], nil, nil)
                case .afterLoad: return (nil, state.loading[id], nil)
                case .start: return (nil, nil, startDrop(id, reason: reason, in: &state))
                }
            }
            if let task { return await task.value }
            if let wait {
                _ = await wait.value
                return false
            }
            _ = await load?.result
            // The load's waiters end it; if none is left to, this is the one that does.
            let held = service.holdsProfile(id)
            state.withLock { state in
                if let running = state.loading[id], running == load {
                    state.loading[id] = nil
                    state.machine.loadEnded(id, held: held, now: .now)
                }
            }
        }
    }

    /// Starts the drop the machine decided (it is dropping already).
    private func startDrop(_ id: ProfileID, reason: ResidencyMachine.DropReason, in state: inout State) -> Task<Bool, Never> {
        let task = Task { await self.carryOutDrop(id, reason: reason) }
        state.dropping[id] = task
        return task
    }

    /// Sweeps often enough that a profile leaves within a quarter of its idle time after it (nil
    /// when profiles never leave). The caller cancels the task at stop.
    public func sweeping() -> Task<Void, Never>? {
        guard let idle else { return nil }
        let period = min(max(idle / 4, .milliseconds(250)), .seconds(30))
        return Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: period)
                guard let self, !Task.isCancelled else { return }
                await self.evictIdle()
            }
        }
    }

    /// Carries a drop out: for idleness, once what it queued is on disk (false: that failed, and it
    /// stays), and handed on after (``ResidencyBackend/released(_:)``); for another reason, at once.
    private func carryOutDrop(_ id: ProfileID, reason: ResidencyMachine.DropReason) async -> Bool {
        func end(dropped: Bool) {
            state.withLock { state in
                state.dropping[id] = nil
                state.machine.dropEnded(id, dropped: dropped, now: .now)
            }
            loaded.record(Double(service.heldProfiles.count))
        }
        if reason == .idle {
            do {
                try await backend.flushBeforeRelease(id)
            } catch {
                end(dropped: false)
                logger.warning(
                    "an idle profile stays in memory: what it queued could not be written", metadata: ["profile": "\(id)", "error": "\(error)"])
                return false
            }
        }
        guard service.holdsProfile(id) else {
            end(dropped: true)
            return false
        }
        let remains = await service.unloadProfile(id)
        await remains.releaseOnAThreadOfItsOwn()
        if reason == .idle {
            await backend.released(id)
            evictions.increment()
        }
        end(dropped: true)
        logger.debug("dropped a profile from memory", metadata: ["profile": "\(id)", "reason": "\(reason)"])
        return true
    }
}
