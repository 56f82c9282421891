public import BrowserRecords
public import Foundation
import SQLite

// One profile at a time (the working set): what start-up reads (the directory of profiles), what
// finds the profile a request names, and what loads one profile on its first use.
extension PersistenceStore {
    /// A stored profile as the directory shows it before it is loaded.
    public struct DirectoryEntry: Sendable, Equatable {
        public var profile: ProfileRecord
        public var windowCount: Int
    }

    /// Every stored profile with how many windows it holds, oldest first: all that start-up reads of
    /// them (one pass over the windows; tabs are not counted, so the start does not grow with them).
    public func directory() throws -> [DirectoryEntry] {
        var windows: [String: Int] = [:]
        for row in try db.rows("SELECT profile_id, COUNT(*) FROM windows GROUP BY profile_id") {
            windows[row[0].string ?? ""] = row[1].int ?? 0
        }
        return try profileRecords(nil).map { profile in DirectoryEntry(profile: profile, windowCount: windows[profile.id] ?? 0) }
    }

    /// One stored profile whole (its windows, tabs and recently closed; nothing shared), or nil when it
    /// is not stored.
    /// - Parameter histories: false reads each tab without its history (``TabRecord/summary`` instead):
    ///   the tabs load unrealized, and ``history(ofTab:)`` reads one when it is needed.
    public func loadProfile(_ id: String, histories: Bool = true) throws -> StoredState? {
        guard let profile = try profileRecords(id).first else { return nil }
        var state = StoredState()
        state.profiles = [profile]
        state.windows = try windowRecords(ofProfile: id)
        // Read straight into one dictionary sized for them all: a dictionary per window merged into
        // the profile's copied every record again (8 ms of a cold 5,000-tab profile's 73).
        state.tabs.reserveCapacity(state.windows.reduce(0) { $0 + $1.tabOrder.count })
        for window in state.windows {
            if histories {
                try loadTabs(ofWindow: window.id, into: &state.tabs)
            } else {
                try loadTabSummaries(ofWindow: window.id, into: &state.tabs)
            }
        }
        state.recentlyClosed = try closedEntries(ofProfile: id)
        return state
    }

    /// The tabs of one window without their histories (each with its ``TabRecord/summary``), added to `tabs`.
    func loadTabSummaries(ofWindow id: String, into tabs: inout [String: TabRecord]) throws {
        let statement = try db.cached(
            """
            SELECT t.id, t.group_id, t.opener_id, t.opener_navigation_index, t.title, t.loading, t.progress, t.favicon_url,
            t.created_at, t.last_active_at, t.history_index, t.position, t.visible_url, t.history_count, t.history_bytes,
            s.etag, s.media_type, s.byte_count, s.captured_at FROM tabs t LEFT JOIN tab_snapshots s ON s.tab_id = t.id
            WHERE t.window_id = ?
            """)
        try statement.bind([id])
        while try statement.step() {
            var tab = TabRecord(
                id: statement.column(0).string ?? "", groupID: statement.column(1).string, openerID: statement.column(2).string,
                openerNavigationIndex: statement.column(3).int, title: statement.column(4).string ?? "",
                loading: statement.column(5).int == 1, progress: statement.column(6).double ?? 0,
                faviconURL: statement.column(7).string, createdAt: Date(timeIntervalSince1970: statement.column(8).double ?? 0),
                lastActiveAt: Date(timeIntervalSince1970: statement.column(9).double ?? 0),
                historyIndex: statement.column(10).int ?? -1, history: [], position: statement.column(11).double ?? 0)
            tab.summary = HistorySummary(
                visibleURL: statement.column(12).string ?? "", count: statement.column(13).int ?? 0, byteCount: statement.column(14).int ?? 0)
            if let etag = statement.column(15).string {
                tab.snapshot = SnapshotRecord(
                    tabID: tab.id, etag: etag, mediaType: statement.column(16).string ?? "", byteCount: statement.column(17).int ?? 0,
                    capturedAt: Date(timeIntervalSince1970: statement.column(18).double ?? 0), bytes: nil)
            }
            tabs[tab.id] = tab
        }
    }

    /// A stored tab's history and current index (nil: no such tab): what realizing it reads.
    public func history(ofTab id: String) throws -> (entries: [HistoryEntryRecord], index: Int)? {
        guard
            let row = try db.cached("SELECT h.history, t.history_index FROM tabs t LEFT JOIN tab_histories h ON h.tab_id = t.id WHERE t.id = ?")
                .rows(id).first
        else { return nil }
        guard let bytes = row[0].bytes else { throw MissingHistory(tabID: id) }
        return (try HistoryCodec.decode(bytes), row[1].int ?? -1)
    }

    /// The picture of a stored tab's page, with its bytes (nil: the tab has none, or is not stored).
    public func snapshot(ofTab id: String) throws -> SnapshotRecord? {
        guard let row = try db.cached("SELECT etag, media_type, byte_count, captured_at, bytes FROM tab_snapshots WHERE tab_id = ?").rows(id).first
        else { return nil }
        return SnapshotRecord(
            tabID: id, etag: row[0].string ?? "", mediaType: row[1].string ?? "", byteCount: row[2].int ?? 0,
            capturedAt: Date(timeIntervalSince1970: row[3].double ?? 0), bytes: row[4].bytes ?? [])
    }

    /// Whether a profile with this id is stored.
    public func holdsProfile(_ id: String) throws -> Bool {
        try !db.cached("SELECT 1 FROM profiles WHERE id = ?").rows(id).isEmpty
    }

    /// The profile that stores a window, tab or group (nil: none does).
    public func profile(ofWindow id: String) throws -> String? {
        try db.cached("SELECT profile_id FROM windows WHERE id = ?").rows(id).first?[0].string
    }

    public func profile(ofTab id: String) throws -> String? {
        try db.cached("SELECT w.profile_id FROM tabs t JOIN windows w ON w.id = t.window_id WHERE t.id = ?").rows(id).first?[0].string
    }

    public func profile(ofGroup id: String) throws -> String? {
        try db.cached("SELECT w.profile_id FROM groups g JOIN windows w ON w.id = g.window_id WHERE g.id = ? LIMIT 1").rows(id).first?[0]
            .string
    }
}

extension PersistenceStore {
    /// Reads one stored profile for an export, in one read transaction (one consistent state, however
    /// long the reading takes): its record and recently closed entries, then each window in order
    /// with its tabs (one window in memory at a time).
    /// - Returns: false when no profile has this id.
    public func export(
        _ id: String, head: (ProfileRecord, [ClosedEntryRecord]) throws -> Void,
        window: (WindowRecord, [String: TabRecord]) throws -> Void
    ) throws -> Bool {
        try db.execute("BEGIN")
        defer { try? db.execute("COMMIT") }
        guard let profile = try profileRecords(id).first else { return false }
        try head(profile, try closedEntries(ofProfile: id)[id] ?? [])
        for record in try windowRecords(ofProfile: id) { try window(record, try loadTabs(ofWindow: record.id)) }
        return true
    }

    /// The first of these ids that a stored profile, window, tab, closed tab, group (of a window, or
    /// remembered by a closed tab) or recently-closed entry already has (nil: none). Each is an
    /// indexed lookup.
    public func firstStored(
        profiles: [String], windows: [String], tabs: [String], closedTabs: [String], groups: [String] = [], closedEntries: [String] = []
    ) throws -> String? {
        let lookups = [
            ("SELECT 1 FROM profiles WHERE id = ?1", profiles), ("SELECT 1 FROM windows WHERE id = ?1", windows),
            ("SELECT 1 FROM tabs WHERE id = ?1", tabs), ("SELECT 1 FROM closed_tabs WHERE id = ?1", closedTabs),
            ("SELECT 1 FROM groups WHERE id = ?1 UNION ALL SELECT 1 FROM closed_tabs WHERE group_id = ?1", groups),
            ("SELECT 1 FROM closed_tabs WHERE entry_id = ?1 UNION ALL SELECT 1 FROM closed_tabs WHERE id = ?1", closedEntries),
        ]
        for (sql, ids) in lookups where !ids.isEmpty {
            let statement = try db.cached(sql)
            for id in ids where try !statement.rows(id).isEmpty { return id }
        }
        return nil
    }
}
