import BrowserRecords
import BrowserServices
import Synchronization

/// What the service reads of stored tabs (``StoredTabReading``), given to it when it is made and
/// filled by the store backend once its store is open (as ``PlacementSlot`` is). Until then, every
/// read fails: the state is not restored yet, so no request can have needed one.
final class StoredTabsSlot: StoredTabReading {
    private let reading = Mutex<(any StoredTabReading)?>(nil)

    /// The store's own reading, from now on.
    func set(_ reader: any StoredTabReading) { reading.withLock { $0 = reader } }

    private var current: any StoredTabReading {
        get throws {
            guard let reader = reading.withLock({ $0 }) else { throw ServiceError.storageUnreadable("the store is not open yet") }
            return reader
        }
    }

    func histories(ofTabs ids: [String]) async throws -> [String: BrowserService.StoredHistory] {
        try await current.histories(ofTabs: ids)
    }

    func snapshot(ofTab id: String) async throws -> SnapshotRecord? { try await current.snapshot(ofTab: id) }
}
