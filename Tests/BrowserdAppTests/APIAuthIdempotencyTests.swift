import BrowserdApp
import Foundation
import TestSupport
import Testing

@Suite(.offThePool) struct APIAuthTests {
    static let admin = "admin-token-for-tests-0123456789"

    private func withAuth(_ body: @escaping @Sendable (Application) throws -> Void) async throws {
        try await withApplication({ $0.adminToken = APIAuthTests.admin }, body)
    }

    @Test func tokensAreRequiredAndChecked() async throws {
        try await withAuth { app in
            let api = try APIClient(app)
            let missing = try api.get("/v1/profiles")
            #expect(missing.status == 401 && missing.header("www-authenticate")?.hasPrefix("Bearer") == true)
            #expect(try api.send("GET", "/v1/profiles", headers: [("Authorization", "Bearer nope")]).status == 401)
            #expect(try api.send("GET", "/v1/profiles", headers: [("Authorization", "Bearer \(Self.admin)")]).status == 200)
            #expect(try api.get("/healthz").status == 200)
            #expect(try api.get("/metrics").status == 200)
            #expect(try api.get("/openapi.yaml").status == 200)
        }
    }

    @Test func profileTokenReachesOnlyItsProfile() async throws {
        try await withAuth { app in
            let api = try APIClient(app)
            let admin = [("Authorization", "Bearer \(Self.admin)")]
            let mine = try api.send("POST", "/v1/profiles", ["name": "Mine"], headers: admin).id
            let theirs = try api.send("POST", "/v1/profiles", ["name": "Theirs"], headers: admin).id
            let theirWindow = try api.send("POST", "/v1/browsers", ["profileId": theirs], headers: admin).id
            let theirTab = try api.send("POST", "/v1/browsers/\(theirWindow)/tabs", ["url": "https://secret.example"], headers: admin).id
            let issued = try api.send("POST", "/v1/profiles/\(mine)/tokens", headers: admin)
            #expect(issued.status == 201)
            let token = try #require(issued["token"] as? String)
            let me = [("Authorization", "Bearer \(token)")]

            let myWindow = try api.send("POST", "/v1/browsers", ["profileId": mine], headers: me)
            #expect(myWindow.status == 201)
            #expect((try api.send("GET", "/v1/profiles", headers: me)["items"] as? [[String: Any]])?.map { $0["id"] as? String } == [mine])
            #expect((try api.send("GET", "/v1/browsers", headers: me)["items"] as? [Any])?.count == 1)
            // Another profile's things look exactly like things that never existed.
            let hidden = try api.send("GET", "/v1/browsers/\(theirWindow)", headers: me)
            let never = try api.send("GET", "/v1/browsers/wffffffffffffffff", headers: me)
            #expect(hidden.status == 404 && hidden.problemType == never.problemType)
            #expect(try api.send("GET", "/v1/tabs/\(theirTab)", headers: me).problemType == "/problems/tab-not-found")
            #expect(try api.send("DELETE", "/v1/tabs/\(theirTab)", headers: me).status == 404)
            #expect(try api.send("GET", "/v1/profiles/\(theirs)", headers: me).status == 404)
            #expect(try api.send("GET", "/v1/browsers?profileId=\(theirs)", headers: me).status == 404)
            #expect(try api.send("POST", "/v1/browsers", ["profileId": theirs], headers: me).status == 422)
            #expect(try api.send("POST", "/v1/browsers/\(theirWindow)/commands/openNewTab", ["args": [:]], headers: me).status == 404)
            let myTab = try api.send("POST", "/v1/browsers/\(myWindow.id)/tabs", ["url": "https://mine.example"], headers: me).id
            #expect(try api.send("POST", "/v1/tabs/\(myTab)/move", ["index": 0, "browserId": theirWindow], headers: me).status == 422)
            #expect(try api.send("GET", "/v1/tabs/\(theirTab)", headers: admin).status == 200)
            // Admin-only routes.
            #expect(try api.send("POST", "/v1/profiles", ["name": "x"], headers: me).status == 403)
            #expect(try api.send("POST", "/v1/profiles/\(mine)/tokens", headers: me).status == 403)
            #expect(try api.send("DELETE", "/v1/profiles/\(mine)", headers: me).status == 403)
            // Its incognito profile is reachable.
            let incognito = try api.send("POST", "/v1/profiles/\(mine)/incognito", headers: me)
            #expect(incognito.status == 201)
            #expect(try api.send("POST", "/v1/browsers", ["profileId": incognito.id], headers: me).status == 201)
            // Revoked tokens stop working.
            #expect(try api.send("DELETE", "/v1/profiles/\(mine)/tokens/\(issued.id)", headers: admin).status == 204)
            #expect(try api.send("GET", "/v1/profiles", headers: me).status == 401)
        }
    }

    @Test func configurationRefusesAnOpenNonLoopbackServer() {
        var configuration = BrowserdConfiguration()
        configuration.server.host = "0.0.0.0"
        #expect(throws: BrowserdConfiguration.Invalid.self) { try configuration.validate() }
        configuration.adminToken = Self.admin
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.adminToken = "short"
        #expect(throws: BrowserdConfiguration.Invalid.self) { try configuration.validate() }
    }
}

@Suite(.offThePool) struct APIIdempotencyTests {
    @Test func retriesGetTheStoredAnswerAndNeverASecondTab() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let key = [("Idempotency-Key", "\"open-1\"")]
            let first = try api.post("/v1/browsers/\(window)/tabs", ["url": "https://a.example"], headers: key)
            let retry = try api.post("/v1/browsers/\(window)/tabs", ["url": "https://a.example"], headers: [("Idempotency-Key", "open-1")])
            #expect(first.status == 201 && retry.status == 201 && retry.id == first.id)
            #expect(retry.header("idempotent-replayed") == "true")
            #expect(try api.get("/v1/browsers/\(window)")["tabCount"] as? Int == 1)
            let other = try api.post("/v1/browsers/\(window)/tabs", ["url": "https://b.example"], headers: key)
            #expect(other.status == 422 && other.problemType == "/problems/idempotency-key-reused")
            #expect(
                try api.post(
                    "/v1/browsers/\(window)/tabs", ["url": "https://a.example"],
                    headers: [("Idempotency-Key", String(repeating: "k", count: 256))]
                ).status == 400)
            // Errors are stored too: the same bad request gets the same answer.
            let bad = [("Idempotency-Key", "bad-1")]
            #expect(try api.post("/v1/browsers/\(window)/tabs", ["url": "nope"], headers: bad).status == 422)
            #expect(try api.post("/v1/browsers/\(window)/tabs", ["url": "nope"], headers: bad).header("idempotent-replayed") == "true")
        }
    }

    /// Every operation that declares Idempotency-Key honours it, PUT included; the contract's pattern
    /// (1 to 255 visible ASCII characters) is exactly what the server accepts.
    @Test func putHonoursTheKeyAndTheHeaderFollowsTheContractPattern() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let path = "/v1/browsers/\(window)/broadcasts/toolbar.topHeight"
            let key = [("Idempotency-Key", "put-1")]
            #expect(try api.send("PUT", path, ["value": 40], headers: key).status == 200)
            let replay = try api.send("PUT", path, ["value": 40], headers: key)
            #expect(replay.status == 200 && replay.header("idempotent-replayed") == "true")
            #expect(try api.send("PUT", path, ["value": 41], headers: key).problemType == "/problems/idempotency-key-reused")
            #expect(try api.send("PUT", path, ["value": 42], headers: [("Idempotency-Key", "bad key")]).status == 400)
            // Visible ASCII, quotes and backslashes included, is a valid key; a control character or 256 characters are not.
            for good in ["a", "\"", "a\"b", "\\", "~!", String(repeating: "k", count: 255)] {
                #expect(try api.send("PUT", path, ["value": 1], headers: [("Idempotency-Key", good)]).status == 200, "\(good)")
            }
            for bad in [String(repeating: "k", count: 256), "caf\u{e9}"] {
                #expect(try api.send("PUT", path, ["value": 1], headers: [("Idempotency-Key", bad)]).status == 400, "\(bad)")
            }
        }
    }
}
