public import BrowserAPI
public import BrowserAccess
public import BrowserModel
public import BrowserPostgres
public import BrowserRecords
public import BrowserResidency
public import BrowserServices
public import ClusterCore
import Foundation
public import HTTPServer
public import Logging
public import Metrics
public import ProcessMemory
import Synchronization

/// One instance among several on one PostgreSQL database: each regular profile lives in the memory
/// of the instance that holds its lease; any instance takes any request and either serves it (the
/// profile is here, or nobody holds it and this instance takes it over) or forwards it to the owner.
///
/// It puts the cluster's parts together, each with one job, and runs their loops:
/// - ``PlacementInterpreter`` (ClusterCore): where one request goes, the one interpreter of the
///   ``Placement`` machine, through three seams carried out here —
///   ``ClusterLookups`` (who holds what: the ``OwnerCache`` in front of the database),
///   ``Forwarder`` (other instances), ``ClusterHolding`` (this instance's profiles: takeovers, drops,
///   and ``OffTheRecordSearch`` for incognito subjects);
/// - ``LeaseFollower`` (ClusterCore): lease renewal and what the ``LeaseKeeper`` drops;
/// - ``TokenFollower`` (ClusterCore): tokens any instance issues or revokes;
/// - ``ClusterDirectory``: every instance's profiles, for lists and the administrator's stream.
///
/// It is the API's ``RequestPlacement``: its guard asks it after authentication, so a request without
/// a valid credential never moves a lease, asks another instance or reads the database.
public final class ClusterMembership: RequestPlacement, Sendable {
    public let leases: ProfileLeases
    /// What lists read of the stored state.
    public let stored: StoredLookups
    let lookups: ClusterLookups
    let notifications: ClusterNotifications
    let service: BrowserService
    let forwarder: Forwarder
    let holding: ClusterHolding
    let placement: PlacementInterpreter
    let leaseFollower: LeaseFollower
    let tokenFollower: TokenFollower
    /// Every instance's profiles, for lists and the administrator's stream.
    public let directory: ClusterDirectory
    let tokens: TokenStore
    let logger: Logger
    public let timing: ClusterTiming
    /// Where the WebDriver facade answers (its session commands are placed by session id).
    let webDriverBasePath: String?
    private let store: PostgresStore
    /// Which profiles are in memory here (shared single-flight takeovers, touches, idle eviction).
    public let residency: ProfileResidency
    /// Renewal, the two LISTEN loops, the database probe and the idle sweep, cancelled at stop.
    private let loops = Mutex<[Task<Void, Never>]>([])

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
        webDriverBasePath: String?, secret: String, timing: ClusterTiming, forwarding: ForwardingPath = .relay, idle: Duration? = nil,
        hasWebDriverSessions: @escaping @Sendable (ProfileID) -> Bool = { _ in false },
        flush: @escaping @Sendable () async throws -> Void = {}, memory: MemoryPolicy = .untouched, factory: any MetricsFactory,
        logger: Logger
    ) {
        self.webDriverBasePath = webDriverBasePath
        self.leases = leases
        self.store = store
        self.service = service
        self.tokens = tokens
        self.logger = logger
        self.timing = timing
        stored = StoredLookups(store: store, logger: logger)
        lookups = ClusterLookups(leases: leases, stored: stored)
        notifications = ClusterNotifications(store: store, logger: logger)
        forwarder = Forwarder(instanceID: leases.held.instanceID, secret: secret, timing: timing, path: forwarding, logger: logger)
        directory = ClusterDirectory(
            instanceID: leases.held.instanceID, notifications: notifications, lookups: stored,
            service: service, logger: logger)
        let forwarded = Counter(label: "browserd_forwarded_requests_total", factory: factory)
        let backend = ClusterResidencyBackend(
            leases: leases, store: store, service: service, tokens: tokens, idempotency: idempotency,
            hasWebDriverSessions: hasWebDriverSessions, flush: flush,
            takeovers: Counter(label: "browserd_lease_takeovers_total", factory: factory), memory: memory, logger: logger)
        residency = ProfileResidency(service: service, backend: backend, idle: idle, factory: factory, logger: logger)
        holding = ClusterHolding(
            residency: residency, leases: leases, lookups: lookups,
            offTheRecord: OffTheRecordSearch(service: service, leases: leases, lookups: lookups, forwarder: forwarder, forwarded: forwarded),
            lost: Counter(label: "browserd_leases_lost_total", factory: factory), logger: logger)
        placement = PlacementInterpreter(
            instanceID: leases.held.instanceID, lookups: lookups, forwarding: forwarder, holding: holding,
            forwardedOne: { forwarded.increment() }, logger: logger)
        leaseFollower = LeaseFollower(timing: timing, renewing: StoredLeaseRenewal(leases: leases), dropping: holding, describe: PostgresStore.describe)
        tokenFollower = TokenFollower(tokens: tokens, stored: stored, logger: logger)
    }

    /// Whether the database answered its last probe.
    public var databaseAnswers: Bool { holding.databaseAnswers }

    // MARK: Placement

    /// Where a new WebDriver session will live, as the facade decides it (`browserd:profileId`, else
    /// a profile token's own profile, else the shared profile named "webdriver"), so the instance
    /// that holds it makes the session. Nil: made here (a new shared profile, or an invalid request).
    /// - Throws: the database could not say whether the shared profile exists (making it here then
    ///   could make a second one: the request is refused instead, issue 53).
    func webDriverSessionProfile(_ request: HTTPRequest) async throws -> String? {
        if let id = RequestSubject.webDriverCapabilityProfile(request) { return id }
        if let own = tokens.tokenProfile(of: request) { return own.rawValue }
        // The oldest stored one, as the facade picks it among those it holds (the database knows a
        // profile as soon as its creation was answered; the directory may learn it a moment later).
        return try await stored.oldestProfile(named: "webdriver")
    }

    /// Whether a pipeline of reads (``Forwarder/pipelinePath``) came from another instance of this cluster.
    public func admitsPipeline(_ request: HTTPRequest) -> Bool { forwarder.isPipelineFromPeer(request) }

    /// Whether `request` was forwarded by another instance of this cluster (its peer proof holds).
    public func isFromPeer(_ request: HTTPRequest) -> Bool { forwarder.isFromPeer(request) }

    /// The answer of another instance (or a 503), or nil when this instance serves the request.
    public func place(_ request: HTTPRequest) async -> HTTPResponse? {
        let subject: Placement.Subject?
        if RequestSubject.isNewWebDriverSession(request, basePath: webDriverBasePath) {
            do {
                subject = try await webDriverSessionProfile(request).map(Placement.Subject.profile)
            } catch {
                return PlacementInterpreter.unavailable("The database cannot say which profile a new session belongs to; retry.", request)
            }
        } else {
            subject = RequestSubject(request)
        }
        return await placement.place(request, subject: subject)
    }

    /// Placement on the server thread, as far as memory and the caches take it; the rest goes on in a
    /// task from where it stopped (``PlacementInterpreter``). A new WebDriver session's profile may
    /// need a query to know: ``place(_:)`` places it.
    public func placeAtOnce(_ request: HTTPRequest) -> PlacedAtOnce {
        guard !RequestSubject.isNewWebDriverSession(request, basePath: webDriverBasePath) else { return .undecided }
        return placement.placeAtOnce(request, subject: RequestSubject(request))
    }

    /// Makes sure `profile` lives somewhere (for lists, which gather every profile's windows).
    func ensureHeld(_ profile: String) async throws { try await holding.ensureHeld(ProfileID(rawValue: profile)) }

    // MARK: Losing profiles

    /// A commit of `profile` was fenced out: another instance holds it now.
    public func fenced(_ profile: String) async { await leaseFollower.fenced(ProfileID(rawValue: profile)) }

    /// The database refused one of `profile`'s changes.
    public func refused(_ profile: String) async { await leaseFollower.refused(ProfileID(rawValue: profile)) }

    /// Drops a profile this instance no longer holds (memory may be ahead of the database after a
    /// failed commit).
    public func drop(_ profile: String, reason: LeaseKeeper.Reason) async { await holding.drop(ProfileID(rawValue: profile), reason: reason) }

    // MARK: Running

    /// Starts renewing leases, following lease moves, tokens and the directory, and probing the database.
    /// - Parameter databaseAnswers: told whether the database answers, at every probe.
    public func start(databaseAnswers: @escaping @Sendable (_ error: (any Error)?) -> Void) {
        let started = [leaseFollower.running(), followingMoves(), followingTokens(), probing(databaseAnswers)] + [residency.sweeping()].compactMap { $0 }
        loops.withLock { $0 = started }
        directory.start()
    }

    /// Follows lease moves announced by any instance (`LISTEN browserd_leases`): the owner cache
    /// forgets a profile as soon as its lease moves, and all of it whenever listening (re)starts.
    private func followingMoves() -> Task<Void, Never> {
        let (notifications, lookups) = (notifications, lookups)
        return Task {
            await notifications.watchMoves(listening: { lookups.forgetOwners() }, moved: { lookups.forgetOwner(of: ProfileID(rawValue: $0)) })
        }
    }

    /// Follows tokens issued and revoked by any instance (`LISTEN browserd_tokens`); reads every
    /// stored token whenever listening (re)starts.
    private func followingTokens() -> Task<Void, Never> {
        let (notifications, follower) = (notifications, tokenFollower)
        return Task {
            await notifications.watch(
                ClusterNotifications.tokenChannel,
                listening: { Task { await follower.reload() } },
                received: { payload in Task { await follower.changed(payload) } })
        }
    }

    /// Probes the database every ``ClusterTiming/databaseProbeEvery``: while it does not answer,
    /// placement answers 503 at once, and `databaseAnswers` is told (for /readyz).
    private func probing(_ report: @escaping @Sendable ((any Error)?) -> Void) -> Task<Void, Never> {
        let (every, store, holding) = (timing.databaseProbeEvery, store, holding)
        return Task.detached {
            while !Task.isCancelled {
                var failure: (any Error)?
                do { try await store.ping() } catch { failure = error }
                holding.databaseAnswers = failure == nil
                report(failure)
                try? await Task.sleep(for: every)
            }
        }
    }

    /// Stops renewing and gives every lease back, so other instances take the profiles at once.
    public func stop() async {
        for loop in loops.withLock({ $0 }) { loop.cancel() }
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
