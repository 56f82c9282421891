import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TestSupport
import Testing

@testable import BrowserdRenderer

/// The fence's own life (its pages' requests are RendererTests+Hostile's, with a real Chromium): stopping
/// it ends every connection it holds, both sides, on its own thread or on a loop it was given (which goes on).
@Suite(.offThePool, .timeLimit(.minutes(1))) struct FencingProxyTests {
    @Test(arguments: [false, true]) func stoppingClosesEveryConnectionAndItsDestination(onASharedLoop: Bool) async throws {
        // A destination that takes a connection and never answers.
        let accepted = NIOLockedValueBox<[any Channel]>([])
        let destination = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                accepted.withLockedValue { $0.append(channel) }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { destination.close(promise: nil) }
        let port = try #require(destination.localAddress?.port)
        let proxy = try await FencingProxy.start(
            policy: NetworkPolicy(allowedOrigins: ["http://127.0.0.1:\(port)"]), logger: Logger(label: "fence-test"),
            loop: onASharedLoop ? DevToolsConnection.loop : nil)

        let page = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: proxy.port).get()
        try await page.writeAndFlush(ByteBuffer(string: "GET http://127.0.0.1:\(port)/held HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"))
        // Relayed: the destination has the fence's connection (active once registered, just after its initializer).
        let deadline = ContinuousClock.now + .seconds(10)
        while accepted.withLockedValue({ $0.first?.isActive != true }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let upstream = try #require(accepted.withLockedValue { $0.first })
        #expect(page.isActive && upstream.isActive)

        await proxy.stop()
        // Both ends closed by the fence (the suite's time limit fails a close that never comes).
        try await page.closeFuture.get()
        try await upstream.closeFuture.get()
        #expect(!page.isActive && !upstream.isActive)
        // A loop it was given goes on.
        #expect(try await DevToolsConnection.loop.submit { 1 }.get() == 1)
    }
}
