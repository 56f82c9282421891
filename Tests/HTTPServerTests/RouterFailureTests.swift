import HTTPServer
import MiniHTTPClient
import TestSupport
import Testing

/// Routing failures under a prefix answered in that protocol's words (the WebDriver facade's
/// `unknown command` / `unknown method`); elsewhere, the server's own problems.
@Suite(.offThePool) struct RouterFailureTests {
    private func router() -> Router {
        testRouter { router in
            router.get("/wd/status") { _ in .text("ready") }
            router.onFailure(under: "/wd") { request, allow in
                .text(
                    allow == nil ? "unknown command \(request.path)" : "unknown method, allow \(allow!.map(\.rawValue).joined(separator: ","))",
                    status: allow == nil ? 404 : 405)
            }
        }
    }

    @Test func failuresUnderThePrefixUseItsResponder() async throws {
        try await withServer(router: router()) { server, _ in
            let client = try connect(server)
            #expect(try client.request("GET", "/wd/status").text == "ready")
            let unknown = try client.request("GET", "/wd/nope/deeper")
            #expect(unknown.status == 404 && unknown.text == "unknown command /wd/nope/deeper")
            let bare = try client.request("GET", "/wd")
            #expect(bare.status == 404 && bare.text == "unknown command /wd")
            let method = try client.request("DELETE", "/wd/status")
            #expect(method.status == 405 && method.text == "unknown method, allow GET,HEAD")
            // Outside the prefix (and a path that only starts with its letters): the server's problems.
            let other = try client.request("GET", "/wdx")
            #expect(other.status == 404 && other.header("content-type") == "application/problem+json")
            #expect(try client.request("PUT", "/hello").header("content-type") == "application/problem+json")
        }
    }
}
