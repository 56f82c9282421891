import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

// Pipelined answers sent together.
//
// A client that pipelines reads (HTTP/1.1, RFC 9112 §9.3.2) may say, on each request but the last
// of a run it wrote at once, that more follow right behind it: `X-Browserd-Pipelined: more`. Its
// answers are then held in the socket (`TCP_CORK`) and leave together, as one segment, when the
// run's last answer is sent: one packet and one wake-up of the client for the run instead of one
// per answer. Another instance's relay does this (`bench/scale_out.py --hop-only`: libmicrohttpd
// sends each answer with its own `sendmsg`, and the owner spent 40 % of its CPU per forwarded read
// there, mostly per packet).
//
// libmicrohttpd sets the socket's options itself when it sends a connection's first answer (which
// lets a held answer go at once), so a run is held from a kept connection's second answer on, as a
// relay's connections are.
//
// Nothing is held longer than the run takes to answer: an answer that must wait (a deferred
// handler suspends the connection) or a stream sends what is held first, and a run whose last
// request never comes is flushed by the kernel after 200 ms at most (a cork's limit). The hint
// only ever delays the answers of the connection that sent it, and is honoured only from another
// instance's relay (`ServerConfiguration.pipelineHintFrom`: its peer proof holds).
extension HTTPServer {
    /// The request header that says more pipelined requests follow on the connection.
    public static let pipelinedHeader = "X-Browserd-Pipelined"

    /// Whether `request` says more pipelined requests follow it.
    static func morePipelined(_ headers: HTTPHeaders) -> Bool {
        headers[pipelinedHeader] == "more"
    }

    /// Whether the answers of `request`'s run are held: it says more follow, and it comes from whom
    /// ``ServerConfiguration/pipelineHintFrom`` names (asked only then); nobody's when that is nil.
    static func holdsRun(of request: HTTPRequest, _ configuration: ServerConfiguration) -> Bool {
        morePipelined(request.headers) && configuration.pipelineHintFrom?(request) == true
    }

    /// Before an answer is queued: held if more answers follow it.
    func holdAnswers(for context: RequestContext, on connection: OpaquePointer) {
        guard context.morePipelined, let watched = Self.watched(connection), !watched.corked else { return }
        Self.cork(watched, true)
    }

    /// Sends what is held: the run's last answer went, or an answer must wait.
    func sendHeldAnswers(on connection: OpaquePointer) {
        Self.sendHeldAnswers(of: Self.watched(connection))
    }

    /// ``sendHeldAnswers(on:)`` for a connection's record already at hand.
    static func sendHeldAnswers(of watched: WatchedConnection?) {
        guard let watched, watched.corked else { return }
        cork(watched, false)
    }

    private static func cork(_ watched: WatchedConnection, _ on: Bool) {
        var value: Int32 = on ? 1 : 0
        _ = setsockopt(watched.fd, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
        watched.corked = on
    }
}
