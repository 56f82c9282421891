import BrowserdApp
import Foundation
import Testing

@Suite struct OperationsTests {
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

    @Test func configurationRejectsOutOfRangeValues() {
        var configuration = BrowserdConfiguration()
        configuration.server.port = 70_000
        #expect(throws: BrowserdConfiguration.Invalid.self) { try configuration.validate() }
        configuration = BrowserdConfiguration()
        configuration.server.maxBodyBytes = 10
        #expect(throws: BrowserdConfiguration.Invalid.self) { try configuration.validate() }
        #expect(throws: Never.self) { try BrowserdConfiguration().validate() }
    }
}
