import Foundation
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

@testable import HTTPServer

@Suite(.offThePool) struct LiveServerTests {
    @Test func keepAliveReusesOneConnection() async throws {
        try await withServer(router: testRouter()) { server, observer in
            let client = try connect(server)
            for i in 0..<5 {
                let response = try client.request("GET", "/items/\(i)?q=a%20b")
                #expect(response.status == 200)
                #expect(response.text == "item \(i) q=a b")
                #expect(response.header("connection")?.lowercased() != "close")
            }
            let slow = try client.request("GET", "/slow")
            #expect(slow.text == "slow")
            let echo = try client.request("POST", "/echo", body: Array("ping".utf8))
            #expect(echo.text == "ping")
            #expect(client.isOpen)
            #expect(observer.connectionsOpened.load(ordering: .relaxed) == 1)
        }
    }

    /// A client closed by a `Connection: close` answer never uses its old descriptor number again:
    /// the next connection made usually gets that number, and the closed client must neither read
    /// that connection's answer nor write into it.
    @Test func aClosedClientLeavesItsOldDescriptorAlone() async throws {
        try await withServer(router: testRouter()) { server, _ in
            let closed = try connect(server)
            let refused = try closed.request("X-UNKNOWN", "/hello")
            #expect(refused.status == 501 && !closed.isOpen && closed.withDescriptor({ $0 }) == nil)
            let other = try connect(server)
            try other.send("GET", "/hello")
            #expect(throws: HTTPClientConnection.ClientError.self) { try closed.readResponse() }
            #expect(throws: HTTPClientConnection.ClientError.self) { try closed.sendRaw(Array("GET /hello HTTP/1.1\r\n\r\n".utf8)) }
            let answer = try other.readResponse()
            #expect(answer.status == 200 && answer.text == "hello")
            #expect(try other.request("GET", "/hello").text == "hello", "nothing was written into the other connection")
        }
    }

    /// The server's own response headers reach every answer, a prebuilt shared one included (built
    /// once with them, not copied per request), unless the answer names that header itself; a shared
    /// answer first built by another server (other headers) is sent as a copy with this one's.
    @Test func serverHeadersReachSharedAnswersWithoutACopy() async throws {
        let shared = SharedResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("shared".utf8))
        let named = SharedResponse(status: 200, headers: ["X-Instance": "owner"], body: Array("named".utf8))
        let router = testRouter { router in
            router.get("/shared") { _ in .shared(shared) }
            router.get("/named") { _ in .shared(named) }
        }
        for instance in ["a", "b"] {
            try await withServer({ $0.responseHeaders = ["X-Instance": instance] }, router: router) { server, _ in
                let client = try connect(server)
                for _ in 0..<3 {
                    let answer = try client.request("GET", "/shared")
                    #expect(answer.text == "shared" && answer.header("x-instance") == instance)
                    #expect(try client.request("GET", "/hello").header("x-instance") == instance)
                    #expect(try client.request("GET", "/named").header("x-instance") == "owner")
                }
            }
        }
    }

    @Test func aDecodedNulDoesNotCutAQueryValueShort() async throws {
        try await withServer(router: testRouter()) { server, _ in
            let response = try connect(server).request("GET", "/items/1?q=ab%00cd")
            #expect(response.status == 200)
            #expect(response.body == Array("item 1 q=ab\u{0}cd".utf8))
        }
    }

    /// The server's own threads carry their names where `top -H`, perf and gdb read them (a name
    /// over 15 bytes would be refused by the system and the thread keep its creator's).
    @Test func theServerThreadsAreNamed() async throws {
        try await withServer(router: testRouter()) { _, _ in
            func names() -> Set<String> {
                let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
                return Set(
                    tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
                        .map { $0.trimmingCharacters(in: .newlines) })
            }
            // A thread names itself as it starts: wait for the last to start.
            let deadline = ContinuousClock.now + .seconds(5)
            var seen = names()
            while !seen.isSuperset(of: ["bd-deadlines", "bd-heartbeats", "bd-streams-0"]), ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.01)
                seen = names()
            }
            #expect(seen.contains("bd-deadlines"))
            #expect(seen.contains("bd-heartbeats"))
            #expect(seen.contains("bd-streams-0"))
        }
    }

    @Test func unknownPathIs404Problem() async throws {
        try await withServer(router: testRouter()) { server, _ in
            let response = try connect(server).request("GET", "/nope")
            #expect(response.status == 404)
            #expect(response.header("content-type") == "application/problem+json")
            let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            #expect(json?["type"] as? String == "/problems/not-found")
            #expect(json?["status"] as? Int == 404)
            #expect(json?["instance"] as? String == "/nope")
            #expect(json?["title"] as? String == "Not Found")
        }
    }

    @Test(arguments: ["TRACE", "QUERY", "PUT", "OPTIONS"])
    func undeclaredMethodIs405WithAllow(method: String) async throws {
        try await withServer(router: testRouter()) { server, _ in
            let response = try connect(server).request(method, "/hello")
            #expect(response.status == 405)
            #expect(response.header("allow") == "DELETE, GET, HEAD")
            #expect(response.header("content-type") == "application/problem+json")
            let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            #expect(json?["type"] as? String == "/problems/method-not-allowed")
        }
    }

    @Test func headGetsHeadersOnly() async throws {
        try await withServer(router: testRouter()) { server, _ in
            let client = try connect(server)
            let response = try client.request("HEAD", "/hello")
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(try client.request("GET", "/hello").text == "hello")
        }
    }

    @Test func declaredBodyOverLimitIs413() async throws {
        try await withServer({ $0.maxBodyBytes = 1024 }, router: testRouter()) { server, _ in
            let response = try connect(server).request("POST", "/echo", body: [UInt8](repeating: 65, count: 4096))
            #expect(response.status == 413)
            #expect(response.header("content-type") == "application/problem+json")
            let ok = try connect(server).request("POST", "/echo", body: [UInt8](repeating: 65, count: 1024))
            #expect(ok.status == 200)
            #expect(ok.body.count == 1024)
        }
    }

    @Test func aLargeBodyPathTakesMoreButHoldsFewAtOnce() async throws {
        let configure: (inout ServerConfiguration) -> Void = {
            $0.maxBodyBytes = 1024
            $0.largeBodies = LargeBodies(paths: ["/echo"], maxBytes: 8192, concurrent: 1)
        }
        try await withServer(configure, router: testRouter()) { server, _ in
            let large = try connect(server).request("POST", "/echo", body: [UInt8](repeating: 65, count: 8192))
            #expect(large.status == 200 && large.body.count == 8192)
            #expect(try connect(server).request("POST", "/echo", body: [UInt8](repeating: 65, count: 8193)).status == 413)
            // One slot: while a body is being sent (its head is in, the body is not), a second upload is 503 at once.
            // (First the refused one's slot must be back: its answer may reach us before its completion does.)
            #expect(waitUntil { server.largeBodySlots.total == 0 })
            let slow = try connect(server)
            try slow.sendRaw(Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\nabc".utf8))
            // Waits for the server to have read that head (a loaded machine may take longer than a fixed pause).
            #expect(waitUntil { server.largeBodySlots.total == 1 })
            let refused = try connect(server).request("POST", "/echo", body: [UInt8](repeating: 65, count: 10))
            #expect(refused.status == 503 && refused.header("retry-after") == "1")
            try slow.sendRaw([UInt8](repeating: 66, count: 3997))
            #expect(try slow.readResponse(method: "POST").status == 200)
            // The slot is given back once that request completes.
            #expect(waitUntil { server.largeBodySlots.total == 0 })
            #expect(try connect(server).request("POST", "/echo", body: [UInt8](repeating: 65, count: 10)).status == 200)
            // Other paths keep the usual limit.
            #expect(try connect(server).request("POST", "/hello", body: [UInt8](repeating: 65, count: 2048)).status == 413)
        }
    }

    /// An upload is judged from its head: a refused sender gets its answer before a slot is taken or
    /// a byte of the body is read; each sender holds at most `perPrincipal` slots; a body must arrive
    /// within the deadline, however steadily it trickles (issue "Hostile files", finding 3).
    @Test func anUploadIsJudgedFromItsHeadAndHeldPerSenderAndInTime() async throws {
        let configure: (inout ServerConfiguration) -> Void = {
            $0.maxBodyBytes = 1024
            $0.requestHeadTimeoutSeconds = 30
            $0.largeBodies = LargeBodies(
                paths: ["/echo"], maxBytes: 1 << 30, concurrent: 3, perPrincipal: 1, deadline: .seconds(1),
                admit: { _, header in
                    guard let who = header("X-Sender") else { return .refuse(HTTPError(401, kind: "unauthorized", title: "Unauthorized", detail: "Who?")) }
                    return .admit(principal: who)
                })
        }
        try await withServer(configure, router: testRouter()) { server, _ in
            // Refused from the head: 1 GiB declared, nothing sent, answered at once; no slot held.
            let stranger = try connect(server)
            try stranger.sendRaw(Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\nab".utf8))
            #expect(try stranger.readResponse(method: "POST").status == 401)
            #expect(server.largeBodySlots.total == 0)
            // One slot per sender: a's second upload waits for none, b's goes through.
            let a = try connect(server)
            try a.sendRaw(Array("POST /echo HTTP/1.1\r\nHost: x\r\nX-Sender: a\r\nContent-Length: 4000\r\n\r\nabc".utf8))
            #expect(waitUntil { server.largeBodySlots.total == 1 })
            let again = try connect(server).request("POST", "/echo", headers: [("X-Sender", "a")], body: [65])
            #expect(again.status == 503)
            #expect(try connect(server).request("POST", "/echo", headers: [("X-Sender", "b")], body: [66]).status == 200)
            // A sender whose upload was answered may send the next at once: its slot freed with the answer.
            for round in 0..<50 {
                let next = try connect(server).request("POST", "/echo", headers: [("X-Sender", "c")], body: [67])
                #expect(next.status == 200, "upload \(round) right after the one before")
            }
            // a trickles well above any minimum rate's grace: cut at the 1 s deadline all the same.
            var ended = false
            for _ in 0..<20 {
                Thread.sleep(forTimeInterval: 0.2)
                do { try a.sendRaw([65]) } catch {
                    ended = true
                    break
                }
            }
            #expect(ended, "a body trickling for 4 s outlived its 1 s deadline")
            #expect(waitUntil { server.largeBodySlots.total == 0 })
        }
    }

    @Test func chunkedBodyOverLimitIs413() async throws {
        try await withServer({ $0.maxBodyBytes = 1024 }, router: testRouter()) { server, _ in
            let client = try connect(server)
            var raw = Array("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
            for _ in 0..<4 {
                raw += Array("400\r\n".utf8) + [UInt8](repeating: 66, count: 1024) + Array("\r\n".utf8)
            }
            raw += Array("0\r\n\r\n".utf8)
            try client.sendRaw(raw)
            let response = try client.readResponse(method: "POST")
            #expect(response.status == 413)
        }
    }

    @Test func handlerErrorsBecomeProblems() async throws {
        try await withServer(router: testRouter()) { server, _ in
            let client = try connect(server)
            let conflict = try client.request("GET", "/fail")
            #expect(conflict.status == 409)
            let json = try JSONSerialization.jsonObject(with: Data(conflict.body)) as? [String: Any]
            #expect(json?["type"] as? String == "/problems/conflict-test")
            #expect(json?["detail"] as? String == "on purpose")
            let crash = try client.request("GET", "/crash")
            #expect(crash.status == 500)
            #expect(crash.header("content-type") == "application/problem+json")
        }
    }

    @Test func malformedRequestsDoNotCrashTheServer() async throws {
        try await withServer(router: testRouter()) { server, _ in
            let garbage: [[UInt8]] = [
                Array("GARBAGE\r\n\r\n".utf8),
                Array("GET\r\n\r\n".utf8),
                Array("GET /hello HTTP/9.9\r\n\r\n".utf8),
                Array("GET /hello HTTP/1.1\r\nNo-Colon-Header\r\n\r\n".utf8),
                Array("GET /hello HTTP/1.1\r\nContent-Length: -5\r\n\r\n".utf8),
                Array("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n".utf8),
                [0, 1, 2, 255, 254, 13, 10, 13, 10],
            ]
            for bytes in garbage {
                let client = try connect(server, timeout: .seconds(2))
                try? client.sendRaw(bytes)
                if let response = try? client.readResponse() {
                    #expect(response.status >= 400, "answered \(response.status) to \(bytes.prefix(20))")
                }
                client.close()
            }
            // Over-long request line and headers are answered by libmicrohttpd itself (414 / 431).
            let longURL = try connect(server).request("GET", "/hello?" + String(repeating: "a", count: 64 * 1024))
            #expect(longURL.status == 414)
            let longHeader = try connect(server).request("GET", "/hello", headers: [("X-Big", String(repeating: "b", count: 64 * 1024))])
            #expect(longHeader.status == 431)
            #expect(try connect(server).request("GET", "/hello").status == 200)
        }
    }

    @Test func stalledClientIsCutOffWithoutDelayingOthers() async throws {
        try await withServer({ $0.idleTimeoutSeconds = 1 }, router: testRouter()) { server, _ in
            let staller = try connect(server, timeout: .seconds(4))
            try staller.sendRaw(Array("GET /hello HTTP/1.1\r\nHost: x\r\n".utf8))
            let started = ContinuousClock.now
            #expect(try connect(server).request("GET", "/hello").status == 200)
            #expect(ContinuousClock.now - started < .milliseconds(500))
            // The stalled connection is closed by the idle timeout (no answer, then EOF).
            #expect(throws: HTTPClientConnection.ClientError.self) { _ = try staller.readResponse() }
            #expect(ContinuousClock.now - started < .seconds(3))
        }
    }

    @Test func manyConcurrentDeferredRequests() async throws {
        try await withServer(router: testRouter()) { server, _ in
            let total = Atomic<Int>(0)
            let group = DispatchGroup()
            for _ in 0..<32 {
                group.enter()
                Thread {
                    defer { group.leave() }
                    guard let client = try? connect(server) else { return }
                    for _ in 0..<3 where (try? client.request("GET", "/slow"))?.status == 200 {
                        total.add(1, ordering: .relaxed)
                    }
                }.start()
            }
            group.wait()
            #expect(total.load(ordering: .relaxed) == 96)
        }
    }
}
