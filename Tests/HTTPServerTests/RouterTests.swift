import TestSupport
import Testing

@testable import HTTPServer

@Suite(.offThePool) struct RouterTests {
    private func router() -> Router {
        var router = Router()
        router.get("/v1/tabs/{tabId}") { _ in .text("tab") }
        router.add(.delete, "/v1/tabs/{tabId}", .immediate { _ in .noContent })
        router.add(.post, "/v1/tabs/{tabId}/activate", .immediate { _ in .noContent })
        router.get("/v1/tabs/special") { _ in .text("special") }
        router.get("/") { _ in .text("root") }
        return router
    }

    /// A path's segments: what `split` on "/" keeps (empty ones too), less the leading empty one.
    @Test(arguments: ["", "/", "//", "/a", "/a/", "/a//b", "a/b", "/v1/browsers/w1/tabs", "/é/ü%2F/x", "/a/b/c/d/e/f/g/h/i/j"])
    func segmentsAreTheSplitPath(path: String) {
        var expected = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if expected.first == "" { expected.removeFirst() }
        #expect(Router.segments(of: path) == expected)
    }

    @Test func literalBeatsParameter() {
        guard case .matched(_, let parameters, let template) = router().resolve(method: .get, path: "/v1/tabs/special") else {
            Issue.record("no match")
            return
        }
        #expect(template == "/v1/tabs/special")
        #expect(parameters.isEmpty)
    }

    @Test func parameterIsCaptured() {
        guard case .matched(_, let parameters, let template) = router().resolve(method: .post, path: "/v1/tabs/t-42/activate") else {
            Issue.record("no match")
            return
        }
        #expect(template == "/v1/tabs/{tabId}/activate")
        #expect(parameters == ["tabId": "t-42"])
    }

    @Test func unknownPathIsNotFound() {
        for path in ["/v1/tabs", "/v1/tabs/a/b", "/v2/tabs/a", "/v1/tabs/a/", "/v1/tabs//activate", ""] {
            guard case .notFound = router().resolve(method: .get, path: path) else {
                Issue.record("\(path) should be not found")
                continue
            }
        }
    }

    @Test func knownPathWithOtherMethodListsAllowed() {
        guard case .methodNotAllowed(let allow, let template) = router().resolve(method: HTTPMethod("TRACE"), path: "/v1/tabs/x") else {
            Issue.record("expected 405")
            return
        }
        #expect(template == "/v1/tabs/{tabId}")
        #expect(allow.map(\.rawValue) == ["DELETE", "GET", "HEAD"])
    }

    @Test func headIsAnsweredByGet() {
        guard case .matched(_, _, let template) = router().resolve(method: .head, path: "/") else {
            Issue.record("HEAD should match GET")
            return
        }
        #expect(template == "/")
    }

    @Test func copiesDoNotShareLaterRoutes() {
        let first = router()
        var second = first
        second.get("/extra") { _ in .text("x") }
        guard case .notFound = first.resolve(method: .get, path: "/extra") else {
            Issue.record("route leaked into the copy's original")
            return
        }
        guard case .matched = second.resolve(method: .get, path: "/extra") else {
            Issue.record("route missing")
            return
        }
    }
}

@Suite(.offThePool) struct ProblemTests {
    @Test func encodesRFC9457MembersAndEscapes() {
        let problem = Problem(
            type: "/problems/x", title: "T", status: 422, detail: "a \"quoted\"\nline", instance: "/p",
            extensions: ["field": "url"])
        #expect(
            String(decoding: problem.jsonBytes, as: UTF8.self)
                == #"{"type":"/problems/x","title":"T","status":422,"detail":"a \"quoted\"\nline","instance":"/p","field":"url"}"#)
    }

    /// The `Host` rule of `--allowed-hosts`, over a value's bytes: names without case, the port cut, an
    /// IPv6 literal whole, any IPv4 loopback address as 127.0.0.1 (or as itself when listed).
    @Test func hostsAreMatchedAgainstTheAllowedList() {
        let allowed = ["127.0.0.1", "localhost", "[::1]", "Browserd.Example"]
        for host in ["127.0.0.1", "127.0.0.1:8080", "127.9.8.7:1", "LOCALHOST", "localhost:80", "[::1]", "[::1]:8080", "browserd.example:443"] {
            #expect(HTTPServer.host(host, isIn: allowed), "\(host)")
        }
        for host in ["", "example.org", "127.0.0", "127.0.0.1.5", "127.a.0.1", "128.0.0.1", "[::2]:80", "[::1", "localhost.", "localhos"] {
            #expect(!HTTPServer.host(host, isIn: allowed), "\(host)")
        }
        #expect(HTTPServer.host("127.0.0.5:9", isIn: ["127.0.0.5"]))
        #expect(!HTTPServer.host("127.0.0.5", isIn: ["localhost"]))
    }
}
