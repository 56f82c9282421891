public import BrowserAPI
public import BrowserModel
public import BrowserPostgres
public import BrowserRecords
public import BrowserServices
public import ClusterCore
import Foundation
public import HTTPServer
public import Logging
public import Metrics
import Synchronization

/// One instance among several on one PostgreSQL database: each regular profile lives in the memory
/// of the instance that holds its lease; any instance takes any request and either serves it (the
/// profile is here, or nobody holds it and this instance takes it over) or forwards it to the owner.
///
/// The decisions are value state machines, unit-tested apart from this class, which carries them out
/// (database queries, the forwarder, restores):
/// - ``Placement``: where one request goes (here, take over, forward, 503), one event at a time;
/// - ``LeaseKeeper``: which profiles to stop serving (taken over, renewal failing, fenced, refused);
/// - ``OwnerCache``: who holds which lease and which profile holds which id, between requests;
/// - ``ClusterTiming``: every duration, from `--lease-seconds`.
///
/// It is the API's ``RequestPlacement``: its guard asks it after authentication, so a request without
/// a valid credential never moves a lease, asks another instance or reads the database.
public final class ClusterMembership: RequestPlacement, Sendable {
    public let leases: ProfileLeases
    /// What placement and lists read of the stored state.
    public let lookups: StoredLookups
    let notifications: ClusterNotifications
    let service: BrowserService
    let tokens: TokenStore
    let idempotency: IdempotencyStore
    let forwarder: Forwarder
    /// Every instance's profiles, for lists and the administrator's stream.
    public let directory: ClusterDirectory
    let logger: Logger
    public let timing: ClusterTiming
    /// Where the WebDriver facade answers (its session commands are placed by session id).
    let webDriverBasePath: String?
    private let store: PostgresStore
    /// Which profiles are in memory here (shared single-flight takeovers, touches, idle eviction).
    public let residency: ProfileResidency
    private let residencyBackend: ClusterResidencyBackend
    /// Everything that changes, under one lock.
    private let state: Mutex<State>
    let forwardedCounter: Counter
    let takeoverCounter: Counter
    let lostCounter: Counter

    private struct State: Sendable {
        var cache = OwnerCache()
        var keeper: LeaseKeeper
        /// Whether the database answered its last probe: while it does not, a request this instance
        /// cannot serve from memory gets its 503 at once instead of after a query's deadline.
        var databaseAnswers = true
        /// Renewal, the two LISTEN loops, the database probe and the idle sweep, cancelled at stop.
        var loops: [Task<Void, Never>] = []
    }

    public var instanceID: InstanceID { leases.held.instanceID }
    /// The header every answer names its instance in.
    public static let instanceHeader = Forwarder.instanceHeader

    /// Where the application keeps its membership once started (routes are built before).
    public final class Slot: Sendable {
        private let value = Mutex<ClusterMembership?>(nil)
        public init() {}
        public var current: ClusterMembership? { value.withLock { $0 } }
        public func set(_ membership: ClusterMembership) { value.withLock { $0 = membership } }
    }

    public init(
        leases: ProfileLeases, store: PostgresStore, service: BrowserService, tokens: TokenStore, idempotency: IdempotencyStore,
        webDriverBasePath: String?, secret: String, timing: ClusterTiming, idle: Duration? = nil,
        hasWebDriverSessions: @escaping @Sendable (ProfileID) -> Bool = { _ in false },
        flush: @escaping @Sendable () async throws -> Void = {}, memory: ResidencyMemoryHooks = .none, factory: any MetricsFactory,
        logger: Logger
    ) {
        self.webDriverBasePath = webDriverBasePath
        self.leases = leases
        lookups = StoredLookups(store: store, logger: logger)
        notifications = ClusterNotifications(store: store, logger: logger)
        self.store = store
        self.service = service
        self.tokens = tokens
        self.idempotency = idempotency
        self.logger = logger
        self.timing = timing
        state = Mutex(State(keeper: LeaseKeeper(timing: timing, now: .now)))
        forwarder = Forwarder(instanceID: leases.held.instanceID, secret: secret, timing: timing, logger: logger)
        directory = ClusterDirectory(
            instanceID: leases.held.instanceID, notifications: notifications, lookups: lookups,
            service: service, logger: logger)
        forwardedCounter = Counter(label: "browserd_forwarded_requests_total", factory: factory)
        takeoverCounter = Counter(label: "browserd_lease_takeovers_total", factory: factory)
        lostCounter = Counter(label: "browserd_leases_lost_total", factory: factory)
        residencyBackend = ClusterResidencyBackend(
            leases: leases, store: store, service: service, tokens: tokens, idempotency: idempotency,
            hasWebDriverSessions: hasWebDriverSessions, flush: flush, takeovers: takeoverCounter, memory: memory, logger: logger)
        residency = ProfileResidency(service: service, backend: residencyBackend, idle: idle, factory: factory, logger: logger)
    }

    /// Whether the database answered its last probe.
    public var databaseAnswers: Bool { state.withLock { $0.databaseAnswers } }

    // MARK: Placement

    typealias Subject = Placement.Subject

    func subject(of request: HTTPRequest) async -> Subject? {
        if isNewWebDriverSession(request) { return await webDriverSessionProfile(request).map(Subject.profile) }
        return immediateSubject(of: request)
    }

    /// A new WebDriver session, whose profile may take a database query to know.
    private func isNewWebDriverSession(_ request: HTTPRequest) -> Bool {
        RequestSubject.isNewWebDriverSession(request, basePath: webDriverBasePath)
    }

    /// What any other request names, by its route's parameters, query or body.
    private func immediateSubject(of request: HTTPRequest) -> Subject? { RequestSubject(request) }

    /// Where a new WebDriver session will live, as the facade decides it (`browserd:profileId`, else
    /// a profile token's own profile, else the shared profile named "webdriver"), so the instance
    /// that holds it makes the session. Nil: made here (a new shared profile, or an invalid request).
    func webDriverSessionProfile(_ request: HTTPRequest) async -> String? {
        if let id = RequestSubject.webDriverCapabilityProfile(request) { return id }
        if let own = tokens.tokenProfile(of: request) { return own.rawValue }
        // The oldest stored one, as the facade picks it among those it holds (the database knows a
        // profile as soon as its creation was answered; the directory may learn it a moment later).
        return try? await lookups.oldestProfile(named: "webdriver")
    }

    /// Whether a pipeline of reads (``Forwarder/pipelinePath``) came from another instance of this cluster.
    public func admitsPipeline(_ request: HTTPRequest) -> Bool { forwarder.isPipelineFromPeer(request) }

    /// Whether `request` was forwarded by another instance of this cluster (its peer proof holds).
    public func isFromPeer(_ request: HTTPRequest) -> Bool { forwarder.isFromPeer(request) }

    /// The answer of another instance (or a 503), or nil when this instance serves the request: the
    /// ``Placement`` machine's actions carried out one by one.
    public func place(_ request: HTTPRequest) async -> HTTPResponse? {
        var (placement, action) = startPlacement(of: request, naming: await subject(of: request))
        return await carryOut(&placement, from: action, request)
    }

    /// A ``Placement`` machine for `request`, started.
    private func startPlacement(of request: HTTPRequest, naming subject: Subject?) -> (Placement, Placement.Action) {
        var placement = Placement(
            instanceID: instanceID, fromPeer: forwarder.isFromPeer(request),
            isRead: request.method == .get || request.method == .head)
        let action = placement.start(
            subject: subject, heldHere: subject.map { residency.root(of: $0).map { residency.touch($0) } ?? false } ?? false,
            databaseAnswers: databaseAnswers)
        return (placement, action)
    }

    /// ``place(_:)`` as far as memory and the caches take it, on the server thread: served here, a 503,
    /// or relayed to the cached owner without a task (the common cases); anything that needs the
    /// database or a takeover is left to ``place(_:)``, which starts over (nothing was done yet).
    public func placeAtOnce(_ request: HTTPRequest) -> PlacedAtOnce {
        guard !isNewWebDriverSession(request) else { return .undecided }
        var (placement, action) = startPlacement(of: request, naming: immediateSubject(of: request))
        while true {
            switch action {
            case .serveHere:
                return .here
            case .unavailable(let detail):
                return .answered(Self.unavailable(detail, request))
            case .storageUnavailable(let detail):
                return .answered(Self.storageUnavailable(detail, request))
            case .lookUpProfile(let subject):
                guard let known = state.withLock({ $0.cache.profile(holding: subject) }) else { return .undecided }
                action = placement.storedProfile(known, subject: subject, callerReaches: Self.callerReaches(known))
            case .lookUpOwner(let profile):
                guard let cached = state.withLock({ $0.cache.owner(of: profile) }), cached.instanceID != instanceID else { return .undecided }
                action = placement.owner(cached)
            case .forward(let owner, let profile):
                guard forwarder.relays(request, to: owner.url) else { return .undecided }
                let machine = placement
                return .underway { complete in
                    self.forwardedCounter.increment()
                    self.forwarder.start(request, to: owner.url) { result in
                        var placement = machine
                        let next: Placement.Action
                        switch result {
                        case .success(let answer):
                            next = self.forwarded(answer, profile: profile, &placement)
                            if case .relay = next { return complete(answer) }
                        case .failure(let error):
                            next = self.forwardFailed(error, owner: owner, profile: profile, &placement)
                        }
                        // What is left (a probe, a takeover) may wait: in a task.
                        Task { complete(await self.carryOut(&placement, from: next, request)) }
                    }
                }
            case .takeOver, .probeRefusal, .searchIncognitoOwners, .relay:
                return .undecided
            }
        }
    }

    /// Carries out the ``Placement`` machine's actions from `action` on.
    private func carryOut(_ placement: inout Placement, from action: Placement.Action, _ request: HTTPRequest) async -> HTTPResponse? {
        var action = action
        var answer: HTTPResponse?
        while true {
            switch action {
            case .serveHere:
                return nil
            case .unavailable(let detail):
                return Self.unavailable(detail, request)
            case .storageUnavailable(let detail):
                return Self.storageUnavailable(detail, request)
            case .relay:
                return answer
            case .lookUpProfile(let subject):
                do {
                    let stored = try await storedProfile(subject)
                    action = placement.storedProfile(stored, subject: subject, callerReaches: Self.callerReaches(stored))
                } catch {
                    logger.warning("placement failed", metadata: ["error": "\(PostgresStore.describe(error))"])
                    return Self.storageUnavailable("The database cannot say which instance holds this profile; retry.", request)
                }
            case .lookUpOwner(let profile):
                do {
                    action = placement.owner(try await owner(of: profile))
                } catch {
                    logger.warning("placement failed", metadata: ["error": "\(PostgresStore.describe(error))"])
                    return Self.storageUnavailable("The database cannot say which instance holds this profile; retry.", request)
                }
            case .takeOver(let profile, let replacing):
                action = placement.tookOver(await takeOver(profile, replacing: replacing))
            case .forward(let owner, let profile):
                forwardedCounter.increment()
                do {
                    let forwarded = try await forwarder.forward(request, to: owner.url)
                    answer = forwarded
                    action = self.forwarded(forwarded, profile: profile, &placement)
                } catch {
                    action = forwardFailed(error, owner: owner, profile: profile, &placement)
                }
            case .probeRefusal(let owner):
                action = placement.refusal(await Forwarder.refusesConnectionsOffThePool(owner.url, within: timing.refusalProbeTimeout))
            case .searchIncognitoOwners(let subject):
                do {
                    return try await placeOffTheRecord(subject, request)
                } catch {
                    logger.warning("placement failed", metadata: ["error": "\(PostgresStore.describe(error))"])
                    return Self.storageUnavailable("The database cannot say which instance holds this profile; retry.", request)
                }
            }
        }
    }

    /// The owner answered: the machine's next action, with the cache kept true (an owner that said 503
    /// no longer holds the profile; what its 201 made lives in `profile`).
    private func forwarded(_ answer: HTTPResponse, profile: String, _ placement: inout Placement) -> Placement.Action {
        let action = placement.forwarded(status: answer.status)
        if case .relay(forgetOwner: true) = action {
            state.withLock { $0.cache.forgetOwner(of: profile) }
        } else if answer.status == 201, let location = answer.headers["Location"], let made = Self.subject(named: location) {
            // What the owner just made is in the profile the request named: the next request for it
            // needs no database query to be placed.
            state.withLock { $0.cache.remember(profile: profile, holding: made) }
        }
        return action
    }

    /// The owner could not be reached: the machine's next action (probe its address), the cached owner
    /// forgotten.
    private func forwardFailed(_ error: any Error, owner: Placement.Owner, profile: String, _ placement: inout Placement) -> Placement.Action {
        state.withLock { $0.cache.forgetOwner(of: profile) }
        logger.warning("forwarding failed", metadata: ["profile": "\(profile)", "owner": "\(owner.instanceID)", "error": "\(error)"])
        return placement.forwardFailed()
    }

    /// The window, tab or group a `Location` names (`/v1/tabs/t…`), if it names one.
    static func subject(named location: String) -> Subject? {
        let parts = location.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].isEmpty, parts[1] == "v1", !parts[3].isEmpty else { return nil }
        let id = String(parts[3])
        switch parts[2] {
        case "browsers": return .window(id)
        case "tabs": return .tab(id)
        case "groups": return .group(id)
        default: return nil
        }
    }

    /// A request for something no stored profile holds: an off-the-record profile, or a window, tab or
    /// group of one, which only its owner's memory has. The owners of the incognito profiles the
    /// directory announced are asked first (for a profile: its regular profile's owner), then every
    /// other live instance (the directory may not have heard of a profile made a moment ago); each is
    /// asked with a read of the subject (`GET`, as the client), and the request goes to the one that
    /// has it. Nil when none does (the handler's 404 here), or when another instance forwarded the
    /// request (one hop at most).
    private func placeOffTheRecord(_ subject: Subject, _ request: HTTPRequest) async throws -> HTTPResponse? {
        guard !forwarder.isFromPeer(request) else { return nil }
        let elsewhere = service.directoryProfiles().filter { $0.incognito && !service.holdsProfile($0.parentID ?? $0.id) }
        let parents: [ProfileID]
        if case .profile(let id) = subject {
            parents = elsewhere.first(where: { $0.id.rawValue == id })?.parentID.map { [$0] } ?? []
        } else {
            parents = Array(Set(elsewhere.compactMap(\.parentID)))
        }
        var candidates: [String] = []
        for parent in parents {
            if let owner = try await liveOwner(of: parent.rawValue), !candidates.contains(owner.url) { candidates.append(owner.url) }
        }
        for other in try await leases.otherLiveInstances() where !candidates.contains(other.url) { candidates.append(other.url) }
        let probe = Self.readPath(of: subject)
        for url in candidates {
            guard let found = try? await forwarder.get(probe, from: url, for: request), found.status == 200 else { continue }
            forwardedCounter.increment()
            do {
                return try await forwarder.forward(request, to: url)
            } catch {
                return Self.unavailable("The instance that holds this incognito resource did not answer; retry.", request)
            }
        }
        return nil
    }

    /// The path that reads `subject` (its existence, for the caller).
    private static func readPath(of subject: Subject) -> String {
        let (base, id): (String, String) =
            switch subject {
            case .profile(let id): ("/v1/profiles/", id)
            case .window(let id): ("/v1/browsers/", id)
            case .tab(let id): ("/v1/tabs/", id)
            case .group(let id): ("/v1/groups/", id)
            }
        return base + (id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)
    }

    /// The live owner of `profile` other than this instance, from the cache or the database (never
    /// taking the profile over).
    private func liveOwner(of profile: String) async throws -> Placement.Owner? {
        if let cached = state.withLock({ $0.cache.owner(of: profile) }), cached.instanceID != instanceID { return cached }
        guard let owner = try await owner(of: profile), owner.live, owner.instanceID != instanceID else { return nil }
        return owner
    }

    private static func unavailable(_ detail: String, _ request: HTTPRequest) -> HTTPResponse {
        HTTPError.unavailable(detail, retryAfter: 1).response(instance: request.path)
    }

    /// What every store answers when it could not be read: the same problem type as the embedded store's.
    private static func storageUnavailable(_ detail: String, _ request: HTTPRequest) -> HTTPResponse {
        HTTPError.storageUnavailable(detail, retryAfter: 1).response(instance: request.path)
    }

    /// The regular profile the database says holds the subject (cached: one query per id at most,
    /// while it exists).
    /// Whether the request's caller may use stored profile `profile` (placement runs as the caller).
    private static func callerReaches(_ profile: String?) -> Bool { profile.map { Principal.current.reaches(ProfileID(rawValue: $0)) } ?? true }

    private func storedProfile(_ subject: Subject) async throws -> String? {
        if let known = state.withLock({ $0.cache.profile(holding: subject) }) { return known }
        let found: String? =
            switch subject {
            case .profile(let id): try await lookups.profileExists(id) ? id : nil
            case .window(let id): try await lookups.profile(ofWindow: id)
            case .tab(let id): try await lookups.profile(ofTab: id)
            case .group(let id): try await lookups.profile(ofGroup: id)
            }
        if let found { state.withLock { $0.cache.remember(profile: found, holding: subject) } }
        return found
    }

    /// Who holds `profile`'s lease: the cached owner elsewhere, else what the database says (a live
    /// owner elsewhere is remembered). Nil: nobody ever held it.
    private func owner(of profile: String) async throws -> Placement.Owner? {
        if let cached = state.withLock({ $0.cache.owner(of: profile) }), cached.instanceID != instanceID { return cached }
        guard let stored = try await leases.owner(of: profile) else { return nil }
        let owner = Placement.Owner(instanceID: stored.instanceID, url: stored.url, live: stored.live)
        if owner.live, owner.instanceID != instanceID { state.withLock { $0.cache.remember(owner, of: profile) } }
        return owner
    }

    /// Makes sure `profile` lives somewhere: here already, elsewhere (a live owner), or here after
    /// taking it over. For lists, which gather every profile's windows.
    func ensureHeld(_ profile: String) async throws {
        if let owner = try await owner(of: profile), owner.live, owner.instanceID != instanceID { return }
        _ = await takeOver(profile, replacing: nil)
    }

    /// Takes `profile` and restores it here, once even if many requests ask at the same time (the
    /// ``ProfileResidency``'s single flight; a profile being dropped for idleness is waited for).
    private func takeOver(_ profile: String, replacing unreachable: InstanceID?) async -> Placement.Takeover {
        let id = ProfileID(rawValue: profile)
        do {
            try await residency.bringIn(id, replacing: unreachable)
            // Its old owner is no longer asked.
            state.withLock { $0.cache.forgetOwner(of: profile) }
            // Deleted meanwhile: nothing to hold (the request is answered 404 here).
            if !service.holdsProfile(id) { state.withLock { $0.cache.forgetProfile(profile) } }
            return .here
        } catch let moved as ClusterResidencyBackend.MovedElsewhere {
            return .elsewhere(moved.owner)
        } catch {
            logger.warning("takeover failed", metadata: ["profile": "\(profile)", "error": "\(PostgresStore.describe(error))"])
            return .failed
        }
    }

    // MARK: Losing profiles

    /// Carries out what the ``LeaseKeeper`` decided.
    private func perform(_ action: LeaseKeeper.Action) async {
        switch action {
        case .none:
            return
        case .drop(let profiles, let reason):
            for profile in profiles { await drop(profile, reason: reason) }
        case .dropAll(let reason):
            for profile in leases.held.all.keys { await drop(profile, reason: reason) }
        }
    }

    /// A commit of `profile` was fenced out: another instance holds it now.
    public func fenced(_ profile: String) async {
        await perform(state.withLock { $0.keeper.fenced(profile) })
    }

    /// The database refused one of `profile`'s changes.
    public func refused(_ profile: String) async {
        await perform(state.withLock { $0.keeper.refused(profile) })
    }

    /// Drops a profile this instance no longer holds (lost at renewal, fenced, refused, or memory may
    /// be ahead of the database after a failed commit).
    public func drop(_ profile: String, reason: LeaseKeeper.Reason) async {
        leases.forget(profile)
        state.withLock { $0.cache.forgetOwner(of: profile) }
        guard service.holdsProfile(ProfileID(rawValue: profile)) else { return }
        await service.unloadProfile(ProfileID(rawValue: profile)).releaseOnAThreadOfItsOwn()
        residency.forget(ProfileID(rawValue: profile))
        lostCounter.increment()
        logger.warning("dropped a profile", metadata: ["profile": "\(profile)", "reason": "\(reason)"])
    }

    // MARK: Running

    /// Starts renewing leases, following lease moves, tokens and the directory, and probing the database.
    /// - Parameter databaseAnswers: told whether the database answers, at every probe.
    public func start(databaseAnswers: @escaping @Sendable (_ error: (any Error)?) -> Void) {
        let loops = [renewing(), followingMoves(), followingTokens(), probing(databaseAnswers)] + [residency.sweeping()].compactMap { $0 }
        state.withLock { $0.loops = loops }
        directory.start()
    }

    /// Renews every lease each ``ClusterTiming/renewEvery``; the ``LeaseKeeper`` says what to drop.
    private func renewing() -> Task<Void, Never> {
        let interval = timing.renewEvery
        return Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                let action: LeaseKeeper.Action
                do {
                    let lost = try await self.leases.renew()
                    action = self.state.withLock { $0.keeper.renewed(lost: Array(lost), at: .now) }
                } catch {
                    // The database may already have handed our profiles on: stop serving them in time.
                    action = self.state.withLock { $0.keeper.renewalFailed(PostgresStore.describe(error), at: .now) }
                }
                await self.perform(action)
            }
        }
    }

    /// Follows lease moves announced by any instance (`LISTEN browserd_leases`): the owner cache
    /// forgets a profile as soon as its lease moves, and all of it whenever listening (re)starts.
    private func followingMoves() -> Task<Void, Never> {
        Task { [weak self] in
            guard let notifications = self?.notifications else { return }
            await notifications.watchMoves(
                listening: { [weak self] in self?.state.withLock { $0.cache.forgetOwners() } },
                moved: { [weak self] profile in self?.state.withLock { $0.cache.forgetOwner(of: profile) } })
        }
    }

    /// Follows tokens issued and revoked by any instance (`LISTEN browserd_tokens`); reads every
    /// stored token whenever listening (re)starts.
    private func followingTokens() -> Task<Void, Never> {
        Task { [weak self] in
            guard let notifications = self?.notifications else { return }
            await notifications.watch(
                ClusterNotifications.tokenChannel,
                listening: { [weak self] in
                    Task { await self?.reloadTokens() }
                },
                received: { [weak self] payload in
                    Task { await self?.tokenChanged(payload) }
                })
        }
    }

    /// Probes the database every ``ClusterTiming/databaseProbeEvery``: while it does not answer,
    /// placement answers 503 at once, and `databaseAnswers` is told (for /readyz).
    private func probing(_ report: @escaping @Sendable ((any Error)?) -> Void) -> Task<Void, Never> {
        let every = timing.databaseProbeEvery
        return Task.detached { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                var failure: (any Error)?
                do { try await self.store.ping() } catch { failure = error }
                self.state.withLock { $0.databaseAnswers = failure == nil }
                report(failure)
                try? await Task.sleep(for: every)
            }
        }
    }

    private func reloadTokens() async {
        do {
            tokens.replaceAll(try await lookups.storedTokens().map(TokenStore.Record.init))
        } catch {
            logger.warning("could not read the stored tokens", metadata: ["error": "\(PostgresStore.describe(error))"])
        }
    }

    private func tokenChanged(_ payload: String) async {
        if payload.hasPrefix("profile:") {
            tokens.revokeAll(of: ProfileID(rawValue: String(payload.dropFirst(8))))
            return
        }
        do {
            if let record = try await lookups.storedToken(payload) {
                tokens.restore([TokenStore.Record(record)])
            } else {
                tokens.forget(payload)
            }
        } catch {
            // Unknown state: forget it (safe: a valid token is read again at the next reload).
            tokens.forget(payload)
        }
    }

    /// Stops renewing and gives every lease back, so other instances take the profiles at once.
    public func stop() async {
        for loop in state.withLock({ $0.loops }) { loop.cancel() }
        directory.stop()
        let held = Array(leases.held.all.keys)
        if !held.isEmpty {
            do {
                try await leases.release(held)
                logger.info("gave leases back", metadata: ["profiles": "\(held.count)"])
            } catch {
                logger.warning("could not give leases back (they expire by themselves)", metadata: ["error": "\(PostgresStore.describe(error))"])
            }
        }
        await forwarder.shutdown()
    }
}
