/// A broken precondition of the model, reported instead of crashing.
///
/// Chromium treats these as programming errors (a `CHECK`); browserd's callers are remote clients, so
/// every precondition is checked and reported with enough detail for a clear API answer, and the
/// model is left unchanged.
public enum ModelError: Error, Equatable, Sendable, CustomStringConvertible {
    case indexOutOfRange(index: Int, validRange: ClosedRange<Int>?)
    case tabNotFound(TabID)
    case tabAlreadyInList(TabID)
    case browserNotFound(BrowserID)
    case profileNotFound(ProfileID)
    case groupNotFound(TabGroupID)
    case groupAlreadyExists(TabGroupID)
    case openerNotInList(TabID)
    case invalidURL(String, reason: String)
    case titleTooLong(length: Int, limit: Int)
    case invalidArgument(String)
    case groupInvariant(String)
    case incognitoMismatch(String)
    case crossProfile(String)
    case limitReached(what: String, limit: Int)
    case batchInProgress
    case commandNotRegistered(String)
    case commandAlreadyRegistered(String, handler: String)
    case invalidCommandArguments(command: String, reason: String)
    case unknownBroadcastKey(String)
    case broadcastTypeMismatch(key: String, expected: String)
    case alreadyBroadcasting(String)
    case notBroadcasting(String)
    case noWindowToRestoreInto
    case closedTabNotFound(ClosedTabID)
    /// A close-all that is not (or no longer) undoable: confirmed, undone, or never made.
    case closingNotFound(ClosedTabID)
    case notOffTheRecordCapable(String)
    /// The profile's text (histories, titles, recently closed) would pass its byte budget.
    case profileFull(used: Int, adding: Int, limit: Int)
    /// A web state member is malformed or past one of Chromium's limits (`member`: `cookies[3].value`);
    /// the reason never quotes a value (cookies are secrets).
    case invalidStorageState(member: String, reason: String)
    /// The operation needs the histories of these unrealized tabs; nothing was changed. The service
    /// reads them from storage, realizes the tabs and runs the operation again (see ``WebState``).
    /// The tab has no pending navigation with this id (it committed, was discarded or replaced).
    case pendingNavigationGone(TabID, id: Int)
    case historiesNotLoaded([TabID])
    /// The operation must keep the pictures of these tabs, whose bytes only storage holds (a tab read
    /// from storage knows its picture without them); nothing was changed. The service reads them,
    /// gives each to its tab (``WebState/holdSnapshotBytes(_:)``) and runs the operation again.
    case snapshotsNotLoaded([TabID])

    /// The tabs whose stored history or picture the operation asked for (``historiesNotLoaded(_:)``,
    /// ``snapshotsNotLoaded(_:)``), or nil.
    public var notLoaded: [TabID]? {
        switch self {
        case .historiesNotLoaded(let ids), .snapshotsNotLoaded(let ids): ids
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .indexOutOfRange(let index, let range):
            if let range { "index \(index) is out of range \(range.lowerBound)…\(range.upperBound)" } else { "index \(index) is out of range: the list is empty" }
        case .profileFull(let used, let adding, let limit):
            "the profile holds \(used) bytes of history and titles; \(adding) more would pass its limit of \(limit) (close tabs or clear recently closed tabs to make room)"
        case .invalidStorageState(let member, let reason): "\(member) \(reason)"
        case .tabNotFound(let id): "tab \(id) does not exist"
        case .tabAlreadyInList(let id): "tab \(id) is already in a window"
        case .browserNotFound(let id): "window \(id) does not exist"
        case .profileNotFound(let id): "profile \(id) does not exist"
        case .groupNotFound(let id): "group \(id) does not exist in this window"
        case .groupAlreadyExists(let id): "group \(id) already exists"
        case .openerNotInList(let id): "opener tab \(id) is not in this window"
        case .invalidURL(let url, let reason): "'\(url.prefix(200))' is not a valid URL: \(reason)"
        case .titleTooLong(let length, let limit): "title has \(length) characters; the limit is \(limit)"
        case .invalidArgument(let what): what
        case .groupInvariant(let what): what
        case .incognitoMismatch(let what): what
        case .crossProfile(let what): what
        case .limitReached(let what, let limit): "limit reached: at most \(limit) \(what)"
        case .batchInProgress: "a batch operation is already in progress (batches cannot nest)"
        case .commandNotRegistered(let name): "no handler is registered for command '\(name)'"
        case .commandAlreadyRegistered(let name, let handler): "command '\(name)' is already handled by \(handler)"
        case .invalidCommandArguments(let command, let reason): "bad arguments for '\(command)': \(reason)"
        case .unknownBroadcastKey(let key): "'\(key)' is not a declared broadcast key"
        case .broadcastTypeMismatch(let key, let expected): "'\(key)' takes a \(expected)"
        case .alreadyBroadcasting(let key): "'\(key)' is already being broadcast"
        case .notBroadcasting(let key): "'\(key)' is not being broadcast"
        case .noWindowToRestoreInto: "the profile has no window to restore the tab into"
        case .closedTabNotFound(let id): "recently closed entry \(id) does not exist"
        case .closingNotFound(let id): "close-all \(id) cannot be undone: it was confirmed or undone, or does not exist"
        case .notOffTheRecordCapable(let what): what
        case .pendingNavigationGone(let tab, let id):
            "tab \(tab) has no pending navigation \(id): it committed, was discarded or another replaced it"
        case .historiesNotLoaded(let ids): "the histories of \(ids.count) tab(s) are not loaded: \(ids.prefix(5).map(\.rawValue))"
        case .snapshotsNotLoaded(let ids): "the pictures of \(ids.count) tab(s) are not loaded: \(ids.prefix(5).map(\.rawValue))"
        }
    }
}
