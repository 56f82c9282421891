public import BrowserRecords
public import Foundation
import SQLite

/// The database file: opened in WAL mode with `synchronous=FULL` (a commit is on disk when it
/// returns), foreign keys on, checked with `PRAGMA quick_check`, migrated forward at open.
///
/// Not `Sendable`: one writer owns it (see ``StoreWriter``). A corrupt, unreadable or newer database
/// is never overwritten: opening throws ``OpenError`` naming the file.
public final class PersistenceStore {
    /// Why the database could not be opened.
    public enum OpenError: Error, CustomStringConvertible {
        case unusable(path: String, reason: String)

        public var description: String {
            switch self {
            case .unusable(let path, let reason): "cannot use database \(path): \(reason); it was left untouched"
            }
        }
    }

    public let path: String
    let db: SQLiteConnection

    /// The schema's migrations, oldest first. Never edit a released one: add the next.
    static var migrator: SQLiteMigrator {
        SQLiteMigrator([
            .init(
                "initial schema",
                sql: """
                    CREATE TABLE profiles (
                        id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at REAL NOT NULL);
                    CREATE TABLE windows (
                        id TEXT PRIMARY KEY, profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
                        version INTEGER NOT NULL, tab_order TEXT NOT NULL, active_index INTEGER NOT NULL,
                        pinned_count INTEGER NOT NULL, created_at REAL NOT NULL, last_active_at REAL NOT NULL);
                    CREATE TABLE groups (
                        id TEXT NOT NULL, window_id TEXT NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL, title TEXT NOT NULL, color TEXT NOT NULL, collapsed INTEGER NOT NULL,
                        PRIMARY KEY (window_id, id));
                    CREATE TABLE tabs (
                        id TEXT PRIMARY KEY, window_id TEXT NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
                        group_id TEXT, opener_id TEXT, opener_navigation_index INTEGER, title TEXT NOT NULL,
                        loading INTEGER NOT NULL, progress REAL NOT NULL, favicon_url TEXT, created_at REAL NOT NULL,
                        last_active_at REAL NOT NULL, history_index INTEGER NOT NULL, history BLOB NOT NULL);
                    CREATE INDEX tabs_by_window ON tabs(window_id);
                    CREATE TABLE closed_tabs (
                        id TEXT PRIMARY KEY, profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL, tab_id TEXT NOT NULL, window_id TEXT NOT NULL, tab_index INTEGER NOT NULL,
                        group_id TEXT, was_active INTEGER NOT NULL, was_pinned INTEGER NOT NULL, title TEXT NOT NULL,
                        favicon_url TEXT, closed_at REAL NOT NULL, history_index INTEGER NOT NULL, history BLOB NOT NULL);
                    """),
            .init(
                "API tokens",
                sql: """
                    CREATE TABLE tokens (
                        id TEXT PRIMARY KEY, profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
                        hash BLOB NOT NULL, created_at REAL NOT NULL);
                    """),
            .init(
                "idempotency keys",
                sql: """
                    CREATE TABLE idempotency_keys (
                        key TEXT PRIMARY KEY, fingerprint BLOB NOT NULL, status INTEGER NOT NULL, headers TEXT NOT NULL,
                        body BLOB NOT NULL, created_at REAL NOT NULL);
                    CREATE INDEX idempotency_keys_by_time ON idempotency_keys(created_at);
                    """),
            // A window's order lives in its tabs' rows (a position each), so a tab that moves or joins
            // writes its own row, not the whole window's order.
            .init("tab positions") { db in
                try db.execute("ALTER TABLE tabs ADD COLUMN position REAL NOT NULL DEFAULT 0")
                let update = try db.prepare("UPDATE tabs SET position = ? WHERE id = ? AND window_id = ?")
                for row in try db.rows("SELECT id, tab_order FROM windows") {
                    let window = row[0].string ?? ""
                    for (index, tab) in (row[1].string ?? "").split(separator: ",").enumerated() {
                        try update.run(Double(index) * TabRecord.positionStep, String(tab), window)
                    }
                }
                try db.execute("UPDATE windows SET tab_order = ''")
                try db.execute("CREATE INDEX tabs_by_window_position ON tabs(window_id, position)")
            },
            // Window and group entries (the tabs of one closed window or group are one entry), tabs a
            // close-all parked until it is confirmed, and the visual data of a closed tab's group.
            .init(
                "closed windows and groups",
                sql: """
                    ALTER TABLE closed_tabs ADD COLUMN entry_id TEXT;
                    ALTER TABLE closed_tabs ADD COLUMN entry_kind TEXT;
                    ALTER TABLE closed_tabs ADD COLUMN group_title TEXT;
                    ALTER TABLE closed_tabs ADD COLUMN group_color TEXT;
                    ALTER TABLE closed_tabs ADD COLUMN group_collapsed INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX closed_tabs_by_entry ON closed_tabs(entry_id);
                    """),
            // Profiles load on first use: a window, group or closed tab is found by its profile (or a
            // group by its id) without reading every row.
            .init(
                "per-profile reads",
                sql: """
                    CREATE INDEX windows_by_profile ON windows(profile_id);
                    CREATE INDEX groups_by_id ON groups(id);
                    CREATE INDEX closed_tabs_by_profile ON closed_tabs(profile_id);
                    """),
            // A tab loads unrealized: its row says what its history is without it.
            .init("history summaries") { db in
                try db.execute(
                    """
                    ALTER TABLE tabs ADD COLUMN visible_url TEXT NOT NULL DEFAULT '';
                    ALTER TABLE tabs ADD COLUMN history_count INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE tabs ADD COLUMN history_bytes INTEGER NOT NULL DEFAULT 0;
                    """)
                let update = try db.prepare("UPDATE tabs SET visible_url = ?, history_count = ?, history_bytes = ? WHERE rowid = ?")
                let rows = try db.prepare("SELECT rowid, history_index, history FROM tabs")
                try rows.bind([])
                var pending: [(Int64, HistorySummary)] = []
                while try rows.step() {
                    let history = try HistoryCodec.decode(rows.column(2).bytes ?? [])
                    pending.append((rows.column(0).int64 ?? 0, HistorySummary(history, index: rows.column(1).int ?? -1)))
                }
                for (rowid, summary) in pending { try update.run(summary.visibleURL, summary.count, summary.byteCount, rowid) }
            },
            // An import checks that no id it brings is stored anywhere: a closed tab's group id too
            // (restoring it rebuilds the group with that id).
            .init("closed tabs by group", sql: "CREATE INDEX closed_tabs_by_group ON closed_tabs(group_id);"),
            // The picture of each tab's page (one per tab), in a table of its own so that loading tabs
            // never reads one; it goes with its tab's row.
            .init(
                "tab snapshots",
                sql: """
                    CREATE TABLE tab_snapshots (
                        tab_id TEXT PRIMARY KEY REFERENCES tabs(id) ON DELETE CASCADE, etag TEXT NOT NULL,
                        media_type TEXT NOT NULL, byte_count INTEGER NOT NULL, captured_at REAL NOT NULL, bytes BLOB NOT NULL);
                    """),
            // Which renderer holds which profile (issue 55), and the last fence handed out (one row).
            // No foreign key: the registry releases a deleted profile's assignment itself.
            .init(
                "renderer assignments",
                sql: """
                    CREATE TABLE renderer_assignments (profile_id TEXT PRIMARY KEY, renderer TEXT NOT NULL, fence INTEGER NOT NULL);
                    CREATE TABLE renderer_fence (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
                    CREATE TABLE renderings (profile_id TEXT PRIMARY KEY, pin TEXT, excluded INTEGER NOT NULL);
                    """),
            // A profile's web state (issue 52): Playwright's storageState JSON, one row per profile that
            // has one, gone with its profile.
            .init(
                "web states",
                sql: """
                    CREATE TABLE web_states (profile_id TEXT PRIMARY KEY REFERENCES profiles(id) ON DELETE CASCADE, state BLOB NOT NULL);
                    """),
            // A tab's history in a table of its own (issue 54): a profile loads its tabs unrealized,
            // from rows without it. In the row, a 10-entry history was 1.8 KB of 2 KB (before the
            // summary's columns, so every read went over it): a window's 500 rows spanned 250 pages.
            // The tabs table is rebuilt (`DROP COLUMN` shrinks rows in place, on as many pages), its
            // rows written window by window in order, so a window's rows share a few pages.
            .init(
                "tab histories", rebuildingChecks: ["tab_histories"],
                sql: """
                    CREATE TABLE tab_histories (tab_id TEXT PRIMARY KEY REFERENCES tabs(id) ON DELETE CASCADE, history BLOB NOT NULL);
                    INSERT INTO tab_histories (tab_id, history) SELECT id, history FROM tabs;
                    CREATE TABLE tabs_rebuilt (
                        id TEXT PRIMARY KEY, window_id TEXT NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
                        group_id TEXT, opener_id TEXT, opener_navigation_index INTEGER, title TEXT NOT NULL,
                        loading INTEGER NOT NULL, progress REAL NOT NULL, favicon_url TEXT, created_at REAL NOT NULL,
                        last_active_at REAL NOT NULL, history_index INTEGER NOT NULL, position REAL NOT NULL DEFAULT 0,
                        visible_url TEXT NOT NULL DEFAULT '', history_count INTEGER NOT NULL DEFAULT 0,
                        history_bytes INTEGER NOT NULL DEFAULT 0);
                    INSERT INTO tabs_rebuilt (id, window_id, group_id, opener_id, opener_navigation_index, title, loading, progress,
                        favicon_url, created_at, last_active_at, history_index, position, visible_url, history_count, history_bytes)
                    SELECT id, window_id, group_id, opener_id, opener_navigation_index, title, loading, progress,
                        favicon_url, created_at, last_active_at, history_index, position, visible_url, history_count, history_bytes
                    FROM tabs ORDER BY window_id, position;
                    DROP TABLE tabs;
                    ALTER TABLE tabs_rebuilt RENAME TO tabs;
                    CREATE INDEX tabs_by_window ON tabs(window_id);
                    CREATE INDEX tabs_by_window_position ON tabs(window_id, position);
                    """),
        ])
    }

    /// Opens (creating when missing) the database at `path`.
    /// - Parameter deferringCheck: true skips `PRAGMA quick_check` (it reads every page: seconds for a
    ///   large file) unless the schema must be migrated; the caller runs ``quickCheck()`` later.
    /// - Throws: ``OpenError`` when the file is corrupt, not a database, unreadable, or newer than this program.
    public init(path: String, deferringCheck: Bool = false) throws {
        self.path = path
        do {
            db = try SQLiteConnection(path: path)
            // Check before changing anything, so a file this program must not touch stays as it was.
            let current = try SQLiteMigrator.version(of: db)
            if !deferringCheck || current < Self.migrator.latestVersion, let problem = try quickCheck() {
                throw OpenError.unusable(path: path, reason: "quick_check reports: \(problem)")
            }
            let version = current
            guard version <= Self.migrator.latestVersion else {
                throw OpenError.unusable(
                    path: path,
                    reason: "it has schema version \(version), newer than this browserd knows (\(Self.migrator.latestVersion)): it was written by a newer browserd")
            }
            try db.execute("PRAGMA journal_mode = WAL")
            try db.execute("PRAGMA synchronous = FULL")
            try Self.migrator.migrate(db)
        } catch let error as OpenError {
            throw error
        } catch {
            throw OpenError.unusable(path: path, reason: "\(error)")
        }
    }

    /// A second connection to a database another ``PersistenceStore`` opened (checked and migrated),
    /// for reads only (`query_only`), beside its writer: WAL lets it read the last commit while the
    /// writer writes. Its owner uses it from one thread at a time (a reader's serial queue, the
    /// check's thread, one export's stream): it runs without SQLite's mutexes.
    public init(readingAt path: String) throws {
        self.path = path
        do {
            db = try SQLiteConnection(path: path, mode: .readWrite, serialized: false)
            try db.execute("PRAGMA query_only = 1")
        } catch {
            throw OpenError.unusable(path: path, reason: "\(error)")
        }
    }

    /// Frees the connection's page cache (see ``SQLiteConnection/releaseMemory()``).
    public func releaseMemory() { db.releaseMemory() }

    /// `PRAGMA quick_check`: nil when the file is sound, else what it reports.
    public func quickCheck() throws -> String? {
        let check = try db.scalar("PRAGMA quick_check").string ?? "no answer"
        return check == "ok" ? nil : check
    }

    /// The schema version of the file. - Throws: when it cannot be read (never a made-up 0).
    public func schemaVersion() throws -> Int { try SQLiteMigrator.version(of: db) }

    /// Applies changes in one transaction; when it returns, they are on disk.
    public func apply(_ changes: [ChangeSet]) throws {
        try db.transaction {
            for change in changes { try write(change) }
        }
    }

    private func write(_ change: ChangeSet) throws {
        if change.replacesAll { try db.execute("DELETE FROM profiles") }
        for id in change.deletedProfiles { try db.cached("DELETE FROM profiles WHERE id = ?").run(id) }
        for profile in change.profiles {
            try db.cached("INSERT INTO profiles (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET name = excluded.name").run(
                profile.id, profile.name, profile.createdAt.timeIntervalSince1970)
        }
        for state in change.webStates {
            if let json = state.json {
                try db.cached("INSERT OR REPLACE INTO web_states (profile_id, state) VALUES (?, ?)").run(state.profileID, json)
            } else {
                try db.cached("DELETE FROM web_states WHERE profile_id = ?").run(state.profileID)
            }
        }
        for id in change.deletedWindows { try db.cached("DELETE FROM windows WHERE id = ?").run(id) }
        for window in change.windows {
            try db.cached(
                """
                INSERT INTO windows (id, profile_id, version, tab_order, active_index, pinned_count, created_at, last_active_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET version = excluded.version,
                tab_order = excluded.tab_order, active_index = excluded.active_index, pinned_count = excluded.pinned_count,
                last_active_at = excluded.last_active_at
                """
            ).run(
                window.id, window.profileID, window.version, "", window.activeIndex,
                window.pinnedCount, window.createdAt.timeIntervalSince1970, window.lastActiveAt.timeIntervalSince1970)
            try db.cached("DELETE FROM groups WHERE window_id = ?").run(window.id)
            for (position, group) in window.groups.enumerated() {
                try db.cached("INSERT INTO groups (id, window_id, position, title, color, collapsed) VALUES (?, ?, ?, ?, ?, ?)").run(
                    group.id, window.id, position, group.title, group.color, group.collapsed)
            }
        }
        for header in change.windowHeaders {
            try db.cached("UPDATE windows SET version = ?, active_index = ?, pinned_count = ?, last_active_at = ? WHERE id = ?").run(
                header.version, header.activeIndex, header.pinnedCount, header.lastActiveAt.timeIntervalSince1970, header.id)
        }
        // A tab this change writes again (it moved to another window) keeps its row, and so its
        // picture, which goes with the row.
        let rewritten = change.deletedTabs.isEmpty ? [] : Set(change.tabs.map(\.tab.id))
        for id in change.deletedTabs where !rewritten.contains(id) { try db.cached("DELETE FROM tabs WHERE id = ?").run(id) }
        let upsert = try db.cached(
            """
            INSERT INTO tabs (id, window_id, group_id, opener_id, opener_navigation_index, title, loading, progress,
            favicon_url, created_at, last_active_at, history_index, position, visible_url, history_count, history_bytes)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET window_id = excluded.window_id, group_id = excluded.group_id,
            opener_id = excluded.opener_id, opener_navigation_index = excluded.opener_navigation_index, title = excluded.title,
            loading = excluded.loading, progress = excluded.progress, favicon_url = excluded.favicon_url,
            last_active_at = excluded.last_active_at, history_index = excluded.history_index,
            position = excluded.position, visible_url = excluded.visible_url, history_count = excluded.history_count,
            history_bytes = excluded.history_bytes
            """)
        let historyUpsert = try db.cached(
            "INSERT INTO tab_histories (tab_id, history) VALUES (?, ?) ON CONFLICT(tab_id) DO UPDATE SET history = excluded.history")
        for (windowID, tab) in change.tabs where tab.summary != nil {
            // An unrealized tab: its row without the history, which stays as stored (with its summary).
            try db.cached(
                """
                UPDATE tabs SET window_id = ?, group_id = ?, opener_id = ?, opener_navigation_index = ?, title = ?, loading = ?,
                progress = ?, favicon_url = ?, last_active_at = ?, history_index = ?, position = ? WHERE id = ?
                """
            ).run(
                windowID, tab.groupID, tab.openerID, tab.openerNavigationIndex, tab.title, tab.loading, tab.progress, tab.faviconURL,
                tab.lastActiveAt.timeIntervalSince1970, tab.historyIndex, tab.position, tab.id)
            guard db.changes == 1 else { throw StoreError.missingHistory(tabID: tab.id) }
        }
        for (windowID, tab) in change.tabs where tab.summary == nil {
            let summary = HistorySummary(tab.history, index: tab.historyIndex)
            try upsert.run(
                tab.id, windowID, tab.groupID, tab.openerID, tab.openerNavigationIndex, tab.title, tab.loading,
                tab.progress, tab.faviconURL, tab.createdAt.timeIntervalSince1970, tab.lastActiveAt.timeIntervalSince1970,
                tab.historyIndex, tab.position, summary.visibleURL, summary.count, summary.byteCount)
            try historyUpsert.run(tab.id, HistoryCodec.encode(tab.history))
        }
        for snapshot in change.snapshots {
            guard let bytes = snapshot.bytes else { continue }
            // Written only for a tab that is stored (one closed in the same commit has no row).
            try db.cached(
                """
                INSERT INTO tab_snapshots (tab_id, etag, media_type, byte_count, captured_at, bytes)
                SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM tabs WHERE id = ?1)
                ON CONFLICT(tab_id) DO UPDATE SET etag = excluded.etag, media_type = excluded.media_type,
                byte_count = excluded.byte_count, captured_at = excluded.captured_at, bytes = excluded.bytes
                """
            ).run(snapshot.tabID, snapshot.etag, snapshot.mediaType, snapshot.byteCount, snapshot.capturedAt.timeIntervalSince1970, bytes)
        }
        // A whole order given with a window (not what the mediators send) sets its tabs' positions.
        for window in change.windows where !window.tabOrder.isEmpty {
            for (index, tab) in window.tabOrder.enumerated() {
                try db.cached("UPDATE tabs SET position = ? WHERE id = ? AND window_id = ?").run(Double(index) * TabRecord.positionStep, tab, window.id)
            }
        }
        for id in change.deletedTokens { try db.cached("DELETE FROM tokens WHERE id = ?").run(id) }
        for token in change.tokens {
            try db.cached("INSERT OR REPLACE INTO tokens (id, profile_id, hash, created_at) VALUES (?, ?, ?, ?)").run(
                token.id, token.profileID, token.hash, token.createdAt.timeIntervalSince1970)
        }
        for profile in change.releasedRendererAssignments { try db.cached("DELETE FROM renderer_assignments WHERE profile_id = ?").run(profile) }
        for assignment in change.rendererAssignments {
            try db.cached("INSERT OR REPLACE INTO renderer_assignments (profile_id, renderer, fence) VALUES (?, ?, ?)").run(
                assignment.profileID, assignment.renderer, Int64(bitPattern: assignment.fence))
        }
        for rendering in change.renderings {
            if rendering.isDefault {
                try db.cached("DELETE FROM renderings WHERE profile_id = ?").run(rendering.profileID)
            } else {
                try db.cached("INSERT OR REPLACE INTO renderings (profile_id, pin, excluded) VALUES (?, ?, ?)").run(
                    rendering.profileID, rendering.pin, rendering.excluded ? 1 : 0)
            }
        }
        if let fence = change.rendererFence {
            try db.cached("INSERT INTO renderer_fence (id, last) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET last = max(last, excluded.last)").run(
                Int64(bitPattern: fence))
        }
        for answer in change.idempotency {
            try db.cached(
                """
                INSERT OR REPLACE INTO idempotency_keys (key, fingerprint, status, headers, body, created_at) VALUES (?, ?, ?, ?, ?, ?)
                """
            ).run(
                answer.key, answer.fingerprint, answer.status,
                answer.headers.map { "\($0.name): \($0.value)\n" }.joined(), answer.body,
                answer.createdAt.timeIntervalSince1970)
        }
        for id in change.closedRemoved { try db.cached("DELETE FROM closed_tabs WHERE id = ?1 OR entry_id = ?1").run(id) }
        for (profileID, entry) in change.closedAdded {
            // Written again: its rows are replaced whole (a window entry may have lost or gained rows).
            try db.cached("DELETE FROM closed_tabs WHERE id = ?1 OR entry_id = ?1").run(entry.id)
            let grouped = entry.kind != .tab
            for tab in entry.tabs {
                try db.cached(
                    """
                    INSERT OR REPLACE INTO closed_tabs (id, profile_id, position, tab_id, window_id, tab_index, group_id, was_active,
                    was_pinned, title, favicon_url, closed_at, history_index, history, entry_id, entry_kind, group_title,
                    group_color, group_collapsed) VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
                ).run(
                    tab.id, profileID, tab.tabID, tab.windowID, tab.index, tab.groupID, tab.wasActive,
                    tab.wasPinned, tab.title, tab.faviconURL, tab.closedAt.timeIntervalSince1970, tab.historyIndex,
                    HistoryCodec.encode(tab.history), grouped ? entry.id : nil, grouped ? entry.kind.rawValue : nil,
                    tab.group?.title, tab.group?.color, tab.group?.collapsed ?? false)
            }
        }
    }

    /// Commits a small real write (a row added and removed in one transaction): whether the database
    /// takes commits again after a failure (a full disk, an I/O error).
    public func probeWrite() throws {
        try db.transaction {
            try db.run(
                "INSERT INTO idempotency_keys (key, fingerprint, status, headers, body, created_at) VALUES (?, ?, 0, '', ?, 0)",
                "\u{1}probe", [UInt8](), [UInt8](repeating: 0, count: 4096))
            try db.run("DELETE FROM idempotency_keys WHERE key = ?", "\u{1}probe")
        }
    }

    /// How many tabs are stored (for a restore's progress).
    public func tabCount() throws -> Int {
        Int(try db.scalar("SELECT COUNT(*) FROM tabs").int64 ?? 0)
    }

    /// Deletes stored answers of idempotent requests older than `date`.
    /// - Returns: how many were deleted.
    @discardableResult
    public func purgeIdempotency(before date: Date) throws -> Int {
        try db.cached("DELETE FROM idempotency_keys WHERE created_at < ?").run(date.timeIntervalSince1970)
        return db.changes
    }

    /// The tabs of one window, by id (what ``load(now:includingTabs:)`` leaves out when asked).
    public func loadTabs(ofWindow id: String) throws -> [String: TabRecord] {
        var tabs: [String: TabRecord] = [:]
        try loadTabs(ofWindow: id, into: &tabs)
        return tabs
    }

    /// The tabs of one window, with their histories, added to `tabs`.
    func loadTabs(ofWindow id: String, into tabs: inout [String: TabRecord]) throws {
        let statement = try db.cached(Self.tabColumns + " WHERE window_id = ?")
        try statement.bind([id])
        while try statement.step() {
            let tab = try Self.tab(statement)
            tabs[tab.id] = tab
        }
    }

    private static let tabColumns = """
        SELECT t.id, t.group_id, t.opener_id, t.opener_navigation_index, t.title, t.loading, t.progress, t.favicon_url,
        t.created_at, t.last_active_at, t.history_index, h.history, t.position, s.etag, s.media_type, s.byte_count, s.captured_at
        FROM tabs t LEFT JOIN tab_histories h ON h.tab_id = t.id LEFT JOIN tab_snapshots s ON s.tab_id = t.id
        """

    private static func tab(_ row: SQLiteStatement) throws -> TabRecord {
        guard let history = row.column(11).bytes else { throw MissingHistory(tabID: row.column(0).string ?? "") }
        var tab = TabRecord(
            id: row.column(0).string ?? "", groupID: row.column(1).string, openerID: row.column(2).string,
            openerNavigationIndex: row.column(3).int, title: row.column(4).string ?? "", loading: row.column(5).int == 1,
            progress: row.column(6).double ?? 0, faviconURL: row.column(7).string,
            createdAt: Date(timeIntervalSince1970: row.column(8).double ?? 0),
            lastActiveAt: Date(timeIntervalSince1970: row.column(9).double ?? 0), historyIndex: row.column(10).int ?? -1,
            history: try HistoryCodec.decode(history), position: row.column(12).double ?? 0)
        if let etag = row.column(13).string {
            tab.snapshot = SnapshotRecord(
                tabID: tab.id, etag: etag, mediaType: row.column(14).string ?? "", byteCount: row.column(15).int ?? 0,
                capturedAt: Date(timeIntervalSince1970: row.column(16).double ?? 0), bytes: nil)
        }
        return tab
    }

    /// Loads everything saved (idempotency answers only while younger than their lifetime at `now`).
    /// - Parameter includingTabs: false leaves the tabs out, for ``TabFeed`` to read them while the
    ///   model is rebuilt.
    public func load(now: Date = Date(), includingTabs: Bool = true) throws -> StoredState {
        var state = StoredState()
        state.profiles = try profileRecords(nil)
        state.windows = try windowRecords(ofProfile: nil)
        if includingTabs {
            let tabs = try db.prepare(Self.tabColumns)
            try tabs.bind([])
            while try tabs.step() {
                let tab = try Self.tab(tabs)
                state.tabs[tab.id] = tab
            }
        }
        state.recentlyClosed = try closedEntries(ofProfile: nil)
        try loadShared(into: &state, now: now)
        return state
    }

    /// What every profile shares rather than holds: the API tokens and the stored idempotent answers
    /// (younger than their lifetime at `now`).
    public func loadShared(into state: inout StoredState, now: Date = Date()) throws {
        for row in try db.rows("SELECT id, profile_id, hash, created_at FROM tokens ORDER BY created_at, id") {
            state.tokens.append(
                TokenRecord(
                    id: row[0].string ?? "", profileID: row[1].string ?? "", hash: row[2].bytes ?? [],
                    createdAt: Date(timeIntervalSince1970: row[3].double ?? 0)))
        }
        for row in try db.rows("SELECT profile_id, renderer, fence FROM renderer_assignments ORDER BY profile_id") {
            state.rendererAssignments.append(
                RendererAssignmentRecord(profileID: row[0].string ?? "", renderer: row[1].string ?? "", fence: UInt64(bitPattern: row[2].int64 ?? 0)))
        }
        for row in try db.rows("SELECT last FROM renderer_fence WHERE id = 1") { state.rendererFence = UInt64(bitPattern: row[0].int64 ?? 0) }
        for row in try db.rows("SELECT profile_id, pin, excluded FROM renderings ORDER BY profile_id") {
            state.renderings.append(RenderingRecord(profileID: row[0].string ?? "", pin: row[1].string, excluded: (row[2].int ?? 0) != 0))
        }
        for row in try db.rows(
            """
            SELECT key, fingerprint, status, headers, body, created_at FROM idempotency_keys WHERE created_at >= ? ORDER BY created_at
            """, now.addingTimeInterval(-IdempotencyRecord.lifetime).timeIntervalSince1970)
        {
            let headers = (row[3].string ?? "").split(separator: "\n").compactMap { line -> IdempotencyRecord.HeaderField? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return .init(name: String(line[..<colon]), value: String(line[line.index(after: colon)...].dropFirst()))
            }
            state.idempotency.append(
                IdempotencyRecord(
                    key: row[0].string ?? "", fingerprint: row[1].bytes ?? [], status: row[2].int ?? 200, headers: headers,
                    body: row[4].bytes ?? [], createdAt: Date(timeIntervalSince1970: row[5].double ?? 0)))
        }
    }

    /// The stored profiles (one when `id` is given, if stored), oldest first.
    func profileRecords(_ id: String?) throws -> [ProfileRecord] {
        let rows =
            if let id {
                try db.cached("SELECT p.id, p.name, p.created_at, w.state FROM profiles p LEFT JOIN web_states w ON w.profile_id = p.id WHERE p.id = ?")
                    .rows(id)
            } else {
                try db.rows(
                    "SELECT p.id, p.name, p.created_at, w.state FROM profiles p LEFT JOIN web_states w ON w.profile_id = p.id ORDER BY p.created_at, p.id")
            }
        return rows.map { row in
            ProfileRecord(
                id: row[0].string ?? "", name: row[1].string ?? "", createdAt: Date(timeIntervalSince1970: row[2].double ?? 0), webState: row[3].bytes)
        }
    }

    /// The windows of one profile (of all when nil), with their groups and tab order, oldest first.
    func windowRecords(ofProfile profile: String?) throws -> [WindowRecord] {
        let scope = profile == nil ? "" : " WHERE w.profile_id = ?1"
        let values: [any SQLiteBindable] = profile.map { [$0] } ?? []
        var groups: [String: [GroupRecord]] = [:]
        for row in try db.cached(
            "SELECT g.window_id, g.id, g.title, g.color, g.collapsed FROM groups g JOIN windows w ON w.id = g.window_id\(scope) "
                + "ORDER BY g.window_id, g.position"
        ).rows(bindings: values) {
            groups[row[0].string ?? "", default: []].append(
                GroupRecord(
                    id: row[1].string ?? "", title: row[2].string ?? "", color: row[3].string ?? "grey", collapsed: row[4].int == 1))
        }
        var orders: [String: [String]] = [:]
        for row in try db.cached(
            "SELECT t.window_id, t.id FROM tabs t JOIN windows w ON w.id = t.window_id\(scope) ORDER BY t.window_id, t.position, t.rowid"
        ).rows(bindings: values) {
            orders[row[0].string ?? "", default: []].append(row[1].string ?? "")
        }
        return try db.cached(
            "SELECT w.id, w.profile_id, w.version, w.active_index, w.pinned_count, w.created_at, w.last_active_at FROM windows w\(scope) "
                + "ORDER BY w.created_at, w.id"
        ).rows(bindings: values).map { row in
            let id = row[0].string ?? ""
            return WindowRecord(
                id: id, profileID: row[1].string ?? "", version: row[2].int ?? 1,
                tabOrder: orders[id] ?? [],
                activeIndex: row[3].int ?? -1, pinnedCount: row[4].int ?? 0, groups: groups[id] ?? [],
                createdAt: Date(timeIntervalSince1970: row[5].double ?? 0),
                lastActiveAt: Date(timeIntervalSince1970: row[6].double ?? 0))
        }
    }

    /// Each profile's recently closed entries (one profile's when given), newest first.
    func closedEntries(ofProfile profile: String?) throws -> [String: [ClosedEntryRecord]] {
        let scope = profile == nil ? "" : " WHERE profile_id = ?1"
        var closedRows: [String: [ClosedEntryRecord.Row]] = [:]
        for row in try db.cached(
            """
            SELECT profile_id, id, tab_id, window_id, tab_index, group_id, was_active, was_pinned, title, favicon_url,
            closed_at, history_index, history, entry_id, entry_kind, group_title, group_color, group_collapsed
            FROM closed_tabs\(scope) ORDER BY profile_id, closed_at DESC, rowid DESC
            """
        ).rows(bindings: profile.map { [$0] } ?? []) {
            let group =
                row[5].string == nil
                ? nil
                : ClosedGroupRecord(title: row[15].string ?? "", color: row[16].string ?? "", collapsed: row[17].int == 1)
            closedRows[row[0].string ?? "", default: []].append(
                ClosedEntryRecord.Row(
                    entryID: row[13].string, kind: row[14].string,
                    tab: ClosedTabRecord(
                        id: row[1].string ?? "", tabID: row[2].string ?? "", windowID: row[3].string ?? "", index: row[4].int ?? 0,
                        groupID: row[5].string, group: group, wasActive: row[6].int == 1, wasPinned: row[7].int == 1,
                        title: row[8].string ?? "", faviconURL: row[9].string, closedAt: Date(timeIntervalSince1970: row[10].double ?? 0),
                        historyIndex: row[11].int ?? -1, history: try HistoryCodec.decode(row[12].bytes ?? []))))
        }
        return closedRows.mapValues(ClosedEntryRecord.assemble)
    }
}
