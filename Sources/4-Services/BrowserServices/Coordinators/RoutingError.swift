/// Why a route or a presentation command was refused; nothing changed.
public enum RoutingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not a route browserd knows (unknown host, path or parameter).
    case invalidRoute(String)
    /// The window cannot take this route (e.g. the tab is not in it).
    case notHandled(String)
    /// The destination cannot be built from here.
    case compositionFailed(String)
    /// A screen on the way cannot be dismissed (a share sheet).
    case cannotBeDismissed(String)
    /// An interceptor refused (the incognito lock).
    case interceptorRejected(String)
    /// Another navigation of this window is running.
    case navigationInProgress
    /// The command is not among those the sending screen may send.
    case notInNavigator(command: String, node: String)
    /// `from` names no presented screen.
    case unknownNode(String)

    public var description: String {
        switch self {
        case .invalidRoute(let what): what
        case .notHandled(let what): what
        case .compositionFailed(let what): what
        case .cannotBeDismissed(let what): what
        case .interceptorRejected(let what): what
        case .navigationInProgress: "another navigation of this window is in progress"
        case .notInNavigator(let command, let node): "screen \(node) may not send \(command)"
        case .unknownNode(let id): "no screen \(id) is presented in this window"
        }
    }
}
