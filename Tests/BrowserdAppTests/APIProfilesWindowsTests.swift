import BrowserdApp
import Foundation
import TestSupport
import Testing

@Suite(.offThePool) struct APIProfileTests {
    @Test func createGetListAndDelete() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let created = try api.post("/v1/profiles", ["name": "Work"])
            #expect(created.status == 201)
            #expect(created.header("location") == "/v1/profiles/\(created.id)")
            #expect(created["incognito"] as? Bool == false && created["windowCount"] as? Int == 0)
            #expect(try api.get("/v1/profiles/\(created.id)")["name"] as? String == "Work")
            #expect((try api.get("/v1/profiles")["items"] as? [Any])?.count == 1)
            #expect(try api.send("DELETE", "/v1/profiles/\(created.id)").status == 204)
            let gone = try api.get("/v1/profiles/\(created.id)")
            #expect(gone.status == 404 && gone.problemType == "/problems/profile-not-found")
        }
    }

    @Test func badBodiesAreRefusedWithClearProblems() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            #expect(try api.post("/v1/profiles", ["name": ""]).problemType == "/problems/invalid-field")
            #expect(try api.post("/v1/profiles", ["name": 5]).status == 422)
            #expect(try api.post("/v1/profiles", [:]).json["field"] as? String == "name")
            #expect(try api.post("/v1/profiles", ["name": "a", "extra": 1]).status == 422)
            #expect(try api.post("/v1/profiles", ["name": String(repeating: "n", count: 201)]).status == 422)
            // Lengths are code points, as the contract's maxLength counts: 67 graphemes of 3 code points
            // each (201) are too long, however short they look; 200 code points are not.
            #expect(try api.post("/v1/profiles", ["name": String(repeating: "e\u{301}\u{302}", count: 67)]).status == 422)
            let malformed = try api.send("POST", "/v1/profiles", raw: Array("{\"name\":".utf8))
            #expect(malformed.status == 400 && malformed.problemType == "/problems/malformed-json")
            let duplicate = try api.send("POST", "/v1/profiles", raw: Array(#"{"name":"a","name":"b"}"#.utf8))
            #expect(duplicate.status == 400)
            let text = try api.send("POST", "/v1/profiles", raw: Array("name=a".utf8), contentType: "text/plain")
            #expect(text.status == 415 && text.problemType == "/problems/unsupported-media-type")
            #expect(try api.get("/v1/profiles").json["items"] as? [Any] != nil)
            #expect((try api.get("/v1/profiles")["items"] as? [Any])?.isEmpty == true)
            #expect(try api.post("/v1/profiles", ["name": String(repeating: "e\u{301}", count: 100)]).status == 201)
        }
    }

    @Test func listsPageWithLimitAndCursor() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            var ids: [String] = []
            for i in 0..<5 { ids.append(try api.profile("p\(i)")) }
            let first = try api.get("/v1/profiles?limit=2")
            let items = (first["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(items?.count == 2)
            let cursor = try #require(first["nextCursor"] as? String)
            let second = try api.get("/v1/profiles?limit=10&cursor=\(cursor)")
            #expect((second["items"] as? [Any])?.count == 3)
            #expect(second["nextCursor"] is NSNull)
            #expect(try api.get("/v1/profiles?limit=0").status == 400)
            #expect(try api.get("/v1/profiles?limit=x").problemType == "/problems/invalid-query")
            #expect(try api.get("/v1/profiles?cursor=pffffffffffffffff").status == 400)
        }
    }

    @Test func incognitoProfileIsCreatedOnceAndDeletedWithItsWindows() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let first = try api.post("/v1/profiles/\(profile)/incognito")
            #expect(first.status == 201 && first["incognito"] as? Bool == true && first["parentId"] as? String == profile)
            let again = try api.post("/v1/profiles/\(profile)/incognito", [:])
            #expect(again.status == 200 && again.id == first.id)
            #expect(try api.post("/v1/profiles/\(first.id)/incognito").status == 422)
            let window = try api.window(first.id)
            #expect(try api.get("/v1/browsers/\(window)")["incognito"] as? Bool == true)
            #expect(try api.send("DELETE", "/v1/profiles/\(first.id)").status == 204)
            #expect(try api.get("/v1/browsers/\(window)").status == 404)
            #expect(try api.get("/v1/profiles/\(profile)")["incognitoProfileId"] is NSNull)
        }
    }
}

@Suite(.offThePool) struct APIWindowTests {
    @Test func newWindowHasNoTabsAndAnETag() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let created = try api.post("/v1/browsers", ["profileId": profile])
            #expect(created.status == 201 && created.header("location") == "/v1/browsers/\(created.id)")
            #expect(created["tabCount"] as? Int == 0 && created["activeIndex"] as? Int == -1 && created["activeTabId"] is NSNull)
            let fetched = try api.get("/v1/browsers/\(created.id)")
            #expect(fetched.header("etag") == "\"v\(fetched["version"] as! Int)\"")
            #expect(try api.post("/v1/browsers", ["profileId": "pffffffffffffffff"]).status == 422)
            let listed = try api.get("/v1/browsers?profileId=\(profile)")
            #expect((listed["items"] as? [Any])?.count == 1)
            #expect(try api.get("/v1/browsers?profileId=pffffffffffffffff").status == 404)
            #expect(try api.get("/v1/browsers/wffffffffffffffff").problemType == "/problems/window-not-found")
        }
    }

    /// `TabRestoreServiceHelper::BrowserClosing`: a closed window is one entry holding its tabs; restoring
    /// it opens a new window with them (not the other open one), its active tab active.
    @Test func closingAWindowRemembersItAsOneEntry() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let a = try api.tab(window, "https://a.example/")
            _ = try api.tab(window, "https://b.example/")
            _ = try api.post("/v1/tabs/\(a)/activate")
            #expect(try api.send("DELETE", "/v1/browsers/\(window)").status == 204)
            let closed = try api.get("/v1/profiles/\(profile)/recently-closed")["items"] as? [[String: Any]]
            #expect(closed?.count == 1)
            let entry = try #require(closed?.first)
            #expect(entry["kind"] as? String == "window" && entry["tabCount"] as? Int == 2 && entry["url"] as? String == "https://a.example/")
            let members = entry["tabs"] as? [[String: Any]]
            #expect(members?.map { $0["url"] as? String } == ["https://a.example/", "https://b.example/"])
            let other = try api.window(profile)
            let id = try #require(entry["id"] as? String)
            let restored = try api.post("/v1/profiles/\(profile)/recently-closed/\(id)/restore")
            let opened = restored["browserId"] as? String
            #expect(restored.status == 201 && opened != nil && opened != other && opened != window)
            #expect(restored["url"] as? String == "https://a.example/" && restored["active"] as? Bool == true)
            #expect(try api.get("/v1/browsers/\(opened ?? "")")["tabCount"] as? Int == 2)
            #expect(try api.post("/v1/profiles/\(profile)/recently-closed/\(id)/restore").status == 404)
            // One tab left in a window: a tab entry (BrowserClosing's short-circuit), restored into a new window.
            _ = try api.tab(other, "https://c.example/")
            #expect(try api.send("DELETE", "/v1/browsers/\(other)").status == 204)
            let single = try #require((try api.get("/v1/profiles/\(profile)/recently-closed")["items"] as? [[String: Any]])?.first)
            #expect(single["kind"] as? String == "tab" && single["tabs"] == nil)
            let back = try api.post("/v1/profiles/\(profile)/recently-closed/\(single["id"] as? String ?? "")/restore")
            #expect(back.status == 201 && back["browserId"] as? String != other)
        }
    }

    @Test func broadcastsAreTypedAndDeduplicated() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let list = try api.get("/v1/browsers/\(window)/broadcasts")["items"] as? [[String: Any]]
            #expect(list?.count == 6 && list?.allSatisfy { $0["value"] is NSNull } == true)
            let put = try api.send("PUT", "/v1/browsers/\(window)/broadcasts/toolbar.topHeight", ["value": 56])
            #expect(put.status == 200 && put["value"] as? Double == 56)
            let version = put.etagVersion
            #expect(try api.send("PUT", "/v1/browsers/\(window)/broadcasts/toolbar.topHeight", ["value": 56]).etagVersion == version)
            #expect(try api.send("PUT", "/v1/browsers/\(window)/broadcasts/content.isScrolling", ["value": 1]).status == 422)
            #expect(try api.send("PUT", "/v1/browsers/\(window)/broadcasts/nope", ["value": 1]).status == 404)
            #expect(try api.send("PUT", "/v1/browsers/\(window)/broadcasts/content.isScrolling", ["value": true]).status == 200)
        }
    }

    @Test func commandsAreListedAndDispatched() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let names = (try api.get("/v1/browsers/\(window)/commands")["items"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
            #expect(Set(["openNewTab", "closeTab", "activateTab", "loadURL"]).isSubset(of: names))
            let opened = try api.post("/v1/browsers/\(window)/commands/openNewTab", ["args": [:]])
            let tab = (opened["result"] as? [String: Any])?["id"] as? String
            #expect(opened.status == 200 && (opened["result"] as? [String: Any])?["url"] as? String == "browserd://newtab")
            let loaded = try api.post("/v1/browsers/\(window)/commands/loadURL", ["args": ["url": "https://x.example"]])
            #expect((loaded["result"] as? [String: Any])?["url"] as? String == "https://x.example/")
            #expect(try api.post("/v1/browsers/\(window)/commands/closeTab", ["args": ["tabId": tab!]]).status == 200)
            #expect(try api.post("/v1/browsers/\(window)/commands/nope", ["args": [:]]).problemType == "/problems/command-not-found")
            #expect(try api.post("/v1/browsers/\(window)/commands/activateTab", ["args": [:]]).status == 422)
            // An incognito tab asked for from a regular window opens in the profile's incognito window.
            let incognito = try api.post("/v1/browsers/\(window)/commands/openNewTab", ["args": ["incognito": true, "url": "https://i.example"]])
            #expect(incognito.status == 200)
            let other = (incognito["result"] as? [String: Any])?["browserId"] as? String ?? ""
            #expect(other != window)
            #expect(try api.get("/v1/browsers/\(other)")["incognito"] as? Bool == true)
            #expect(try api.post("/v1/browsers/\(window)/commands/openNewTab", ["args": ["bogus": 1]]).status == 422)
            #expect(try api.post("/v1/browsers/\(window)/commands/tabs.open", ["args": [:]]).status == 422)
        }
    }
}
