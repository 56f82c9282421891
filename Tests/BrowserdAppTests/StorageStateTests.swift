import BrowserdApp
import Foundation
import TestSupport
import Testing

/// A profile's web state (issue 52), through a live server: Playwright's storageState document
/// round-trips through `PUT`/`GET` unchanged and survives a restart; every bad member is a 422 naming
/// it (never quoting a value); Chromium's limits hold; the profile's byte budget counts it; only its
/// own token or the administrator reach it; watchers learn counts, never values; export and import
/// carry it; an off-the-record profile's never touches the disk; the database files are 0600.
@Suite(.offThePool) struct StorageStateTests {
    static let admin = "storage-state-admin-token-0123456789"

    /// A document as Playwright's `context.storage_state()` writes it.
    static func document(secret: String) -> [String: Any] {
        [
            "cookies": [
                [
                    "name": "session", "value": secret, "domain": "127.0.0.1", "path": "/", "expires": -1, "httpOnly": true,
                    "secure": false, "sameSite": "Lax",
                ],
                [
                    "name": "prefs", "value": "dark", "domain": ".example.com", "path": "/app", "expires": 1_830_000_000.25, "httpOnly": false,
                    "secure": true, "sameSite": "None",
                ],
                [
                    "name": "chip", "value": "1", "domain": "embed.example", "path": "/", "expires": 1_830_000_000, "httpOnly": false,
                    "secure": true, "sameSite": "None", "partitionKey": "https://top.example", "_crHasCrossSiteAncestor": true,
                ],
            ],
            "origins": [
                ["origin": "http://127.0.0.1:8123", "localStorage": [["name": "token", "value": "\(secret)-ls"], ["name": "n", "value": "ä☃"]]],
                ["origin": "https://example.com", "localStorage": []],
            ],
        ]
    }

    static func same(_ a: Any, _ b: Any) -> Bool {
        (try? JSONSerialization.data(withJSONObject: a, options: [.sortedKeys])) == (try? JSONSerialization.data(withJSONObject: b, options: [.sortedKeys]))
    }

    @Test func aPlaywrightDocumentRoundTripsAndSurvivesARestart() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-storage-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let secret = "sekrit-\(UUID().uuidString.lowercased())"
        let profile: String = try await withApplication(dataDirectory: data) { app in
            let document = Self.document(secret: secret)
            let api = try APIClient(app)
            let profile = try api.profile()
            let empty = try api.get("/v1/profiles/\(profile)/storage-state")
            #expect(empty.status == 200 && Self.same(empty.json, ["cookies": [], "origins": []]))
            let watch = try SSEClient(app, "/v1/events?profileId=\(profile)")
            #expect(try watch.next()?.name == "browsers.populate")
            // `curl -T` sends no Content-Type: taken as JSON.
            let body = Array(try JSONSerialization.data(withJSONObject: document))
            let put = try api.send("PUT", "/v1/profiles/\(profile)/storage-state", raw: body, contentType: "")
            #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
            #expect(put.json["cookies"] as? Int == 3 && put.json["origins"] as? Int == 2)
            let event = try #require(try watch.next())
            #expect(event.name == "profile.webState" && event.json["cookies"] as? Int == 3 && event.json["origins"] as? Int == 2)
            #expect(!event.data.contains(secret), "an event carries no value")
            let got = try api.get("/v1/profiles/\(profile)/storage-state")
            #expect(Self.same(got.json, document), "\(String(decoding: got.body, as: UTF8.self))")
            #expect(!String(decoding: try api.get("/metrics").body, as: UTF8.self).contains(secret))
            return profile
        }
        try await withApplication(dataDirectory: data) { app in
            let document = Self.document(secret: secret)
            let api = try APIClient(app)
            #expect(Self.same(try api.get("/v1/profiles/\(profile)/storage-state").json, document), "after a restart")
            // Export carries it; an import elsewhere (a new data directory) brings it back.
            let exported = try api.get("/v1/profiles/\(profile)/export")
            #expect(Self.same((try JSONSerialization.jsonObject(with: Data(exported.body)) as? [String: Any])?["storageState"] as Any, document))
            #expect(try api.send("DELETE", "/v1/profiles/\(profile)/storage-state").status == 204)
            #expect(Self.same(try api.get("/v1/profiles/\(profile)/storage-state").json, ["cookies": [], "origins": []]))
            #expect(try api.send("DELETE", "/v1/profiles/\(profile)").status == 204)
            let imported = try api.send("POST", "/v1/profiles/import", raw: exported.body)
            #expect(imported.status == 201, "\(String(decoding: imported.body, as: UTF8.self))")
            #expect(Self.same(try api.get("/v1/profiles/\(profile)/storage-state").json, document), "imported")
        }
        // The log (warnings here) and the files hold the value only in the database.
    }

    @Test func badMembersAre422NamingThemAndLimitsHold() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let path = "/v1/profiles/\(profile)/storage-state"
            func cookie(_ extra: [String: Any]) -> [String: Any] {
                ["name": "c", "value": "v", "domain": "example.com", "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"]
                    .merging(extra) { $1 }
            }
            let secretValue = "do-not-echo-" + String(repeating: "x", count: 4096)
            for (body, member) in [
                (["cookies": [cookie([:]), cookie(["value": secretValue])], "origins": []] as [String: Any], "cookies[1].value"),
                (["cookies": [cookie(["sameSite": "Sometimes"])], "origins": []], "cookies[0].sameSite"),
                (["cookies": [cookie(["sameSite": "None"])], "origins": []], "cookies[0].sameSite"),
                (["cookies": [cookie(["flavour": "oat"])], "origins": []], "cookies[0].flavour"),
                (["cookies": [cookie(["domain": "bad domain"])], "origins": []], "cookies[0].domain"),
                (["cookies": [cookie(["path": "nope"])], "origins": []], "cookies[0].path"),
                (["cookies": [cookie(["value": "a\u{1}b"])], "origins": []], "cookies[0].value"),
                (["cookies": [cookie(["expires": "soon"])], "origins": []], "cookies[0].expires"),
                (["cookies": [cookie([:]), cookie([:])], "origins": []], "cookies[1]"),
                (["cookies": (0..<181).map { cookie(["name": "c\($0)"]) }, "origins": []], "cookies[180]"),
                (["cookies": [], "origins": [["origin": "https://a.example/path", "localStorage": []]]], "origins[0].origin"),
                (["cookies": [], "origins": [["origin": "https://a.example", "localStorage": [["name": "k", "value": 1]]]]], "origins[0].localStorage[0].value"),
                (["cookies": [], "origins": [["origin": "https://a.example", "localStorage": [], "indexedDB": []]]], "origins[0].indexedDB"),
                (["cookies": [], "origins": [], "extra": true], "extra"),
                (["origins": []], "cookies"),
                // Origins a tenant (or a hostile page) might choose: only http(s) ones are kept.
                (["cookies": [], "origins": [["origin": "file:///etc", "localStorage": []]]], "origins[0].origin"),
                (["cookies": [], "origins": [["origin": "chrome://settings", "localStorage": []]]], "origins[0].origin"),
                (["cookies": [], "origins": [["origin": "http://127.0.0.1:0", "localStorage": []]]], "origins[0].origin"),
                (["cookies": [cookie(["domain": "a.example/path"])], "origins": []], "cookies[0].domain"),
                (["cookies": [cookie([:]).filter { $0.key != "path" }], "origins": []], "cookies[0].path"),
                (["cookies": [], "origins": [["origin": "https://a.example"]]], "origins[0].localStorage"),
            ] {
                let reply = try api.send("PUT", path, body)
                #expect(reply.status == 422, "\(member): \(reply.status)")
                #expect(reply.json["member"] as? String == member, "\(member): \(reply.json)")
                #expect(reply.problemType?.hasSuffix("invalid-storage-state") == true)
                #expect(!String(decoding: reply.body, as: UTF8.self).contains("do-not-echo"), "a problem quotes no value")
            }
            // Nothing was half-applied.
            #expect(Self.same(try api.get(path).json, ["cookies": [], "origins": []]))
            #expect(try api.send("PUT", path, raw: Array("{".utf8)).status == 400)

            #expect(try api.send("PUT", path, raw: Array("{}".utf8), contentType: "text/plain").status == 415)
            #expect(try api.send("PUT", "/v1/profiles/p0000000000000000/storage-state", ["cookies": [], "origins": []]).status == 404)
            // 180 cookies of one domain are fine; another domain's are counted apart.
            let many = (0..<180).map { cookie(["name": "c\($0)"]) } + [cookie(["domain": "other.example"])]
            #expect(try api.send("PUT", path, ["cookies": many, "origins": []]).status == 200)
        }
    }

    /// A state past --max-body-bytes is 413 (64 KiB here), and the one stored stands.
    @Test func aStatePastTheBodyLimitIs413() async throws {
        try await withApplication({ $0.server.maxBodyBytes = 64 * 1024 }) { app in
            let profile = try APIClient(app).profile()
            let huge =
                Array(#"{"cookies":[],"origins":[{"origin":"https://a.example","localStorage":[{"name":"k","value":""#.utf8)
                + Array(repeating: UInt8(ascii: "x"), count: 100 * 1024) + Array(#""}]}]}"#.utf8)
            #expect(try APIClient(app).send("PUT", "/v1/profiles/\(profile)/storage-state", raw: huge).status == 413)
            #expect(Self.same(try APIClient(app).get("/v1/profiles/\(profile)/storage-state").json, ["cookies": [], "origins": []]))
        }
    }

    @Test func theByteBudgetCountsItAndOnlyItsOwnTokenReadsIt() async throws {
        try await withApplication({
            $0.adminToken = Self.admin
            $0.modelLimits.profileBytes = 64 * 1024
        }) { app in
            let api = try APIClient(app)
            let auth = [("Authorization", "Bearer \(Self.admin)")]
            let (mine, theirs) = (try api.post("/v1/profiles", ["name": "mine"], headers: auth).id, try api.post("/v1/profiles", ["name": "theirs"], headers: auth).id)
            let token = try api.post("/v1/profiles/\(mine)/tokens", headers: auth).json["token"] as? String ?? ""
            let bearer = [("Authorization", "Bearer \(token)")]
            let small = ["cookies": [], "origins": [["origin": "https://a.example", "localStorage": [["name": "k", "value": "v"]]]]] as [String: Any]
            #expect(try api.send("PUT", "/v1/profiles/\(mine)/storage-state", small, headers: bearer).status == 200)
            #expect(try api.send("GET", "/v1/profiles/\(mine)/storage-state", headers: bearer).status == 200)
            #expect(try api.send("GET", "/v1/profiles/\(theirs)/storage-state", headers: bearer).status == 404)
            #expect(try api.send("PUT", "/v1/profiles/\(theirs)/storage-state", small, headers: bearer).status == 404)
            #expect(try api.send("GET", "/v1/profiles/\(mine)/storage-state").status == 401)
            // Past the profile's byte budget (64 KiB here): 507, and the last state stands.
            let big =
                ["cookies": [], "origins": [["origin": "https://a.example", "localStorage": [["name": "k", "value": String(repeating: "z", count: 70_000)]]]]]
                as [String: Any]
            let refused = try api.send("PUT", "/v1/profiles/\(mine)/storage-state", big, headers: bearer)
            #expect(refused.status == 507, "\(refused.json)")
            #expect(Self.same(try api.send("GET", "/v1/profiles/\(mine)/storage-state", headers: bearer).json, small))
        }
    }

    @Test func anOffTheRecordProfilesStateNeverTouchesTheDisk() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-storage-otr-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let secret = "incognito-cookie-\(UUID().uuidString.lowercased())"
        let kept = "regular-cookie-\(UUID().uuidString.lowercased())"
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let incognito = try api.post("/v1/profiles/\(profile)/incognito").id
            let state = { (value: String) -> [String: Any] in
                [
                    "cookies": [["name": "s", "value": value, "domain": "a.example", "path": "/", "expires": -1, "httpOnly": true, "secure": false, "sameSite": "Lax"]],
                    "origins": [],
                ]
            }
            #expect(try api.send("PUT", "/v1/profiles/\(incognito)/storage-state", state(secret)).status == 200)
            #expect(try api.send("PUT", "/v1/profiles/\(profile)/storage-state", state(kept)).status == 200)
            #expect(Self.same(try api.get("/v1/profiles/\(incognito)/storage-state").json, state(secret)))
            #expect(Self.same(try api.get("/v1/profiles/\(profile)/storage-state").json, state(kept)), "each its own")
            #expect(try api.post("/v1/admin/backup").status == 201)
        }
        // The database, its WAL and its backups are the owner's only (0600): they hold cookies.
        let files = try FileManager.default.contentsOfDirectory(atPath: data)
        #expect(files.contains { $0.contains("-backup-") }, "\(files)")
        for name in files {
            let mode = try FileManager.default.attributesOfItem(atPath: data + "/" + name)[.posixPermissions] as? Int ?? 0o777
            #expect(mode & 0o077 == 0, "\(name): \(String(mode, radix: 8))")
        }
        func filesHolding(_ marker: String) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: data).filter { name in
                let bytes = try Data(contentsOf: URL(fileURLWithPath: data).appendingPathComponent(name))
                return bytes.range(of: Data(marker.utf8)) != nil
            }
        }
        #expect(try filesHolding(secret).isEmpty)
        #expect(try !filesHolding(kept).isEmpty, "the search is not blind")
    }
}
