public import HTTPServer
import Synchronization

/// Where a request is answered when several instances share one database: a stage of the API's guard,
/// after authentication (an invalid credential never reaches it) and before the tenant-scope checks
/// (what the request names may live in another instance's memory). The HTTP edge knows nothing of it.
public protocol RequestPlacement: Sendable {
    /// The answer of the instance that holds the request's profile (or a 503 to retry), or nil to serve
    /// the request here.
    func place(_ request: HTTPRequest) async -> HTTPResponse?
}

/// Holds the placement once the application has made it (the routes are built before it starts).
public final class PlacementSlot: Sendable {
    private let value = Mutex<(any RequestPlacement)?>(nil)

    public init() {}

    public var current: (any RequestPlacement)? { value.withLock { $0 } }

    public func set(_ placement: any RequestPlacement) { value.withLock { $0 = placement } }
}
