import BrowserRecords
import Foundation
import SQLite
import Synchronization
import TestSupport
import Testing

@testable import BrowserPersistence

func temporaryDatabase() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("browserd-store-\(UUID()).sqlite").path
}

func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

func sampleChange(profile: String = "p0000000000000001", window: String = "w0000000000000001") -> ChangeSet {
    let time = Date(timeIntervalSince1970: 1_700_000_000.5)
    var change = ChangeSet()
    change.profiles = [ProfileRecord(id: profile, name: "Work", createdAt: time)]
    let history = (0..<3).map { HistoryEntryRecord(url: "https://e.example/\($0)", title: "T\($0) ✓", transition: "link", timestamp: time) }
    let a = TabRecord(
        id: "t0000000000000001", groupID: nil, openerID: nil, openerNavigationIndex: nil, title: "A", loading: false,
        progress: 1, faviconURL: nil, createdAt: time, lastActiveAt: time, historyIndex: 2, history: history)
    let b = TabRecord(
        id: "t0000000000000002", groupID: "g0000000000000001", openerID: a.id, openerNavigationIndex: 2, title: "B",
        loading: true, progress: 0.25, faviconURL: "https://e.example/f.ico", createdAt: time, lastActiveAt: time,
        historyIndex: 0, history: [history[0]], position: 1024)
    change.windows = [
        WindowRecord(
            id: window, profileID: profile, version: 7, tabOrder: [a.id, b.id], activeIndex: 1, pinnedCount: 1,
            groups: [GroupRecord(id: "g0000000000000001", title: "G", color: "cyan", collapsed: true)],
            createdAt: time, lastActiveAt: time)
    ]
    change.tabs = [(window, a), (window, b)]
    change.closedAdded = [
        (
            profile,
            ClosedEntryRecord(
                tab: ClosedTabRecord(
                    id: "c0000000000000001", tabID: "t0000000000000009", windowID: window, index: 3, groupID: nil, wasActive: true,
                    wasPinned: false, title: "Gone", faviconURL: nil, closedAt: time, historyIndex: 0, history: [history[1]]))
        )
    ]
    return change
}

@Suite(.offThePool) struct PersistenceStoreTests {
    @Test func roundTripsEveryField() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let change = sampleChange()
        do {
            let store = try PersistenceStore(path: path)
            #expect(try store.schemaVersion() == PersistenceStore.migrator.latestVersion)
            try store.apply([change])
        }
        let loaded = try PersistenceStore(path: path).load()
        #expect(loaded.profiles == change.profiles)
        #expect(loaded.windows == change.windows)
        #expect(loaded.tabs.count == 2)
        for (_, tab) in change.tabs { #expect(loaded.tabs[tab.id] == tab) }
        #expect(loaded.recentlyClosed["p0000000000000001"] == [change.closedAdded[0].entry])
    }

    @Test func deletesCascade() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let store = try PersistenceStore(path: path)
        try store.apply([sampleChange()])
        var delete = ChangeSet()
        delete.deletedProfiles = ["p0000000000000001"]
        try store.apply([delete])
        let loaded = try store.load()
        #expect(loaded.profiles.isEmpty && loaded.windows.isEmpty && loaded.tabs.isEmpty && loaded.recentlyClosed.isEmpty)
    }

    @Test func aFailingChangeRollsBackItsWholeTransaction() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let store = try PersistenceStore(path: path)
        var orphan = sampleChange()
        orphan.profiles = []
        #expect(throws: (any Error).self) { try store.apply([sampleChange(profile: "p0000000000000002", window: "w0000000000000002"), orphan]) }
        #expect(try store.load().profiles.isEmpty)
    }

    @Test func refusesANewerDatabaseAndLeavesItUntouched() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        do {
            let db = try SQLiteConnection(path: path)
            try db.execute("PRAGMA user_version = 99")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: PersistenceStore.OpenError.self) { try PersistenceStore(path: path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func refusesACorruptFileAndNamesIt() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let garbage = Data(repeating: 0x5A, count: 8192)
        try garbage.write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: PersistenceStore.OpenError.self) { try PersistenceStore(path: path) }
        #expect(error.description.contains(path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
    }

    @Test func usesWALAndFullSync() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let store = try PersistenceStore(path: path)
        #expect(try store.db.scalar("PRAGMA journal_mode").string == "wal")
        #expect(try store.db.scalar("PRAGMA synchronous").int == 2)
        #expect(try store.db.scalar("PRAGMA foreign_keys").int == 1)
    }

    @Test func historyCodecRejectsGarbage() {
        #expect(throws: (any Error).self) { try HistoryCodec.decode([]) }
        #expect(throws: (any Error).self) { try HistoryCodec.decode([1, 5]) }
        #expect(throws: (any Error).self) { try HistoryCodec.decode([2, 0]) }
        #expect((try? HistoryCodec.decode(HistoryCodec.encode([]))) == [])
    }
}

// The writer's promises (group commit, a failed commit refusing later changes until resumed, answers
// committed with their change) are checked for both stores in StoreConformanceTests.

@Suite(.offThePool) struct MigrationTests {
    /// A database made by the first schema version opens, upgrades to the latest and keeps its data.
    @Test func firstSchemaVersionOpensAndUpgrades() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        do {
            let db = try SQLiteConnection(path: path)
            try SQLiteMigrator(Array(PersistenceStore.migrator.migrations.prefix(1))).migrate(db)
            try db.run("INSERT INTO profiles (id, name, created_at) VALUES ('p0000000000000009', 'Old', 0)")
        }
        let store = try PersistenceStore(path: path)
        #expect(try store.schemaVersion() == PersistenceStore.migrator.latestVersion)
        #expect(try store.load().profiles.map(\.name) == ["Old"])
    }

    /// A window's order written as `tab_order` (schemas before positions) becomes its tabs' positions.
    @Test func tabOrderBecomesPositions() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        do {
            let db = try SQLiteConnection(path: path)
            try SQLiteMigrator(Array(PersistenceStore.migrator.migrations.prefix(3))).migrate(db)
            try db.run("INSERT INTO profiles (id, name, created_at) VALUES ('p0000000000000001', 'P', 0)")
            try db.run(
                """
                INSERT INTO windows (id, profile_id, version, tab_order, active_index, pinned_count, created_at, last_active_at)
                VALUES ('w0000000000000001', 'p0000000000000001', 3, 't0000000000000003,t0000000000000001,t0000000000000002', 0, 0, 0, 0)
                """)
            for id in ["t0000000000000001", "t0000000000000002", "t0000000000000003"] {
                try db.run(
                    """
                    INSERT INTO tabs (id, window_id, title, loading, progress, created_at, last_active_at, history_index, history)
                    VALUES (?, 'w0000000000000001', '', 0, 1, 0, 0, -1, ?)
                    """, id, HistoryCodec.encode([]))
            }
        }
        let stored = try PersistenceStore(path: path).load()
        #expect(stored.windows.first?.tabOrder == ["t0000000000000003", "t0000000000000001", "t0000000000000002"])
        #expect(stored.tabs["t0000000000000002"]?.position == 2 * TabRecord.positionStep)
    }
}

extension MigrationTests {
    /// Tabs' histories move to a table of their own (issue 54): a tab stored before keeps its history
    /// (read whole, and alone when a tab is realized), its summary and the rest of its row, and the
    /// row no longer holds the blob.
    @Test func historiesMoveToATableOfTheirOwn() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let time = Date(timeIntervalSince1970: 1_700_000_000)
        let history = (0..<3).map { HistoryEntryRecord(url: "https://h.example/\($0)", title: "H\($0)", transition: "typed", timestamp: time) }
        do {
            let db = try SQLiteConnection(path: path)
            try SQLiteMigrator(Array(PersistenceStore.migrator.migrations.dropLast())).migrate(db)
            try db.run("INSERT INTO profiles (id, name, created_at) VALUES ('p0000000000000001', 'P', 0)")
            try db.run(
                """
                INSERT INTO windows (id, profile_id, version, tab_order, active_index, pinned_count, created_at, last_active_at)
                VALUES ('w0000000000000001', 'p0000000000000001', 1, '', 0, 0, 0, 0)
                """)
            try db.run(
                """
                INSERT INTO tabs (id, window_id, title, loading, progress, created_at, last_active_at, history_index, history, position,
                visible_url, history_count, history_bytes)
                VALUES ('t0000000000000001', 'w0000000000000001', 'Old', 0, 1, 0, 0, 1, ?, 5, 'https://h.example/1', 3, 60)
                """, HistoryCodec.encode(history))
            // A row that refers to the tab (its picture): the table's rebuild must not cascade to it.
            try db.run(
                """
                INSERT INTO tab_snapshots (tab_id, etag, media_type, byte_count, captured_at, bytes)
                VALUES ('t0000000000000001', 'e1', 'image/jpeg', 3, 0, x'FFD8FF')
                """)
        }
        let store = try PersistenceStore(path: path)
        #expect(try store.schemaVersion() == PersistenceStore.migrator.latestVersion)
        let pictured = try store.loadTabs(ofWindow: "w0000000000000001")["t0000000000000001"]?.snapshot?.etag
        #expect(pictured == "e1", "the tab's picture stayed through the rebuild")
        let read = try #require(try store.history(ofTab: "t0000000000000001"))
        #expect(read.entries == history && read.index == 1)
        let whole = try #require(try store.loadTabs(ofWindow: "w0000000000000001")["t0000000000000001"])
        #expect(whole.history == history && whole.title == "Old" && whole.position == 5)
        let summary = try #require(try store.loadProfile("p0000000000000001", histories: false)?.tabs["t0000000000000001"])
        #expect(summary.history.isEmpty && summary.summary?.visibleURL == "https://h.example/1" && summary.summary?.count == 3)
        let db = try SQLiteConnection(path: path)
        #expect(try db.scalar("SELECT COUNT(*) FROM pragma_table_info('tabs') WHERE name = 'history'").int == 0)
        #expect(try db.scalar("SELECT COUNT(*) FROM pragma_index_list('tabs') WHERE name LIKE 'tabs_by_window%'").int == 2)
        // A history row gone (a damaged file): reading it says so, it is never an empty history.
        try db.run("DELETE FROM tab_histories WHERE tab_id = 't0000000000000001'")
        #expect(throws: MissingHistory(tabID: "t0000000000000001")) { try store.history(ofTab: "t0000000000000001") }
        #expect(throws: MissingHistory(tabID: "t0000000000000001")) { try store.loadTabs(ofWindow: "w0000000000000001") }
        try db.run("INSERT INTO tab_histories (tab_id, history) VALUES ('t0000000000000001', ?)", HistoryCodec.encode(history))
        // A tab deleted takes its history with it.
        try db.execute("PRAGMA foreign_keys = ON")
        try db.run("DELETE FROM tabs WHERE id = 't0000000000000001'")
        #expect(try db.scalar("SELECT COUNT(*) FROM tab_histories").int == 0)
        #expect(try db.scalar("SELECT COUNT(*) FROM tab_snapshots").int == 0)
    }
}

@Suite(.offThePool) struct IdempotencyStorageTests {
    private func record(_ key: String, at date: Date) -> IdempotencyRecord {
        IdempotencyRecord(
            key: "admin\n\(key)", fingerprint: [1, 2, 3], status: 201,
            headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "Location", value: "/v1/tabs/t1")],
            body: Array(#"{"id":"t1"}"#.utf8), createdAt: date)
    }

    /// An answer is written with its change, loaded back field by field, and dropped once expired.
    @Test func answersRoundTripAndExpire() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let now = Date(timeIntervalSince1970: Double(Int(Date().timeIntervalSince1970)))
        let fresh = record("fresh", at: now)
        let old = record("old", at: now.addingTimeInterval(-IdempotencyRecord.lifetime - 10))
        let store = try PersistenceStore(path: path)
        var change = sampleChange()
        change.idempotency = [fresh, old]
        try store.apply([change])
        #expect(try store.load(now: now).idempotency == [fresh])
        #expect(try store.purgeIdempotency(before: now.addingTimeInterval(-IdempotencyRecord.lifetime)) == 1)
        #expect(try store.load(now: now.addingTimeInterval(IdempotencyRecord.lifetime + 1)).idempotency.isEmpty)
    }
}
