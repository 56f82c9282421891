import BrowserModel
import BrowserPostgres
import BrowserRecords
import ClusterCore
import Synchronization

/// Who holds what, for placement and lists: the ``OwnerCache`` in front of the database's lease and
/// lookup queries. A query's failure is thrown as a ``Failure`` that says what the database said.
final class ClusterLookups: PlacementLookups {
    let instanceID: InstanceID
    let leases: ProfileLeases
    let stored: StoredLookups
    private let cache = Mutex(OwnerCache())

    /// The database could not be read (its error, described without secrets).
    struct Failure: Error, CustomStringConvertible {
        let description: String

        init(_ error: any Error) { description = PostgresStore.describe(error) }
    }

    init(leases: ProfileLeases, stored: StoredLookups) {
        instanceID = leases.held.instanceID
        self.leases = leases
        self.stored = stored
    }

    func knownProfile(holding subject: Placement.Subject) -> ProfileID? { cache.withLock { $0.profile(holding: subject) } }

    func knownOwner(of profile: ProfileID) -> Placement.Owner? {
        guard let owner = cache.withLock({ $0.owner(of: profile) }), owner.instanceID != instanceID else { return nil }
        return owner
    }

    func storedProfile(holding subject: Placement.Subject) async throws -> ProfileID? {
        if let known = knownProfile(holding: subject) { return known }
        let raw: String? = try await described {
            switch subject {
            case .profile(let id): try await stored.profileExists(id) ? id : nil
            case .window(let id): try await stored.profile(ofWindow: id)
            case .tab(let id): try await stored.profile(ofTab: id)
            case .group(let id): try await stored.profile(ofGroup: id)
            }
        }
        let found = raw.map(ProfileID.init(rawValue:))
        if let found { remember(profile: found, holding: subject) }
        return found
    }

    func owner(of profile: ProfileID) async throws -> Placement.Owner? {
        if let known = knownOwner(of: profile) { return known }
        guard let lease = try await described({ try await leases.owner(of: profile.rawValue) }) else { return nil }
        let owner = Placement.Owner(instanceID: lease.instanceID, url: lease.url, live: lease.live)
        if owner.live, owner.instanceID != instanceID { cache.withLock { $0.remember(owner, of: profile) } }
        return owner
    }

    /// The live owner of `profile` other than this instance, known or from the database (never taking
    /// the profile over).
    func liveOwner(of profile: ProfileID) async throws -> Placement.Owner? {
        guard let owner = try await owner(of: profile), owner.live, owner.instanceID != instanceID else { return nil }
        return owner
    }

    func forgetOwner(of profile: ProfileID) { cache.withLock { $0.forgetOwner(of: profile) } }

    /// Lease moves may have been missed (listening restarted): forget every owner.
    func forgetOwners() { cache.withLock { $0.forgetOwners() } }

    /// `profile` was deleted: what it held is no longer its.
    func forgetProfile(_ profile: ProfileID) { cache.withLock { $0.forgetProfile(profile) } }

    func remember(profile: ProfileID, holding subject: Placement.Subject) { cache.withLock { $0.remember(profile: profile, holding: subject) } }

    private func described<T>(_ query: () async throws -> T) async throws -> T {
        do { return try await query() } catch { throw Failure(error) }
    }
}
