import ClusterCore
import Foundation
import Sockets
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

    typealias Failure = RelayFailure

    private let loop: RelayLoop

    /// - Parameter encloser: makes the head of a pipeline of reads to one owner (``RelayLoop/Encloser``);
    ///   without one, every read goes on its own.
    init(timing: ClusterTiming, encloser: RelayLoop.Encloser? = nil) {
        loop = RelayLoop(timing: timing, encloser: encloser)
    }

    func shutdown() { loop.stop() }

    /// Sends `request` (a complete HTTP/1.1 request: head and body) to the owner at `address` (resolved
    /// by the caller, never on the relay's loop) and reads the answer, on a connection the relay keeps
    /// to that owner. A kept connection the owner closed meanwhile is retried once on a new one
    /// (nothing of the answer was read: the owner had not taken the request).
    /// - Parameters:
    ///   - isHead: a `HEAD` request (its answer has no body, whatever its `Content-Length`).
    ///   - pipelines: a `GET` or `HEAD`, which may share a connection with others and be sent again.
    ///   - bodyless: `request` ends with its head (no body): a pipelined one may be enclosed, or marked as
    ///     followed by more.
    ///   - key: names the owner's connections (its address when nil; a caller that knows its authority
    ///     passes it, so no string is made per request).
    func exchange(
        _ request: [UInt8], isHead: Bool = false, pipelines: Bool = false, bodyless: Bool = false, to address: SocketAddress, key: String? = nil
    ) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            start(request, isHead: isHead, pipelines: pipelines, bodyless: bodyless, to: address, key: key) { continuation.resume(with: $0) }
        }
    }

    /// ``exchange(_:isHead:pipelines:bodyless:to:key:)`` with a completion, called once on the relay's
    /// thread (it must not block): no task waits meanwhile.
    func start(
        _ request: [UInt8], isHead: Bool = false, pipelines: Bool = false, bodyless: Bool = false, to address: SocketAddress,
        key: String? = nil, completion: @escaping @Sendable (Result<Answer, Failure>) -> Void
    ) {
        loop.submit(
            RelayLoop.Job(
                request: request, isHead: isHead, pipelines: pipelines, bodyless: bodyless, address: address, key: key ?? address.description,
                completion: completion))
    }
}
