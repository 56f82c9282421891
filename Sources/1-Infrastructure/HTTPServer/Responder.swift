/// What answers a matched route.
///
/// `immediate` handlers run on the server thread that read the request and must not block: use them
/// for answers that are ready at once (cached snapshots, health). `deferred` handlers may await work
/// (the model, the database): the server suspends the connection, runs them in a task and resumes it
/// with the answer, so no server thread ever waits. `adaptive` handlers decide on the server thread
/// (without blocking) whether they can answer at once, and otherwise say how the answer will come.
public enum Responder: Sendable {
    case immediate(@Sendable (HTTPRequest) throws -> HTTPResponse)
    case deferred(@Sendable (HTTPRequest) async throws -> HTTPResponse)
    case adaptive(@Sendable (HTTPRequest) throws -> Outcome)
    /// Answers the reads enclosed in the request's body through this same router, each as if it had
    /// come on its own, all in one answer (``EnclosedPipeline``); the server does it, for requests
    /// the policy admits.
    case enclosing(EnclosedPipeline.Policy)

    /// What an adaptive handler decided on the server thread.
    public enum Outcome: Sendable {
        /// The answer, at once.
        case answer(HTTPResponse)
        /// Awaited in a task, as a deferred handler is (the connection is suspended meanwhile).
        case later(@Sendable () async throws -> HTTPResponse)
        /// Work already under way that calls `complete` once, from any thread, with the answer (the
        /// connection is suspended meanwhile): no task, no thread waits. `start` must not block.
        case started(@Sendable (_ complete: @escaping @Sendable (HTTPResponse) -> Void) -> Void)
    }
}
