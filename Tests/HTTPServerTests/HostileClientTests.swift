import Foundation
import HTTPServer
import Logging
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What one hostile client can no longer do to the others (the hostile-tenants findings at the
/// HTTP edge), each against a live server over real sockets.
@Suite(.offThePool) struct HostileClientTests {
    /// Finding 2: a method outside the closed set is answered 501 and the connection closed, before
    /// anything is kept under its name (metrics see one label for all of them).
    @Test func unknownMethodsAre501AndKeepNothingUnderTheirName() async throws {
        try await withServer(router: testRouter()) { server, observer in
            for index in 0..<200 {
                let client = try connect(server)
                let response = try client.request("X-RANDOM-\(index)", "/hello")
                #expect(response.status == 501)
                #expect(response.header("content-type") == "application/problem+json")
                #expect(response.text.contains("/problems/method-not-implemented"))
                #expect(response.header("connection")?.lowercased() == "close")
            }
            let methods = observer.methodsSeen.withLock { $0 }
            #expect(methods.isSubset(of: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "QUERY", "OTHER"]))
            #expect(try connect(server).request("GET", "/hello").status == 200)
        }
    }

    /// Finding 11: Content-Length and Transfer-Encoding together is 400 and the connection closes, so
    /// a request smuggled after it is never answered.
    @Test func contentLengthWithTransferEncodingIs400AndCloses() async throws {
        try await withServer(router: testRouter()) { server, _ in
            let client = try connect(server, timeout: .seconds(2))
            let smuggled = "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"
            try client.sendRaw(
                Array(
                    ("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "0\r\n\r\n" + smuggled).utf8))
            let response = try client.readResponse(method: "POST")
            #expect(response.status == 400)
            #expect(response.text.contains("/problems/ambiguous-framing"))
            let second = try? client.readResponse()
            #expect(second == nil, "a second answer: \(second.map { "\($0.status) \($0.text)" } ?? "")")
        }
    }

    /// Finding 7 (the edge's half): with an allowed-host list, a request naming another host (DNS
    /// rebinding) gets 421; loopback addresses and listed names are answered.
    @Test func aHostOutsideTheListIs421() async throws {
        try await withServer({ $0.allowedHosts = ServerConfiguration.loopbackHosts(for: "127.0.0.1") }, router: testRouter()) { server, _ in
            let attacker = try connect(server)
            try attacker.sendRaw(Array("GET /hello HTTP/1.1\r\nHost: rebind.attacker.example\r\n\r\n".utf8))
            let rebound = try attacker.readResponse()
            #expect(rebound.status == 421)
            #expect(rebound.text.contains("/problems/misdirected-request"))
            for host in ["127.0.0.1:\(server.port)", "localhost", "LOCALHOST:1", "[::1]:8080", "127.0.0.2"] {
                let raw = try connect(server)
                try raw.sendRaw(Array("GET /hello HTTP/1.1\r\nHost: \(host)\r\n\r\n".utf8))
                #expect(try raw.readResponse().status == 200, "Host: \(host)")
            }
        }
    }

    /// Finding 7 (CSRF), as Go 1.25's `CrossOriginProtection`: a state-changing request a browser
    /// marks as cross-origin is 403 before routing; one with neither header (curl) passes, bodyless too.
    @Test func aCrossOriginPageCannotChangeStateButCurlCan() async throws {
        let protection = CrossOriginProtection { $0 == "https://ui.example" }
        try await withServer({ $0.crossOriginProtection = protection }, router: testRouter()) { server, observer in
            let client = try connect(server)
            let host = "127.0.0.1:\(server.port)"
            let form = try client.request(
                "POST", "/echo", headers: [("Content-Type", "text/plain"), ("Origin", "https://evil.example"), ("Sec-Fetch-Site", "cross-site")],
                body: Array("x".utf8))
            #expect(form.status == 403 && form.text.contains("/problems/cross-origin-request"))
            #expect(try client.request("DELETE", "/hello", headers: [("Origin", "https://evil.example")]).status == 403)
            #expect(try client.request("POST", "/echo", headers: [("Sec-Fetch-Site", "same-site")]).status == 403)
            #expect(try client.request("POST", "/echo").status == 200, "curl: neither header, no body")
            #expect(try client.request("POST", "/echo", headers: [("Content-Type", "text/plain")], body: Array("x".utf8)).status == 200)
            #expect(try client.request("POST", "/echo", headers: [("Origin", "http://\(host)"), ("Sec-Fetch-Site", "same-origin")]).status == 200)
            #expect(try client.request("POST", "/echo", headers: [("Origin", "http://localhost")]).status == 200, "its own host (the client sends Host: localhost)")
            #expect(try client.request("POST", "/echo", headers: [("Origin", "https://ui.example"), ("Sec-Fetch-Site", "cross-site")]).status == 200)
            #expect(try client.request("GET", "/hello", headers: [("Origin", "https://evil.example"), ("Sec-Fetch-Site", "cross-site")]).status == 200)
            #expect(client.isOpen)
            // Refused before routing: no handler saw the three refused requests.
            #expect(observer.completed.withLock { $0.filter { $0.status == 403 }.allSatisfy { $0.route == nil } })
        }
    }

    /// Finding 3: a client that keeps a request head open by sending a byte now and then is ended at
    /// the head's deadline, not kept for as long as it is merely not idle.
    @Test func aTricklingHeadIsEndedAtItsDeadline() async throws {
        try await withServer(
            {
                $0.idleTimeoutSeconds = 3
                $0.requestHeadTimeoutSeconds = 1
            }, router: testRouter()
        ) { server, _ in
            let client = try connect(server, timeout: .seconds(1))
            let started = ContinuousClock.now
            try client.sendRaw(Array("GET /hello HTTP/1.1\r\n".utf8))
            var closedAfter: Duration?
            for index in 0..<12 {
                Thread.sleep(forTimeInterval: 0.5)
                do {
                    try client.sendRaw(Array("X-Slow-\(index): 1\r\n".utf8))
                } catch {
                    closedAfter = ContinuousClock.now - started
                    break
                }
            }
            let closed = try #require(closedAfter, "a header line every 0.5 s kept the request open for 6 s")
            #expect(closed < .seconds(4))
            #expect(server.connectionsPastDeadline >= 1)
            #expect(try connect(server).request("GET", "/hello").status == 200)
        }
    }

    /// Finding 3: a body that trickles below the minimum rate is ended after the grace.
    @Test func aTricklingBodyIsEndedBelowTheMinimumRate() async throws {
        try await withServer(
            {
                $0.idleTimeoutSeconds = 5
                $0.requestHeadTimeoutSeconds = 1
                $0.minimumBodyRate = 100
            }, router: testRouter()
        ) { server, _ in
            let client = try connect(server, timeout: .seconds(1))
            try client.sendRaw(Array("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000\r\n\r\n".utf8))
            var ended = false
            for _ in 0..<16 {
                Thread.sleep(forTimeInterval: 0.25)
                do { try client.sendRaw([65]) } catch {
                    ended = true
                    break
                }
            }
            #expect(ended, "4 bytes a second kept a 10,000-byte body open for 4 s")
        }
    }

    /// Finding 3: one address holding many half-sent heads cannot take the server from another
    /// address (libmicrohttpd's per-address connection limit).
    @Test func oneAddressCannotHoldEveryConnection() async throws {
        try await withServer(
            {
                $0.perIPConnectionLimit = 16
                $0.connectionLimit = 64
            }, router: testRouter()
        ) { server, _ in
            var held: [HTTPClientConnection] = []
            var refused = 0
            for _ in 0..<80 {
                do {
                    let connection = try HTTPClientConnection(host: "127.0.0.1", port: server.port, timeout: .seconds(1), sourceAddress: "127.0.0.2")
                    try connection.sendRaw(Array("GET /hello HTTP/1.1\r\nHost: loc".utf8))
                    held.append(connection)
                } catch {
                    refused += 1
                }
            }
            // Past the limit the server closes at once: those connections see the close on a read
            // (given up to 2 s on a loaded machine: the count of those still open only falls).
            for connection in held {
                _ = connection.withDescriptor { fcntl($0, F_SETFL, fcntl($0, F_GETFL) | O_NONBLOCK) }
            }
            func stillOpen() -> Int {
                held.filter { connection in
                    var byte: UInt8 = 0
                    let peeked = connection.withDescriptor { recv($0, &byte, 1, Int32(MSG_PEEK)) } ?? 0
                    return peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
                }.count
            }
            let deadline = ContinuousClock.now + .seconds(2)
            var open = stillOpen()
            while open > 16, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.02)
                open = stillOpen()
            }
            #expect(open <= 16)
            let other = try HTTPClientConnection(host: "127.0.0.1", port: server.port, timeout: .seconds(2))
            #expect(try other.request("GET", "/hello").status == 200)
            withExtendedLifetime(held) {}
        }
    }

    @Test func deadlinesAreAPureDecision() {
        let deadlines = RequestDeadlines(idleTimeout: .seconds(60), headTimeout: .seconds(10), minimumBodyRate: 1_000)
        #expect(!deadlines.isExpired(phase: .idle, elapsed: .seconds(69), bodyBytes: 0))
        #expect(deadlines.isExpired(phase: .idle, elapsed: .seconds(71), bodyBytes: 0))
        #expect(!deadlines.isExpired(phase: .head, elapsed: .seconds(9), bodyBytes: 0))
        #expect(deadlines.isExpired(phase: .head, elapsed: .seconds(11), bodyBytes: 0))
        #expect(!deadlines.isExpired(phase: .body, elapsed: .seconds(14), bodyBytes: 5_000))
        #expect(deadlines.isExpired(phase: .body, elapsed: .seconds(16), bodyBytes: 5_000))
        #expect(!deadlines.isExpired(phase: .handling, elapsed: .seconds(100_000), bodyBytes: 0))
    }

    /// Finding 9: what a client sends never reaches the log as a raw control character.
    @Test func logTextEscapesControlCharacters() {
        #expect(LogText.escaped("/v1/x") == "/v1/x")
        #expect(LogText.escaped("/a\r\n2026 critical forged") == "/a\\u{d}\\u{a}2026 critical forged")
        #expect(LogText.escaped("\u{1b}[2J\u{7f}\u{85}\u{2028}") == "\\u{1b}[2J\\u{7f}\\u{85}\\u{2028}")
        final class Lines: Sendable { let value = Mutex<[String]>([]) }
        let lines = Lines()
        struct Capture: LogHandler {
            let lines: Lines
            var logLevel: Logger.Level = .trace
            var metadata: Logger.Metadata = [:]
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { nil }
                set {}
            }
            func log(event: LogEvent) {
                lines.value.withLock { $0.append("\(event.message) \(event.metadata ?? [:])") }
            }
        }
        let logger = Logger(label: "t", factory: { _ in EscapingLogHandler(Capture(lines: lines)) })
        logger.info("bad\nline", metadata: ["path": "/x\r\ncritical: forged", "list": .array(["\u{0}"])])
        let written = lines.value.withLock { $0 }.joined()
        #expect(!written.contains("\n") && !written.contains("\r") && !written.contains("\u{0}"))
        #expect(written.contains("bad\\u{a}line"))
    }
}
