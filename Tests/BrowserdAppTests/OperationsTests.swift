import BrowserdApp
import Foundation
import HTTPServer
import ProcessMemory
import TestSupport
import Testing

@Suite(.offThePool) struct OperationsTests {
    @Test func healthzIsOK() async throws {
        try await withApplication { app in
            let response = try app.get("/healthz")
            #expect(response.status == 200)
            #expect(jsonObject(response.body)?["status"] as? String == "ok")
        }
    }

    @Test func readyzFollowsReadiness() async throws {
        try await withApplication { app in
            #expect(try app.get("/readyz").status == 200)
            app.readiness.block("database", reason: "disk full")
            let blocked = try app.get("/readyz")
            #expect(blocked.status == 503)
            #expect(blocked.header("retry-after") == "1")
            #expect(jsonObject(blocked.body)?["database"] as? String == "disk full")
            app.readiness.clear("database")
            #expect(try app.get("/readyz").status == 200)
        }
    }

    @Test func metricsCountRequestsByRouteTemplate() async throws {
        try await withApplication { app in
            let client = try app.client()
            for _ in 0..<3 { _ = try client.request("GET", "/healthz") }
            _ = try client.request("GET", "/no/such/path")
            let text = try client.request("GET", "/metrics").text
            #expect(text.contains(#"browserd_http_requests_total{method="GET",route="/healthz",status="200"} 3"#))
            #expect(text.contains(#"browserd_http_requests_total{method="GET",route="unmatched",status="404"} 1"#))
            #expect(text.contains("browserd_http_request_duration_seconds_bucket"))
            #expect(text.contains("browserd_http_connections_open"))
            #expect(text.contains("browserd_http_streams_open"))
            let names = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: "{").first?.split(separator: " ").first }
            #expect(!names.isEmpty)
            #expect(names.allSatisfy { $0.hasPrefix("browserd_") })
        }
    }

    /// Issue 54: windows' answers are kept within `--window-answer-cache-bytes`, the least recently read
    /// leaving first, and `/metrics` counts them; an answer that left is built again, the same.
    @Test func windowAnswersAreBoundedAndCounted() async throws {
        try await withApplication({ $0.windowAnswerCacheBytes = 3_000 }) { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            var windows: [String] = []
            for w in 0..<4 {
                let window = try api.window(profile)
                for t in 0..<3 { _ = try api.tab(window, "https://w\(w).example/\(t)") }
                windows.append(window)
            }
            var first: [String: [UInt8]] = [:]
            for window in windows { first[window] = try api.get("/v1/browsers/\(window)").body }
            for window in windows { #expect(try api.get("/v1/browsers/\(window)").body == first[window], "built again, the same") }
            let text = try app.client().request("GET", "/metrics").text
            func value(_ name: String) -> Double {
                text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? -1
            }
            let answer = Double(first[windows[0]]?.count ?? 0)
            #expect(answer > 700, "each answer is most of the budget: \(answer)")
            #expect(value("browserd_window_answers_limit_bytes") == 3_000)
            #expect(value("browserd_window_answers_bytes") > 0 && value("browserd_window_answers_bytes") <= 3_000)
            #expect(value("browserd_window_answers_entries") >= 1 && value("browserd_window_answers_entries") < 4)
            #expect(value("browserd_window_answers_evictions_total") >= 1)
            #expect(value("browserd_window_answers_misses_total") >= 8, "every read after the first went round the budget")
        }
    }

    /// A window read once leaves no answer behind; read again (same version) its answer is kept, and
    /// the next read is a hit (``AnswerAdmission``).
    @Test func aWindowReadOnceLeavesNoAnswerBehind() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            _ = try api.tab(window, "https://once.example/")
            func value(_ name: String) throws -> Double {
                let text = try app.client().request("GET", "/metrics").text
                return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? -1
            }
            let first = try api.get("/v1/browsers/\(window)").body
            #expect(try value("browserd_window_answers_entries") == 0 && value("browserd_window_answers_bytes") == 0, "read once: nothing kept")
            #expect(try api.get("/v1/browsers/\(window)").body == first)
            #expect(try value("browserd_window_answers_entries") == 1, "read twice: kept")
            let hits = try value("browserd_window_answers_hits_total")
            #expect(try api.get("/v1/browsers/\(window)").body == first)
            #expect(try value("browserd_window_answers_hits_total") == hits + 1)
        }
    }

    @Test func servesItsContract() async throws {
        try await withApplication { app in
            let response = try app.get("/openapi.yaml")
            #expect(response.status == 200)
            #expect(response.header("content-type") == "application/yaml")
            let file = try String(contentsOf: repositoryRoot.appendingPathComponent("openapi.yaml"), encoding: .utf8)
            #expect(response.text == file, "the served contract is the top-level openapi.yaml, byte for byte")
        }
    }

    @Test func indexIsJSONWithLimits() async throws {
        try await withApplication({ $0.server.maxBodyBytes = 4096 }) { app in
            let response = try app.get("/v1")
            #expect(response.status == 200)
            let limits = jsonObject(response.body)?["limits"] as? [String: Any]
            #expect(limits?["maxBodyBytes"] as? Int == 4096)
        }
    }

    @Test func unwritableDataDirectoryStopsStartUp() async throws {
        var configuration = BrowserdConfiguration()
        configuration.server.port = 0
        configuration.dataDirectory = "/proc/browserd-cannot-be-here"
        let app = Application(configuration: configuration, logger: .init(label: "t"))
        await #expect(throws: (any Error).self) { try await app.start() }
    }

    /// The allocator's process-wide settings are one value: nothing is set unless asked (so test
    /// processes, where many applications live, never toggle them); the server's policy sets them.
    @Test func theMemoryPolicyIsUntouchedUnlessTheServerAsks() {
        #expect(BrowserdConfiguration().memoryPolicy == .untouched)
        let untouched = MemoryPolicy.untouched
        #expect(untouched.trimThreshold == nil)
        #expect(!untouched.returnsFreedMemoryDuringEvictions && !untouched.trimsAfterLoads)
        let server = MemoryPolicy.followsWorkingSet
        #expect(server.trimThreshold == Int32(512 * 1024))
        #expect(server.returnsFreedMemoryDuringEvictions && server.trimsAfterLoads)
    }

    /// A load's trim runs after the load, on a thread of its own, once for the loads of a moment; a
    /// policy that does not trim after loads never does.
    @Test func loadsTrimOnceAfterwards() async throws {
        let before = MemoryPolicy.trimsDone
        MemoryPolicy.untouched.afterLoad()
        for _ in 0..<3 { MemoryPolicy.followsWorkingSet.afterLoad() }
        #expect(MemoryPolicy.trimsDone == before, "no trim before the answers")
        let deadline = ContinuousClock.now + .seconds(10)
        while MemoryPolicy.trimsDone == before, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        // The later calls' trims would have come by now too, had they not been folded into one.
        try await Task.sleep(for: .milliseconds(400))
        #expect(MemoryPolicy.trimsDone - before == 1)
    }

    @Test func configurationRejectsOutOfRangeValues() {
        var configuration = BrowserdConfiguration()
        configuration.server.port = 70_000
        #expect(throws: BrowserdConfiguration.Invalid.self) { try configuration.validate() }
        configuration = BrowserdConfiguration()
        configuration.server.maxBodyBytes = 10
        #expect(throws: BrowserdConfiguration.Invalid.self) { try configuration.validate() }
        #expect(throws: Never.self) { try BrowserdConfiguration().validate() }
    }

    /// Issue "Storage never lies": with `--connection-limit 1000` one address held all 1,000
    /// connections (the per-address default was 1,024). Unless given, it is a quarter of the limit;
    /// one at or above the limit is refused at start, saying why.
    @Test func thePerAddressLimitStaysBelowTheServersOwn() throws {
        #expect(ServerConfiguration.defaultPerIPConnectionLimit(connectionLimit: 1_000) == 250)
        #expect(ServerConfiguration.defaultPerIPConnectionLimit(connectionLimit: 16_000) == 1_024)
        #expect(ServerConfiguration.defaultPerIPConnectionLimit(connectionLimit: 16) == 4)
        var configuration = BrowserdConfiguration()
        configuration.server.connectionLimit = 1_000
        configuration.server.perIPConnectionLimit = 1_024
        #expect {
            try configuration.validate()
        } throws: { error in
            "\(error)".contains("--per-ip-connection-limit must be below --connection-limit (1000)")
        }
        configuration.server.perIPConnectionLimit = 1_000
        #expect(throws: BrowserdConfiguration.Invalid.self) { try configuration.validate() }
        configuration.server.perIPConnectionLimit = 999
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.server.perIPConnectionLimit = 0
        #expect(throws: Never.self, "0: no per-address limit (behind a reverse proxy)") { try configuration.validate() }
    }

    @Test func corsOriginsAreChecked() {
        var configuration = BrowserdConfiguration()
        configuration.corsOrigins = ["http://127.0.0.1:18090", "https://ui.example"]
        #expect(throws: Never.self) { try configuration.validate() }
        #expect(configuration.corsPolicy?.allows("https://ui.example") == true)
        configuration.corsOrigins = ["https://ui.example/app"]
        #expect(throws: BrowserdConfiguration.Invalid.self) { try configuration.validate() }
        configuration.corsOrigins = ["*"]
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.adminToken = "admin-token-0123456789"
        #expect(throws: BrowserdConfiguration.Invalid.self, "'*' only while auth is off") { try configuration.validate() }
        #expect(BrowserdConfiguration().corsPolicy == nil)
    }

    /// A page on an allowed origin: preflight of a POST with the API's headers, then the POST, whose
    /// ETag and Location it may read; an event stream's answer carries the origin too.
    @Test func browserPagesOnAllowedOriginsCanCall() async throws {
        try await withApplication({ $0.corsOrigins = ["http://127.0.0.1:18090"] }) { app in
            let client = try app.client()
            let origin = ("Origin", "http://127.0.0.1:18090")
            let profile =
                jsonObject(
                    try client.request(
                        "POST", "/v1/profiles", headers: [("Content-Type", "application/json")],
                        body: Array(#"{"name":"cors"}"#.utf8)
                    ).body)?["id"] as? String ?? ""
            let window =
                jsonObject(
                    try client.request(
                        "POST", "/v1/browsers", headers: [("Content-Type", "application/json")],
                        body: Array(#"{"profileId":"\#(profile)"}"#.utf8)
                    ).body)?["id"] as? String ?? ""
            let preflight = try client.request(
                "OPTIONS", "/v1/browsers/\(window)/tabs",
                headers: [
                    origin, ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type,idempotency-key,if-match"),
                ])
            #expect(preflight.status == 204)
            #expect(preflight.header("access-control-allow-methods") == "GET, HEAD, POST")
            #expect(preflight.header("access-control-allow-headers") == "Authorization, Content-Type, Idempotency-Key, If-Match, Last-Event-ID")
            let created = try client.request(
                "POST", "/v1/browsers/\(window)/tabs",
                headers: [
                    origin, ("Content-Type", "application/json"), ("Idempotency-Key", "cors-1"), ("If-Match", "\"v1\""),
                ], body: Array(#"{"url":"https://a.example/"}"#.utf8))
            #expect(created.status == 201)
            #expect(created.header("access-control-allow-origin") == "http://127.0.0.1:18090")
            #expect(created.header("access-control-expose-headers") == "ETag, Location, Idempotent-Replayed, Retry-After")
            #expect(created.header("etag") != nil)
            let stream = try app.client()
            try stream.send("GET", "/v1/browsers/\(window)/events", headers: [origin])
            let head = try stream.readResponse(headOnly: true)
            #expect(head.status == 200 && head.header("access-control-allow-origin") == "http://127.0.0.1:18090")
            stream.close()
            let other = try client.request("GET", "/v1/browsers/\(window)", headers: [("Origin", "https://evil.example")])
            #expect(other.status == 200 && other.header("access-control-allow-origin") == nil)
        }
    }

    @Test func theInspectorIsServedFromTheBinary() async throws {
        try await withApplication { app in
            let client = try app.client()
            let root = try client.request("GET", "/")
            #expect(root.status == 302 && root.header("location") == "/inspector/")
            let bare = try client.request("GET", "/inspector?browser=w0123456789abcdef&x=1")
            #expect(bare.status == 302 && bare.header("location") == "/inspector/?browser=w0123456789abcdef")
            let page = try client.request("GET", "/inspector/")
            #expect(page.status == 200 && page.header("content-type") == "text/html; charset=utf-8")
            #expect(page.text.contains("/inspector/inspector.js"))
            let csp = page.header("content-security-policy") ?? ""
            #expect(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'") && !csp.contains("unsafe-inline"))
            let etag = try #require(page.header("etag"))
            let again = try client.request("GET", "/inspector/", headers: [("If-None-Match", etag)])
            #expect(again.status == 304 && again.body.isEmpty)
            for (asset, type) in [("inspector.js", "text/javascript"), ("inspector.css", "text/css"), ("favicon.svg", "image/svg+xml")] {
                let answer = try client.request("GET", "/inspector/\(asset)")
                #expect(answer.status == 200 && answer.header("content-type")?.hasPrefix(type) == true, "\(asset)")
                #expect(answer.header("etag") != nil && answer.header("etag") != etag)
            }
            #expect(try client.request("GET", "/inspector/secrets.txt").status == 404)
        }
    }

    /// The inspector's policy lets through every image its script shows, and nothing more: snapshots
    /// from `blob:` URLs, favicons on this server, and `data:` favicons (blocked before, though the
    /// script showed them); everything else stays `'none'`.
    @Test func theInspectorsPolicyMatchesWhatItsScriptShows() async throws {
        try await withApplication { app in
            let client = try app.client()
            let page = try client.request("GET", "/inspector/")
            let directives = Dictionary(
                (page.header("content-security-policy") ?? "").split(separator: ";").map {
                    let words = $0.split(separator: " ").map(String.init)
                    return (words.first ?? "", Set(words.dropFirst()))
                }, uniquingKeysWith: { $1 })
            let script = try client.request("GET", "/inspector/inspector.js").text
            #expect(script.contains("data:image/") && script.contains("createObjectURL"))
            #expect(directives["img-src"] == ["'self'", "blob:", "data:"])
            #expect(directives["default-src"] == ["'none'"] && directives["connect-src"] == ["'self'"])
            #expect(directives["script-src"] == ["'self'"] && directives["style-src"] == ["'self'"])
        }
    }
}
