import Synchronization

/// What the server keeps for one request between libmicrohttpd's calls (`*con_cls`).
///
/// `@unchecked Sendable`: the plain `var`s are touched only by the worker thread that owns the
/// connection (libmicrohttpd serialises every callback of one connection on one thread). The only
/// cross-thread hand-off, a deferred handler's answer, goes through `handoff`, a `Mutex`.
final class RequestContext: @unchecked Sendable {
    enum Phase {
        /// Reading the body.
        case receiving
        /// The body was over the limit: it is read and thrown away, then 413 is answered.
        case discarding
        /// A deferred handler is running; the connection is suspended.
        case waiting
        /// A response has been queued.
        case answered
    }

    /// The hand-off between a deferred handler's task and the connection.
    enum Handoff {
        case idle
        case waiting(ConnectionHandle)
        case ready(HTTPResponse)
        case delivered
    }

    let start: ContinuousClock.Instant = .now
    let method: HTTPMethod
    let path: String
    var phase: Phase = .receiving
    var body: [UInt8] = []
    /// The largest body this request may send (the server's limit, or a large-body path's).
    var bodyLimit = 0
    /// The sender whose large-body slot it holds (given back when it completes); nil: none.
    var largeBodyPrincipal: String?
    var routeTemplate: String?
    var status = 0
    /// Answered with a stream (its socket was taken over: see `HTTPServer.handOver`).
    var isStream = false
    /// The request came as HTTP/1.0 (a stream answer then has no chunks and ends by closing).
    var http10 = false
    /// The caller's origin when the server's CORS policy allows it: its answer gets CORS headers.
    var corsOrigin: String?
    /// The request target as sent (see ``HTTPRequest/rawTarget``).
    var rawTarget: String?
    /// The client said more pipelined requests follow this one (`HTTPServer+Coalescing`).
    var morePipelined = false
    let handoff = Mutex<Handoff>(.idle)

    init(method: HTTPMethod, path: String) {
        self.method = method
        self.path = path
    }

    /// Stores a deferred handler's answer and resumes the connection, unless shutdown answered first.
    func deliver(_ response: HTTPResponse) {
        handoff.withLock { state in
            guard case .waiting(let connection) = state else { return }
            state = .ready(response)
            connection.resume()
        }
    }

    /// Takes a deferred answer once it is ready.
    func takeReadyResponse() -> HTTPResponse? {
        handoff.withLock { state in
            guard case .ready(let response) = state else { return nil }
            state = .delivered
            return response
        }
    }
}
