import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The renderer's own port (`--status-listen`, loopback by default): `/healthz` (200 while it is
/// healthy: registered and renewing, or following its profile; else 503) and `/metrics`
/// (``RendererMetrics``, Prometheus' text format). Nothing else; GET and HEAD only.
public final class RendererStatusServer: Sendable {
    public let port: Int
    private let channel: any Channel

    /// - Parameters:
    ///   - healthy: nil when healthy, else why not (said in the 503's body).
    ///   - beforeScrape: brings the gauges up to date before `/metrics` answers.
    public static func start(
        host: String, port: Int, metrics: RendererMetrics, healthy: @escaping @Sendable () async -> String?,
        beforeScrape: @escaping @Sendable () async -> Void
    ) async throws -> RendererStatusServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(StatusHandler(metrics: metrics, healthy: healthy, beforeScrape: beforeScrape))
                }
            }
            .bind(host: host, port: port).get()
        return RendererStatusServer(port: channel.localAddress?.port ?? port, channel: channel)
    }

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    public func stop() async { try? await channel.close() }
}

private final class StatusHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let metrics: RendererMetrics
    let healthy: @Sendable () async -> String?
    let beforeScrape: @Sendable () async -> Void

    init(metrics: RendererMetrics, healthy: @escaping @Sendable () async -> String?, beforeScrape: @escaping @Sendable () async -> Void) {
        self.metrics = metrics
        self.healthy = healthy
        self.beforeScrape = beforeScrape
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        let isHead = head.method == .HEAD
        let (metrics, healthy, beforeScrape) = (self.metrics, self.healthy, self.beforeScrape)
        let promise = context.eventLoop.makePromise(of: (HTTPResponseStatus, String, [UInt8]).self)
        guard head.method == .GET || isHead else {
            promise.succeed((.methodNotAllowed, "text/plain", Array("GET or HEAD only\n".utf8)))
            return respond(context, promise.futureResult, head: isHead, keepAlive: head.isKeepAlive)
        }
        promise.completeWithTask {
            switch path {
            case "/healthz":
                if let reason = await healthy() { return (.serviceUnavailable, "text/plain", Array("unhealthy: \(reason)\n".utf8)) }
                return (.ok, "text/plain", Array("ok\n".utf8))
            case "/metrics":
                await beforeScrape()
                return (.ok, "text/plain; version=0.0.4", metrics.exposition())
            default:
                return (.notFound, "text/plain", Array("not found: /healthz and /metrics only\n".utf8))
            }
        }
        respond(context, promise.futureResult, head: isHead, keepAlive: head.isKeepAlive)
    }

    private func respond(
        _ context: ChannelHandlerContext, _ answer: EventLoopFuture<(HTTPResponseStatus, String, [UInt8])>, head isHead: Bool, keepAlive: Bool
    ) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        answer.whenSuccess { status, type, body in
            let context = bound.value
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: type)
            headers.add(name: "Content-Length", value: "\(body.count)")
            headers.add(name: "Cache-Control", value: "no-store")
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            if !isHead { context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
            let ended = context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
            if !keepAlive { ended.whenComplete { _ in bound.value.close(promise: nil) } }
        }
    }
}
