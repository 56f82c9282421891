/// The bytes of text one profile holds — its tabs' navigation histories (URLs and titles) and its
/// recently closed tabs — against a limit (`ModelLimits.profileBytes`), so that no tenant can make
/// the server hold more than that in memory or on disk.
///
/// Kept incrementally, O(what changed): a tab charges its profile's budget when it joins one of the
/// profile's windows and gives its bytes back when it leaves; its history reports each change in
/// size; the recently-closed list charges what it records and gives back what it drops. An
/// off-the-record profile shares its regular profile's budget (one tenant, one budget).
///
/// Growth is checked before it happens (``check(adding:)``, which the commands that add text call);
/// charging itself never fails, so what is already held (a restore, a close) is always accounted.
public final class ByteBudget {
    /// The most bytes the profile may hold.
    public let limit: Int
    /// The bytes it holds now.
    public private(set) var used = 0

    public init(limit: Int) { self.limit = limit }

    /// Refuses growth by `bytes` that would take the profile past its limit.
    /// - Throws: ``ModelError/profileFull(used:adding:limit:)``.
    public func check(adding bytes: Int) throws(ModelError) {
        guard bytes <= 0 || used + bytes <= limit else {
            throw ModelError.profileFull(used: used, adding: bytes, limit: limit)
        }
    }

    /// Adds `delta` (negative: gives bytes back).
    func charge(_ delta: Int) { used += delta }
}

extension NavigationItem {
    /// The bytes this entry's text holds (URL and title, UTF-8).
    var byteCount: Int { url.utf8.count + title.utf8.count }
}
