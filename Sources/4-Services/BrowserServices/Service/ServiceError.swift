/// Errors of the service façade that the model does not know.
public enum ServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `If-Match` named another version of the window.
    case versionMismatch(current: Int)
    /// The profile is the off-the-record one where a regular profile is needed, or the reverse.
    case wrongProfileKind(String)
    /// The change could not be made durable (disk full, I/O error, read-only file).
    case storageFailed(String)
    /// Something the request needs could not be read from storage (a tab's history, a profile): the
    /// request changed nothing, and nothing was made up in its place.
    case storageUnreadable(String)
    /// As many event streams are open as the server allows.
    case tooManyStreams(Int)
    /// As many event streams are open for this profile as allowed.
    case tooManyProfileStreams(Int)

    public var description: String {
        switch self {
        case .versionMismatch(let current): "the window is at version \(current); reload it and try again"
        case .wrongProfileKind(let what): what
        case .storageFailed(let reason): "the change could not be saved: \(reason)"
        case .storageUnreadable(let reason): "storage could not be read: \(reason)"
        case .tooManyStreams(let cap): "the server already serves its maximum of \(cap) event streams; retry later"
        case .tooManyProfileStreams(let cap): "this profile already has its maximum of \(cap) event streams open; close one first"
        }
    }
}
