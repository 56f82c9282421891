import BrowserAPI
import BrowserModel
import BrowserPostgres
import BrowserRecords
import BrowserServices
import Foundation
import HTTPServer
import Logging
import Metrics
import Synchronization

/// One instance among several on one PostgreSQL database: each regular profile lives in the memory
/// of the instance that holds its lease; any instance takes any request and either serves it (the
/// profile is here, or nobody holds it and this instance takes it over) or forwards it to the owner.
///
/// - Placement: the profile a request names (by a profile, window, tab or group id, or a `profileId`
///   in the query or body) is found here first, then in the database; its owner comes from the
///   lease, cached until a `browserd_leases` notification says it moved.
/// - Takeover: a profile nobody holds (or whose lease expired) is acquired with a higher epoch and
///   restored from the database alone (that profile only), its tokens and stored answers included.
/// - Renewal: every lease is renewed each third of its time; one found taken over is dropped from
///   memory at once, and all are dropped when renewal has failed for most of a lease's time (the
///   database may have handed them on already).
final class ClusterMembership: Sendable {
    let leases: ProfileLeases
    let service: BrowserService
    let tokens: TokenStore
    let idempotency: IdempotencyStore
    let forwarder: RequestForwarder
    /// Every instance's profiles, for lists and the administrator's stream.
    let directory: ClusterDirectory
    let logger: Logger
    /// Where the WebDriver facade answers (its session commands are placed by session id).
    let webDriverBasePath: String?
    /// Whether requests must authenticate (an admin token is set): an anonymous request never makes
    /// this instance take a profile over or forward anything; it is answered 401 here.
    let authenticationOn: Bool
    /// Whether a request carries a valid credential (checked before anything is placed).
    let authentic: @Sendable (HTTPRequest) -> Bool
    private let store: PostgresStore
    private let owners = Mutex<[String: ProfileLeases.Owner]>([:])
    /// Which regular profile holds a window, tab or group, as the database said: ids never move to
    /// another profile, so an answer stays true (bounded; emptied when full).
    private let profileOfID = Mutex<[String: String]>([:])
    static let profileCacheLimit = 200_000
    private let takeovers = Mutex<[String: Task<Void, any Error>]>([:])
    private let renewal = Mutex<Task<Void, Never>?>(nil)
    private let listener = Mutex<Task<Void, Never>?>(nil)
    private let tokenListener = Mutex<Task<Void, Never>?>(nil)
    private let lastRenewal = Mutex(ContinuousClock.now)
    /// Whether the database answered its last probe: while it does not, a request this instance
    /// cannot serve from memory gets its 503 at once instead of after a query's deadline.
    let databaseAnswers = Mutex(true)
    let forwardedCounter: Counter
    let takeoverCounter: Counter
    let lostCounter: Counter

    var instanceID: String { leases.held.instanceID }

    /// Where the application keeps its membership once started (routes are built before).
    final class Slot: Sendable {
        private let value = Mutex<ClusterMembership?>(nil)
        var current: ClusterMembership? { value.withLock { $0 } }
        func set(_ membership: ClusterMembership) { value.withLock { $0 = membership } }
    }

    /// `responder`, placed first: forwarded when another instance holds the request's profile, and
    /// answered with this instance's name when served here.
    static func placing(_ responder: Responder, membership: Slot) -> Responder {
        .deferred { request in
            guard let cluster = membership.current else { return try await run(responder, request) }
            if let answer = await cluster.place(request) { return answer }
            var response: HTTPResponse
            do {
                response = try await run(responder, request)
            } catch let error as HTTPError {
                response = error.response(instance: request.path)
            }
            if case .shared(let shared) = response.body {
                response = HTTPResponse(status: shared.status, headers: shared.headers, body: .bytes(shared.body))
            }
            response.headers.set(RequestForwarder.instanceHeader, cluster.instanceID)
            return response
        }
    }

    private static func run(_ responder: Responder, _ request: HTTPRequest) async throws -> HTTPResponse {
        switch responder {
        case .immediate(let handle): try handle(request)
        case .deferred(let handle): try await handle(request)
        }
    }

    init(leases: ProfileLeases, store: PostgresStore, service: BrowserService, tokens: TokenStore, idempotency: IdempotencyStore,
         authenticationOn: Bool, webDriverBasePath: String?, secret: String, authentic: @escaping @Sendable (HTTPRequest) -> Bool,
         factory: any MetricsFactory, logger: Logger) {
        self.authentic = authentic
        self.webDriverBasePath = webDriverBasePath
        self.leases = leases
        self.store = store
        self.service = service
        self.tokens = tokens
        self.idempotency = idempotency
        self.authenticationOn = authenticationOn
        self.logger = logger
        forwarder = RequestForwarder(instanceID: leases.held.instanceID, secret: secret, logger: logger)
        directory = ClusterDirectory(leases: leases, service: service, logger: logger)
        forwardedCounter = Counter(label: "browserd_forwarded_requests_total", factory: factory)
        takeoverCounter = Counter(label: "browserd_lease_takeovers_total", factory: factory)
        lostCounter = Counter(label: "browserd_leases_lost_total", factory: factory)
    }

    // MARK: Placement

    /// What a request names, by the route's parameters, query or body.
    enum Subject {
        case profile(String)
        case window(String)
        case tab(String)
        case group(String)
    }

    func subject(of request: HTTPRequest) async -> Subject? {
        let parameters = request.pathParameters
        if let id = parameters["profileId"] { return .profile(id) }
        // A WebDriver session lives with its profile, which its id starts with (`p….uuid`).
        if let session = parameters["sessionId"] {
            guard let dot = session.firstIndex(of: "."), dot != session.startIndex else { return nil }
            return .profile(String(session[..<dot]))
        }
        if request.method == .post, let base = webDriverBasePath, request.routeTemplate == base + "/session" {
            return await webDriverSessionProfile(request).map(Subject.profile)
        }
        if let id = parameters["browserId"] { return .window(id) }
        if let id = parameters["tabId"] { return .tab(id) }
        if let id = parameters["groupId"] { return .group(id) }
        if let id = request.queryValue("profileId") { return .profile(id) }
        if request.method == .post, request.routeTemplate == "/v1/browsers",
           let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
           let id = body["profileId"] as? String {
            return .profile(id)
        }
        return nil
    }

    /// Where a new WebDriver session will live, as the facade decides it (`browserd:profileId`, else
    /// a profile token's own profile, else the shared profile named "webdriver"), so the instance
    /// that holds it makes the session. Nil: made here (a new shared profile, or an invalid request).
    func webDriverSessionProfile(_ request: HTTPRequest) async -> String? {
        if let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
           let capabilities = body["capabilities"] as? [String: Any] {
            let sets = [capabilities["alwaysMatch"] as? [String: Any] ?? [:]] + (capabilities["firstMatch"] as? [[String: Any]] ?? [])
            if let id = sets.lazy.compactMap({ $0["browserd:profileId"] as? String }).first { return id }
        }
        if let header = request.headers["Authorization"], header.lowercased().hasPrefix("bearer "),
           case .profile(let own)? = tokens.principal(for: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)) {
            return own.rawValue
        }
        // The oldest stored one, as the facade picks it among those it holds (the database knows a
        // profile as soon as its creation was answered; the directory may learn it a moment later).
        return try? await leases.oldestProfile(named: "webdriver")
    }

    /// The answer of another instance, or nil when this instance serves the request.
    func place(_ request: HTTPRequest) async -> HTTPResponse? {
        // Authenticated first: a request without a valid credential is answered 401 here by the API's
        // guard, and never moves a lease, asks another instance or reads the database.
        if authenticationOn, !authentic(request) { return nil }
        guard let subject = await subject(of: request) else { return nil }
        // Here already: served here.
        if rootHere(subject) != nil { return nil }
        guard databaseAnswers.withLock({ $0 }) else {
            return Self.unavailable("The database does not answer, so which instance holds this profile cannot be known; retry.", request)
        }
        do {
            guard let profile = try await storedProfile(subject) else {
                // The database never has off-the-record profiles and what they hold: their owners may.
                return try await placeOffTheRecord(subject, request)
            }
            switch try await owner(of: profile) {
            case .here:
                return nil
            case .elsewhere(let url, let owner):
                if forwarder.isFromPeer(request) {
                    // Forwarded to us, but we do not hold it: the lease moved meanwhile. Never a second hop.
                    logger.debug("a forwarded request's profile moved on", metadata: ["profile": "\(profile)", "owner": "\(owner)"])
                    return Self.unavailable("The profile is moving between instances; retry.", request)
                }
                forwardedCounter.increment()
                do {
                    let answer = try await forwarder.forward(request, to: url)
                    // The owner no longer holds it (moving): ask the database next time.
                    if answer.status == 503 { owners.withLock { $0[profile] = nil } }
                    return answer
                } catch {
                    owners.withLock { $0[profile] = nil }
                    logger.warning("forwarding failed", metadata: ["profile": "\(profile)", "owner": "\(owner)", "error": "\(error)"])
                    // An owner whose address refuses connections is gone: take its profiles now rather
                    // than after its lease expires. The request itself may or may not have reached it,
                    // so only a read is served at once; a change is answered 503, for the client to retry.
                    guard await RequestForwarder.refusesConnectionsOffThePool(url), (try? await takeOver(profile, replacing: owner)) != nil,
                          service.holdsProfile(ProfileID(rawValue: profile)) else {
                        return Self.unavailable("The instance that holds the profile did not answer; retry.", request)
                    }
                    if request.method == .get || request.method == .head { return nil }
                    return Self.unavailable("The instance that held the profile is gone and this one took it over; retry.", request)
                }
            }
        } catch {
            logger.warning("placement failed", metadata: ["error": "\(PostgresStore.describe(error))"])
            return Self.unavailable("The database cannot say which instance holds this profile; retry.", request)
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
        let (base, id): (String, String) = switch subject {
        case .profile(let id): ("/v1/profiles/", id)
        case .window(let id): ("/v1/browsers/", id)
        case .tab(let id): ("/v1/tabs/", id)
        case .group(let id): ("/v1/groups/", id)
        }
        return base + (id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)
    }

    /// The live owner of `profile` other than this instance, from the cache or the database (never
    /// taking the profile over).
    private func liveOwner(of profile: String) async throws -> ProfileLeases.Owner? {
        if let cached = owners.withLock({ $0[profile] }), cached.instanceID != instanceID { return cached }
        guard let owner = try await leases.owner(of: profile), owner.live, owner.instanceID != instanceID else { return nil }
        owners.withLock { $0[profile] = owner }
        return owner
    }

    private static func unavailable(_ detail: String, _ request: HTTPRequest) -> HTTPResponse {
        HTTPError.unavailable(detail, retryAfter: 1).response(instance: request.path)
    }

    private func rootHere(_ subject: Subject) -> ProfileID? {
        switch subject {
        case .profile(let id): service.rootProfile(of: ProfileID(rawValue: id))
        case .window(let id): service.rootProfile(ofWindow: BrowserID(rawValue: id))
        case .tab(let id): service.rootProfile(ofTab: TabID(rawValue: id))
        case .group(let id): service.rootProfile(ofGroup: TabGroupID(rawValue: id))
        }
    }

    /// The regular profile the database says holds the subject (cached: one query per id at most,
    /// while it exists).
    private func storedProfile(_ subject: Subject) async throws -> String? {
        let key: String = switch subject {
        case .profile(let id): id
        case .window(let id): id
        case .tab(let id): id
        case .group(let id): "group:" + id
        }
        if let known = profileOfID.withLock({ $0[key] }) { return known }
        let found: String? = switch subject {
        case .profile(let id): try await leases.profileExists(id) ? id : nil
        case .window(let id): try await leases.profile(ofWindow: id)
        case .tab(let id): try await leases.profile(ofTab: id)
        case .group(let id): try await leases.profile(ofGroup: id)
        }
        if let found {
            profileOfID.withLock { cache in
                if cache.count >= Self.profileCacheLimit { cache.removeAll(keepingCapacity: true) }
                cache[key] = found
            }
        }
        return found
    }

    enum Placement {
        case here
        case elsewhere(url: String, instanceID: String)
    }

    /// Where `profile` lives: a live owner elsewhere (cached), or here after taking it over.
    func owner(of profile: String) async throws -> Placement {
        if let cached = owners.withLock({ $0[profile] }), cached.instanceID != instanceID {
            return .elsewhere(url: cached.url, instanceID: cached.instanceID)
        }
        if let owner = try await leases.owner(of: profile), owner.live, owner.instanceID != instanceID {
            owners.withLock { $0[profile] = owner }
            return .elsewhere(url: owner.url, instanceID: owner.instanceID)
        }
        return try await takeOver(profile)
    }

    /// Takes `profile` and restores it here, once even if many requests ask at the same time.
    private func takeOver(_ profile: String, replacing unreachable: String? = nil) async throws -> Placement {
        let task = takeovers.withLock { running -> Task<Void, any Error> in
            if let task = running[profile] { return task }
            let task = Task { try await self.acquireAndRestore(profile, replacing: unreachable) }
            running[profile] = task
            return task
        }
        defer { takeovers.withLock { if $0[profile] == task { $0[profile] = nil } } }
        do {
            try await task.value
            return .here
        } catch let moved as MovedElsewhere {
            return .elsewhere(url: moved.url, instanceID: moved.instanceID)
        }
    }

    private struct MovedElsewhere: Error {
        let url: String
        let instanceID: String
    }

    private func acquireAndRestore(_ profile: String, replacing unreachable: String?) async throws {
        if service.holdsProfile(ProfileID(rawValue: profile)) { return }
        switch try await leases.acquire(profile, replacing: unreachable) {
        case .heldElsewhere(let instance, let url):
            throw MovedElsewhere(url: url, instanceID: instance)
        case .acquired(let epoch):
            let started = ContinuousClock.now
            do {
                let stored = try await store.load(profile: profile)
                guard !stored.profiles.isEmpty else {
                    // Deleted meanwhile: nothing to hold (the request is answered 404 here).
                    try? await leases.release([profile])
                    profileOfID.withLock { cache in cache = cache.filter { $0.value != profile } }
                    return
                }
                let summary = try await service.restoreProfile(stored)
                tokens.restore(stored.tokens.map {
                    TokenStore.Record(id: $0.id, profileID: ProfileID(rawValue: $0.profileID), hash: $0.hash, createdAt: $0.createdAt)
                })
                idempotency.restore(stored.idempotency)
                owners.withLock { $0[profile] = nil }
                takeoverCounter.increment()
                logger.notice("took a profile over", metadata: [
                    "profile": "\(profile)", "epoch": "\(epoch)", "windows": "\(summary.windows)", "tabs": "\(summary.tabs)",
                    "duration": "\(ContinuousClock.now - started)",
                ])
            } catch {
                // Not restored: give the lease back so this or another instance can try again.
                try? await leases.release([profile])
                throw error
            }
        }
    }

    /// A lease moved (notification from the database): forget where it was.
    func leaseMoved(_ profile: String) {
        owners.withLock { $0[profile] = nil }
    }

    // MARK: Losing profiles

    /// Drops a profile this instance no longer holds (lost at renewal, or a commit was fenced out).
    func dropProfile(_ profile: String, reason: String) async {
        leases.forget(profile)
        owners.withLock { $0[profile] = nil }
        guard service.holdsProfile(ProfileID(rawValue: profile)) else { return }
        await service.unloadProfile(ProfileID(rawValue: profile))
        lostCounter.increment()
        logger.warning("dropped a profile another instance holds now", metadata: ["profile": "\(profile)", "reason": "\(reason)"])
    }

    // MARK: Renewal

    /// Follows lease moves announced by any instance (`LISTEN browserd_leases`): the owner cache
    /// forgets a profile as soon as its lease moves, and all of it whenever listening (re)starts.
    func startListening() {
        listener.withLock { task in
            task = Task { [weak self] in
                guard let leases = self?.leases else { return }
                await leases.watchMoves(listening: { [weak self] in self?.owners.withLock { $0.removeAll() } },
                                        moved: { [weak self] profile in self?.leaseMoved(profile) })
            }
        }
    }

    /// Follows tokens issued and revoked by any instance (`LISTEN browserd_tokens`); reads every
    /// stored token whenever listening (re)starts.
    func startFollowingTokens() {
        tokenListener.withLock { task in
            task = Task { [weak self] in
                guard let leases = self?.leases else { return }
                await leases.watch(ProfileLeases.tokenChannel, listening: { [weak self] in
                    Task { await self?.reloadTokens() }
                }, received: { [weak self] payload in
                    Task { await self?.tokenChanged(payload) }
                })
            }
        }
    }

    private func reloadTokens() async {
        do {
            tokens.replaceAll(try await leases.storedTokens().map(Self.tokenRecord))
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
            if let record = try await leases.storedToken(payload) {
                tokens.restore([Self.tokenRecord(record)])
            } else {
                tokens.forget(payload)
            }
        } catch {
            // Unknown state: forget it (safe: a valid token is read again at the next reload).
            tokens.forget(payload)
        }
    }

    static func tokenRecord(_ record: TokenRecord) -> TokenStore.Record {
        TokenStore.Record(id: record.id, profileID: ProfileID(rawValue: record.profileID), hash: record.hash, createdAt: record.createdAt)
    }

    func startRenewing() {
        let interval = Duration.milliseconds(Int64(leases.ttlSeconds * 1000 / 3))
        let deadline = Duration.milliseconds(Int64(leases.ttlSeconds * 1000 * 0.8))
        renewal.withLock { task in
            task = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard let self, !Task.isCancelled else { return }
                    do {
                        let lost = try await self.leases.renew()
                        self.lastRenewal.withLock { $0 = .now }
                        for profile in lost { await self.dropProfile(profile, reason: "its lease was taken over") }
                    } catch {
                        // The database may already have handed our profiles on: stop serving them in time.
                        if ContinuousClock.now - self.lastRenewal.withLock({ $0 }) > deadline {
                            for profile in self.leases.held.all.keys {
                                await self.dropProfile(profile, reason: "leases could not be renewed: \(PostgresStore.describe(error))")
                            }
                        }
                    }
                }
            }
        }
    }

    /// Stops renewing and gives every lease back, so other instances take the profiles at once.
    func stop() async {
        renewal.withLock { $0?.cancel() }
        listener.withLock { $0?.cancel() }
        tokenListener.withLock { $0?.cancel() }
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
