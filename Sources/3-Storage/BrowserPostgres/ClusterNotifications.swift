public import Logging
import PostgresNIO

/// The messages instances on one database send each other (`NOTIFY` / `LISTEN`): lease moves, tokens
/// issued and revoked, directory changes.
public struct ClusterNotifications: Sendable {
    /// Announces every lease taken or given back (payload: the profile id).
    public static let leaseChannel = "browserd_leases"
    /// Announces issued and revoked tokens (payload: the token id) and deleted profiles
    /// (`profile:<id>`), so every instance authenticates what any instance issued.
    public static let tokenChannel = "browserd_tokens"
    /// Announces changes of the profile directory (payload: JSON written by the instance that made
    /// them), so every instance lists and streams every instance's profiles.
    public static let directoryChannel = "browserd_directory"

    let store: PostgresStore
    let logger: Logger

    public init(store: PostgresStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Tells `moved` the profile of every lease taken or given back by any instance, until the task is
    /// cancelled, on a connection of its own (re-opened after a failure); `listening` is called each
    /// time listening (re)starts, since notifications sent meanwhile are lost.
    public func watchMoves(listening: @escaping @Sendable () -> Void, moved: @escaping @Sendable (String) -> Void) async {
        await watch(Self.leaseChannel, listening: listening, received: moved)
    }

    /// Tells `received` every payload sent on `channel` (see ``watchMoves(listening:moved:)``).
    public func watch(_ channel: String, listening: @escaping @Sendable () -> Void, received: @escaping @Sendable (String) -> Void) async {
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        listening()
                        for try await notification in notifications { received(notification.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("lease notifications interrupted; listening again", metadata: ["error": "\(PostgresStore.describe(error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Sends each payload on `channel` (`NOTIFY`), in order.
    public func notify(_ channel: String, _ payloads: [String]) async throws {
        guard !payloads.isEmpty else { return }
        _ = try await store.said { [self] in
            try await store.client.query(
                "SELECT pg_notify(\(channel), p) FROM unnest(\(payloads)::text[]) WITH ORDINALITY AS u(p, n) ORDER BY n",
                logger: logger)
        }
    }
}
