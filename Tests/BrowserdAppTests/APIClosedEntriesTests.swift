import BrowserdApp
import Foundation
import TestSupport
import Testing

/// The operations Chromium has that the API lacked: close-all with undo (`TabsCloser`), a closed group as
/// one entry, moving a tab into a group (of its window or another).
@Suite(.offThePool) struct APIClosedEntriesTests {
    /// `TabsCloser`: one call closes every tab, one call brings them back (order, pinned, group, opener,
    /// active); nothing is recently closed until it is confirmed.
    @Test func closeAllThenUndo() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let p = try api.tab(window, "https://p.example/", ["pinned": true])
            let a = try api.tab(window, "https://a.example/")
            let b = try api.tab(window, "https://b.example/", ["openerTabId": a])
            let group = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [a, b], "title": "G", "color": "red"])
            #expect(group.status == 201)
            _ = try api.post("/v1/tabs/\(a)/activate")
            let names = [p: "p", a: "a", b: "b"]
            let before = try api.layout(window, names: names)

            let closing = try api.post("/v1/browsers/\(window)/close-all", ["undoSeconds": 600])
            #expect(closing.status == 200 && closing["state"] as? String == "pending" && closing["policy"] as? String == "allTabs")
            #expect(closing["tabIds"] as? [String] == [p, a, b] && closing["undoableUntil"] is String)
            #expect(try api.get("/v1/browsers/\(window)")["tabCount"] as? Int == 0)
            #expect((try api.get("/v1/profiles/\(profile)/recently-closed")["items"] as? [Any])?.isEmpty == true)

            let id = try #require(closing["id"] as? String)
            let undone = try api.post("/v1/profiles/\(profile)/closings/\(id)/undo")
            #expect(undone.status == 200 && undone["state"] as? String == "undone" && undone["browserIds"] as? [String] == [window])
            #expect(try api.layout(window, names: names) == before)
            let tabB = try api.get("/v1/tabs/\(b)")
            #expect(tabB["openerTabId"] as? String == a && tabB["groupId"] as? String == group["id"] as? String)
            #expect(try api.post("/v1/profiles/\(profile)/closings/\(id)/undo").problemType == "/problems/closing-not-found")
            #expect(try api.post("/v1/profiles/\(profile)/closings/\(id)/confirm").status == 404)
        }
    }

    /// Confirmed (explicitly, or at once with undoSeconds 0): the tabs become recently-closed tab
    /// entries; `regularTabs` keeps pinned tabs; a profile-wide close-all spans its windows.
    @Test func confirmPolicyAndProfileWide() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let w1 = try api.window(profile)
            let w2 = try api.window(profile)
            let p = try api.tab(w1, "https://p.example/", ["pinned": true])
            _ = try api.tab(w1, "https://a.example/")
            _ = try api.tab(w2, "https://b.example/")
            let closing = try api.post("/v1/profiles/\(profile)/close-all", ["policy": "regularTabs", "undoSeconds": 600])
            #expect(Set(closing["browserIds"] as? [String] ?? []) == [w1, w2] && (closing["tabIds"] as? [String])?.count == 2)
            #expect(try api.layout(w1, names: [p: "p"]) == "p* |")
            let id = try #require(closing["id"] as? String)
            let confirmed = try api.post("/v1/profiles/\(profile)/closings/\(id)/confirm")
            #expect(confirmed["state"] as? String == "confirmed" && confirmed["undoableUntil"] is NSNull)
            let entries = try api.get("/v1/profiles/\(profile)/recently-closed")["items"] as? [[String: Any]]
            #expect(entries?.count == 2 && entries?.allSatisfy { $0["kind"] as? String == "tab" } == true)
            let now = try api.post("/v1/browsers/\(w1)/close-all", ["undoSeconds": 0])
            #expect(now["state"] as? String == "confirmed" && now["tabIds"] as? [String] == [p])
            #expect((try api.get("/v1/profiles/\(profile)/recently-closed")["items"] as? [Any])?.count == 3)
            let nothing = try api.post("/v1/browsers/\(w1)/close-all")
            #expect(nothing.status == 200 && nothing["state"] as? String == "confirmed" && (nothing["tabIds"] as? [String])?.isEmpty == true)
            #expect(try api.post("/v1/profiles/\(profile)/closings/\(nothing["id"] as? String ?? "")/undo").status == 404)
            #expect(try api.post("/v1/browsers/\(w1)/close-all", ["policy": "someTabs"]).status == 422)
            #expect(try api.post("/v1/browsers/\(w1)/close-all", ["undoSeconds": 601]).status == 422)
            #expect(try api.post("/v1/browsers/\(w1)/close-all", ["undo": 1]).status == 422)
            #expect(try api.post("/v1/browsers/wffffffffffffffff/close-all").status == 404)
            #expect(try api.post("/v1/profiles/\(profile)/closings/cffffffffffffffff/undo").status == 404)
        }
    }

    /// The undo window passes: the close-all is confirmed by itself.
    @Test func theUndoWindowPasses() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            _ = try api.tab(window, "https://a.example/")
            let closing = try api.post("/v1/browsers/\(window)/close-all", ["undoSeconds": 1])
            let id = try #require(closing["id"] as? String)
            var entries: [Any] = []
            for _ in 0..<50 where entries.isEmpty {
                Thread.sleep(forTimeInterval: 0.1)
                entries = try api.get("/v1/profiles/\(profile)/recently-closed")["items"] as? [Any] ?? []
            }
            #expect(entries.count == 1)
            #expect(try api.post("/v1/profiles/\(profile)/closings/\(id)/undo").status == 404)
        }
    }

    /// A closed group is one entry (kind group, its tabs, its look); restoring it rebuilds the group.
    @Test func aClosedGroupIsOneEntry() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let a = try api.tab(window, "https://a.example/")
            let b = try api.tab(window, "https://b.example/")
            _ = try api.tab(window, "https://c.example/")
            let group = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [a, b], "title": "Trip", "color": "green"])
            let groupID = try #require(group["id"] as? String)
            #expect(try api.post("/v1/groups/\(groupID)/close").status == 200)
            let entry = try #require((try api.get("/v1/profiles/\(profile)/recently-closed")["items"] as? [[String: Any]])?.first)
            #expect(entry["kind"] as? String == "group" && entry["tabCount"] as? Int == 2)
            let look = entry["group"] as? [String: Any]
            #expect(look?["id"] as? String == groupID && look?["title"] as? String == "Trip" && look?["color"] as? String == "green")
            let restored = try api.post("/v1/browsers/\(window)/restore-closed-tab")
            #expect(restored.status == 201 && restored["url"] as? String == "https://a.example/" && restored["groupId"] as? String == groupID)
            let rebuilt = try api.get("/v1/groups/\(groupID)")
            #expect(rebuilt["title"] as? String == "Trip" && (rebuilt["tabIds"] as? [String])?.count == 2)
        }
    }

    /// `MoveToGroup` within a window and `InsertionParams::InGroup` from another; bad requests refused.
    @Test func moveIntoAGroup() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let other = try api.window(profile)
            let a = try api.tab(window, "https://a.example/")
            let b = try api.tab(window, "https://b.example/")
            let c = try api.tab(window, "https://c.example/")
            let x = try api.tab(other, "https://x.example/")
            let groupID = try #require(try api.post("/v1/browsers/\(window)/groups", ["tabIds": [a]])["id"] as? String)
            let moved = try api.post("/v1/tabs/\(c)/move", ["groupId": groupID])
            #expect(moved.status == 200 && moved["index"] as? Int == 1 && moved["groupId"] as? String == groupID)
            let across = try api.post("/v1/tabs/\(x)/move", ["groupId": groupID, "index": 3])  // outside the group: its end
            #expect(
                across["browserId"] as? String == window && across["index"] as? Int == 2 && across["groupId"] as? String == groupID,
                "\(String(decoding: across.body, as: UTF8.self))")
            let names = [a: "a", b: "b", c: "c", x: "x"]
            let shown = try api.layout(window, names: names)
            #expect(shown == "| a c* x b", "\(shown)")
            #expect(try api.post("/v1/tabs/\(b)/move", ["groupId": "gffffffffffffffff"]).status == 422)
            #expect(try api.post("/v1/tabs/\(b)/move", ["groupId": groupID, "browserId": other]).status == 422)
            #expect(try api.post("/v1/tabs/\(b)/move", ["groupId": groupID, "pinned": true]).status == 422)
            #expect(try api.post("/v1/tabs/\(b)/move", [:] as [String: Any]).status == 422, "index is required without groupId")
            let incognito = try api.post("/v1/profiles/\(profile)/incognito")
            let hidden = try api.post("/v1/browsers", ["profileId": incognito["id"] as? String ?? ""])
            let secret = try api.tab(hidden["id"] as? String ?? "", "https://s.example/")
            #expect(try api.post("/v1/tabs/\(secret)/move", ["groupId": groupID]).status == 409)
        }
    }
}
