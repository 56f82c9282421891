import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIRuntime
import TestSupport
import Testing

@testable import BrowserdClient

/// ``KeepAliveTransport`` against a server of the test's own that misbehaves on purpose: requests
/// share a kept connection; a kept connection closed unanswered is tried once more on a new one, a
/// new one never; an answer past its time or its size fails.
@Suite(.offThePool, .timeLimit(.minutes(1))) struct KeepAliveTransportTests {
    @Test func requestsShareOneKeptConnectionAndBodiesGoBothWays() async throws {
        let server = try await TestServer(.answer)
        defer { server.stop() }
        let transport = KeepAliveTransport()
        for n in 0..<20 {
            var request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/echo/\(n)?q=1")
            request.headerFields[.contentType] = "application/json"
            let (response, body) = try await transport.send(request, body: HTTPBody("{\"n\":\(n)}"), baseURL: server.url, operationID: "echo")
            #expect(response.status.code == 200)
            #expect(response.headerFields[HTTPField.Name("X-Path")!] == "/base/echo/\(n)?q=1")
            let answer = try await String(collecting: try #require(body), upTo: 1024)
            #expect(answer == "{\"n\":\(n)}")
        }
        #expect(server.connections == 1)
        #expect(server.requests == 20)
    }

    @Test func aKeptConnectionClosedUnansweredIsTriedOnceOnANewOne() async throws {
        // The server answers the first request of each connection and closes on the second unanswered
        // (a server that closed an idle connection as the request went out).
        let server = try await TestServer(.answerFirstOnly)
        defer { server.stop() }
        let transport = KeepAliveTransport()
        for n in 0..<3 {
            let (response, _) = try await transport.send(
                HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/\(n)"), body: nil, baseURL: server.url, operationID: "x")
            #expect(response.status.code == 200)
        }
        // 1 on a new connection; 2 and 3 each tried on the kept one, then on a new one.
        #expect(server.connections == 3)
        #expect(server.requests == 5)
    }

    @Test func aConnectionIdlePastItsTimeIsNotUsedAgain() async throws {
        let server = try await TestServer(.answer)
        defer { server.stop() }
        var configuration = KeepAliveTransport.Configuration()
        configuration.idleTime = .milliseconds(50)
        let transport = KeepAliveTransport(configuration: configuration)
        for _ in 0..<2 {
            _ = try await transport.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: server.url, operationID: "x")
            try await Task.sleep(for: .milliseconds(150))
        }
        #expect(server.connections == 2)
        #expect(server.requests == 2)
    }

    @Test func anAnswerThatIsNoHTTPIsAnErrorNotARetry() async throws {
        // The second request on the kept connection is answered with bytes that are no HTTP/1.1.
        let server = try await TestServer(.garbageSecond)
        defer { server.stop() }
        let transport = KeepAliveTransport()
        _ = try await transport.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: server.url, operationID: "x")
        await #expect {
            _ = try await transport.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: server.url, operationID: "x")
        } throws: { error in
            !(error is KeepAliveTransportError)
        }
        #expect(server.connections == 1)
        #expect(server.requests == 2)
    }

    @Test func aNewConnectionClosedUnansweredFailsWithoutAnotherTry() async throws {
        let server = try await TestServer(.closeUnanswered)
        defer { server.stop() }
        let transport = KeepAliveTransport()
        await #expect(throws: KeepAliveTransportError.self) {
            _ = try await transport.send(
                HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: server.url, operationID: "x")
        }
        #expect(server.requests == 1)
    }

    @Test func anAnswerPastItsTimeOrSizeFails() async throws {
        let silent = try await TestServer(.neverAnswer)
        defer { silent.stop() }
        var quick = KeepAliveTransport.Configuration()
        quick.answerTimeout = .milliseconds(200)
        await #expect {
            _ = try await KeepAliveTransport(configuration: quick).send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: silent.url, operationID: "x")
        } throws: { error in
            if case KeepAliveTransportError.timedOut = error { return true }
            return false
        }
        let large = try await TestServer(.answerLarge(2048))
        defer { large.stop() }
        // (Its own time: a loaded machine may take more than 200 ms to answer.)
        var small = KeepAliveTransport.Configuration()
        small.bodyLimit = 1024
        await #expect {
            _ = try await KeepAliveTransport(configuration: small).send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: large.url, operationID: "x")
        } throws: { error in
            if case KeepAliveTransportError.bodyTooLarge = error { return true }
            return false
        }
        // Within its size, the same answer is read whole.
        let (_, body) = try await KeepAliveTransport().send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: large.url, operationID: "x")
        #expect(try await [UInt8](collecting: try #require(body), upTo: 4096).count == 2048)
    }

    @Test func connectionsAtOnceAreBoundedAndARequestPastThemWaits() async throws {
        let server = try await TestServer(.answerLater(.milliseconds(100)))
        defer { server.stop() }
        var configuration = KeepAliveTransport.Configuration()
        configuration.connections = 2
        let transport = KeepAliveTransport(configuration: configuration)
        let url = server.url
        try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<6 {
                group.addTask {
                    try await transport.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/\(n)"), body: nil, baseURL: url, operationID: "x")
                        .0.status.code
                }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(server.connections == 2)
        #expect(server.requests == 6)

        // A request waiting for its turn ends when its task is cancelled.
        let silent = try await TestServer(.neverAnswer)
        defer { silent.stop() }
        configuration.connections = 1
        configuration.answerTimeout = .seconds(30)
        let one = KeepAliveTransport(configuration: configuration)
        let silentURL = silent.url
        let holding = Task { try await one.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: silentURL, operationID: "x") }
        while silent.requests == 0 { try await Task.sleep(for: .milliseconds(10)) }
        let waiting = Task { try await one.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: silentURL, operationID: "x") }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        #expect(silent.connections == 1)
        holding.cancel()
        _ = try? await holding.value
    }

    @Test func onlyPlainHTTPServers() async throws {
        await #expect(throws: KeepAliveTransportError.self) {
            _ = try await KeepAliveTransport().send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: URL(string: "https://example.com")!,
                operationID: "x")
        }
    }
}

/// An HTTP/1.1 server on loopback that counts connections and requests and behaves as told.
private final class TestServer: Sendable {
    enum Behaviour: Sendable {
        /// 200 with the request's body, and its path in `X-Path`.
        case answer
        case answerFirstOnly
        case closeUnanswered
        case neverAnswer
        case answerLarge(Int)
        case answerLater(TimeAmount)
        /// The first request answered, the second with bytes that are no HTTP.
        case garbageSecond
    }

    private let channel: any Channel
    private let counts = NIOLockedValueBox((connections: 0, requests: 0))
    var connections: Int { counts.withLockedValue { $0.connections } }
    var requests: Int { counts.withLockedValue { $0.requests } }
    var url: URL { URL(string: "http://127.0.0.1:\(channel.localAddress!.port!)/base")! }

    init(_ behaviour: Behaviour) async throws {
        let counts = counts
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                counts.withLockedValue { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(behaviour: behaviour, counts: counts))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func stop() { channel.close(promise: nil) }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let behaviour: Behaviour
        let counts: NIOLockedValueBox<(connections: Int, requests: Int)>
        var answered = 0
        var uri = ""
        var body = ByteBuffer()

        init(behaviour: Behaviour, counts: NIOLockedValueBox<(connections: Int, requests: Int)>) {
            self.behaviour = behaviour
            self.counts = counts
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                uri = head.uri
                body.clear()
            case .body(var part): body.writeBuffer(&part)
            case .end:
                counts.withLockedValue { $0.requests += 1 }
                switch behaviour {
                case .answer: answer(context: context, body: body)
                case .answerFirstOnly where answered == 0: answer(context: context, body: body)
                case .answerFirstOnly, .closeUnanswered: context.close(promise: nil)
                case .neverAnswer: break
                case .answerLarge(let size): answer(context: context, body: ByteBuffer(repeating: 0x61, count: size))
                case .garbageSecond where answered == 0: answer(context: context, body: body)
                case .garbageSecond:
                    // Written below the response encoder, as bytes.
                    let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
                    encoder?.writeAndFlush(NIOAny(ByteBuffer(string: "garbage garbage\r\n\r\n")), promise: nil)
                case .answerLater(let delay):
                    let (handler, body) = (NIOLoopBound(self, eventLoop: context.eventLoop), body)
                    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                    context.eventLoop.scheduleTask(in: delay) { handler.value.answer(context: bound.value, body: body) }
                }
                answered += 1
            }
        }

        func answer(context: ChannelHandlerContext, body: ByteBuffer) {
            var headers = HTTPHeaders([("Content-Length", "\(body.readableBytes)"), ("X-Path", uri)])
            headers.add(name: "Content-Type", value: "application/json")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
