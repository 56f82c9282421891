public import HTTPServer
import Synchronization

/// Where a request is answered when several instances share one database: a stage of the API's guard,
/// after authentication (an invalid credential never reaches it) and before the tenant-scope checks
/// (what the request names may live in another instance's memory). The HTTP edge knows nothing of it.
public protocol RequestPlacement: Sendable {
    /// The answer of the instance that holds the request's profile (or a 503 to retry), or nil to serve
    /// the request here. `Principal.current` is the caller.
    func place(_ request: HTTPRequest) async -> HTTPResponse?

    /// Where the request goes, decided on the server thread from what is known without waiting
    /// (memory and caches), or ``PlacedAtOnce/undecided`` (then ``place(_:)`` decides). Must not block.
    func placeAtOnce(_ request: HTTPRequest) -> PlacedAtOnce
}

/// What placement could decide without waiting.
public enum PlacedAtOnce: Sendable {
    /// Served here.
    case here
    /// This is the answer (e.g. a 503 to retry).
    case answered(HTTPResponse)
    /// Sent on to the instance that holds the request's profile: `start` calls its completion once,
    /// from any thread, with that instance's answer (or a 503), or with nil when the request turned
    /// out to be this instance's to serve (it took the profile of a gone owner over). `start` must
    /// not block.
    case underway(@Sendable (_ complete: @escaping @Sendable (HTTPResponse?) -> Void) -> Void)
    /// Placement began and needs waiting (a query, a takeover): the closure goes on from where it
    /// stopped, in a task, with the same answer as ``RequestPlacement/place(_:)`` (nil: served here).
    /// `Principal.current` must be the caller when it runs.
    case continuing(@Sendable () async -> HTTPResponse?)
    /// Only ``RequestPlacement/place(_:)`` can tell (it may ask the database).
    case undecided
}

extension RequestPlacement {
    public func placeAtOnce(_ request: HTTPRequest) -> PlacedAtOnce { .undecided }
}

/// Holds the placement once the application has made it (the routes are built before it starts).
public final class PlacementSlot: Sendable {
    private let value = Mutex<(any RequestPlacement)?>(nil)

    public init() {}

    public var current: (any RequestPlacement)? { value.withLock { $0 } }

    public func set(_ placement: any RequestPlacement) { value.withLock { $0 = placement } }
}
