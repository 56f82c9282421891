public import BrowserRecords
import Foundation
public import Logging
import PostgresNIO

/// What placement and lists read of the stored state without loading it: which regular profile holds
/// a window, tab or group; the stored profiles and tokens.
public struct StoredLookups: Sendable {
    let store: PostgresStore
    let logger: Logger

    public init(store: PostgresStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// The regular profile of a stored window, tab or group, if the database has it.
    public func profile(ofWindow id: String) async throws -> String? {
        try await lookup("SELECT profile_id FROM windows WHERE id = \(id)")
    }

    public func profile(ofTab id: String) async throws -> String? {
        try await lookup("SELECT w.profile_id FROM tabs t JOIN windows w ON w.id = t.window_id WHERE t.id = \(id)")
    }

    public func profile(ofGroup id: String) async throws -> String? {
        try await lookup("SELECT w.profile_id FROM groups g JOIN windows w ON w.id = g.window_id WHERE g.id = \(id) LIMIT 1")
    }

    /// The picture of a stored tab's page, with its bytes (nil: the tab has none, or is not stored).
    public func snapshot(ofTab id: String) async throws -> SnapshotRecord? {
        try await store.said { [self] in
            var found: SnapshotRecord?
            for try await (etag, mediaType, byteCount, capturedAt, bytes) in try await store.client.query(
                "SELECT etag, media_type, byte_count, captured_at, bytes FROM tab_snapshots WHERE tab_id = \(id)", logger: logger
            )
            .decode((String, String, Int, Double, ByteBuffer).self) {
                found = SnapshotRecord(
                    tabID: id, etag: etag, mediaType: mediaType, byteCount: byteCount, capturedAt: Date(timeIntervalSince1970: capturedAt),
                    bytes: Array(bytes.readableBytesView))
            }
            return found
        }
    }

    /// The oldest stored regular profile named `name`, if any.
    public func oldestProfile(named name: String) async throws -> String? {
        try await lookup("SELECT id FROM profiles WHERE name = \(name) ORDER BY created_at, id LIMIT 1")
    }

    public func profileExists(_ id: String) async throws -> Bool {
        try await lookup("SELECT id FROM profiles WHERE id = \(id)") != nil
    }

    /// Every stored API token (hashes only).
    public func storedTokens() async throws -> [TokenRecord] {
        try await store.said { [self] in
            var tokens: [TokenRecord] = []
            for try await (id, profile, hash, created) in try await store.client.query(
                "SELECT id, profile_id, hash, created_at FROM tokens ORDER BY created_at, id", logger: logger
            )
            .decode((String, String, ByteBuffer, Double).self) {
                tokens.append(
                    TokenRecord(
                        id: id, profileID: profile, hash: Array(hash.readableBytesView),
                        createdAt: Date(timeIntervalSince1970: created)))
            }
            return tokens
        }
    }

    /// One stored token, if it exists.
    public func storedToken(_ id: String) async throws -> TokenRecord? {
        try await store.said { [self] in
            var found: TokenRecord?
            for try await (profile, hash, created) in try await store.client.query(
                "SELECT profile_id, hash, created_at FROM tokens WHERE id = \(id)", logger: logger
            )
            .decode((String, ByteBuffer, Double).self) {
                found = TokenRecord(id: id, profileID: profile, hash: Array(hash.readableBytesView), createdAt: Date(timeIntervalSince1970: created))
            }
            return found
        }
    }

    /// Every stored regular profile with its number of stored windows, oldest first.
    public func storedProfiles() async throws -> [(record: ProfileRecord, windowCount: Int)] {
        try await store.said { [self] in
            var profiles: [(record: ProfileRecord, windowCount: Int)] = []
            for try await (id, name, created, windows) in try await store.client.query(
                """
                SELECT p.id, p.name, p.created_at, (SELECT count(*) FROM windows w WHERE w.profile_id = p.id)::bigint
                FROM profiles p ORDER BY p.created_at, p.id
                """, logger: logger
            ).decode((String, String, Double, Int).self) {
                profiles.append((ProfileRecord(id: id, name: name, createdAt: Date(timeIntervalSince1970: created)), windows))
            }
            return profiles
        }
    }

    private func lookup(_ query: PostgresQuery) async throws -> String? {
        try await store.said { [self] in
            var found: String?
            for try await value in try await store.client.query(query, logger: logger).decode(String.self) { found = value }
            return found
        }
    }
}
