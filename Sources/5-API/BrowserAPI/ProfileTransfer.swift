public import BrowserModel
public import BrowserServices
public import HTTPServer
import Synchronization

/// Moving one profile out of and into a deployment whole, as a ``ProfileDocument``: what the store
/// behind the API does (the embedded one reads and writes its database; the API only frames it).
public protocol ProfileTransfer: Sendable {
    /// Makes ready the export of the stored regular profile `id` (what it changed so far committed)
    /// and returns what writes the document: it calls `emit` with each chunk in order, on its own
    /// thread (it may block), and stops (throwing) once `emit` says the client is gone.
    /// - Throws: not found when no stored regular profile has this id.
    func exporter(for id: ProfileID) async throws -> ProfileExporter

    /// Stores the profile a document describes (one durable commit: all of it or nothing), as a new
    /// profile with the document's ids, and returns it as the directory lists it.
    func importDocument(_ body: [UInt8]) async throws -> ProfileSnapshot

    /// Makes a new profile of another browser's session (``SessionImportBuilder``: the model's
    /// operations, Chromium's rules) and stores it in one durable commit: all of it or nothing.
    /// - Parameter read: reads the session from the request; called once the import's turn has come
    ///   (one import at a time), so one session file at most is held decoded.
    func importSession(name: String, reading read: @Sendable () throws -> ImportedSession) async throws -> SessionImportResult

    /// The most bytes a session file may decode to (`--max-session-bytes`).
    var maxDecodedBytes: Int { get }

    /// The longest an export may take (`--transfer-timeout`): past it the client is cut off.
    var timeout: Duration { get }
}

/// What a session import made.
public struct SessionImportResult: Sendable {
    public var profile: ProfileSnapshot
    public var windowIDs: [String]
    public var tabCount: Int
    public var closedCount: Int
    public var warnings: [ImportWarning]

    public init(profile: ProfileSnapshot, windowIDs: [String], tabCount: Int, closedCount: Int, warnings: [ImportWarning]) {
        self.profile = profile
        self.windowIDs = windowIDs
        self.tabCount = tabCount
        self.closedCount = closedCount
        self.warnings = warnings
    }
}

/// Writes one export: `emit` returns false when the client is gone.
public typealias ProfileExporter = @Sendable (_ emit: ([UInt8]) -> Bool) throws -> Void

/// Holds the transfer once the application has made it (the routes are built before it starts).
public final class ProfileTransferSlot: Sendable {
    private let value = Mutex<(any ProfileTransfer)?>(nil)

    public init() {}

    public var current: (any ProfileTransfer)? { value.withLock { $0 } }

    public func set(_ transfer: any ProfileTransfer) { value.withLock { $0 = transfer } }
}

/// The problems a transfer answers with, made as the API makes every other one.
public enum TransferProblem {
    /// 422 naming the document's member (`windows[2].tabs[0].groupId`).
    public static func invalid(_ field: String, _ detail: String) -> HTTPError { APIProblem.invalidField(field, detail) }
    /// 409: an id of the document exists already in this deployment.
    public static func idTaken(_ detail: String) -> HTTPError { HTTPError(409, kind: "id-taken", title: "Conflict", detail: detail) }
    public static func profileNotFound(_ id: ProfileID) -> HTTPError { APIProblem.profileNotFound(id.rawValue) }
}
