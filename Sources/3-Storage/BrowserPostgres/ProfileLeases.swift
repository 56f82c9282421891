public import BrowserRecords
import Foundation
public import Logging
import PostgresNIO
import Synchronization

/// Ownership of profiles among the instances that share one database: a lease per regular profile
/// (owner, its advertised URL, an epoch that only grows, an expiry on the database's clock).
///
/// - ``acquire(_:)`` takes a profile nobody holds, or whose lease expired, with a higher epoch.
/// - ``renew()`` extends every held lease in one statement; those it no longer finds are lost.
/// - Every commit of a profile's changes checks the epoch in the same transaction (``PostgresStore``'s
///   fence), so an owner paused past its lease can never write over its successor.
/// - Lease moves are announced on `LISTEN browserd_leases` (payload: the profile id).
public final class ProfileLeases: Sendable {
    public enum Claim: Sendable, Equatable {
        case acquired(epoch: LeaseEpoch)
        /// Another live instance holds it.
        case heldElsewhere(instanceID: InstanceID, url: String)
    }

    public struct Owner: Sendable, Equatable {
        public let instanceID: InstanceID
        public let url: String
        public let epoch: LeaseEpoch
        /// Whether the lease has not expired.
        public let live: Bool
    }

    public let held: HeldLeases
    public var advertiseURL: String { held.advertiseURL }
    public var ttlSeconds: Double { held.ttlSeconds }
    let store: PostgresStore
    let logger: Logger

    public init(store: PostgresStore, held: HeldLeases, logger: Logger) {
        self.store = store
        self.held = held
        self.logger = logger
    }

    /// Takes `profile` when nobody holds it or its lease expired (or this instance holds it already).
    /// A lease held at this instance's own advertised address is taken at once: it is a previous run
    /// of this instance (this process has that address now, so that one is gone).
    /// - Parameter unreachable: an owner known to be gone (its address refuses connections): its lease
    ///   is taken before it expires. Safe whatever the truth: fencing stops its writes if it lives.
    public func acquire(_ profile: String, replacing unreachable: InstanceID? = nil) async throws -> Claim {
        try await store.said { [self] in
            let me = held.instanceID.rawValue
            let url = advertiseURL
            let ttl = ttlSeconds
            let logger = logger
            let epoch: Int64? = try await store.client.withTransaction(logger: logger) { connection in
                var epoch: Int64?
                for try await value in try await connection.query(
                    """
                    INSERT INTO profile_leases (profile_id, owner_id, owner_url, epoch, expires_at)
                    VALUES (\(profile), \(me), \(url), 1, now() + make_interval(secs => \(ttl)))
                    ON CONFLICT (profile_id) DO UPDATE SET owner_id = excluded.owner_id, owner_url = excluded.owner_url,
                    epoch = profile_leases.epoch + 1, expires_at = excluded.expires_at
                    WHERE profile_leases.owner_id = excluded.owner_id OR profile_leases.expires_at < now()
                    OR profile_leases.owner_url = excluded.owner_url OR profile_leases.owner_id = \(unreachable?.rawValue ?? "")
                    RETURNING epoch
                    """, logger: logger
                ).decode(Int64.self) { epoch = value }
                if epoch != nil {
                    try await connection.query("SELECT pg_notify(\(ClusterNotifications.leaseChannel), \(profile))", logger: logger)
                }
                return epoch
            }
            if let epoch {
                held.set(profile, epoch: LeaseEpoch(epoch))
                return .acquired(epoch: LeaseEpoch(epoch))
            }
            guard let owner = try await owner(of: profile) else { return try await acquire(profile, replacing: unreachable) }
            return .heldElsewhere(instanceID: owner.instanceID, url: owner.url)
        }
    }

    /// Who holds `profile`, if anyone ever did.
    public func owner(of profile: String) async throws -> Owner? {
        try await store.said { [self] in
            var owner: Owner?
            for try await (id, url, epoch, live) in try await store.client.query(
                """
                SELECT owner_id, owner_url, epoch, expires_at > now() FROM profile_leases WHERE profile_id = \(profile)
                """, logger: logger
            ).decode((String, String, Int64, Bool).self) {
                owner = Owner(instanceID: InstanceID(id), url: url, epoch: LeaseEpoch(epoch), live: live)
            }
            return owner
        }
    }

    /// Extends every lease this instance holds.
    /// - Returns: the profiles whose leases were not found any more (taken over): no longer held.
    public func renew() async throws -> Set<String> {
        let claims = held.all
        guard !claims.isEmpty else { return [] }
        let me = held.instanceID.rawValue
        let ttl = ttlSeconds
        let kept: Set<String> = try await store.said { [self] in
            var kept: Set<String> = []
            for try await profile in try await store.client.query(
                """
                UPDATE profile_leases AS l SET expires_at = now() + make_interval(secs => \(ttl))
                FROM unnest(\(Array(claims.keys))::text[], \(claims.values.map(\.value))::int8[]) AS c(profile_id, epoch)
                WHERE l.profile_id = c.profile_id AND l.epoch = c.epoch AND l.owner_id = \(me)
                RETURNING l.profile_id
                """, logger: logger
            ).decode(String.self) { kept.insert(profile) }
            return kept
        }
        let lost = Set(claims.keys).subtracting(kept)
        for profile in lost where held.epoch(of: profile) == claims[profile] { held.remove(profile) }
        return lost
    }

    /// Gives `profiles` up at once (shutdown, or the profile was deleted), so another instance can
    /// take them without waiting for the expiry.
    public func release(_ profiles: [String]) async throws {
        let claims = profiles.compactMap { profile in held.epoch(of: profile).map { (profile, $0) } }
        for (profile, _) in claims { held.remove(profile) }
        guard !claims.isEmpty else { return }
        let me = held.instanceID.rawValue
        try await store.said { [self] in
            try await store.client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    """
                    UPDATE profile_leases AS l SET expires_at = now() - interval '1 second'
                    FROM unnest(\(claims.map(\.0))::text[], \(claims.map(\.1.value))::int8[]) AS c(profile_id, epoch)
                    WHERE l.profile_id = c.profile_id AND l.epoch = c.epoch AND l.owner_id = \(me)
                    """, logger: logger)
                for (profile, _) in claims {
                    try await connection.query("SELECT pg_notify(\(ClusterNotifications.leaseChannel), \(profile))", logger: logger)
                }
            }
        }
    }

    /// Forgets a lease without touching the database (it was lost, or its profile dropped).
    public func forget(_ profile: String) { held.remove(profile) }

    /// The instances that hold a live lease (other than this one): their ids and advertised URLs.
    public func otherLiveInstances() async throws -> [(instanceID: InstanceID, url: String)] {
        let me = held.instanceID.rawValue
        return try await store.said { [self] in
            var found: [(instanceID: InstanceID, url: String)] = []
            for try await (id, url) in try await store.client.query(
                """
                SELECT DISTINCT owner_id, owner_url FROM profile_leases WHERE expires_at > now() AND owner_id <> \(me) ORDER BY owner_id
                """, logger: logger
            ).decode((String, String).self) {
                found.append((InstanceID(id), url))
            }
            return found
        }
    }

    /// The stored regular profiles no live lease holds (nobody serves them until an instance takes them).
    public func unheldProfiles() async throws -> [String] {
        try await store.said { [self] in
            var found: [String] = []
            for try await id in try await store.client.query(
                """
                SELECT p.id FROM profiles p LEFT JOIN profile_leases l ON l.profile_id = p.id AND l.expires_at > now()
                WHERE l.profile_id IS NULL ORDER BY p.created_at, p.id
                """, logger: logger
            ).decode(String.self) {
                found.append(id)
            }
            return found
        }
    }

}
