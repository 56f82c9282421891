import Foundation
import Glibc
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

@testable import HTTPServer

/// Pipelined answers leave together when the client says more requests follow
/// (`X-Browserd-Pipelined: more`): held until the run's last answer, never longer than the run takes,
/// and sent at once when an answer must wait.
@Suite(.offThePool) struct CoalescingTests {
    /// Whether answer bytes wait on the client's socket (peeked: nothing is taken off).
    static func hasBytes(_ client: HTTPClientConnection) -> Bool {
        var byte: UInt8 = 0
        return (client.withDescriptor { recv($0, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) } ?? 0) > 0
    }

    static let more = (HTTPServer.pipelinedHeader, "more")
    /// Who may hint: here a header stands in for the cluster's peer proof.
    static let peer = ("X-Test-Peer", "yes")
    static func configure(_ configuration: inout ServerConfiguration) { configuration.pipelineHintFrom = { $0.headers["X-Test-Peer"] == "yes" } }

    /// A kept connection, as the relay's are: libmicrohttpd sets the socket's options itself on a
    /// connection's first answer (which lets a held answer go), so runs are held from the second on.
    static func keptConnection(_ server: HTTPServer) throws -> HTTPClientConnection {
        let client = try connect(server)
        #expect(try client.request("GET", "/hello").text == "hello")
        return client
    }

    /// A door a handler waits at until the test opens it.
    final class Gate: Sendable {
        private let state = Mutex(false)
        var isOpen: Bool { state.withLock { $0 } }
        func open() { state.withLock { $0 = true } }
    }

    static func router(gate: Gate? = nil) -> Router {
        testRouter { router in
            router.add(
                .get, "/slower",
                .deferred { _ in
                    // Answers once its gate opens (at most 10 s), or after 600 ms without one.
                    if let gate {
                        let until = ContinuousClock.now + .seconds(10)
                        while !gate.isOpen, ContinuousClock.now < until { try await Task.sleep(for: .milliseconds(5)) }
                    } else {
                        try await Task.sleep(for: .milliseconds(600))
                    }
                    return .text("slower")
                })
        }
    }

    @Test func theAnswersOfARunLeaveWithItsLast() async throws {
        try await withServer(Self.configure, router: Self.router()) { server, _ in
            let client = try Self.keptConnection(server)
            let sent = ContinuousClock.now
            try client.send("GET", "/hello", headers: [Self.more, Self.peer])
            Thread.sleep(forTimeInterval: 0.05)
            let held = !Self.hasBytes(client)
            // Held until the run's next answer (the kernel lets a held answer go after 200 ms: a check
            // this thread made later than that, on a loaded machine, says nothing).
            if ContinuousClock.now - sent < .milliseconds(150) { #expect(held, "the first answer waits for the run's last") }
            try client.send("GET", "/items/1")
            #expect(try client.readResponse().text == "hello")
            #expect(try client.readResponse().text == "item 1 q=-")
            // Unmarked requests are answered at once, as ever.
            try client.send("GET", "/hello")
            #expect(waitUntil(timeout: .seconds(2)) { Self.hasBytes(client) })
            #expect(try client.readResponse().text == "hello")
        }
    }

    @Test func aRunWhoseLastRequestNeverComesIsStillAnswered() async throws {
        try await withServer(Self.configure, router: Self.router()) { server, _ in
            let client = try Self.keptConnection(server)
            let started = ContinuousClock.now
            #expect(try client.request("GET", "/hello", headers: [Self.more, Self.peer]).text == "hello")
            #expect(ContinuousClock.now - started < .seconds(2), "the kernel sends a held answer within 200 ms")
            #expect(try client.request("GET", "/items/2").text == "item 2 q=-")
        }
    }

    @Test func anAnswerThatMustWaitSendsWhatIsHeldFirst() async throws {
        let gate = Gate()
        try await withServer(Self.configure, router: Self.router(gate: gate)) { server, _ in
            let client = try Self.keptConnection(server)
            try client.send("GET", "/hello", headers: [Self.more, Self.peer])
            try client.send("GET", "/slower")
            // The deferred handler answers only once its gate opens, which this test does after the
            // first answer came: held behind it, that answer would never come (no time is asserted:
            // a loaded machine may take long; a held one would wait for ever).
            let came = waitUntil(timeout: .seconds(10)) { Self.hasBytes(client) }
            gate.open()
            #expect(came, "the first answer came while the second still waited")
            #expect(try client.readResponse().text == "hello")
            #expect(try client.readResponse().text == "slower")
        }
    }

    /// The hint is honoured only from those ``ServerConfiguration/pipelineHintFrom`` names (another
    /// instance's relay): anyone else's is ignored, and nothing is asked of a request without it.
    @Test func onlyAPeersHintIsHonoured() throws {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        let asked = Mutex(0)
        configuration.pipelineHintFrom = { request in
            asked.withLock { $0 += 1 }
            return request.headers["X-Test-Peer"] == "yes"
        }
        func request(_ headers: [(String, String)]) -> HTTPRequest {
            HTTPRequest(method: .get, path: "/hello", headers: HTTPHeaders(headers))
        }
        #expect(HTTPServer.holdsRun(of: request([Self.more, Self.peer]), configuration))
        #expect(!HTTPServer.holdsRun(of: request([Self.more]), configuration))
        #expect(!HTTPServer.holdsRun(of: request([Self.peer]), configuration))
        #expect(asked.withLock { $0 } == 2, "asked only of requests with the hint")
        configuration.pipelineHintFrom = nil
        #expect(!HTTPServer.holdsRun(of: request([Self.more, Self.peer]), configuration), "nobody's by default")
    }

    /// A stranger's hinted requests are answered as any others.
    @Test func aStrangersHintedRunIsAnswered() async throws {
        try await withServer(Self.configure, router: Self.router()) { server, _ in
            let client = try Self.keptConnection(server)
            try client.send("GET", "/hello", headers: [Self.more])
            try client.send("GET", "/items/3", headers: [Self.more])
            #expect(try client.readResponse().text == "hello")
            #expect(try client.readResponse().text == "item 3 q=-")
        }
    }
}
