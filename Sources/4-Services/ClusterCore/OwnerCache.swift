public import BrowserModel

/// What placement remembers between requests, so most requests ask the database nothing:
///
/// - which instance holds a profile's lease (forgotten when a `browserd_leases` notification says the
///   lease moved, when the owner answers 503 or cannot be reached, and wholly whenever listening for
///   notifications (re)starts: a move may have been missed);
/// - which stored regular profile holds a window, tab or group (ids never move between profiles, so an
///   answer stays true while the id exists).
///
/// Both are bounded (``limit`` entries each; a full map is emptied: it refills from the database).
public struct OwnerCache: Sendable {
    public static let defaultLimit = 200_000

    public let limit: Int
    private var owners: [ProfileID: Placement.Owner] = [:]
    private var profiles: [String: ProfileID] = [:]

    public init(limit: Int = OwnerCache.defaultLimit) { self.limit = max(1, limit) }

    /// The remembered owner of `profile`.
    public func owner(of profile: ProfileID) -> Placement.Owner? { owners[profile] }

    public mutating func remember(_ owner: Placement.Owner, of profile: ProfileID) {
        if owners.count >= limit, owners[profile] == nil { owners.removeAll(keepingCapacity: true) }
        owners[profile] = owner
    }

    /// The lease of `profile` moved (or its owner did not answer): ask the database next time.
    public mutating func forgetOwner(of profile: ProfileID) { owners[profile] = nil }

    /// Lease moves may have been missed: forget every owner.
    public mutating func forgetOwners() { owners.removeAll() }

    /// The stored regular profile that holds `subject`, as the database said.
    public func profile(holding subject: Placement.Subject) -> ProfileID? { profiles[Self.key(subject)] }

    public mutating func remember(profile: ProfileID, holding subject: Placement.Subject) {
        let key = Self.key(subject)
        if profiles.count >= limit, profiles[key] == nil { profiles.removeAll(keepingCapacity: true) }
        profiles[key] = profile
    }

    /// `profile` was deleted: what it held is no longer its.
    public mutating func forgetProfile(_ profile: ProfileID) {
        profiles = profiles.filter { $0.value != profile }
        owners[profile] = nil
    }

    /// Windows, tabs and profiles have ids of distinct kinds; a group's id is only unique in its kind.
    private static func key(_ subject: Placement.Subject) -> String {
        switch subject {
        case .profile(let id), .window(let id), .tab(let id): id
        case .group(let id): "group:" + id
        }
    }
}
