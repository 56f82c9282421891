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

/// What a backend asks of the allocator after a load and around evictions (the application's memory
/// policy, which the store's module does not know).
public struct ResidencyMemoryHooks: Sendable {
    public var afterLoad: @Sendable () -> Void
    public var evictionsBegin: @Sendable () -> Void
    public var evictionsEnd: @Sendable () -> Void

    public init(
        afterLoad: @escaping @Sendable () -> Void, evictionsBegin: @escaping @Sendable () -> Void, evictionsEnd: @escaping @Sendable () -> Void
    ) {
        self.afterLoad = afterLoad
        self.evictionsBegin = evictionsBegin
        self.evictionsEnd = evictionsEnd
    }

    public static let none = ResidencyMemoryHooks(afterLoad: {}, evictionsBegin: {}, evictionsEnd: {})
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
        /// Loads under way, shared by every request that waits for the profile.
        var loading: [ProfileID: Task<Bool, any Error>] = [:]
        /// Profiles being dropped: loading one waits for this first.
        var evicting: [ProfileID: Task<Bool, Never>] = [:]
        /// When each profile in memory was last touched.
        var touched: [ProfileID: ContinuousClock.Instant] = [:]
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
        state.withLock { state in
            guard state.evicting[root] == nil, state.loading[root] == nil else { return false }
            state.touched[root] = now
            return true
        }
    }

    /// Brings the regular profile `id` into memory unless it is there (waiting for its drop to end
    /// first, or joining the load under way, whose own acquire decides), and marks it used.
    /// - Parameter unreachable: on a cluster, the instance that held it and stopped answering.
    /// - Throws: what the backend's ``ResidencyBackend/acquire(_:)`` threw; nothing of it is held.
    public func bringIn(_ id: ProfileID, replacing unreachable: InstanceID? = nil) async throws {
        while true {
            let (wait, load) = state.withLock { state -> (Task<Bool, Never>?, Task<Bool, any Error>?) in
                if let eviction = state.evicting[id] { return (eviction, nil) }
                if let load = state.loading[id] { return (nil, load) }
                guard !service.holdsProfile(id) else {
                    state.touched[id] = .now
                    return (nil, nil)
                }
                let load = Task { try await self.load(id, replacing: unreachable) }
                state.loading[id] = load
                return (nil, load)
            }
            if let wait {
                await wait.value
                continue
            }
            guard let load else { return }
            let result = await load.result
            state.withLock { state in
                if state.loading[id] == load { state.loading[id] = nil }
                if case .success = result { state.touched[id] = .now }
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

    /// Forgets what it knew of `id`, which left memory another way (a lease lost, a delete).
    public func forget(_ id: ProfileID) {
        state.withLock { _ = $0.touched.removeValue(forKey: id) }
        loaded.record(Double(service.heldProfiles.count))
    }

    // MARK: Dropping idle profiles

    /// Drops every regular profile untouched for `idle` that nothing keeps.
    /// - Returns: the profiles dropped.
    @discardableResult
    public func evictIdle(now: ContinuousClock.Instant = .now) async -> [ProfileID] {
        guard let idle else { return [] }
        var dropped: [ProfileID] = []
        for id in service.heldProfiles {
            guard !service.hasOffTheRecord(id), service.events.openStreams(profile: id) == 0, !backend.keeps(id) else { continue }
            let eviction = state.withLock { state -> Task<Bool, Never>? in
                guard state.loading[id] == nil, state.evicting[id] == nil else { return nil }
                let last = state.touched[id] ?? now
                if state.touched[id] == nil { state.touched[id] = now }
                guard now - last >= idle else { return nil }
                let task = Task { await self.drop(id) }
                state.evicting[id] = task
                return task
            }
            guard let eviction else { continue }
            if dropped.isEmpty { backend.evictionsBegin() }
            if await eviction.value { dropped.append(id) }
        }
        if !dropped.isEmpty { backend.evictionsEnd() }
        return dropped
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

    /// Drops `id` once what it queued is on disk (false: that failed, and it stays).
    private func drop(_ id: ProfileID) async -> Bool {
        do {
            try await backend.flushBeforeRelease(id)
        } catch {
            state.withLock { state in
                state.evicting[id] = nil
                state.touched[id] = .now
            }
            logger.warning(
                "an idle profile stays in memory: what it queued could not be written", metadata: ["profile": "\(id)", "error": "\(error)"])
            return false
        }
        let remains = await service.unloadProfile(id)
        await remains.releaseOnAThreadOfItsOwn()
        await backend.released(id)
        state.withLock { state in
            state.evicting[id] = nil
            state.touched[id] = nil
        }
        evictions.increment()
        loaded.record(Double(service.heldProfiles.count))
        logger.debug("dropped an idle profile from memory", metadata: ["profile": "\(id)"])
        return true
    }
}
