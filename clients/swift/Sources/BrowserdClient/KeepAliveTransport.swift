#if canImport(NIOHTTP1)
    import Foundation
    public import HTTPTypes
    import NIOConcurrencyHelpers
    import NIOCore
    import NIOHTTP1
    import NIOPosix
    public import OpenAPIRuntime

    /// Requests to a plain-HTTP server over kept-alive HTTP/1.1 connections on NIO's shared event loops,
    /// each answer read whole: NIO's own codecs (`NIOHTTP1`) and a few idle connections kept, nothing
    /// more. What ``BrowserdClient`` sends its requests through on Linux when the server's URL is
    /// `http`: async-http-client's transport cost a renderer about twice the CPU a report (its request
    /// and answer conversions, its state machines, a task per body; figures in docs/benchmarks.md, run 11),
    /// and a renderer sends two reports a page navigation. Event streams (bodies without end) and `https`
    /// stay on async-http-client.
    ///
    /// A request sent on a kept connection that the server closed before answering anything (it closes
    /// idle connections: browserd's `--idle-timeout`) is sent once more on a new connection, as
    /// Chromium does (`HttpNetworkTransaction::ShouldResendRequest`); one that had any answer is not.
    public final class KeepAliveTransport: ClientTransport, Sendable {
        public struct Configuration: Sendable {
            /// Connections open at once, idle or busy, to every server together (async-http-client's
            /// soft limit per host was 64 too): a request past them waits for one to be free.
            public var connections = 64
            /// Idle connections kept for the next requests (more at once are opened and closed).
            public var idleConnections = 8
            /// An idle connection kept no longer than this (below a server's idle timeout, most often).
            public var idleTime: TimeAmount = .seconds(20)
            public var connectTimeout: TimeAmount = .seconds(10)
            /// From the request's first byte to its answer's last.
            public var answerTimeout: TimeAmount = .seconds(60)
            /// Request and answer bodies are read whole up to this size (past it, an error).
            public var bodyLimit = 64 * 1024 * 1024
            public init() {}
        }

        private let configuration: Configuration
        private let group: any EventLoopGroup
        /// The pool's decisions (``KeepAlivePool``) and the turns of the requests waiting.
        private struct State {
            var pool: KeepAlivePool<Connection>
            var turns: [Int: CheckedContinuation<Void, any Error>] = [:]
            var nextWaiter = 0
        }
        private let state: NIOLockedValueBox<State>

        public init(configuration: Configuration = Configuration(), group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
            self.configuration = configuration
            self.group = group
            state = NIOLockedValueBox(
                State(pool: KeepAlivePool(limit: configuration.connections, idleLimit: configuration.idleConnections, idleTime: configuration.idleTime)))
        }

        public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
            let server = try server(baseURL)
            let (host, port) = (server.host, server.port)
            var bytes: [UInt8]?
            if let body { bytes = try await [UInt8](collecting: body, upTo: configuration.bodyLimit) }
            var head = HTTPRequestHead(
                version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: server.basePath + (request.path ?? "/"))
            head.headers.reserveCapacity(request.headerFields.count + 2)
            head.headers.add(name: "Host", value: server.hostHeader)
            for field in request.headerFields { head.headers.add(name: field.name.rawName, value: field.value) }
            if let bytes { head.headers.replaceOrAdd(name: "Content-Length", value: String(bytes.count)) }

            var (connection, reused) = try await connection(host: host, port: port)
            if Task.isCancelled {
                release(connection, keeping: true)  // nothing sent on it
                throw CancellationError()
            }
            var answer: Answer
            do {
                answer = try await connection.exchange(head, body: bytes, timeout: configuration.answerTimeout, limit: configuration.bodyLimit)
            } catch KeepAliveTransportError.closedBeforeAnswer where reused && !Task.isCancelled {
                release(connection, keeping: false)
                (connection, reused) = try await self.connection(host: host, port: port, fresh: true)
                do {
                    answer = try await connection.exchange(head, body: bytes, timeout: configuration.answerTimeout, limit: configuration.bodyLimit)
                } catch {
                    release(connection, keeping: false)
                    throw Task.isCancelled ? CancellationError() : error
                }
            } catch {
                release(connection, keeping: false)
                throw Task.isCancelled ? CancellationError() : error
            }
            release(connection, keeping: answer.keepAlive)
            var fields = HTTPFields()
            fields.reserveCapacity(answer.head.headers.count)
            for (name, value) in answer.head.headers {
                if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
            }
            let response = HTTPResponse(status: .init(code: Int(answer.head.status.code)), headerFields: fields)
            return (response, answer.body.readableBytes == 0 ? nil : HTTPBody(answer.body.readableBytesView))
        }

        /// Where a base URL's requests go: read once per URL (Foundation's URL parsing was a sixth of a request).
        struct Server: Sendable {
            var host: String
            var port: Int
            /// The URL's path without its last `/`, before each request's.
            var basePath: String
            var hostHeader: String

            init(_ url: URL) throws {
                guard url.scheme?.lowercased() == "http", let host = url.host, !host.isEmpty else {
                    throw KeepAliveTransportError.unsupportedURL(url.absoluteString)
                }
                self.host = host
                port = url.port ?? 80
                basePath = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
                if basePath.hasSuffix("/") { basePath.removeLast() }
                let authority = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host  // an IPv6 address
                hostHeader = url.port.map { "\(authority):\($0)" } ?? authority
            }
        }

        /// The last base URL read (a client sends to one server).
        private let lastServer = NIOLockedValueBox<(url: URL, server: Server)?>(nil)

        private func server(_ url: URL) throws -> Server {
            if let last = lastServer.withLockedValue({ $0 }), last.url == url { return last.server }
            let server = try Server(url)
            lastServer.withLockedValue { $0 = (url, server) }
            return server
        }

        /// An idle connection to `host:port` (the most recent; one on the caller's event loop first) or
        /// a new one, once fewer than ``Configuration/connections`` are open (``KeepAlivePool``); whether it was kept.
        private func connection(host: String, port: Int, fresh: Bool = false) async throws -> (Connection, reused: Bool) {
            while true {
                let (take, letGo) = state.withLockedValue { $0.pool.take(host: host, port: port, fresh: fresh, now: .now()) }
                for connection in letGo { connection.close() }
                switch take {
                case .kept(let connection): return (connection, true)
                case .full:
                    try Task.checkCancellation()
                    try await waitTurn()
                case .connect:
                    do {
                        // On the caller's loop when it runs on one of the group's (`any()`).
                        let channel = try await ClientBootstrap(group: group.any())
                            .connectTimeout(configuration.connectTimeout)
                            .channelInitializer { channel in
                                channel.eventLoop.makeCompletedFuture {
                                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                                    try channel.pipeline.syncOperations.addHandler(ExchangeHandler())
                                }
                            }
                            .connect(host: host, port: port).get()
                        return (Connection(channel: channel, host: host, port: port), false)
                    } catch {
                        closed()
                        throw error
                    }
                }
            }
        }

        /// Waits until a connection may be free (a request past the limit), or the task is cancelled.
        private func waitTurn() async throws {
            let id = state.withLockedValue { state in
                defer { state.nextWaiter += 1 }
                return state.nextWaiter
            }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (turn: CheckedContinuation<Void, any Error>) in
                    let waits = state.withLockedValue { state -> Bool in
                        guard !Task.isCancelled, state.pool.wait(id) else { return false }
                        state.turns[id] = turn
                        return true
                    }
                    if !waits { turn.resume() }
                }
            } onCancel: {
                let turn = state.withLockedValue { state in state.pool.cancel(id) ? state.turns.removeValue(forKey: id) : nil }
                turn?.resume(throwing: CancellationError())
            }
        }

        /// A connection done with: kept idle (`keeping`, while its server keeps it) or closed; either
        /// way the first request waiting goes on.
        private func release(_ connection: Connection, keeping: Bool) {
            guard keeping, connection.isUsable else {
                connection.close()
                return closed()
            }
            let (letGo, turn) = state.withLockedValue { state in
                let (letGo, wake) = state.pool.keep(connection, now: .now())
                return (letGo, wake.flatMap { state.turns.removeValue(forKey: $0) })
            }
            for connection in letGo { connection.close() }
            turn?.resume()
        }

        /// One connection fewer open: the first request waiting goes on.
        private func closed() {
            let turn = state.withLockedValue { state in state.pool.closed().flatMap { state.turns.removeValue(forKey: $0) } }
            turn?.resume()
        }
    }

    public enum KeepAliveTransportError: Error, Sendable, CustomStringConvertible {
        case unsupportedURL(String)
        case closedBeforeAnswer
        case closed
        case timedOut
        case bodyTooLarge

        public var description: String {
            switch self {
            case .unsupportedURL(let url): "not a plain-HTTP server URL: \(url)"
            case .closedBeforeAnswer: "the server closed the connection before answering"
            case .closed: "the server closed the connection in the middle of its answer"
            case .timedOut: "no whole answer in time"
            case .bodyTooLarge: "an answer's body past the transport's limit"
            }
        }
    }

    /// An answer read whole.
    struct Answer: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer
        var keepAlive: Bool
    }

    /// One connection: one exchange at a time (it is either under way or in the idle list).
    final class Connection: PooledConnection, Sendable {
        let channel: any Channel
        let host: String
        let port: Int

        init(channel: any Channel, host: String, port: Int) {
            self.channel = channel
            self.host = host
            self.port = port
        }

        var isUsable: Bool { channel.isActive }
        var isOnCallerLoop: Bool { channel.eventLoop.inEventLoop }

        func close() { channel.close(promise: nil) }

        func exchange(_ head: HTTPRequestHead, body: [UInt8]?, timeout: TimeAmount, limit: Int) async throws -> Answer {
            let promise = channel.eventLoop.makePromise(of: Answer.self)
            let channel = channel
            channel.eventLoop.execute {
                do {
                    let handler = try channel.pipeline.syncOperations.handler(type: ExchangeHandler.self)
                    handler.start(promise, timeout: timeout, limit: limit, channel: channel)
                    channel.write(HTTPClientRequestPart.head(head), promise: nil)
                    if let body, !body.isEmpty { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil) }
                    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                } catch {
                    promise.fail(error)
                }
            }
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                channel.close(promise: nil)
            }
        }
    }

    /// Reads one answer at a time into its promise; a connection that ends or fails fails it.
    final class ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPClientResponsePart

        private var promise: EventLoopPromise<Answer>?
        private var head: HTTPResponseHead?
        private var body = ByteBuffer()
        private var limit = 0
        private var timer: Scheduled<Void>?

        func start(_ promise: EventLoopPromise<Answer>, timeout: TimeAmount, limit: Int, channel: any Channel) {
            guard channel.isActive else { return promise.fail(KeepAliveTransportError.closedBeforeAnswer) }
            self.promise = promise
            self.limit = limit
            head = nil
            body.clear()
            let handler = NIOLoopBound(self, eventLoop: channel.eventLoop)
            timer = channel.eventLoop.scheduleTask(in: timeout) {
                handler.value.fail(KeepAliveTransportError.timedOut)
                channel.close(promise: nil)
            }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                // 1xx answers (100 Continue) come before the real one.
                guard head.status.code >= 200 || head.status == .switchingProtocols else { return }
                self.head = head
            case .body(var part):
                guard body.readableBytes + part.readableBytes <= limit else {
                    fail(KeepAliveTransportError.bodyTooLarge)
                    return context.close(promise: nil)
                }
                body.writeBuffer(&part)
            case .end:
                guard let head, let promise else { return }
                self.promise = nil
                timer?.cancel()
                // After 101 the decoder reads no more HTTP: that connection is not kept.
                promise.succeed(Answer(head: head, body: body, keepAlive: head.isKeepAlive && head.status != .switchingProtocols))
                body = ByteBuffer()
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            fail(head == nil ? KeepAliveTransportError.closedBeforeAnswer : KeepAliveTransportError.closed)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // The connection lost before any answer (a reset of a kept connection the server had closed):
            // as a close. Anything else (an answer that is no HTTP/1.1, a request NIO refused) as it is.
            let lost = error is IOError || error is ChannelError
            fail(head == nil && lost ? KeepAliveTransportError.closedBeforeAnswer : error)
            context.close(promise: nil)
        }

        private func fail(_ error: any Error) {
            timer?.cancel()
            guard let promise else { return }
            self.promise = nil
            promise.fail(error)
        }
    }
#endif
