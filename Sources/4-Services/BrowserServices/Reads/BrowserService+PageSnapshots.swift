public import BrowserModel
public import BrowserRecords

// The pictures of tabs' pages (Chrome's tab grid). The model knows each tab's picture; its bytes are
// in memory while this run holds them (set in this run; an off-the-record tab's always, as they are
// never stored) and otherwise read from storage where the API serves them — a read that fails is the
// request's failure (503), never an empty or older picture.
extension BrowserService {
    /// The picture of a tab's page with its bytes, and the window's version; nil when the tab has none.
    /// - Throws: ``ServiceError/storageUnreadable(_:)`` when its bytes had to be read and could not be.
    public func pageSnapshot(ofTab id: TabID) async throws -> PageSnapshot? {
        guard let (tab, _) = tab(id), let picture = tab.snapshot else { return nil }
        if picture.bytes != nil { return picture }
        let stored: SnapshotRecord?
        do {
            stored = try await storedTabs.snapshot(ofTab: id.rawValue)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError.storageUnreadable("the picture of tab \(id) could not be read: \(error)")
        }
        // Storage holds what was acknowledged: the picture the model knows, or (replaced meanwhile) a newer one.
        guard let stored, let bytes = stored.bytes else {
            throw ServiceError.storageUnreadable("storage holds no picture for tab \(id), though the tab has one")
        }
        return PageSnapshot(
            etag: stored.etag, mediaType: stored.mediaType, byteCount: stored.byteCount, capturedAt: stored.capturedAt, bytes: bytes)
    }

    /// Reads the stored pictures of `ids` and gives each tab its bytes (``WebState/holdSnapshotBytes(_:)``),
    /// so that an operation that deletes their rows (a close-all) keeps them for its undo.
    /// - Throws: ``ServiceError/storageUnreadable(_:)`` when a read fails (the tabs stay as they were).
    func holdSnapshotBytes(of ids: [TabID], on executor: ProfileExecutor) async throws {
        var stored: [TabID: PageSnapshot?] = [:]
        for id in ids {
            do {
                stored[id] = try await storedTabs.snapshot(ofTab: id.rawValue).flatMap { record in
                    record.bytes.map {
                        PageSnapshot(etag: record.etag, mediaType: record.mediaType, byteCount: record.byteCount, capturedAt: record.capturedAt, bytes: $0)
                    }
                }
            } catch {
                throw ServiceError.storageUnreadable("the picture of tab \(id) could not be read: \(error)")
            }
        }
        let read = stored
        await executor.perform { session in
            for (id, picture) in read {
                guard let (browser, index) = session.locate(id), let tab = browser.webStateList.webState(at: index) else { continue }
                tab.holdSnapshotBytes(picture)
            }
        }
    }
}
