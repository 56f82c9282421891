public import BrowserRecords
public import Foundation
import PostgresNIO

extension PostgresStore {
    /// Loads everything stored (idempotency answers only while younger than their lifetime at `now`),
    /// in one repeatable-read transaction: one consistent state, whatever commits meanwhile.
    /// - Parameter profile: one regular profile only (an instance taking it over restores just it),
    ///   with the answers of its idempotent requests; nil: everything.
    public func load(now: Date = Date(), profile: String? = nil) async throws -> StoredState {
        try await said(timeout: .seconds(300)) { [self] in
            try await client.withConnection { connection in
                try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
                do {
                    let state = try await load(on: connection, now: now, profile: profile)
                    try await connection.query("COMMIT", logger: logger)
                    return state
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
    }

    private static func date(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }
    private static func bytes(_ buffer: ByteBuffer) -> [UInt8] { Array(buffer.readableBytesView) }

    private func load(on connection: PostgresConnection, now: Date, profile only: String?) async throws -> StoredState {
        var state = StoredState()
        for try await (id, name, created, webState) in try await connection.query(
            """
            SELECT p.id, p.name, p.created_at, w.state FROM profiles p LEFT JOIN web_states w ON w.profile_id = p.id
            WHERE \(only)::text IS NULL OR p.id = \(only) ORDER BY p.created_at, p.id
            """,
            logger: logger
        ).decode((String, String, Double, ByteBuffer?).self) {
            state.profiles.append(ProfileRecord(id: id, name: name, createdAt: Self.date(created), webState: webState.map(Self.bytes)))
        }
        var groups: [String: [GroupRecord]] = [:]
        for try await (window, id, title, color, collapsed) in try await connection.query(
            """
            SELECT g.window_id, g.id, g.title, g.color, g.collapsed FROM groups g JOIN windows w ON w.id = g.window_id
            WHERE \(only)::text IS NULL OR w.profile_id = \(only) ORDER BY g.window_id, g.position
            """, logger: logger
        )
        .decode((String, String, String, String, Bool).self) {
            groups[window, default: []].append(GroupRecord(id: id, title: title, color: color, collapsed: collapsed))
        }
        var orders: [String: [String]] = [:]
        for try await (window, id) in try await connection.query(
            """
            SELECT t.window_id, t.id FROM tabs t JOIN windows w ON w.id = t.window_id
            WHERE \(only)::text IS NULL OR w.profile_id = \(only) ORDER BY t.window_id, t.position, t.id
            """, logger: logger
        ).decode((String, String).self) {
            orders[window, default: []].append(id)
        }
        for try await (id, profile, version, active, pinned, created, lastActive) in try await connection.query(
            """
            SELECT id, profile_id, version, active_index, pinned_count, created_at, last_active_at FROM windows
            WHERE \(only)::text IS NULL OR profile_id = \(only) ORDER BY created_at, id
            """, logger: logger
        ).decode((String, String, Int, Int, Int, Double, Double).self) {
            state.windows.append(
                WindowRecord(
                    id: id, profileID: profile, version: version, tabOrder: orders[id] ?? [], activeIndex: active, pinnedCount: pinned,
                    groups: groups[id] ?? [], createdAt: Self.date(created), lastActiveAt: Self.date(lastActive)))
        }
        let tabRows = try await connection.query(
            """
            SELECT t.id, t.group_id, t.opener_id, t.opener_navigation_index, t.title, t.loading, t.progress, t.favicon_url,
            t.created_at, t.last_active_at, t.history_index, t.history, t.position, s.etag, s.media_type, s.byte_count, s.captured_at
            FROM tabs t JOIN windows w ON w.id = t.window_id LEFT JOIN tab_snapshots s ON s.tab_id = t.id
            WHERE \(only)::text IS NULL OR w.profile_id = \(only)
            """, logger: logger)
        for try await row in tabRows {
            let (id, group, opener, openerIndex, title, loading, progress, favicon, created, lastActive, historyIndex, history, position) = try row.decode(
                (String, String?, String?, Int?, String, Bool, Double, String?, Double, Double, Int, ByteBuffer, Double).self)
            var tab = TabRecord(
                id: id, groupID: group, openerID: opener, openerNavigationIndex: openerIndex, title: title, loading: loading,
                progress: progress, faviconURL: favicon, createdAt: Self.date(created), lastActiveAt: Self.date(lastActive),
                historyIndex: historyIndex, history: try HistoryCodec.decode(Self.bytes(history)), position: position)
            let columns = row.makeRandomAccess()
            if let etag = try columns[13].decode(String?.self) {
                tab.snapshot = SnapshotRecord(
                    tabID: id, etag: etag, mediaType: try columns[14].decode(String.self), byteCount: try columns[15].decode(Int.self),
                    capturedAt: Self.date(try columns[16].decode(Double.self)), bytes: nil)
            }
            state.tabs[id] = tab
        }
        let closedRows = try await connection.query(
            """
            SELECT profile_id, id, tab_id, window_id, tab_index, group_id, was_active, was_pinned, title, favicon_url,
            closed_at, history_index, history, entry_id, entry_kind, group_title, group_color, group_collapsed
            FROM closed_tabs WHERE \(only)::text IS NULL OR profile_id = \(only)
            ORDER BY profile_id, closed_at DESC, seq DESC
            """, logger: logger)
        var closed: [String: [ClosedEntryRecord.Row]] = [:]
        for try await row in closedRows {
            let (
                profile, id, tab, window, index, group, wasActive, wasPinned, title, favicon, closedAt, historyIndex, history,
                entryID, kind, groupTitle, groupColor, groupCollapsed
            ) = try row.decode(
                (
                    String, String, String, String, Int, String?, Bool, Bool, String, String?, Double, Int, ByteBuffer,
                    String?, String?, String?, String?, Bool
                ).self)
            closed[profile, default: []].append(
                ClosedEntryRecord.Row(
                    entryID: entryID, kind: kind,
                    tab: ClosedTabRecord(
                        id: id, tabID: tab, windowID: window, index: index, groupID: group,
                        group: group == nil ? nil : ClosedGroupRecord(title: groupTitle ?? "", color: groupColor ?? "", collapsed: groupCollapsed),
                        wasActive: wasActive, wasPinned: wasPinned, title: title, faviconURL: favicon, closedAt: Self.date(closedAt),
                        historyIndex: historyIndex, history: try HistoryCodec.decode(Self.bytes(history)))))
        }
        for (profile, rows) in closed { state.recentlyClosed[profile] = ClosedEntryRecord.assemble(rows) }
        for try await (id, profile, hash, created) in try await connection.query(
            "SELECT id, profile_id, hash, created_at FROM tokens WHERE \(only)::text IS NULL OR profile_id = \(only) ORDER BY created_at, id",
            logger: logger
        )
        .decode((String, String, ByteBuffer, Double).self) {
            state.tokens.append(TokenRecord(id: id, profileID: profile, hash: Self.bytes(hash), createdAt: Self.date(created)))
        }
        if only == nil {
            state.rendererAssignments = try await Self.rendererAssignments(on: connection, logger: logger)
            state.rendererFence = try await Self.rendererFence(on: connection, logger: logger)
            state.renderings = try await Self.renderings(on: connection, logger: logger)
        }
        let since = now.addingTimeInterval(-IdempotencyRecord.lifetime).timeIntervalSince1970
        for try await (key, fingerprint, status, headers, body, created) in try await connection.query(
            """
            SELECT key, fingerprint, status, headers, body, created_at FROM idempotency_keys
            WHERE created_at >= \(since) AND (\(only)::text IS NULL OR profile_id = \(only)) ORDER BY created_at, key
            """, logger: logger
        ).decode((String, ByteBuffer, Int, String, ByteBuffer, Double).self) {
            let fields = headers.split(separator: "\n").compactMap { line -> IdempotencyRecord.HeaderField? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return .init(name: String(line[..<colon]), value: String(line[line.index(after: colon)...].dropFirst()))
            }
            state.idempotency.append(
                IdempotencyRecord(
                    key: key, fingerprint: Self.bytes(fingerprint), status: status, headers: fields,
                    body: Self.bytes(body), createdAt: Self.date(created)))
        }
        return state
    }
}

extension PostgresStore {
    static func rendererAssignments(on connection: PostgresConnection, logger: Logger) async throws -> [RendererAssignmentRecord] {
        var assignments: [RendererAssignmentRecord] = []
        for try await (profile, renderer, fence) in try await connection.query(
            "SELECT profile_id, renderer, fence FROM renderer_assignments ORDER BY profile_id", logger: logger
        ).decode((String, String, Int64).self) {
            assignments.append(RendererAssignmentRecord(profileID: profile, renderer: renderer, fence: UInt64(bitPattern: fence)))
        }
        return assignments
    }

    static func renderings(on connection: PostgresConnection, logger: Logger) async throws -> [RenderingRecord] {
        var renderings: [RenderingRecord] = []
        for try await (profile, pin, excluded) in try await connection.query(
            "SELECT profile_id, pin, excluded FROM renderings ORDER BY profile_id", logger: logger
        ).decode((String, String?, Bool).self) {
            renderings.append(RenderingRecord(profileID: profile, pin: pin, excluded: excluded))
        }
        return renderings
    }

    static func rendererFence(on connection: PostgresConnection, logger: Logger) async throws -> UInt64 {
        for try await last in try await connection.query("SELECT last FROM renderer_fence WHERE id = 1", logger: logger).decode(Int64.self) {
            return UInt64(bitPattern: last)
        }
        return 0
    }
}
