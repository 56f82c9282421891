/// POST paths that take bodies up to `maxBytes` instead of the server's usual limit. At most
/// `concurrent` such bodies are held at once (a request past that gets 503 before its body is read):
/// memory for uploads stays bounded whoever sends them.
public struct LargeBodies: Sendable {
    public var paths: Set<String>
    public var maxBytes: Int
    public var concurrent: Int

    public init(paths: Set<String>, maxBytes: Int, concurrent: Int = 2) {
        self.paths = paths
        self.maxBytes = maxBytes
        self.concurrent = concurrent
    }
}
