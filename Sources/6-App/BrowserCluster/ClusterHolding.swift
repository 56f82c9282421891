import BrowserAPI
import BrowserModel
public import BrowserPostgres
import BrowserRecords
import BrowserResidency
import BrowserServices
public import ClusterCore
import HTTPServer
import Logging
import Metrics
import Synchronization

/// This instance's side of placement: which profiles it holds (the ``ProfileResidency``), taking one
/// over, dropping one it no longer holds, and whether the database answers. It is placement's
/// ``PlacementHolding`` and the lease follower's ``ProfileDropping``.
final class ClusterHolding: PlacementHolding, ProfileDropping {
    let residency: ProfileResidency
    let leases: ProfileLeases
    let lookups: ClusterLookups
    let offTheRecord: OffTheRecordSearch
    let lost: Counter
    let logger: Logger
    private let answers = Atomic(true)

    var service: BrowserService { residency.service }

    init(residency: ProfileResidency, leases: ProfileLeases, lookups: ClusterLookups, offTheRecord: OffTheRecordSearch, lost: Counter, logger: Logger) {
        self.residency = residency
        self.leases = leases
        self.lookups = lookups
        self.offTheRecord = offTheRecord
        self.lost = lost
        self.logger = logger
    }

    func holdsHere(_ subject: Placement.Subject) -> Bool { residency.root(of: subject).map { residency.touch($0) } ?? false }

    /// Whether the database answered its last probe: while it does not, a request this instance cannot
    /// serve from memory gets its 503 at once instead of after a query's deadline.
    var databaseAnswers: Bool {
        get { answers.load(ordering: .relaxed) }
        set { answers.store(newValue, ordering: .relaxed) }
    }

    /// Takes `profile` and restores it here, once even if many requests ask at the same time (the
    /// ``ProfileResidency``'s single flight; a profile being dropped for idleness is waited for).
    func takeOver(_ id: ProfileID, replacing unreachable: InstanceID?) async -> Placement.Takeover {
        let profile = id
        do {
            try await residency.bringIn(id, replacing: unreachable)
            // Its old owner is no longer asked.
            lookups.forgetOwner(of: profile)
            // Deleted meanwhile: nothing to hold (the request is answered 404 here).
            if !service.holdsProfile(id) { lookups.forgetProfile(profile) }
            return .here
        } catch let moved as ClusterResidencyBackend.MovedElsewhere {
            return .elsewhere(moved.owner)
        } catch {
            logger.warning("takeover failed", metadata: ["profile": "\(profile)", "error": "\(PostgresStore.describe(error))"])
            return .failed
        }
    }

    func placeOffTheRecord(_ subject: Placement.Subject, _ request: HTTPRequest) async throws -> HTTPResponse? {
        try await offTheRecord.place(subject, request)
    }

    /// Makes sure `profile` lives somewhere: here already, elsewhere (a live owner), or here after
    /// taking it over. For lists, which gather every profile's windows.
    /// - Throws: ``TakeoverFailed`` when nobody holds it and taking it over failed (a list without its
    ///   windows would be a made-up answer), or the database's error.
    func ensureHeld(_ profile: ProfileID) async throws {
        if try await lookups.liveOwner(of: profile) != nil { return }
        if case .failed = await takeOver(profile, replacing: nil) { throw TakeoverFailed(profile: profile) }
    }

    /// Why a profile leaves memory, as the residency names it.
    static func dropReason(_ reason: LeaseKeeper.Reason) -> ResidencyMachine.DropReason {
        switch reason {
        case .takenOver, .renewalFailing: .leaseLost
        case .fenced: .fenced
        case .refused: .refused
        case .commitFailed: .commitFailed
        }
    }

    /// Nobody holds a profile and taking it over failed.
    struct TakeoverFailed: Error {
        let profile: ProfileID
    }

    /// Drops a profile this instance no longer holds (lost at renewal, fenced, refused, or memory may
    /// be ahead of the database after a failed commit).
    func drop(_ profile: ProfileID, reason: LeaseKeeper.Reason) async {
        leases.forget(profile.rawValue)
        lookups.forgetOwner(of: profile)
        // Through the residency's one door: after a load under way, never beside another drop.
        guard await residency.drop(profile, reason: Self.dropReason(reason)) else { return }
        lost.increment()
        logger.warning("dropped a profile", metadata: ["profile": "\(profile)", "reason": "\(reason)"])
    }
}

/// The database's lease renewal, as the ``LeaseFollower`` asks it (the store's ids are strings, the
/// cluster's decisions take ``ProfileID``s: converted here, once).
struct StoredLeaseRenewal: LeaseRenewing {
    let leases: ProfileLeases

    func renew() async throws -> Set<ProfileID> { Set(try await leases.renew().map(ProfileID.init(rawValue:))) }

    var heldProfiles: [ProfileID] { leases.held.all.keys.map(ProfileID.init(rawValue:)) }
}

/// The stored tokens, as the ``TokenFollower`` reads them.
extension StoredLookups: StoredTokenReading {}
