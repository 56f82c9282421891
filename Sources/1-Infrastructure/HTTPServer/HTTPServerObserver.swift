/// Receives what the server does, for metrics; called on server threads, so it must not block.
public protocol HTTPServerObserver: Sendable {
    /// A request was answered (or abandoned). `route` is the matched template, nil when none matched.
    func requestCompleted(method: HTTPMethod, route: String?, status: Int, duration: Duration, isStream: Bool)
    /// A client connected or a connection closed.
    func connectionCountChanged(by delta: Int)
    /// A streaming response started or ended.
    func streamCountChanged(by delta: Int)
}
