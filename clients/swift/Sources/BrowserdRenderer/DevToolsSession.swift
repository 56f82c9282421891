/// One attached target's session over the browser's connection, as Playwright's `CRSession`: its
/// calls, its events and its end belong to it. Its events go straight to its handler from the
/// connection's reader (no other page's work stands between); when its target detaches, every call
/// of it still waiting fails at once (``DevToolsError/detached``) and its handler is told last.
public final class DevToolsSession: Sendable {
    /// The flat session's id (`sessionId`).
    public let id: String
    let connection: DevToolsConnection

    init(id: String, connection: DevToolsConnection) {
        self.id = id
        self.connection = connection
    }

    /// Sends `method` to the session's target and waits for its answer's `result`.
    /// - Throws: as ``DevToolsConnection/call(_:_:session:timeout:)``, and ``DevToolsError/detached``
    ///   once the target is gone.
    @discardableResult
    public func call(_ method: String, _ params: JSONValue = [:], timeout: Duration = .seconds(10)) async throws -> JSONValue {
        try await connection.call(method, params, session: id, timeout: timeout)
    }

    /// Whether its target is still attached (no detach seen, not ended by its owner).
    public var isAttached: Bool { connection.routes(id) }

    /// Ends the session's routing (its owner is done with it): its events go to the connection's
    /// stream again, and its waiting calls fail.
    public func end() { connection.endSession(id) }
}
