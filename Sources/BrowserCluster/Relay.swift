import ClusterCore
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The hop of a forwarded request, as thin as it can be: the request's bytes written as they are on a
/// pooled keep-alive connection to the owner, its answer read back (`Content-Length` bodies; event
/// streams go through ``Forwarder``'s streaming client), on ``RelayLoop``'s one thread (never on the
/// cooperative pool); reads pipelined.
///
/// Why hand-written: async-http-client's request path (URL parsing, its state machines, NIO's
/// pipeline and llhttp) cost ~130 µs of CPU per forwarded `GET` here (`bench/scale_out.py --hop-only`,
/// perf: 37 % of the forwarding instance's CPU in its event loop); this relay does a `send` and one or
/// two `recv`s. `bench/scale_out.py` measures both paths' rates beside the direct one.
final class Relay: Sendable {
    /// An answer as read off the wire.
    struct Answer: Sendable {
        var status: Int
        /// Header fields as sent (name, value).
        var headers: [(name: String, value: String)]
        var body: [UInt8]
    }

    enum Failure: Error, CustomStringConvertible, Equatable {
        case connect(String)
        case closed
        case timedOut
        case malformed(String)

        var description: String {
            switch self {
            case .connect(let reason): "cannot connect: \(reason)"
            case .closed: "the connection closed"
            case .timedOut: "timed out"
            case .malformed(let what): "malformed answer: \(what)"
            }
        }
    }

    private let loop: RelayLoop

    /// - Parameter encloser: makes the head of a pipeline of reads to one owner (``RelayLoop/Encloser``);
    ///   without one, every read goes on its own.
    init(timing: ClusterTiming, encloser: RelayLoop.Encloser? = nil) {
        loop = RelayLoop(timing: timing, encloser: encloser)
    }

    func shutdown() { loop.stop() }

    /// Sends `request` (a complete HTTP/1.1 request: head and body) to `host:port` and reads the answer,
    /// on a connection the relay keeps to that owner. A kept connection the owner closed meanwhile is
    /// retried once on a new one (nothing of the answer was read: the owner had not taken the request).
    /// - Parameters:
    ///   - isHead: a `HEAD` request (its answer has no body, whatever its `Content-Length`).
    ///   - pipelines: a `GET` or `HEAD`, which may share a connection with others and be sent again.
    ///   - bodyless: `request` ends with its head (no body): a pipelined one may be marked as followed by more.
    func exchange(
        _ request: [UInt8], isHead: Bool = false, pipelines: Bool = false, bodyless: Bool = false, host: String, port: Int
    ) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            start(request, isHead: isHead, pipelines: pipelines, bodyless: bodyless, host: host, port: port) { continuation.resume(with: $0) }
        }
    }

    /// ``exchange(_:isHead:host:port:)`` with a completion, called once on the relay's thread (it must
    /// not block): no task waits meanwhile. `key` names the owner's connections (`host:port` when nil;
    /// a caller that knows it passes it, so no string is made per request).
    func start(
        _ request: [UInt8], isHead: Bool = false, pipelines: Bool = false, bodyless: Bool = false, host: String, port: Int,
        key: String? = nil, completion: @escaping @Sendable (Result<Answer, Failure>) -> Void
    ) {
        loop.submit(
            RelayLoop.Job(
                request: request, isHead: isHead, pipelines: pipelines, bodyless: bodyless, host: host, port: port,
                completion: completion, key: key ?? "\(host):\(port)"))
    }
}
