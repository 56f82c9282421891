public import BrowserRecords
import Foundation
import PostgresNIO

/// A registered renderer as stored: its lease ends `secondsLeft` after the database's clock read in
/// the same transaction (every instance measures leases by that one clock).
public struct StoredRenderer: Sendable, Equatable {
    public var name: String
    public var capacity: Int
    public var devtoolsURL: String?
    public var draining: Bool
    public var secondsLeft: Double

    public init(name: String, capacity: Int, devtoolsURL: String?, draining: Bool, secondsLeft: Double) {
        self.name = name
        self.capacity = capacity
        self.devtoolsURL = devtoolsURL
        self.draining = draining
        self.secondsLeft = secondsLeft
    }
}

/// The renderers' whole state, as one instance reads it.
public struct StoredRendererState: Sendable, Equatable {
    public var renderers: [StoredRenderer] = []
    public var assignments: [RendererAssignmentRecord] = []
    public var lastFence: UInt64 = 0
    public var renderings: [RenderingRecord] = []

    public init() {}
}

/// What one decision changed.
public struct RendererStateChange: Sendable, Equatable {
    /// Registrations written (`secondsLeft` from the transaction's clock).
    public var renderers: [StoredRenderer] = []
    public var removedRenderers: [String] = []
    public var assignments: [RendererAssignmentRecord] = []
    public var releasedAssignments: [String] = []
    public var lastFence: UInt64?
    /// Pins and exclusions written (a default one deletes the row).
    public var renderings: [RenderingRecord] = []

    public init() {}
}

extension PostgresStore {
    /// Held for a decision on renderers: every instance decides one at a time.
    static let rendererLockKey: Int64 = 0x7265_6e64_6572_6572  // "renderer"

    /// Runs `decide` on the stored renderers' state, under a lock all instances take, and writes what
    /// it changed in the same transaction: with several instances, each decision sees the last one.
    public func withRendererState<T: Sendable>(
        _ decide: @escaping @Sendable (StoredRendererState) throws -> (T, RendererStateChange)
    ) async throws -> T {
        try await said { [self] in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.rendererLockKey))", logger: logger)
                let (state, now) = try await Self.rendererState(on: connection, logger: logger)
                let (outcome, change) = try decide(state)
                try await Self.write(change, now: now, on: connection, logger: logger)
                return outcome
            }
        }
    }

    /// The stored renderers' state now.
    public func rendererState() async throws -> StoredRendererState {
        try await said { [self] in
            try await client.withConnection { connection in try await Self.rendererState(on: connection, logger: logger).state }
        }
    }

    private static func rendererState(on connection: PostgresConnection, logger: Logger) async throws -> (state: StoredRendererState, now: Double) {
        var now = 0.0
        for try await value in try await connection.query("SELECT extract(epoch from clock_timestamp())::float8", logger: logger).decode(Double.self) {
            now = value
        }
        var state = StoredRendererState()
        for try await (name, capacity, url, draining, expires) in try await connection.query(
            "SELECT name, capacity, devtools_url, draining, expires_at FROM renderers ORDER BY name", logger: logger
        ).decode((String, Int, String?, Bool, Double).self) {
            state.renderers.append(StoredRenderer(name: name, capacity: capacity, devtoolsURL: url, draining: draining, secondsLeft: expires - now))
        }
        state.assignments = try await rendererAssignments(on: connection, logger: logger)
        state.lastFence = try await rendererFence(on: connection, logger: logger)
        state.renderings = try await renderings(on: connection, logger: logger)
        return (state, now)
    }

    private static func write(_ change: RendererStateChange, now: Double, on connection: PostgresConnection, logger: Logger) async throws {
        if !change.removedRenderers.isEmpty {
            try await connection.query("DELETE FROM renderers WHERE name = ANY(\(change.removedRenderers))", logger: logger)
        }
        for renderer in change.renderers {
            let expires = now + renderer.secondsLeft
            try await connection.query(
                """
                INSERT INTO renderers (name, capacity, devtools_url, draining, expires_at)
                VALUES (\(renderer.name), \(renderer.capacity), \(renderer.devtoolsURL), \(renderer.draining), \(expires))
                ON CONFLICT (name) DO UPDATE SET capacity = excluded.capacity, devtools_url = excluded.devtools_url,
                  draining = excluded.draining, expires_at = excluded.expires_at
                """, logger: logger)
        }
        if !change.releasedAssignments.isEmpty {
            try await connection.query("DELETE FROM renderer_assignments WHERE profile_id = ANY(\(change.releasedAssignments))", logger: logger)
        }
        for assignment in change.assignments {
            let fence = Int64(bitPattern: assignment.fence)
            try await connection.query(
                """
                INSERT INTO renderer_assignments (profile_id, renderer, fence) VALUES (\(assignment.profileID), \(assignment.renderer), \(fence))
                ON CONFLICT (profile_id) DO UPDATE SET renderer = excluded.renderer, fence = excluded.fence
                """, logger: logger)
        }
        for rendering in change.renderings {
            if rendering.isDefault {
                try await connection.query("DELETE FROM renderings WHERE profile_id = \(rendering.profileID)", logger: logger)
            } else {
                try await connection.query(
                    """
                    INSERT INTO renderings (profile_id, pin, excluded) VALUES (\(rendering.profileID), \(rendering.pin), \(rendering.excluded))
                    ON CONFLICT (profile_id) DO UPDATE SET pin = excluded.pin, excluded = excluded.excluded
                    """, logger: logger)
            }
        }
        if let last = change.lastFence {
            let fence = Int64(bitPattern: last)
            try await connection.query(
                """
                INSERT INTO renderer_fence (id, last) VALUES (1, \(fence))
                ON CONFLICT (id) DO UPDATE SET last = GREATEST(renderer_fence.last, excluded.last)
                """, logger: logger)
        }
    }
}
