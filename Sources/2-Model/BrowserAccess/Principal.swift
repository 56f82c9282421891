public import BrowserModel

/// Who is calling: the administrator, a profile's token (which reaches only that profile, its
/// incognito profile, and their windows and tabs), or a renderer's token (which reaches the profiles
/// the renderer holds when the request comes, and its own registration).
public enum Principal: Sendable, Equatable {
    case admin
    case profile(ProfileID)
    /// A renderer's token: its name, and the regular profiles it held when the request came.
    case renderer(String, holds: Set<ProfileID>)

    /// The caller of the request being handled (set by the API's guard for the handler's duration).
    @TaskLocal public static var current: Principal = .admin

    /// The id of the profile token the request being handled came with (directly or through a stream
    /// ticket); nil for the administrator or with authentication off. What it opens ends when that
    /// token is revoked.
    @TaskLocal public static var tokenID: String? = nil

    /// The key under which this caller's idempotency keys live.
    package var scope: String {
        switch self {
        case .admin: "admin"
        case .profile(let id): "profile:\(id)"
        case .renderer(let name, _): "renderer:\(name)"
        }
    }

    /// Whether the caller may see resources of the regular profile `root`.
    public func reaches(_ root: ProfileID?) -> Bool {
        switch self {
        case .admin: true
        case .profile(let mine): root == nil || root == mine
        case .renderer(_, let holds): root.map { holds.contains($0) } ?? true
        }
    }
}
