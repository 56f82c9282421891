import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// WebDriver's Execute Script, as browserd passes it on (`POST /browserd/v1/tabs/{id}/execute`).
public struct ScriptRequest: Sendable, Codable, Equatable {
    /// A function body (W3C: `arguments` are `args`; an async script gets a callback as its last).
    public var script: String
    public var args: [JSONValue]
    public var async: Bool
    public var timeoutMs: Int

    public init(script: String, args: [JSONValue] = [], async: Bool = false, timeoutMs: Int = 30_000) {
        self.script = script
        self.args = args
        self.async = async
        self.timeoutMs = timeoutMs
    }
}

/// What a script came to: its value (JSON), or W3C's error (`javascript error`, `script timeout`).
public enum ScriptOutcome: Sendable, Equatable {
    case value(JSONValue)
    case error(name: String, message: String)
}

/// The renderer's DevTools endpoint: automation clients (Playwright, Puppeteer) attach here over a
/// WebSocket (`/devtools/browser/<profile>?ticket=…`, the URL browserd's
/// `/v1/profiles/{id}/devtools/json/version` hands out), each as an ``AutomationClient`` over the one
/// pipe to Chromium; browserd calls WebDriver's scripts and screenshots here too
/// (`/browserd/v1/tabs/{id}/execute|screenshot`, with the key the renderer gave it in its lease).
///
/// browserd is the directory and the one door: a ticket is redeemed with browserd before a socket
/// opens (single use, issued for that profile to a caller browserd authenticated).
public final class DevToolsGateway: Sendable {
    public struct Limits: Sendable {
        /// Clients attached to one profile at once (past it, 429).
        public var clientsPerProfile = 16
        /// The largest message a client may send (a script Playwright injects is ~200 KB).
        public var maximumMessageBytes = 16 << 20
        /// The largest control request body (a WebDriver script and its arguments).
        public var maximumControlBytes = 1 << 20
        public init() {}
    }

    public let port: Int
    private let channel: any Channel
    private let state: GatewayState

    /// Starts listening on `host:port` (0: a port of the kernel's choosing).
    public static func start(
        host: String, port: Int, controlKey: String, automation: any AutomationHost, limits: Limits = Limits(), logger: Logger
    ) async throws -> DevToolsGateway {
        let state = GatewayState(host: automation, controlKey: controlKey, limits: limits, logger: logger)
        // On the loop Chromium's pipe is read on: a page's message reaches its client's socket with
        // no hand-off between threads.
        let channel = try await ServerBootstrap(group: DevToolsConnection.loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let upgrader = NIOWebSocketServerUpgrader(
                    maxFrameSize: limits.maximumMessageBytes, automaticErrorHandling: true,
                    shouldUpgrade: { channel, head in state.shouldUpgrade(channel, head) },
                    upgradePipelineHandler: { channel, _ in state.upgraded(channel) })
                let control = ControlHandler(state: state)
                return channel.pipeline.configureHTTPServerPipeline(
                    withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in context.pipeline.removeHandler(control, promise: nil) })
                ).flatMap { channel.pipeline.addHandler(control) }
            }
            .bind(host: host, port: port).get()
        return DevToolsGateway(port: channel.localAddress?.port ?? port, channel: channel, state: state)
    }

    private init(port: Int, channel: any Channel, state: GatewayState) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// The clients attached now, by profile.
    public var clients: [String: Int] { state.clientCounts }

    /// Ends every client's connection (Chromium ended: their sessions went with it).
    public func endClients(reason: String) { state.endAll(reason: reason) }

    public func stop() async {
        state.endAll(reason: "the renderer stops")
        try? await channel.close()
    }
}

/// What the gateway's connections share: the admitted sockets waiting for their upgrade, the
/// clients attached, the host.
final class GatewayState: Sendable {
    let host: any AutomationHost
    let controlKey: String
    let limits: DevToolsGateway.Limits
    let logger: Logger
    private struct State {
        /// Sockets admitted, between their upgrade's answer and their pipeline: the profile and the
        /// browser session attached for each.
        var admitted: [ObjectIdentifier: (profile: String, root: String, connection: DevToolsConnection)] = [:]
        /// Why a socket's upgrade was refused (its request then reaches ``ControlHandler``).
        var refused: [ObjectIdentifier: (status: Int, message: String)] = [:]
        var clients: [ObjectIdentifier: AutomationClient] = [:]
        /// Clients per profile, those being admitted included.
        var perProfile: [String: Int] = [:]
    }
    private let state = NIOLockedValueBox(State())

    init(host: any AutomationHost, controlKey: String, limits: DevToolsGateway.Limits, logger: Logger) {
        self.host = host
        self.controlKey = controlKey
        self.limits = limits
        self.logger = logger
    }

    var clientCounts: [String: Int] { state.withLockedValue { $0.perProfile } }

    func refusal(of channel: any Channel) -> (status: Int, message: String)? {
        state.withLockedValue { $0.refused.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// `/devtools/browser/<profile>?ticket=…`: the ticket redeemed, a browser session attached.
    func shouldUpgrade(_ channel: any Channel, _ head: HTTPRequestHead) -> EventLoopFuture<HTTPHeaders?> {
        let promise = channel.eventLoop.makePromise(of: HTTPHeaders?.self)
        let id = ObjectIdentifier(channel)
        let refuse: @Sendable (Int, String) -> Void = { [self] status, message in
            state.withLockedValue { $0.refused[id] = (status, message) }
            promise.succeed(nil)
        }
        let (path, query) = Self.split(head.uri)
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[0] == "devtools", parts[1] == "browser" else {
            refuse(404, "Attach at the webSocketDebuggerUrl browserd answers (GET /v1/profiles/{id}/devtools/json/version).")
            return promise.futureResult
        }
        let profile = String(parts[2])
        guard let ticket = query["ticket"], !ticket.isEmpty, ticket.utf8.count <= 256 else {
            refuse(401, "A ticket is needed: ask browserd for this profile's webSocketDebuggerUrl (GET /v1/profiles/{id}/devtools/json/version).")
            return promise.futureResult
        }
        guard host.automationScope(of: profile) != nil else {
            refuse(404, "This renderer does not serve profile \(profile.prefix(64)).")
            return promise.futureResult
        }
        let reserved = state.withLockedValue { state -> Bool in
            guard state.perProfile[profile, default: 0] < limits.clientsPerProfile else { return false }
            state.perProfile[profile, default: 0] += 1
            return true
        }
        guard reserved else {
            refuse(429, "\(limits.clientsPerProfile) automation clients are attached to this profile already.")
            return promise.futureResult
        }
        let release: @Sendable () -> Void = { [self] in
            state.withLockedValue { state in
                state.perProfile[profile, default: 1] -= 1
                if state.perProfile[profile] == 0 { state.perProfile[profile] = nil }
            }
        }
        let host = host
        Task {
            switch await host.admit(profile: profile, ticket: ticket) {
            case .refused(let status, let message):
                release()
                refuse(status, message)
                return
            case .admitted: break
            }
            guard let connection = host.automationConnection() else {
                release()
                refuse(503, "The renderer's Chromium is starting; try again in a moment.")
                return
            }
            do {
                let root = try await connection.call("Target.attachToBrowserTarget", timeout: .seconds(5))["sessionId"]?.string
                guard let root else { throw AutomationRefusal("no session") }
                state.withLockedValue { $0.admitted[id] = (profile, root, connection) }
                // A socket that goes before its pipeline is set up leaves nothing behind.
                channel.closeFuture.whenComplete { [self] _ in
                    if let left = state.withLockedValue({ $0.admitted.removeValue(forKey: id) }) {
                        release()
                        Task { _ = try? await left.connection.call("Target.detachFromTarget", ["sessionId": .string(left.root)]) }
                    }
                }
                promise.succeed(HTTPHeaders())
            } catch {
                release()
                refuse(503, "The renderer's Chromium did not attach a session: \(error)")
            }
        }
        return promise.futureResult
    }

    /// The socket is a WebSocket now: its client starts.
    func upgraded(_ channel: any Channel) -> EventLoopFuture<Void> {
        let id = ObjectIdentifier(channel)
        guard let admitted = state.withLockedValue({ $0.admitted.removeValue(forKey: id) }) else {
            return channel.close()
        }
        let client = AutomationClient(
            profile: admitted.profile, root: admitted.root, connection: admitted.connection, channel: channel, host: host, logger: logger)
        state.withLockedValue { $0.clients[id] = client }
        logger.info("automation client attached to profile \(admitted.profile)")
        channel.closeFuture.whenComplete { [self] _ in
            client.end(reason: "its socket closed")
            state.withLockedValue { state in
                state.clients[id] = nil
                state.perProfile[admitted.profile, default: 1] -= 1
                if state.perProfile[admitted.profile] == 0 { state.perProfile[admitted.profile] = nil }
            }
        }
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandlers(
                NIOWebSocketFrameAggregator(
                    minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 4096, maxAccumulatedFrameSize: limits.maximumMessageBytes),
                AutomationSocketHandler(client: client))
        }
    }

    func endAll(reason: String) {
        let clients = state.withLockedValue { Array($0.clients.values) }
        for client in clients { client.end(reason: reason) }
    }

    static func split(_ uri: String) -> (path: String, query: [String: String]) {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
                query[key] = kv.count == 2 ? (String(kv[1]).removingPercentEncoding ?? String(kv[1])) : ""
            }
        }
        return (String(parts.first ?? ""), query)
    }
}

/// A client's WebSocket: its text frames go to its ``AutomationClient``; pings are answered; a close
/// ends it.
final class AutomationSocketHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    let client: AutomationClient

    init(client: AutomationClient) { self.client = client }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            var data = frame.unmaskedData
            client.received(data.readBytes(length: data.readableBytes) ?? [])
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            client.end(reason: "it closed its socket")
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        client.end(reason: "\(error)")
    }
}

/// The gateway's plain HTTP: browserd's WebDriver calls (`POST /browserd/v1/tabs/{id}/execute` and
/// `…/screenshot`, with the renderer's control key), and the answer to a refused upgrade.
final class ControlHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // `@unchecked Sendable`: its state is touched on its channel's event loop only.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let state: GatewayState
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(state: GatewayState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            tooLarge = false
        case .body(var chunk):
            if body.count + chunk.readableBytes > state.limits.maximumControlBytes {
                tooLarge = true
            } else {
                body += chunk.readBytes(length: chunk.readableBytes) ?? []
            }
        case .end:
            guard let head else { return }
            self.head = nil
            respond(context: context, head: head)
        }
    }

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let channel = context.channel
        let reply: @Sendable (HTTPResponseStatus, JSONValue) -> Void = { status, value in
            channel.eventLoop.execute {
                let bytes = AutomationFilter.encode(value)
                var headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", "\(bytes.count)")])
                headers.add(name: "Cache-Control", value: "no-store")
                channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)), promise: nil)
                channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: bytes))), promise: nil)
                channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
            }
        }
        if let refused = state.refusal(of: channel) {
            return reply(HTTPResponseStatus(statusCode: refused.status), ["error": .string(refused.message)])
        }
        let (path, _) = GatewayState.split(head.uri)
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard parts.count == 5, parts[0] == "browserd", parts[1] == "v1", parts[2] == "tabs", ["execute", "screenshot"].contains(parts[4]) else {
            if parts.first == "json" || parts.first == "devtools" {
                return reply(.notFound, ["error": "Ask browserd for a profile's DevTools endpoint: GET /v1/profiles/{id}/devtools/json/version."])
            }
            return reply(.notFound, ["error": "Not found."])
        }
        guard head.method == .POST else { return reply(.methodNotAllowed, ["error": "POST only."]) }
        let presented = head.headers.first(name: "Authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
        guard Self.constantTimeEqual(presented, state.controlKey) else { return reply(.unauthorized, ["error": "The renderer's control key is needed."]) }
        guard !tooLarge else { return reply(.payloadTooLarge, ["error": .string("At most \(state.limits.maximumControlBytes) bytes.")]) }
        let (tab, host, body) = (parts[3], state.host, body)
        if parts[4] == "screenshot" {
            Task {
                do {
                    guard let data = try await host.screenshot(ofTab: tab) else { return reply(.notFound, ["error": "The tab has no live page here."]) }
                    reply(.ok, ["data": .string(data)])
                } catch {
                    reply(.badGateway, ["error": .string("\(error)")])
                }
            }
            return
        }
        guard let request = try? JSONDecoder().decode(ScriptRequest.self, from: Data(body)), (0...600_000).contains(request.timeoutMs) else {
            return reply(.badRequest, ["error": "A body {script, args, async, timeoutMs} is needed."])
        }
        Task {
            do {
                switch try await host.execute(request, inTab: tab) {
                case nil: reply(.notFound, ["error": "The tab has no live page here."])
                case .value(let value): reply(.ok, ["value": value])
                case .error(let name, let message): reply(.ok, ["error": ["error": .string(name), "message": .string(message)]])
                }
            } catch {
                reply(.badGateway, ["error": .string("\(error)")])
            }
        }
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
