public import BrowserRecords
public import Foundation
public import Logging
import PostgresNIO

/// browserd's state in PostgreSQL: the same records as the SQLite store, written in transactions with
/// `synchronous_commit` on (a commit is durable when it returns), migrated forward at open.
///
/// A ``PostgresClient`` pool underneath: ``run()`` must be running (the application runs it in a task
/// of its own) for any query to be served. Sendable: it holds only the client, which is.
public final class PostgresStore: Sendable {
    /// Why the database cannot be used.
    public enum OpenError: Error, CustomStringConvertible {
        case unusable(database: String, reason: String)

        public var description: String {
            switch self {
            case .unusable(let database, let reason): "cannot use database \(database): \(reason); it was left untouched"
            }
        }
    }

    public let url: DatabaseURL
    let client: PostgresClient
    let logger: Logger
    /// The leases whose epochs each commit claims (fencing); nil: no fence (tools, tests of the store).
    let fence: HeldLeases?

    /// - Parameters:
    ///   - url: where the database is.
    ///   - maximumConnections: the pool's size (one writer, plus readers and lease keepers).
    ///   - fence: the leases this instance holds; every commit of a profile's changes checks, in its
    ///     transaction, that the profile's lease still has the epoch this instance was granted.
    /// - Parameter callDeadline: how long a statement or transaction may take before it is given up
    ///   (the pool waits for a connection as long as the server is unreachable: without it, requests
    ///   would hang).
    public init(
        url: DatabaseURL, maximumConnections: Int = 8, fence: HeldLeases? = nil, callDeadline: Duration = .seconds(5),
        logger: Logger
    ) {
        self.callDeadline = callDeadline
        self.url = url
        self.logger = logger
        self.fence = fence
        let tls: PostgresClient.Configuration.TLS =
            switch url.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        var configuration = PostgresClient.Configuration(
            host: url.host, port: url.port, username: url.username,
            password: url.password, database: url.database, tls: tls)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = [("application_name", "browserd"), ("synchronous_commit", "on")]
        var background = logger
        background.logLevel = max(logger.logLevel, .warning)
        client = PostgresClient(configuration: configuration, backgroundLogger: background)
    }

    /// Runs the connection pool until the task is cancelled.
    public func run() async {
        await client.run()
    }

    /// Checks the server, then migrates the schema forward (one instance at a time).
    /// - Throws: ``OpenError`` when the server cannot be reached or the schema is newer than this program.
    public func prepare() async throws {
        do {
            try await said(timeout: .seconds(30)) { [self] in try await migrate() }
        } catch let error as OpenError {
            throw error
        } catch {
            throw OpenError.unusable(database: url.description, reason: "\(error)")
        }
    }

    private func migrate() async throws {
        do {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLockKey))", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS browserd_schema (
                        version bigint PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                    """, logger: logger)
                var version = 0
                for try await row in try await connection.query("SELECT coalesce(max(version), 0) FROM browserd_schema", logger: logger)
                    .decode(Int.self)
                { version = row }
                guard version <= PostgresSchema.latestVersion else {
                    throw OpenError.unusable(
                        database: url.description,
                        reason: "it has schema version \(version), newer than this browserd knows (\(PostgresSchema.latestVersion)): it was written by a newer browserd")
                }
                for (index, migration) in PostgresSchema.migrations.enumerated() where index + 1 > version {
                    for statement in migration.statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query("INSERT INTO browserd_schema (version, name) VALUES (\(index + 1), \(migration.name))", logger: logger)
                    logger.notice("database migrated", metadata: ["version": "\(index + 1)", "migration": "\(migration.name)"])
                }
            }
        } catch let error as PostgresTransactionError where error.closureError is OpenError {
            throw error.closureError!
        }
    }

    /// Whether the server answers a trivial query (within 2 s).
    public func ping() async throws {
        try await said(timeout: .seconds(2)) { [self] in _ = try await client.query("SELECT 1", logger: logger) }
    }

    /// The schema version of the database (0 before ``prepare()``).
    public func schemaVersion() async throws -> Int {
        let exists = try await scalar("SELECT to_regclass('browserd_schema') IS NOT NULL", as: Bool.self) ?? false
        guard exists else { return 0 }
        return try await scalar("SELECT coalesce(max(version), 0) FROM browserd_schema", as: Int.self) ?? 0
    }

    /// What an error says, briefly: the server's message and SQLSTATE, never the query or its binds.
    public static func describe(_ error: any Error) -> String {
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError ?? error.beginError ?? error.commitError { return describe(inner) }
        }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            return "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
        }
        return "\(error)"
    }

    /// A failure of the store, said briefly (``describe(_:)``).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// How long a statement or transaction may take before it is given up.
    public let callDeadline: Duration

    /// Runs `body` within `timeout` (default: ``callDeadline``; then cancelled), turning its error into
    /// a ``Failure`` that says what the server said.
    func said<T: Sendable>(timeout: Duration? = nil, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let timeout = timeout ?? callDeadline
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else {
                    throw Failure(description: "the database did not answer within \(timeout)")
                }
                return value
            }
        } catch let error as Failure {
            throw error
        } catch let error as OpenError {
            throw error
        } catch let error as FencedOut {
            throw error
        } catch let error as PostgresTransactionError where error.closureError is FencedOut {
            throw error.closureError!
        } catch {
            throw Failure(description: Self.describe(error))
        }
    }

    func scalar<T: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: T.Type) async throws -> T? {
        var value: T?
        for try await row in try await client.query(query, logger: logger).decode(T.self) { value = row }
        return value
    }

    // MARK: Writing

    /// Applies `changes` in one transaction; when it returns, they are committed.
    public func apply(_ changes: [ChangeSet]) async throws {
        let segments = ChangeSegment.segments(of: changes)
        let claims = try fenceClaims(changes)
        try await said { [self] in
            try await client.withTransaction(logger: logger) { connection in
                if let claims { try await checkFence(claims, on: connection) }
                for segment in segments { try await write(segment, on: connection) }
            }
        }
    }

    /// What a commit claims: the epochs its profiles were granted, and the profiles it creates (whose
    /// leases it takes in the same transaction); nil without a fence.
    /// - Throws: ``FencedOut`` for profiles this instance holds no lease of and does not create.
    private func fenceClaims(_ changes: [ChangeSet]) throws -> (held: [(profile: String, epoch: LeaseEpoch)], created: [String])? {
        guard let fence else { return nil }
        let profiles = Set(changes.compactMap(\.profileID))
        let created = Set(changes.flatMap { change in change.profiles.map(\.id).filter { $0 == change.profileID } })
        let claims = profiles.compactMap { profile in fence.epoch(of: profile).map { (profile, $0) } }
        let unclaimed = profiles.subtracting(claims.map(\.0))
        if !unclaimed.isSubset(of: created) { throw FencedOut(profileIDs: unclaimed.subtracting(created)) }
        return (claims, unclaimed.sorted())
    }

    /// Fencing: the first statements of a commit. Each claimed lease must still be this instance's with
    /// the epoch it was granted (the rows are share-locked until the commit, so a takeover waits for
    /// it), and a profile being created gets its first lease (epoch 1) here, atomically with its row.
    /// - Throws: ``FencedOut`` naming the profiles whose leases moved on (the transaction rolls back).
    private func checkFence(
        _ claims: (held: [(profile: String, epoch: LeaseEpoch)], created: [String]),
        on connection: PostgresConnection
    ) async throws {
        guard let fence else { return }
        if !claims.created.isEmpty {
            var taken: Set<String> = []
            for try await profile in try await connection.query(
                """
                INSERT INTO profile_leases (profile_id, owner_id, owner_url, epoch, expires_at)
                SELECT p, \(fence.instanceID.rawValue), \(fence.advertiseURL), 1, now() + make_interval(secs => \(fence.ttlSeconds))
                FROM unnest(\(claims.created)::text[]) AS p ON CONFLICT (profile_id) DO NOTHING RETURNING profile_id
                """, logger: logger
            ).decode(String.self) { taken.insert(profile) }
            if taken.count < claims.created.count { throw FencedOut(profileIDs: Set(claims.created).subtracting(taken)) }
            for profile in taken { fence.set(profile, epoch: 1) }
        }
        let claims = claims.held
        guard !claims.isEmpty else { return }
        var valid: Set<String> = []
        for try await profile in try await connection.query(
            """
            SELECT l.profile_id FROM profile_leases l
            JOIN unnest(\(claims.map(\.profile))::text[], \(claims.map(\.epoch.value))::int8[]) AS c(profile_id, epoch)
            ON l.profile_id = c.profile_id AND l.epoch = c.epoch WHERE l.owner_id = \(fence.instanceID.rawValue) FOR SHARE OF l
            """, logger: logger
        ).decode(String.self) { valid.insert(profile) }
        if valid.count < claims.count {
            throw FencedOut(profileIDs: Set(claims.map(\.profile)).subtracting(valid))
        }
    }

    /// Commits a small real write (a row added and removed in one transaction).
    public func probeWrite() async throws {
        try await said { [self] in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    """
                    INSERT INTO idempotency_keys (key, fingerprint, status, headers, body, created_at)
                    VALUES (\("\u{1}probe"), ''::bytea, 0, '', ''::bytea, 0) ON CONFLICT (key) DO NOTHING
                    """, logger: logger)
                try await connection.query("DELETE FROM idempotency_keys WHERE key = \("\u{1}probe")", logger: logger)
            }
        }
    }

    /// Deletes stored answers of idempotent requests older than `date`.
    public func purgeIdempotency(before date: Date) async throws {
        try await said { [self] in _ = try await client.query("DELETE FROM idempotency_keys WHERE created_at < \(date.timeIntervalSince1970)", logger: logger) }
    }

    private func run(_ connection: PostgresConnection, _ sql: String, _ bind: (inout PostgresBindings) -> Void) async throws {
        var bindings = PostgresBindings()
        bind(&bindings)
        try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)
    }

    private static func bytes(_ value: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: value) }

    private func write(_ segment: ChangeSegment, on connection: PostgresConnection) async throws {
        if let change = segment.structural {
            try await writeStructure(change, on: connection)
        }
        let windows = segment.windows.upserts
        if !windows.isEmpty {
            try await run(
                connection,
                """
                INSERT INTO windows (id, profile_id, version, active_index, pinned_count, created_at, last_active_at)
                SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::float8[], $7::float8[])
                ON CONFLICT (id) DO UPDATE SET version = excluded.version, active_index = excluded.active_index,
                pinned_count = excluded.pinned_count, last_active_at = excluded.last_active_at
                """
            ) {
                $0.append(windows.map(\.id))
                $0.append(windows.map(\.profileID))
                $0.append(windows.map(\.version))
                $0.append(windows.map(\.activeIndex))
                $0.append(windows.map(\.pinnedCount))
                $0.append(windows.map(\.createdAt.timeIntervalSince1970))
                $0.append(windows.map(\.lastActiveAt.timeIntervalSince1970))
            }
            try await run(connection, "DELETE FROM groups WHERE window_id = ANY($1::text[])") { $0.append(windows.map(\.id)) }
            let groups = windows.flatMap { window in window.groups.enumerated().map { (window.id, $0.offset, $0.element) } }
            if !groups.isEmpty {
                try await run(
                    connection,
                    """
                    INSERT INTO groups (window_id, position, id, title, color, collapsed)
                    SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::bool[])
                    """
                ) {
                    $0.append(groups.map(\.0))
                    $0.append(groups.map(\.1))
                    $0.append(groups.map(\.2.id))
                    $0.append(groups.map(\.2.title))
                    $0.append(groups.map(\.2.color))
                    $0.append(groups.map(\.2.collapsed))
                }
            }
        }
        let headers = segment.headers.upserts
        if !headers.isEmpty {
            try await run(
                connection,
                """
                UPDATE windows AS w SET version = h.version, active_index = h.active_index, pinned_count = h.pinned_count,
                last_active_at = h.last_active_at
                FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::float8[])
                AS h(id, version, active_index, pinned_count, last_active_at) WHERE w.id = h.id
                """
            ) {
                $0.append(headers.map(\.id))
                $0.append(headers.map(\.version))
                $0.append(headers.map(\.activeIndex))
                $0.append(headers.map(\.pinnedCount))
                $0.append(headers.map(\.lastActiveAt.timeIntervalSince1970))
            }
        }
        let deletedTabs = segment.tabs.everDeleted
        if !deletedTabs.isEmpty {
            try await run(connection, "DELETE FROM tabs WHERE id = ANY($1::text[])") { $0.append(deletedTabs) }
        }
        let tabs = segment.tabs.upserts
        // This store loads every tab with its history, so no row comes without one (an unrealized tab's):
        // were one to come, writing it would lose the stored history, so the change is refused whole.
        if let unrealized = tabs.first(where: { $0.tab.summary != nil }) {
            throw Failure(description: "tab \(unrealized.tab.id) came without its history (this store holds every tab with its history)")
        }
        if !tabs.isEmpty {
            try await run(
                connection,
                """
                INSERT INTO tabs (id, window_id, group_id, opener_id, opener_navigation_index, title, loading, progress,
                favicon_url, created_at, last_active_at, history_index, history, position)
                SELECT id, window_id, CASE WHEN has_group THEN group_id END, CASE WHEN has_opener THEN opener_id END,
                CASE WHEN has_opener_index THEN opener_navigation_index END, title, loading, progress,
                CASE WHEN has_favicon THEN favicon_url END, created_at, last_active_at, history_index, history, position
                FROM unnest($1::text[], $2::text[], $3::bool[], $4::text[], $5::bool[], $6::text[], $7::bool[], $8::int8[],
                $9::text[], $10::bool[], $11::float8[], $12::bool[], $13::text[], $14::float8[], $15::float8[], $16::int8[],
                $17::bytea[], $18::float8[])
                AS t(id, window_id, has_group, group_id, has_opener, opener_id, has_opener_index, opener_navigation_index,
                title, loading, progress, has_favicon, favicon_url, created_at, last_active_at, history_index, history, position)
                ON CONFLICT (id) DO UPDATE SET window_id = excluded.window_id, group_id = excluded.group_id,
                opener_id = excluded.opener_id, opener_navigation_index = excluded.opener_navigation_index, title = excluded.title,
                loading = excluded.loading, progress = excluded.progress, favicon_url = excluded.favicon_url,
                last_active_at = excluded.last_active_at, history_index = excluded.history_index, history = excluded.history,
                position = excluded.position
                """
            ) {
                $0.append(tabs.map(\.tab.id))
                $0.append(tabs.map(\.windowID))
                $0.append(tabs.map { $0.tab.groupID != nil })
                $0.append(tabs.map { $0.tab.groupID ?? "" })
                $0.append(tabs.map { $0.tab.openerID != nil })
                $0.append(tabs.map { $0.tab.openerID ?? "" })
                $0.append(tabs.map { $0.tab.openerNavigationIndex != nil })
                $0.append(tabs.map { $0.tab.openerNavigationIndex ?? 0 })
                $0.append(tabs.map(\.tab.title))
                $0.append(tabs.map(\.tab.loading))
                $0.append(tabs.map(\.tab.progress))
                $0.append(tabs.map { $0.tab.faviconURL != nil })
                $0.append(tabs.map { $0.tab.faviconURL ?? "" })
                $0.append(tabs.map(\.tab.createdAt.timeIntervalSince1970))
                $0.append(tabs.map(\.tab.lastActiveAt.timeIntervalSince1970))
                $0.append(tabs.map(\.tab.historyIndex))
                $0.append(tabs.map { Self.bytes(HistoryCodec.encode($0.tab.history)) })
                $0.append(tabs.map(\.tab.position))
            }
        }
        let snapshots = segment.snapshots.upserts
        if !snapshots.isEmpty {
            // Written only for a tab that is stored (one closed in the same commit has no row).
            try await run(
                connection,
                """
                INSERT INTO tab_snapshots (tab_id, etag, media_type, byte_count, captured_at, bytes)
                SELECT s.tab_id, s.etag, s.media_type, s.byte_count, s.captured_at, s.bytes
                FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::float8[], $6::bytea[])
                AS s(tab_id, etag, media_type, byte_count, captured_at, bytes)
                WHERE EXISTS (SELECT 1 FROM tabs t WHERE t.id = s.tab_id)
                ON CONFLICT (tab_id) DO UPDATE SET etag = excluded.etag, media_type = excluded.media_type,
                byte_count = excluded.byte_count, captured_at = excluded.captured_at, bytes = excluded.bytes
                """
            ) {
                $0.append(snapshots.map(\.tabID))
                $0.append(snapshots.map(\.etag))
                $0.append(snapshots.map(\.mediaType))
                $0.append(snapshots.map(\.byteCount))
                $0.append(snapshots.map(\.capturedAt.timeIntervalSince1970))
                $0.append(snapshots.map { Self.bytes($0.bytes ?? []) })
            }
        }
        // A whole order given with a window (not what the mediators send) sets its tabs' positions.
        let ordered = windows.filter { !$0.tabOrder.isEmpty }
        if !ordered.isEmpty {
            let rows = ordered.flatMap { window in window.tabOrder.enumerated().map { (window.id, $0.element, Double($0.offset) * TabRecord.positionStep) } }
            try await run(
                connection,
                """
                UPDATE tabs AS t SET position = o.position FROM unnest($1::text[], $2::text[], $3::float8[]) AS o(window_id, id, position)
                WHERE t.id = o.id AND t.window_id = o.window_id
                """
            ) {
                $0.append(rows.map(\.0))
                $0.append(rows.map(\.1))
                $0.append(rows.map(\.2))
            }
        }
        if let change = segment.structural {
            if !change.releasedRendererAssignments.isEmpty {
                try await run(connection, "DELETE FROM renderer_assignments WHERE profile_id = ANY($1::text[])") {
                    $0.append(change.releasedRendererAssignments)
                }
            }
            if !change.rendererAssignments.isEmpty {
                try await run(
                    connection,
                    """
                    INSERT INTO renderer_assignments (profile_id, renderer, fence) SELECT * FROM unnest($1::text[], $2::text[], $3::int8[])
                    ON CONFLICT (profile_id) DO UPDATE SET renderer = excluded.renderer, fence = excluded.fence
                    """
                ) {
                    $0.append(change.rendererAssignments.map(\.profileID))
                    $0.append(change.rendererAssignments.map(\.renderer))
                    $0.append(change.rendererAssignments.map { Int64(bitPattern: $0.fence) })
                }
            }
            for rendering in change.renderings {
                if rendering.isDefault {
                    try await run(connection, "DELETE FROM renderings WHERE profile_id = $1") { $0.append(rendering.profileID) }
                } else {
                    try await run(
                        connection,
                        """
                        INSERT INTO renderings (profile_id, pin, excluded) VALUES ($1, $2, $3)
                        ON CONFLICT (profile_id) DO UPDATE SET pin = excluded.pin, excluded = excluded.excluded
                        """
                    ) {
                        $0.append(rendering.profileID)
                        $0.append(rendering.pin)
                        $0.append(rendering.excluded)
                    }
                }
            }
            if let fence = change.rendererFence {
                try await run(
                    connection,
                    "INSERT INTO renderer_fence (id, last) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET last = GREATEST(renderer_fence.last, excluded.last)"
                ) { $0.append(Int64(bitPattern: fence)) }
            }
            if !change.deletedTokens.isEmpty {
                try await run(connection, "DELETE FROM tokens WHERE id = ANY($1::text[])") { $0.append(change.deletedTokens) }
            }
            // Other instances learn of issued and revoked tokens at commit (they authenticate too).
            for id in change.deletedTokens + change.tokens.map(\.id) {
                try await run(connection, "SELECT pg_notify('\(ClusterNotifications.tokenChannel)', $1)") { $0.append(id) }
            }
            if !change.tokens.isEmpty {
                try await run(
                    connection,
                    """
                    INSERT INTO tokens (id, profile_id, hash, created_at) SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::float8[])
                    ON CONFLICT (id) DO UPDATE SET profile_id = excluded.profile_id, hash = excluded.hash, created_at = excluded.created_at
                    """
                ) {
                    $0.append(change.tokens.map(\.id))
                    $0.append(change.tokens.map(\.profileID))
                    $0.append(change.tokens.map { Self.bytes($0.hash) })
                    $0.append(change.tokens.map(\.createdAt.timeIntervalSince1970))
                }
            }
        }
        let answers = segment.idempotency.upserts
        if !answers.isEmpty {
            try await run(
                connection,
                """
                INSERT INTO idempotency_keys (key, fingerprint, status, headers, body, created_at, profile_id)
                SELECT key, fingerprint, status, headers, body, created_at, NULLIF(profile_id, '')
                FROM unnest($1::text[], $2::bytea[], $3::int8[], $4::text[], $5::bytea[], $6::float8[], $7::text[])
                AS a(key, fingerprint, status, headers, body, created_at, profile_id)
                ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status,
                headers = excluded.headers, body = excluded.body, created_at = excluded.created_at, profile_id = excluded.profile_id
                """
            ) {
                $0.append(answers.map(\.answer.key))
                $0.append(answers.map { Self.bytes($0.answer.fingerprint) })
                $0.append(answers.map(\.answer.status))
                $0.append(answers.map { $0.answer.headers.map { "\($0.name): \($0.value)\n" }.joined() })
                $0.append(answers.map { Self.bytes($0.answer.body) })
                $0.append(answers.map(\.answer.createdAt.timeIntervalSince1970))
                $0.append(answers.map { $0.profileID ?? "" })
            }
        }
        let closedGone = segment.closed.everDeleted
        let closedAdded = segment.closed.upserts
        if !closedGone.isEmpty || !closedAdded.isEmpty {
            // An entry written again is replaced whole, and takes its place as the newest (as SQLite's REPLACE).
            let ids = closedGone + closedAdded.map(\.entry.id)
            try await run(connection, "DELETE FROM closed_tabs WHERE id = ANY($1::text[]) OR entry_id = ANY($1::text[])") {
                $0.append(ids)
            }
        }
        // One row per tab; a window or group entry's rows name their entry.
        let rows = closedAdded.flatMap { added in
            added.entry.tabs.map { (profileID: added.profileID, entry: added.entry.kind == .tab ? nil : added.entry, tab: $0) }
        }
        if !rows.isEmpty {
            try await run(
                connection,
                """
                INSERT INTO closed_tabs (id, profile_id, tab_id, window_id, tab_index, group_id, was_active, was_pinned, title,
                favicon_url, closed_at, history_index, history, entry_id, entry_kind, group_title, group_color, group_collapsed)
                SELECT id, profile_id, tab_id, window_id, tab_index, CASE WHEN has_group THEN group_id END, was_active, was_pinned,
                title, CASE WHEN has_favicon THEN favicon_url END, closed_at, history_index, history,
                CASE WHEN has_entry THEN entry_id END, CASE WHEN has_entry THEN entry_kind END,
                CASE WHEN has_group THEN group_title END, CASE WHEN has_group THEN group_color END, group_collapsed
                FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::bool[], $7::text[], $8::bool[],
                $9::bool[], $10::text[], $11::bool[], $12::text[], $13::float8[], $14::int8[], $15::bytea[], $16::bool[],
                $17::text[], $18::text[], $19::text[], $20::text[], $21::bool[]) WITH ORDINALITY
                AS c(id, profile_id, tab_id, window_id, tab_index, has_group, group_id, was_active, was_pinned, title,
                has_favicon, favicon_url, closed_at, history_index, history, has_entry, entry_id, entry_kind, group_title,
                group_color, group_collapsed, n) ORDER BY n
                """
            ) {
                $0.append(rows.map(\.tab.id))
                $0.append(rows.map(\.profileID))
                $0.append(rows.map(\.tab.tabID))
                $0.append(rows.map(\.tab.windowID))
                $0.append(rows.map(\.tab.index))
                $0.append(rows.map { $0.tab.groupID != nil })
                $0.append(rows.map { $0.tab.groupID ?? "" })
                $0.append(rows.map(\.tab.wasActive))
                $0.append(rows.map(\.tab.wasPinned))
                $0.append(rows.map(\.tab.title))
                $0.append(rows.map { $0.tab.faviconURL != nil })
                $0.append(rows.map { $0.tab.faviconURL ?? "" })
                $0.append(rows.map(\.tab.closedAt.timeIntervalSince1970))
                $0.append(rows.map(\.tab.historyIndex))
                $0.append(rows.map { Self.bytes(HistoryCodec.encode($0.tab.history)) })
                $0.append(rows.map { $0.entry != nil })
                $0.append(rows.map { $0.entry?.id ?? "" })
                $0.append(rows.map { $0.entry?.kind.rawValue ?? "" })
                $0.append(rows.map { $0.tab.group?.title ?? "" })
                $0.append(rows.map { $0.tab.group?.color ?? "" })
                $0.append(rows.map { $0.tab.group?.collapsed ?? false })
            }
        }
    }

    /// Profiles created and deleted, windows deleted, in the SQLite store's order.
    private func writeStructure(_ change: ChangeSet, on connection: PostgresConnection) async throws {
        if change.replacesAll { try await run(connection, "DELETE FROM profiles") { _ in } }
        if !change.deletedProfiles.isEmpty {
            try await run(connection, "DELETE FROM profiles WHERE id = ANY($1::text[])") { $0.append(change.deletedProfiles) }
            try await run(connection, "DELETE FROM profile_leases WHERE profile_id = ANY($1::text[])") { $0.append(change.deletedProfiles) }
            for id in change.deletedProfiles {
                try await run(connection, "SELECT pg_notify('\(ClusterNotifications.tokenChannel)', $1)") { $0.append("profile:" + id) }
            }
        }
        if !change.profiles.isEmpty {
            try await run(
                connection,
                """
                INSERT INTO profiles (id, name, created_at) SELECT * FROM unnest($1::text[], $2::text[], $3::float8[])
                ON CONFLICT (id) DO UPDATE SET name = excluded.name
                """
            ) {
                $0.append(change.profiles.map(\.id))
                $0.append(change.profiles.map(\.name))
                $0.append(change.profiles.map(\.createdAt.timeIntervalSince1970))
            }
        }
        for state in change.webStates {
            if let json = state.json {
                try await run(
                    connection,
                    "INSERT INTO web_states (profile_id, state) VALUES ($1, $2) ON CONFLICT (profile_id) DO UPDATE SET state = excluded.state"
                ) {
                    $0.append(state.profileID)
                    $0.append(ByteBuffer(bytes: json))
                }
            } else {
                try await run(connection, "DELETE FROM web_states WHERE profile_id = $1") { $0.append(state.profileID) }
            }
        }
        if !change.deletedWindows.isEmpty {
            try await run(connection, "DELETE FROM windows WHERE id = ANY($1::text[])") { $0.append(change.deletedWindows) }
        }
    }
}
