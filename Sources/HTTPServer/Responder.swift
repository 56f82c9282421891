/// What answers a matched route.
///
/// `immediate` handlers run on the server thread that read the request and must not block: use them
/// for answers that are ready at once (cached snapshots, health). `deferred` handlers may await work
/// (the model, the database): the server suspends the connection, runs them in a task and resumes it
/// with the answer, so no server thread ever waits.
public enum Responder: Sendable {
    case immediate(@Sendable (HTTPRequest) throws -> HTTPResponse)
    case deferred(@Sendable (HTTPRequest) async throws -> HTTPResponse)
}
