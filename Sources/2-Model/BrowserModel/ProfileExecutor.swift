/// The serial executor of one profile session: every change to a regular profile and its
/// off-the-record profile runs here, one at a time, so each has one place in one order. Different
/// profiles have different executors and change in parallel.
public actor ProfileExecutor {
    private let session: ProfileSession

    /// Takes ownership of a session; nothing else may use it afterwards.
    public init(session: sending ProfileSession) {
        self.session = session
    }

    /// Runs `body` with exclusive access to the session.
    public func perform<T: Sendable>(_ body: @Sendable (ProfileSession) throws -> T) rethrows -> T {
        try body(session)
    }
}
