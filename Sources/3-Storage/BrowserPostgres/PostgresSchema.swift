import Foundation

/// The PostgreSQL schema: forward-only migrations, each applied once in its own transaction and
/// recorded in `browserd_schema` with its number. Never edit a released one: add the next.
///
/// The tables mirror the SQLite store's (``BrowserPersistence/PersistenceStore``): the same records,
/// the same meaning. Times are seconds since 1970 as `double precision` (the records' `Date`s exactly);
/// histories are the same compact binary form (`bytea`).
enum PostgresSchema {
    struct Migration {
        let name: String
        let sql: String

        /// The statements one by one (the extended protocol takes one per query); none has a `;` inside.
        var statements: [String] {
            sql.components(separatedBy: ";\n").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                .map { $0.hasSuffix(";") ? String($0.dropLast()) : $0 }.filter { !$0.isEmpty }
        }
    }

    /// Held while migrating, so instances that start together migrate one after the other.
    static let migrationLockKey: Int64 = 0x6272_6f77_7365_7264  // "browserd"

    static let migrations: [Migration] = [
        Migration(
            name: "initial schema",
            sql: """
                CREATE TABLE profiles (
                    id text PRIMARY KEY, name text NOT NULL, created_at double precision NOT NULL);
                CREATE TABLE windows (
                    id text PRIMARY KEY, profile_id text NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
                    version bigint NOT NULL, active_index bigint NOT NULL, pinned_count bigint NOT NULL,
                    created_at double precision NOT NULL, last_active_at double precision NOT NULL);
                CREATE INDEX windows_by_profile ON windows(profile_id);
                CREATE TABLE groups (
                    id text NOT NULL, window_id text NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
                    position bigint NOT NULL, title text NOT NULL, color text NOT NULL, collapsed boolean NOT NULL,
                    PRIMARY KEY (window_id, id));
                CREATE TABLE tabs (
                    id text PRIMARY KEY, window_id text NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
                    group_id text, opener_id text, opener_navigation_index bigint, title text NOT NULL,
                    loading boolean NOT NULL, progress double precision NOT NULL, favicon_url text,
                    created_at double precision NOT NULL, last_active_at double precision NOT NULL,
                    history_index bigint NOT NULL, history bytea NOT NULL, position double precision NOT NULL);
                CREATE INDEX tabs_by_window_position ON tabs(window_id, position);
                CREATE TABLE closed_tabs (
                    id text PRIMARY KEY, profile_id text NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
                    seq bigserial NOT NULL, tab_id text NOT NULL, window_id text NOT NULL, tab_index bigint NOT NULL,
                    group_id text, was_active boolean NOT NULL, was_pinned boolean NOT NULL, title text NOT NULL,
                    favicon_url text, closed_at double precision NOT NULL, history_index bigint NOT NULL, history bytea NOT NULL);
                CREATE INDEX closed_tabs_by_profile ON closed_tabs(profile_id);
                CREATE TABLE tokens (
                    id text PRIMARY KEY, profile_id text NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
                    hash bytea NOT NULL, created_at double precision NOT NULL);
                CREATE TABLE idempotency_keys (
                    key text PRIMARY KEY, fingerprint bytea NOT NULL, status bigint NOT NULL, headers text NOT NULL,
                    body bytea NOT NULL, created_at double precision NOT NULL);
                CREATE INDEX idempotency_keys_by_time ON idempotency_keys(created_at);
                """),
        // Which instance holds each profile (several instances on one database). No foreign key: a
        // lease is taken before its profile's first row is written. Stored answers name their profile,
        // so an instance that takes a profile over answers its retried requests.
        Migration(
            name: "profile leases",
            sql: """
                CREATE TABLE profile_leases (
                    profile_id text PRIMARY KEY, owner_id text NOT NULL, owner_url text NOT NULL,
                    epoch bigint NOT NULL, expires_at timestamptz NOT NULL);
                CREATE INDEX profile_leases_by_owner ON profile_leases(owner_id);
                ALTER TABLE idempotency_keys ADD COLUMN profile_id text;
                CREATE INDEX idempotency_keys_by_profile ON idempotency_keys(profile_id);
                """),
        // Window and group entries (the tabs of one closed window or group are one entry), tabs a
        // close-all parked until it is confirmed, and the visual data of a closed tab's group.
        Migration(
            name: "closed windows and groups",
            sql: """
                ALTER TABLE closed_tabs ADD COLUMN entry_id text;
                ALTER TABLE closed_tabs ADD COLUMN entry_kind text;
                ALTER TABLE closed_tabs ADD COLUMN group_title text;
                ALTER TABLE closed_tabs ADD COLUMN group_color text;
                ALTER TABLE closed_tabs ADD COLUMN group_collapsed boolean NOT NULL DEFAULT false;
                CREATE INDEX closed_tabs_by_entry ON closed_tabs(entry_id);
                """),
        // The picture of each tab's page (one per tab), in a table of its own so that loading tabs
        // never reads one; it goes with its tab's row.
        Migration(
            name: "tab snapshots",
            sql: """
                CREATE TABLE tab_snapshots (
                    tab_id text PRIMARY KEY REFERENCES tabs(id) ON DELETE CASCADE, etag text NOT NULL,
                    media_type text NOT NULL, byte_count bigint NOT NULL, captured_at double precision NOT NULL,
                    bytes bytea NOT NULL);
                """),
        // Which renderer holds which profile (issue 55), the last fence handed out (one row), and the
        // registered renderers (every instance decides on them, under one lock: ``PostgresStore/withRendererState(_:)``).
        Migration(
            name: "renderer assignments",
            sql: """
                CREATE TABLE renderer_assignments (profile_id text PRIMARY KEY, renderer text NOT NULL, fence bigint NOT NULL);
                CREATE TABLE renderer_fence (id integer PRIMARY KEY CHECK (id = 1), last bigint NOT NULL);
                CREATE TABLE renderers (
                    name text PRIMARY KEY, capacity bigint NOT NULL, devtools_url text, draining boolean NOT NULL,
                    expires_at double precision NOT NULL);
                CREATE TABLE renderings (profile_id text PRIMARY KEY, pin text, excluded boolean NOT NULL);
                """),
        // A profile's web state (issue 52): Playwright's storageState JSON, gone with its profile.
        Migration(
            name: "web states",
            sql: """
                CREATE TABLE web_states (profile_id text PRIMARY KEY REFERENCES profiles(id) ON DELETE CASCADE, state bytea NOT NULL);
                """),
    ]

    static var latestVersion: Int { migrations.count }
}
