public import BrowserRecords

/// What the service reads from storage where the API says so (GRDB's rule): the histories of tabs
/// restored unrealized, and the pictures of tabs' pages stored in an earlier run. Given to
/// ``BrowserService/init(limits:sink:storedTabs:waitsForCommit:events:framing:onAction:writeQuota:)``,
/// so a service without a way to read its store does not compile. Each read may fail; the service
/// turns a failure into ``ServiceError/storageUnreadable(_:)`` (503 at the edge), never an answer.
public protocol StoredTabReading: Sendable {
    /// The stored histories of tabs by id, in one read. A tab storage does not hold is left out of
    /// the answer. - Throws: when the read fails.
    func histories(ofTabs ids: [String]) async throws -> [String: BrowserService.StoredHistory]

    /// The stored picture of a tab, with its bytes (nil: storage holds none for it).
    /// - Throws: when the read fails.
    func snapshot(ofTab id: String) async throws -> SnapshotRecord?
}

/// A service that stores nothing (it keeps everything in memory: the model's tests, a tool): every
/// read fails, as there is nothing it could have written.
public struct NothingStored: StoredTabReading {
    public init() {}

    public func histories(ofTabs ids: [String]) async throws -> [String: BrowserService.StoredHistory] {
        throw ServiceError.storageUnreadable("nothing is stored: this service keeps everything in memory")
    }

    public func snapshot(ofTab id: String) async throws -> SnapshotRecord? {
        throw ServiceError.storageUnreadable("nothing is stored: this service keeps everything in memory")
    }
}
