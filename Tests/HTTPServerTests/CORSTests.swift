import HTTPServer
import MiniHTTPClient
import TestSupport
import Testing

/// The CORS protocol against a live server: preflights, the headers of actual answers (prebuilt,
/// deferred and failing ones too), and nothing at all for origins not on the list.
@Suite(.offThePool) struct CORSTests {
    private static let policy = CORSPolicy(
        origins: ["http://127.0.0.1:18090", "https://ui.example"],
        allowedHeaders: ["Authorization", "Content-Type", "If-Match"],
        exposedHeaders: ["ETag", "Location"], maxAgeSeconds: 600)

    private func router() -> Router {
        testRouter { router in
            let prebuilt = SharedResponse(status: 200, headers: ["Content-Type": "text/plain", "ETag": "\"7\""], body: Array("shared".utf8))
            router.get("/shared") { _ in .shared(prebuilt) }
        }
    }

    @Test func preflightFromAnAllowedOriginNamesThePathsMethods() async throws {
        try await withServer({ $0.cors = Self.policy }, router: router()) { server, _ in
            let client = try connect(server)
            let response = try client.request(
                "OPTIONS", "/hello",
                headers: [
                    ("Origin", "http://127.0.0.1:18090"), ("Access-Control-Request-Method", "DELETE"),
                    ("Access-Control-Request-Headers", "authorization"),
                ])
            #expect(response.status == 204)
            #expect(response.header("access-control-allow-origin") == "http://127.0.0.1:18090")
            #expect(response.header("access-control-allow-methods") == "DELETE, GET, HEAD")
            #expect(response.header("access-control-allow-headers") == "Authorization, Content-Type, If-Match")
            #expect(response.header("access-control-max-age") == "600")
            #expect(response.header("vary") == "Origin")
            // A path nothing serves is still 404.
            let unknown = try client.request(
                "OPTIONS", "/nope",
                headers: [
                    ("Origin", "http://127.0.0.1:18090"), ("Access-Control-Request-Method", "GET"),
                ])
            #expect(unknown.status == 404)
        }
    }

    @Test func actualAnswersToAnAllowedOriginCarryTheHeaders() async throws {
        try await withServer({ $0.cors = Self.policy }, router: router()) { server, _ in
            let client = try connect(server)
            for path in ["/hello", "/slow", "/shared", "/fail", "/nope"] {
                let response = try client.request("GET", path, headers: [("Origin", "https://ui.example")])
                #expect(response.header("access-control-allow-origin") == "https://ui.example", "\(path)")
                #expect(response.header("access-control-expose-headers") == "ETag, Location", "\(path)")
                #expect(response.header("vary") == "Origin", "\(path)")
            }
            let shared = try client.request("GET", "/shared", headers: [("Origin", "https://ui.example")])
            #expect(shared.text == "shared" && shared.header("etag") == "\"7\"")
        }
    }

    @Test func otherOriginsAndNoPolicyGetNoCORSHeaders() async throws {
        try await withServer({ $0.cors = Self.policy }, router: router()) { server, _ in
            let client = try connect(server)
            let other = try client.request("GET", "/hello", headers: [("Origin", "https://evil.example")])
            #expect(other.status == 200 && other.header("access-control-allow-origin") == nil)
            let preflight = try client.request(
                "OPTIONS", "/hello",
                headers: [
                    ("Origin", "https://evil.example"), ("Access-Control-Request-Method", "DELETE"),
                ])
            #expect(preflight.status == 405 && preflight.header("access-control-allow-origin") == nil)
            #expect(try client.request("GET", "/hello").header("access-control-allow-origin") == nil)
        }
        try await withServer(router: router()) { server, _ in
            let response = try connect(server).request("GET", "/hello", headers: [("Origin", "https://ui.example")])
            #expect(response.status == 200 && response.header("access-control-allow-origin") == nil)
        }
    }

    @Test(arguments: [
        ("*", true), ("http://127.0.0.1:18090", true), ("https://ui.example", true), ("http://[::1]:8080", true),
        ("ui.example", false), ("https://ui.example/", false), ("https://ui.example/app", false), ("HTTPS://UI.EXAMPLE", false),
        ("https://user@ui.example", false), ("http://ui.example:0", false), ("http://ui.example:99999", false), ("ftp://ui.example", false),
    ])
    func originsOnTheListAreChecked(origin: String, valid: Bool) {
        #expect((CORSPolicy.problem(with: origin) == nil) == valid, "\(origin)")
    }
}
