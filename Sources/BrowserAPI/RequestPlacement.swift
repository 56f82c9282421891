public import HTTPServer
import Synchronization

/// Where a request is answered when several instances share one database: a stage of the API's guard,
/// after authentication (an invalid credential never reaches it) and before the tenant-scope checks
/// (what the request names may live in another instance's memory). The HTTP edge knows nothing of it.
public protocol RequestPlacement: Sendable {
    /// The answer of the instance that holds the request's profile (or a 503 to retry), or nil to serve
    /// the request here.
    func place(_ request: HTTPRequest) async -> HTTPResponse?

    /// The fast path, on the server's thread (it must not block): when what the request names is known
    /// to live on another instance (cached), sends it there at once and calls `respond` with the
    /// answer when it comes, from another thread. - Returns: false when it did not take the request
    /// (then ``place(_:)`` decides, in a task).
    func relayAtOnce(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) -> Bool
}

/// Holds the placement once the application has made it (the routes are built before it starts).
public final class PlacementSlot: Sendable {
    private let value = Mutex<(any RequestPlacement)?>(nil)

    public init() {}

    public var current: (any RequestPlacement)? { value.withLock { $0 } }

    public func set(_ placement: any RequestPlacement) { value.withLock { $0 = placement } }
}
