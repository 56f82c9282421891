import BrowserAPI
import BrowserModel
import BrowserPersistence
import BrowserRecords
import BrowserServices
import Foundation
import HTTPServer
import Logging
import Metrics
import Synchronization

/// The embedded store's working set: which regular profiles are in memory. At start none is (the
/// directory of stored profiles is, as the cluster shows profiles held elsewhere); the first request,
/// stream or WebDriver session that touches a profile loads it alone from the database (concurrent
/// first touches share one load), and a profile nobody touched for `idle` (no request, no open stream,
/// no WebDriver session, no incognito profile: that exists only in memory) is dropped from memory
/// again, everything of it being on disk.
///
/// Eviction and loading never overlap for one profile: a profile being dropped is marked first (a
/// request that touches it then waits, and loads it again once the writer committed what it had
/// queued for it), so a load always reads the last commit.
final class ProfileWorkingSet: Sendable {
    struct State {
        /// Loads under way, shared by every request that waits for the profile.
        var loading: [ProfileID: Task<Void, any Error>] = [:]
        /// Profiles being dropped: loading one waits for this first.
        var evicting: [ProfileID: Task<Void, Never>] = [:]
        /// When each profile in memory was last touched.
        var touched: [ProfileID: ContinuousClock.Instant] = [:]
    }

    let service: BrowserService
    let reader: StoreReader
    /// The connection unrealized tabs read their histories through (its cache is freed with the loads').
    let histories: StoreReader?
    let tokens: TokenStore
    let webDriverBasePath: String?
    /// How long an untouched profile stays; nil: for ever.
    let idle: Duration?
    /// Whether a regular profile has WebDriver sessions open (they keep it in memory).
    let hasWebDriverSessions: @Sendable (ProfileID) -> Bool
    /// Returns once every change queued so far is committed.
    let flush: @Sendable () async throws -> Void
    /// What the allocator is asked to do after loads and around evictions (``MemoryPolicy``).
    let memory: MemoryPolicy
    let logger: Logger
    private let state = Mutex(State())
    private let loads: Counter
    private let evictions: Counter
    private let loadTime: Timer
    private let loaded: Gauge

    init(
        service: BrowserService, reader: StoreReader, histories: StoreReader? = nil, tokens: TokenStore, webDriverBasePath: String?, idle: Duration?,
        hasWebDriverSessions: @escaping @Sendable (ProfileID) -> Bool, flush: @escaping @Sendable () async throws -> Void,
        memory: MemoryPolicy = .untouched, factory: any MetricsFactory, logger: Logger
    ) {
        self.memory = memory
        self.service = service
        self.reader = reader
        self.histories = histories
        self.tokens = tokens
        self.webDriverBasePath = webDriverBasePath
        self.idle = idle
        self.hasWebDriverSessions = hasWebDriverSessions
        self.flush = flush
        self.logger = logger
        loads = Counter(label: "browserd_profile_loads_total", factory: factory)
        evictions = Counter(label: "browserd_profile_evictions_total", factory: factory)
        loadTime = Timer(label: "browserd_profile_load_seconds", preferredDisplayUnit: .seconds, factory: factory)
        loaded = Gauge(label: "browserd_profiles_loaded", factory: factory)
    }

    /// Tells what start-up found: every stored profile is in the directory, none in memory.
    func start(directory: [PersistenceStore.DirectoryEntry]) {
        service.resyncDirectory(stored: directory.map { ProfileSnapshot(stored: $0.profile, windowCount: $0.windowCount) })
        loaded.record(0)
    }

    // MARK: Touching and loading

    /// Marks the regular profile `root` (in memory) as used now; false when it is being dropped or
    /// is still loading (the caller must wait for ``ensureLoaded(_:)``). A load publishes its windows
    /// before the profile itself: a request that found one of them then would answer 404.
    func touch(_ root: ProfileID, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in
            guard state.evicting[root] == nil, state.loading[root] == nil else { return false }
            state.touched[root] = now
            return true
        }
    }

    /// Brings the stored regular profile `id` into memory unless it is there (or nothing stores it),
    /// and marks it used.
    func ensureLoaded(_ id: ProfileID) async throws {
        while true {
            let (wait, load) = state.withLock { state -> (Task<Void, Never>?, Task<Void, any Error>?) in
                if let eviction = state.evicting[id] { return (eviction, nil) }
                if let load = state.loading[id] { return (nil, load) }
                guard !service.holdsProfile(id), service.isStoredElsewhere(id) else {
                    state.touched[id] = .now
                    return (nil, nil)
                }
                let load = Task { try await self.load(id) }
                state.loading[id] = load
                return (nil, load)
            }
            if let wait {
                await wait.value
                continue
            }
            guard let load else { return }
            do {
                try await load.value
            } catch {
                state.withLock { if $0.loading[id] == load { $0.loading[id] = nil } }
                throw error
            }
            state.withLock { state in
                if state.loading[id] == load { state.loading[id] = nil }
                state.touched[id] = .now
            }
            return
        }
    }

    private func load(_ id: ProfileID) async throws {
        let started = ContinuousClock.now
        let raw = id.rawValue
        // Tabs load unrealized: their rows' summaries now, each history when it is first needed.
        // Read on the thread that builds the model (see `LoadThread`): the records are garbage once
        // the model holds the profile, and are freed there.
        let reader = self.reader
        let summary = try await service.restoreProfile(reading: { try reader.readNow { try $0.loadProfile(raw, histories: false) } })
        guard summary.profiles > 0 else { return }
        for (window, route, outcome) in await service.runSavedRoutes() {
            logger.notice(
                "followed a route saved with the window", metadata: ["window": "\(window)", "savedRoute": "\(route.id)", "outcome": "\(outcome)"])
        }
        for repair in summary.repairs.prefix(100) {
            logger.warning("loading a profile repaired a stored value", metadata: ["profile": "\(id)", "repair": "\(repair)"])
        }
        // The records a load reads are garbage once the model holds the profile: give their pages back.
        memory.afterLoad()
        let duration = ContinuousClock.now - started
        loads.increment()
        loadTime.record(duration: duration)
        loaded.record(Double(service.heldProfiles.count))
        let metadata: Logger.Metadata = [
            "profile": "\(id)", "windows": "\(summary.windows)", "tabs": "\(summary.tabs)", "duration": "\(duration)",
        ]
        if duration > .seconds(1) {
            logger.notice("loaded a large profile", metadata: metadata)
        } else {
            logger.debug("loaded a profile", metadata: metadata)
        }
    }

    // MARK: Finding what a request needs

    /// The regular profile in memory that holds `subject` (nil: none here).
    func root(of subject: RequestSubject) -> ProfileID? {
        switch subject {
        case .profile(let id): service.rootProfile(of: ProfileID(rawValue: id))
        case .window(let id): service.rootProfile(ofWindow: BrowserID(rawValue: id))
        case .tab(let id): service.rootProfile(ofTab: TabID(rawValue: id))
        case .group(let id): service.rootProfile(ofGroup: TabGroupID(rawValue: id))
        }
    }

    /// The stored regular profile that holds `subject`, if the directory lists it as not loaded.
    func unloadedProfile(holding subject: RequestSubject) async throws -> ProfileID? {
        let found: String? =
            switch subject {
            case .profile(let id): id
            case .window(let id): try await reader.read { try $0.profile(ofWindow: id) }
            case .tab(let id): try await reader.read { try $0.profile(ofTab: id) }
            case .group(let id): try await reader.read { try $0.profile(ofGroup: id) }
            }
        // A profile deleted in memory is out of the directory at once, though its rows stay until
        // the delete commits: it is never loaded again.
        guard let found, service.isStoredElsewhere(ProfileID(rawValue: found)) else { return nil }
        return ProfileID(rawValue: found)
    }

    /// Where a new WebDriver session will live (as the facade picks it): its `browserd:profileId`, else
    /// a profile token's own profile, else the oldest profile named "webdriver".
    func webDriverSessionProfile(_ request: HTTPRequest) -> ProfileID? {
        if let id = RequestSubject.webDriverCapabilityProfile(request) { return service.rootProfile(of: ProfileID(rawValue: id)) ?? ProfileID(rawValue: id) }
        if let own = tokens.tokenProfile(of: request) { return own }
        return service.directoryProfiles().first { !$0.incognito && $0.name == "webdriver" }?.id
    }

    // MARK: Dropping idle profiles

    /// Drops every regular profile untouched for `idle` that nothing keeps (a stream, a WebDriver
    /// session, an incognito profile). - Returns: the profiles dropped.
    @discardableResult
    func evictIdle(now: ContinuousClock.Instant = .now) async -> [ProfileID] {
        guard let idle else { return [] }
        var dropped: [ProfileID] = []
        for id in service.heldProfiles {
            guard !service.hasOffTheRecord(id), service.events.openStreams(profile: id) == 0, !hasWebDriverSessions(id) else {
                continue
            }
            let eviction = state.withLock { state -> Task<Void, Never>? in
                guard state.loading[id] == nil, state.evicting[id] == nil else { return nil }
                let last = state.touched[id] ?? now
                if state.touched[id] == nil { state.touched[id] = now }
                guard now - last >= idle else { return nil }
                let task = Task { await self.drop(id) }
                state.evicting[id] = task
                return task
            }
            guard let eviction else { continue }
            if dropped.isEmpty {
                // What the drops free leaves the heap at once (see the shim); glibc's usual settings
                // come back after them. With `LoadThread`: RSS after idle 1.08× the empty server's at
                // 1,000,000 stored tabs (1.13× before).
                memory.beginEvictions()
            }
            await eviction.value
            dropped.append(id)
        }
        if !dropped.isEmpty {
            // The readers' page caches were filled by the loads, among the model's allocations: freed
            // too, the pages the dropped profiles held can go back whole.
            for reader in [reader, histories].compactMap({ $0 }) { try? reader.readNow { $0.releaseMemory() } }
            memory.endEvictions()
        }
        return dropped
    }

    /// Frees a dropped profile on a thread of its own that ends right after: the allocator caches
    /// freed blocks per thread (tcache), and a thread's cache goes back to the shared arenas only when
    /// it ends, so freed on a worker that lives on, some of the profile's pages would stay resident.
    static func release(_ remains: ProfileRemains) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                Thread.current.name = "bd-unload"
                remains.release()
                done.resume()
            }
            thread.start()
        }
    }

    private func drop(_ id: ProfileID) async {
        let remains = await service.unloadProfile(id)
        await Self.release(remains)
        // What it queued must be on disk before anyone loads it again.
        do { try await flush() } catch { logger.warning("dropping a profile: the writer failed", metadata: ["profile": "\(id)", "error": "\(error)"]) }
        state.withLock { state in
            state.evicting[id] = nil
            state.touched[id] = nil
        }
        evictions.increment()
        loaded.record(Double(service.heldProfiles.count))
        logger.debug("dropped an idle profile from memory", metadata: ["profile": "\(id)"])
    }
}
