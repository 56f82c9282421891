import BrowserModel
import BrowserServices
import HTTPServer

/// The API's problem types: one stable `type` per kind of error (all under `/problems/`), and the
/// mapping of model and service errors onto them.
enum APIProblem {
    static func malformedJSON(_ detail: String) -> HTTPError {
        HTTPError(400, kind: "malformed-json", title: "Malformed JSON", detail: "The body is not valid JSON: \(detail).")
    }

    static func invalidField(_ field: String, _ detail: String) -> HTTPError {
        let field = echo(field)
        return HTTPError(422, kind: "invalid-field", title: "Invalid Field", detail: "'\(field)' \(detail).", extensions: ["field": field])
    }

    /// Client-supplied text as a problem repeats it: at most 128 characters (then "…"), so an answer —
    /// which an idempotency key keeps for a day — never grows with what the client sent.
    static func echo(_ text: String) -> String {
        guard text.unicodeScalars.count > 128 else { return text }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.unicodeScalars.prefix(127))
        return String(scalars) + "…"
    }

    static func invalidQuery(_ parameter: String, _ detail: String) -> HTTPError {
        HTTPError(
            400, kind: "invalid-query", title: "Invalid Query Parameter", detail: "'\(parameter)' \(detail).",
            extensions: ["parameter": parameter])
    }

    static func unsupportedMediaType(_ given: String) -> HTTPError {
        HTTPError(
            415, kind: "unsupported-media-type", title: "Unsupported Media Type",
            detail: "Request bodies must be application/json; this one is \(given).",
            headers: ["Accept-Post": "application/json"])
    }

    static func preconditionFailed(current: Int) -> HTTPError {
        HTTPError(
            412, kind: "precondition-failed", title: "Precondition Failed",
            detail: "If-Match does not match: the window is at version \(current) (ETag \"v\(current)\"). Reload and retry.",
            headers: ["ETag": "\"v\(current)\""])
    }

    static func notFound(_ kind: String, _ what: String) -> HTTPError {
        HTTPError(404, kind: kind, title: "Not Found", detail: what)
    }

    static func windowNotFound(_ id: String) -> HTTPError { notFound("window-not-found", "Window \(echo(id)) does not exist.") }
    static func tabNotFound(_ id: String) -> HTTPError { notFound("tab-not-found", "Tab \(echo(id)) does not exist.") }
    static func profileNotFound(_ id: String) -> HTTPError { notFound("profile-not-found", "Profile \(echo(id)) does not exist.") }
    static func groupNotFound(_ id: String) -> HTTPError { notFound("group-not-found", "Group \(echo(id)) does not exist.") }

    /// A read of storage the request needed failed: nothing was changed, nothing made up.
    static var storageUnreadable: HTTPError {
        .storageUnavailable("Storage could not be read for this request; nothing was changed. Retry later.", retryAfter: 5)
    }

    /// The problem for an error of the model or the service.
    static func from(_ error: any Error) -> any Error {
        if let error = error as? ServiceError {
            switch error {
            case .versionMismatch(let current): return preconditionFailed(current: current)
            case .wrongProfileKind(let detail): return HTTPError(422, kind: "wrong-profile-kind", title: "Wrong Kind of Profile", detail: detail)
            case .storageFailed:
                return HTTPError.storageUnavailable("The change could not be saved to disk; it was not acknowledged. Retry later.", retryAfter: 5)
            case .storageUnreadable:
                return storageUnreadable
            case .tooManyStreams:
                return HTTPError(
                    503, kind: "too-many-streams", title: "Too Many Streams", detail: error.description.capitalizedFirst + ".",
                    headers: ["Retry-After": "10"])
            case .tooManyProfileStreams:
                return HTTPError(
                    429, kind: "too-many-profile-streams", title: "Too Many Streams for This Profile",
                    detail: error.description.capitalizedFirst + ".", headers: ["Retry-After": "10"])
            }
        }
        if let error = error as? RoutingError {
            let detail = error.description.capitalizedFirst + "."
            switch error {
            case .invalidRoute: return HTTPError(422, kind: "invalid-route", title: "Invalid Route", detail: detail)
            case .notHandled: return HTTPError(422, kind: "route-not-handled", title: "Route Not Handled", detail: detail)
            case .compositionFailed: return HTTPError(409, kind: "composition-failed", title: "Composition Failed", detail: detail)
            case .cannotBeDismissed: return HTTPError(409, kind: "cannot-be-dismissed", title: "Cannot Be Dismissed", detail: detail)
            case .interceptorRejected: return HTTPError(423, kind: "interceptor-rejected", title: "Locked", detail: detail)
            case .navigationInProgress:
                return HTTPError(
                    409, kind: "navigation-in-progress", title: "Navigation In Progress", detail: detail,
                    headers: ["Retry-After": "1"])
            case .notInNavigator: return HTTPError(409, kind: "not-in-navigator", title: "Not In Navigator", detail: detail)
            case .unknownNode: return HTTPError(409, kind: "node-not-presented", title: "Node Not Presented", detail: detail)
            }
        }
        guard let error = error as? ModelError else { return error }
        let detail = error.description.prefix(1).uppercased() + error.description.dropFirst() + "."
        switch error {
        case .tabNotFound(let id): return tabNotFound(id.rawValue)
        case .browserNotFound(let id): return windowNotFound(id.rawValue)
        case .profileNotFound(let id): return profileNotFound(id.rawValue)
        case .groupNotFound(let id): return groupNotFound(id.rawValue)
        case .closedTabNotFound: return notFound("closed-tab-not-found", detail)
        case .closingNotFound: return notFound("closing-not-found", detail)
        case .commandNotRegistered: return notFound("command-not-found", detail)
        case .unknownBroadcastKey: return notFound("broadcast-key-not-found", detail)
        case .indexOutOfRange: return HTTPError(422, kind: "index-out-of-range", title: "Index Out of Range", detail: detail)
        case .invalidURL: return HTTPError(422, kind: "invalid-url", title: "Invalid URL", detail: detail)
        case .titleTooLong: return HTTPError(422, kind: "invalid-title", title: "Invalid Title", detail: detail)
        case .openerNotInList: return HTTPError(422, kind: "opener-not-found", title: "Opener Not Found", detail: detail)
        case .groupInvariant: return HTTPError(422, kind: "group-invariant", title: "Group Invariant", detail: detail)
        case .invalidArgument, .notOffTheRecordCapable:
            return HTTPError(422, kind: "invalid-argument", title: "Invalid Argument", detail: detail)
        case .invalidCommandArguments:
            return HTTPError(422, kind: "invalid-command-arguments", title: "Invalid Command Arguments", detail: detail)
        case .broadcastTypeMismatch:
            return HTTPError(422, kind: "broadcast-type-mismatch", title: "Broadcast Type Mismatch", detail: detail)
        case .incognitoMismatch:
            return HTTPError(409, kind: "incognito-mismatch", title: "Incognito Mismatch", detail: detail)
        case .crossProfile: return HTTPError(409, kind: "cross-profile", title: "Cross-Profile Operation", detail: detail)
        case .limitReached: return HTTPError(409, kind: "limit-reached", title: "Limit Reached", detail: detail)
        case .pendingNavigationGone:
            return HTTPError(409, kind: "pending-navigation-gone", title: "Pending Navigation Gone", detail: detail)
        case .noWindowToRestoreInto: return HTTPError(409, kind: "no-window", title: "No Window", detail: detail)
        case .historiesNotLoaded, .snapshotsNotLoaded:
            // The service realizes every tab a request needs before running it again; this reaching
            // the edge means the histories (or pictures) could not be had (never answered with a made-up one).
            return storageUnreadable
        case .invalidStorageState(let member, _):
            return HTTPError(
                422, kind: "invalid-storage-state", title: "Invalid Storage State", detail: detail, extensions: ["member": member])
        case .profileFull:
            return HTTPError(507, kind: "profile-storage-full", title: "Profile Storage Full", detail: detail)
        case .tabAlreadyInList, .groupAlreadyExists, .batchInProgress, .commandAlreadyRegistered,
            .alreadyBroadcasting, .notBroadcasting:
            return HTTPError(409, kind: "conflict", title: "Conflict", detail: detail)
        }
    }
}

extension String {
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
