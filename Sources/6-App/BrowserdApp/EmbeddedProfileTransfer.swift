import BrowserAPI
import BrowserModel
import BrowserPersistence
import BrowserRecords
import BrowserServices
import Foundation
import HTTPServer
import Synchronization

/// Export and import of whole profiles with the embedded store (``ProfileDocument``).
///
/// An export commits what is queued, then reads the profile from the database in one read transaction
/// on a connection of its own, a window at a time, each written to the client as it is read.
///
/// An import reads the document a window at a time from the request body (never as one tree), checks
/// each window by rebuilding it as a load would (``ProfileImportCheck``: anything a load would repair
/// is refused, so the profile reads back exactly as stored), checks its size against the profile byte
/// budget and that none of its ids exists, then stores it in one commit (all of it, or nothing) and
/// lists it in the directory: it loads on its first use like any stored profile. One import at a time.
final class EmbeddedProfileTransfer: ProfileTransfer {
    let databasePath: String
    let service: BrowserService
    let sink: StoreSink
    let reader: StoreReader
    let limits: ModelLimits
    let maxDecodedBytes: Int
    let timeout: Duration
    private let importing = Mutex(false)

    init(
        databasePath: String, service: BrowserService, sink: StoreSink, reader: StoreReader, limits: ModelLimits,
        maxDecodedBytes: Int = 256 << 20, timeout: Duration = .seconds(600)
    ) {
        self.maxDecodedBytes = maxDecodedBytes
        self.timeout = timeout
        self.databasePath = databasePath
        self.service = service
        self.sink = sink
        self.reader = reader
        self.limits = limits
    }

    // MARK: Export

    func exporter(for id: ProfileID) async throws -> ProfileExporter {
        if let profile = service.profile(id), profile.incognito {
            throw ServiceError.wrongProfileKind("An incognito profile is never stored, so it cannot be exported; export its regular profile.")
        }
        guard service.holdsProfile(id) || service.isStoredElsewhere(id) else { throw TransferProblem.profileNotFound(id) }
        // What was answered so far is in the database before it is read.
        do {
            try await sink.commit(ChangeSet())
        } catch {
            throw ServiceError.storageFailed("\(error)")
        }
        // Storage is read before the answer begins, so a read that fails now is a 503 (nothing made up);
        // one that fails later cuts the stream (the client never gets a document that looks whole).
        let path = databasePath
        do {
            _ = try PersistenceStore(readingAt: path).holdsProfile(id.rawValue)
        } catch {
            throw ServiceError.storageUnreadable("the profile could not be read for its export: \(error)")
        }
        return { emit in
            let store = try PersistenceStore(readingAt: path)
            var first = true
            let found = try store.export(id.rawValue) { profile, closed in
                guard emit(ProfileDocument.head(profile, recentlyClosed: closed)) else { throw CancellationError() }
            } window: { record, tabs in
                guard emit(ProfileDocument.window(record, tabs: tabs, first: first)) else { throw CancellationError() }
                first = false
            }
            guard found else { throw CancellationError() }
            guard emit(ProfileDocument.tail) else { throw CancellationError() }
        }
    }

    // MARK: Import

    /// Takes the one import slot, or answers 503 (another import is under way).
    private func beginImport() throws {
        guard
            importing.withLock({ busy in
                defer { busy = true }
                return !busy
            })
        else {
            throw HTTPError.unavailable("Another import is under way; retry.", retryAfter: 1)
        }
    }

    func importSession(name: String, reading read: @Sendable () throws -> ImportedSession) async throws -> SessionImportResult {
        try beginImport()
        defer { importing.withLock { $0 = false } }
        let session = try read()
        let built: ImportedProfile
        do {
            built = try SessionImportBuilder(limits: limits).build(session, name: name)
        } catch let error as ModelError {
            throw TransferProblem.invalid("windows", "cannot be held: \(error)")
        }
        guard built.byteCount <= limits.profileBytes else {
            throw HTTPError(
                507, kind: "profile-storage-full", title: "Insufficient Storage",
                detail: "The session holds \(built.byteCount) bytes of history text; a profile holds at most \(limits.profileBytes) (--profile-max-bytes).")
        }
        // Every id is new (made by the model): one commit stores the whole profile, or nothing.
        var change = ChangeSet()
        change.profiles = [built.profile]
        change.profileID = built.profile.id
        change.windows = built.windows
        change.tabs = built.tabs.map { (windowID: $0.window, tab: $0.tab) }
        change.closedAdded = built.closed.map { (profileID: built.profile.id, entry: $0) }
        try await sink.commit(change)
        let snapshot = ProfileSnapshot(stored: built.profile, windowCount: built.windows.count)
        service.applyDirectoryChanges([.put(snapshot)])
        return SessionImportResult(
            profile: snapshot, windowIDs: built.windows.map(\.id), tabCount: built.tabCount, closedCount: built.closed.count,
            warnings: built.warnings)
    }

    func importDocument(_ body: [UInt8]) async throws -> ProfileSnapshot {
        try beginImport()
        defer { importing.withLock { $0 = false } }
        let document = try ProfileDocument.Validated(body, limits: limits)
        let head = document.head
        let profileID = head.profile.id
        guard service.profile(ProfileID(rawValue: profileID)) == nil, !service.isStoredElsewhere(ProfileID(rawValue: profileID)) else {
            throw TransferProblem.idTaken("A profile with id \(profileID) exists already; delete it first, or import into another deployment.")
        }
        let (windowIDs, tabIDs, closedIDs, entryIDs) = (document.windowIDs, document.tabIDs, document.closedIDs, document.entryIDs)
        let (groupIDs, closedGroupIDs, closedTabIDs) = (document.groupIDs, document.closedGroupIDs, document.closedTabIDs)
        var change = ChangeSet()
        change.profiles = [head.profile]
        if let webState = head.profile.webState { change.webStates = [WebStateRecord(profileID: profileID, json: webState)] }
        change.profileID = profileID
        change.windows = document.windows
        change.tabs = document.tabs.map { (windowID: $0.window, tab: $0.tab) }
        // No id of the document may exist: in memory, or stored (a loaded profile's last changes are
        // committed first, so the database has every id that was answered).
        for id in windowIDs where service.window(BrowserID(rawValue: id)) != nil { throw TransferProblem.idTaken("Window \(id) exists already.") }
        for id in tabIDs where service.window(ofTab: TabID(rawValue: id)) != nil { throw TransferProblem.idTaken("Tab \(id) exists already.") }
        // A closed tab's group may be one of the document's own windows' groups; any other must be free.
        let allGroups = groupIDs.union(closedGroupIDs)
        for id in allGroups.sorted() where service.window(ofGroup: TabGroupID(rawValue: id)) != nil {
            throw TransferProblem.idTaken("Group \(id) exists already.")
        }
        // A closed tab's own tab id is not restored (a restored tab gets a new id), but it must not name
        // a tab that lives elsewhere either.
        let foreignTabs = closedTabIDs.subtracting(tabIDs).sorted()
        for id in foreignTabs where service.window(ofTab: TabID(rawValue: id)) != nil { throw TransferProblem.idTaken("Tab \(id) exists already.") }
        try await sink.commit(ChangeSet())
        let (w, t, c, g, e) = (windowIDs, tabIDs + foreignTabs, closedIDs, allGroups.sorted(), entryIDs)
        if let taken = try await reader.read({ try $0.firstStored(profiles: [profileID], windows: w, tabs: t, closedTabs: c, groups: g, closedEntries: e) }) {
            throw TransferProblem.idTaken("The id \(taken) exists already in this deployment.")
        }
        // Oldest first, as they were closed (entries closed at the same instant keep their order).
        change.closedAdded = head.recentlyClosed.reversed().map { (profileID, $0) }
        try await sink.commit(change)
        let snapshot = ProfileSnapshot(stored: head.profile, windowCount: windowIDs.count)
        service.applyDirectoryChanges([.put(snapshot)])
        return snapshot
    }
}
