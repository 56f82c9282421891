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
        public var tabCount: Int
    }

    /// Every stored profile with how many windows and tabs it holds, oldest first: all that start-up
    /// reads of them (one pass over the windows and one index count per window).
    public func directory() throws -> [DirectoryEntry] {
        var windows: [String: (windows: Int, tabs: Int)] = [:]
        for row in try db.rows(
            "SELECT w.profile_id, COUNT(*), SUM((SELECT COUNT(*) FROM tabs t WHERE t.window_id = w.id)) FROM windows w GROUP BY w.profile_id")
        {
            windows[row[0].string ?? ""] = (row[1].int ?? 0, row[2].int ?? 0)
        }
        return try profileRecords(nil).map { profile in
            DirectoryEntry(profile: profile, windowCount: windows[profile.id]?.windows ?? 0, tabCount: windows[profile.id]?.tabs ?? 0)
        }
    }

    /// One stored profile whole (its windows, tabs and recently closed; nothing shared), or nil when it
    /// is not stored.
    public func loadProfile(_ id: String) throws -> StoredState? {
        guard let profile = try profileRecords(id).first else { return nil }
        var state = StoredState()
        state.profiles = [profile]
        state.windows = try windowRecords(ofProfile: id)
        for window in state.windows { state.tabs.merge(try loadTabs(ofWindow: window.id)) { first, _ in first } }
        state.recentlyClosed = try closedEntries(ofProfile: id)
        return state
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

    /// The first of these ids that a stored profile, window, tab or closed tab already has (nil: none).
    public func firstStored(profiles: [String], windows: [String], tabs: [String], closedTabs: [String]) throws -> String? {
        for (table, ids) in [("profiles", profiles), ("windows", windows), ("tabs", tabs), ("closed_tabs", closedTabs)] {
            let statement = try db.cached("SELECT 1 FROM \(table) WHERE id = ?")
            for id in ids where try !statement.rows(id).isEmpty { return id }
        }
        return nil
    }
}
