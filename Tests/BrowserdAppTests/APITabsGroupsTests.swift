import BrowserdApp
import Foundation
import TestSupport
import Testing

@Suite(.offThePool) struct APITabTests {
    @Test func openTabPlacementAndValidation() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let a = try api.tab(window, "https://a.example")
            let b = try api.tab(window, "https://b.example", ["activate": false])
            let child = try api.post("/v1/browsers/\(window)/tabs", ["url": "https://c.example", "openerTabId": a, "transition": "link"])
            #expect(child["index"] as? Int == 1 && child["openerTabId"] as? String == a)
            let pinned = try api.post("/v1/browsers/\(window)/tabs", ["url": "https://p.example", "pinned": true, "activate": false])
            #expect(pinned["index"] as? Int == 0 && pinned["pinned"] as? Bool == true)
            #expect(try api.layout(window, names: [a: "a", b: "b", child.id: "c", pinned.id: "p"]) == "p | a c* b")
            let both = try api.post("/v1/browsers/\(window)/tabs", ["url": "https://x.example", "openerTabId": a, "inheritOpener": true])
            #expect(both.status == 422)
            #expect(try api.post("/v1/browsers/\(window)/tabs", ["url": "https://x.example", "index": 9]).problemType == "/problems/index-out-of-range")
            #expect(try api.post("/v1/browsers/\(window)/tabs", ["url": "https://x.example", "index": -1]).status == 422)
            #expect(try api.post("/v1/browsers/\(window)/tabs", ["url": "javascript:alert(1)"]).problemType == "/problems/invalid-url")
            #expect(try api.post("/v1/browsers/\(window)/tabs", ["url": "https://x.example", "transition": "teleport"]).status == 422)
            #expect(try api.post("/v1/browsers/\(window)/tabs", ["url": "https://x.example", "openerTabId": "tffffffffffffffff"]).status == 422)
            #expect(try api.post("/v1/browsers/\(window)/tabs", ["url": "https://x.example", "index": 1.5]).status == 422)
            #expect(try api.get("/v1/browsers/\(window)")["tabCount"] as? Int == 4)
        }
    }

    @Test func tabReadsAndPageState() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let a = try api.tab(window, "https://a.example")
            let b = try api.tab(window, "https://b.example")
            let tab = try api.get("/v1/tabs/\(a)")
            #expect(tab["url"] as? String == "https://a.example/" && tab.header("etag") != nil)
            let patched = try api.send("PATCH", "/v1/tabs/\(a)", ["title": "A", "loading": false, "progress": 1, "faviconUrl": "https://a.example/f.ico"])
            #expect(patched["title"] as? String == "A" && patched["loading"] as? Bool == false && patched["faviconUrl"] as? String == "https://a.example/f.ico")
            #expect(try api.send("PATCH", "/v1/tabs/\(b)", ["openerTabId": a])["openerTabId"] as? String == a)
            #expect(try api.send("PATCH", "/v1/tabs/\(b)", ["openerTabId": NSNull()])["openerTabId"] is NSNull)
            // A renderer's long title is cut to the model's 1,024 characters, never refused.
            #expect(try api.send("PATCH", "/v1/tabs/\(a)", ["title": String(repeating: "t", count: 1025)])["title"] as? String == String(repeating: "t", count: 1024))
            #expect(try api.send("PATCH", "/v1/tabs/\(a)", ["progress": 2]).status == 422)
            #expect(try api.send("PATCH", "/v1/tabs/\(a)", ["openerTabId": a]).status == 422)
            // A renderer's crash: shown (loading ended) until a load; never stored.
            #expect(try api.get("/v1/tabs/\(a)")["crashed"] as? Bool == false)
            _ = try api.send("PATCH", "/v1/tabs/\(a)", ["loading": true, "progress": 0.4])
            let crashed = try api.send("PATCH", "/v1/tabs/\(a)", ["crashed": true])
            #expect(crashed["crashed"] as? Bool == true && crashed["loading"] as? Bool == false)
            #expect(try api.get("/v1/browsers/\(window)/tabs")["items"].flatMap { ($0 as? [[String: Any]])?.first?["crashed"] as? Bool } == true)
            #expect(try api.send("PATCH", "/v1/tabs/\(a)", ["crashed": "yes"]).status == 422)
            let reloaded = try api.post("/v1/tabs/\(a)/reload")
            #expect(reloaded["crashed"] as? Bool == false && reloaded["loading"] as? Bool == true)
            #expect(try api.get("/v1/tabs/tffffffffffffffff").problemType == "/problems/tab-not-found")
            #expect(try api.send("DELETE", "/v1/tabs/\(a)").status == 204)
            #expect(try api.get("/v1/tabs/\(a)").status == 404)
        }
    }

    @Test func navigationAndHistory() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let t = try api.tab(window, "https://one.example")
            _ = try api.post("/v1/tabs/\(t)/navigate", ["url": "https://two.example"])
            let three = try api.post("/v1/tabs/\(t)/navigate", ["url": "https://three.example", "transition": "typed"])
            #expect(three["historyCount"] as? Int == 3 && three["canGoBack"] as? Bool == true && three["loading"] as? Bool == true)
            #expect(try api.post("/v1/tabs/\(t)/back")["url"] as? String == "https://two.example/")
            #expect(try api.post("/v1/tabs/\(t)/go", ["offset": -1])["historyIndex"] as? Int == 0)
            let noop = try api.post("/v1/tabs/\(t)/back")
            #expect(noop.status == 200 && noop["historyIndex"] as? Int == 0)
            #expect(try api.post("/v1/tabs/\(t)/forward")["historyIndex"] as? Int == 1)
            #expect(try api.post("/v1/tabs/\(t)/reload")["historyIndex"] as? Int == 1)
            let pruned = try api.post("/v1/tabs/\(t)/navigate", ["url": "https://four.example"])
            #expect(pruned["historyCount"] as? Int == 3 && pruned["canGoForward"] as? Bool == false)
            let history = try api.get("/v1/tabs/\(t)/history")
            #expect(history["currentIndex"] as? Int == 2)
            #expect((history["entries"] as? [[String: Any]])?.map { $0["url"] as? String } == ["https://one.example/", "https://two.example/", "https://four.example/"])
            #expect(try api.post("/v1/tabs/\(t)/go", ["offset": "x"]).status == 422)
            #expect(try api.post("/v1/tabs/\(t)/navigate", ["url": "notaurl"]).status == 422)
            #expect(try api.post("/v1/tabs/\(t)/reload", ["unexpected": true]).status == 422)
        }
    }

    /// A renderer's report of a push within the document (`sameDocument`) adds an entry even to the
    /// current URL (Chromium's same-URL pushState); a plain navigation to it adds none.
    @Test func aSameDocumentPushAddsAnEntryToItsOwnURL() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let t = try api.tab(try api.window(try api.profile()), "https://one.example/a")
            #expect(try api.post("/v1/tabs/\(t)/navigate", ["url": "https://one.example/a"])["historyCount"] as? Int == 1)
            // The page loaded (a renderer's report).
            try api.send("PATCH", "/v1/tabs/\(t)", ["title": "One", "loading": false])
            let pushed = try api.post("/v1/tabs/\(t)/navigate", ["url": "https://one.example/a", "sameDocument": true])
            #expect(pushed.status == 200 && pushed["historyCount"] as? Int == 2 && pushed["historyIndex"] as? Int == 1)
            #expect(pushed["title"] as? String == "One" && pushed["loading"] as? Bool == false, "the document stays")
            let replaced = try api.post("/v1/tabs/\(t)/navigate", ["url": "https://one.example/a", "sameDocument": true, "replace": true])
            #expect(replaced["historyCount"] as? Int == 2)
            let history = try api.get("/v1/tabs/\(t)/history")
            #expect((history["entries"] as? [[String: Any]])?.compactMap { $0["url"] as? String } == ["https://one.example/a", "https://one.example/a"])
            #expect(try api.post("/v1/tabs/\(t)/navigate", ["url": "https://one.example/a", "sameDocument": "yes"]).status == 422)
        }
    }

    @Test func activatePinMoveReplaceDuplicate() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let a = try api.tab(window, "https://a.example")
            let b = try api.tab(window, "https://b.example")
            let c = try api.tab(window, "https://c.example")
            var names = [a: "a", b: "b", c: "c"]
            let active = try api.post("/v1/tabs/\(c)/activate")
            let again = try api.post("/v1/tabs/\(c)/activate")
            #expect(active.etagVersion == again.etagVersion)
            #expect(try api.post("/v1/tabs/\(b)/pin")["index"] as? Int == 0)
            #expect(try api.layout(window, names: names) == "b | a c*")
            #expect(try api.post("/v1/tabs/\(a)/move", ["index": 0])["index"] as? Int == 1)
            #expect(try api.post("/v1/tabs/\(a)/move", ["index": 3]).status == 422)
            #expect(try api.post("/v1/tabs/\(b)/unpin")["index"] as? Int == 2)
            let replaced = try api.post("/v1/tabs/\(c)/replace", ["url": "https://r.example"])
            names[replaced.id] = "r"
            #expect(replaced["index"] as? Int == 1 && replaced["active"] as? Bool == true)
            #expect(try api.get("/v1/tabs/\(c)").status == 404)
            // BrowserCommandsTest.DuplicateTab: right after the original, active, the original its opener.
            let copy = try api.post("/v1/tabs/\(a)/duplicate")
            names[copy.id] = "d"
            #expect(copy.status == 201 && copy["url"] as? String == "https://a.example/")
            #expect(copy["active"] as? Bool == true && copy["openerTabId"] as? String == a)
            #expect(try api.layout(window, names: names) == "| a d* r b")
            // "activate": false keeps a background copy with no opener.
            let background = try api.post("/v1/tabs/\(a)/duplicate", ["activate": false])
            names[background.id] = "e"
            #expect(background["active"] as? Bool == false && background["openerTabId"] is NSNull)
            #expect(try api.layout(window, names: names) == "| a e d* r b")
            #expect(try api.send("DELETE", "/v1/tabs/\(background.id)").status == 204)
            // Cross-window move: activates in an empty window; never into another profile's window.
            let other = try api.window(profile)
            let moved = try api.post("/v1/tabs/\(b)/move", ["index": 0, "browserId": other])
            #expect(moved["browserId"] as? String == other && moved["active"] as? Bool == true)
            let stranger = try api.window(try api.profile("Other"))
            #expect(try api.post("/v1/tabs/\(a)/move", ["index": 0, "browserId": stranger]).problemType == "/problems/cross-profile")
            let incognito = try api.window(try api.post("/v1/profiles/\(profile)/incognito").id)
            #expect(try api.post("/v1/tabs/\(a)/move", ["index": 0, "browserId": incognito]).problemType == "/problems/incognito-mismatch")
        }
    }

    /// A restored tab is activated (Chromium: TabRestoreTest.MiddleTab, iOS AddRestoredTab), whether or
    /// not it was active when closed, through the window and the profile endpoints, and watchers see
    /// it inserted as the selected tab; `activate: false` restores it in the background.
    @Test func restoringAClosedTabActivatesItUnlessAskedNotTo() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let a = try api.tab(window, "https://a.example/")
            let b = try api.tab(window, "https://b.example/")
            let c = try api.tab(window, "https://c.example/")
            #expect(try api.post("/v1/tabs/\(a)/activate").status == 200)
            let watcher = try SSEClient(app, "/v1/browsers/\(window)/events?topics=tabs")
            _ = try watcher.until("tabs.populate")

            #expect(try api.send("DELETE", "/v1/tabs/\(b)").status == 204)  // not the active tab
            let restored = try api.post("/v1/browsers/\(window)/restore-closed-tab")
            #expect(restored.status == 201 && restored["active"] as? Bool == true && restored["index"] as? Int == 1)
            #expect(try api.get("/v1/browsers/\(window)")["activeTabId"] as? String == restored.id)
            let insert = try watcher.until("tabs.insert").last
            #expect(insert?.json["selectedId"] as? String == restored.id)

            #expect(try api.send("DELETE", "/v1/tabs/\(c)").status == 204)
            let active = try api.get("/v1/browsers/\(window)")["activeTabId"] as? String
            let background = try api.post("/v1/browsers/\(window)/restore-closed-tab", ["activate": false])
            #expect(background.status == 201 && background["active"] as? Bool == false)
            #expect(try api.get("/v1/browsers/\(window)")["activeTabId"] as? String == active)

            // The profile-level restore activates too.
            #expect(try api.send("DELETE", "/v1/tabs/\(a)").status == 204)
            _ = try api.post("/v1/tabs/\(background.id)/activate")
            let entries = try api.get("/v1/profiles/\(profile)/recently-closed")["items"] as? [[String: Any]]
            let entry = try #require(entries?.first { $0["tabId"] as? String == a }?["id"] as? String)
            let back = try api.post("/v1/profiles/\(profile)/recently-closed/\(entry)/restore")
            #expect(back.status == 201 && back["active"] as? Bool == true)
            #expect(try api.post("/v1/browsers/\(window)/restore-closed-tab", ["activate": "yes"]).status == 422)
        }
    }

    /// A pinned tab moved to another window arrives unpinned (Chromium's MoveTabFromBrowserToBrowser),
    /// at the first regular index when asked into the pinned section; `pinned: true` pins it; the
    /// stream of each window says so.
    @Test func aPinnedTabMovedToAnotherWindowArrivesUnpinned() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let source = try api.window(profile)
            let destination = try api.window(profile)
            let p = try api.tab(source, "https://p.example/")
            let q = try api.tab(source, "https://q.example/")
            #expect(try api.post("/v1/tabs/\(p)/pin").status == 200)
            #expect(try api.post("/v1/tabs/\(q)/pin").status == 200)
            let d = try api.tab(destination, "https://d.example/")
            #expect(try api.post("/v1/tabs/\(d)/pin").status == 200)
            _ = try api.tab(destination, "https://e.example/")
            let watcher = try SSEClient(app, "/v1/browsers/\(destination)/events?topics=tabs")
            _ = try watcher.until("tabs.populate")

            let moved = try api.post("/v1/tabs/\(p)/move", ["index": 0, "browserId": destination])
            // Into the pinned range: the end, as every insert (InsertWebState_InsertionInPinnedRange).
            #expect(moved.status == 200 && moved["pinned"] as? Bool == false && moved["index"] as? Int == 2)
            let insert = try watcher.until("tabs.insert").last
            #expect((insert?.json["item"] as? [String: Any])?["pinned"] as? Bool == false && insert?.json["index"] as? Int == 2)
            #expect(try api.get("/v1/browsers/\(destination)")["pinnedCount"] as? Int == 1)
            #expect(try api.get("/v1/browsers/\(source)")["pinnedCount"] as? Int == 1)

            let pinned = try api.post("/v1/tabs/\(q)/move", ["index": 3, "browserId": destination, "pinned": true])
            #expect(pinned.status == 200 && pinned["pinned"] as? Bool == true && pinned["index"] as? Int == 1)
            #expect(try api.get("/v1/browsers/\(destination)")["pinnedCount"] as? Int == 2)
            #expect(try api.post("/v1/tabs/\(q)/move", ["index": 0, "pinned": false]).problemType == "/problems/invalid-field")
        }
    }

    @Test func ifMatchGuardsAgainstLostUpdates() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let a = try api.tab(window, "https://a.example")
            let version = try #require(try api.get("/v1/browsers/\(window)").etagVersion)
            let stale = try api.post("/v1/tabs/\(a)/reload", headers: [("If-Match", "\"v\(version - 1)\"")])
            #expect(stale.status == 412 && stale.header("etag") == "\"v\(version)\"")
            #expect(try api.post("/v1/tabs/\(a)/reload", headers: [("If-Match", "W/\"v\(version)\"")]).status == 412)
            #expect(try api.post("/v1/tabs/\(a)/reload", headers: [("If-Match", "garbage")]).status == 400)
            let fresh = try api.post("/v1/tabs/\(a)/reload", headers: [("If-Match", "\"v\(version)\"")])
            #expect(fresh.status == 200)
            #expect(try api.post("/v1/tabs/\(a)/reload", headers: [("If-Match", "*")]).status == 200)
        }
    }

    @Test func closeTabsTakesExactlyOneSelector() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let a = try api.tab(window, "https://a.example", ["pinned": true])
            let b = try api.tab(window, "https://b.example")
            let c = try api.tab(window, "https://c.example")
            #expect(try api.post("/v1/browsers/\(window)/close-tabs", [:]).status == 422)
            #expect(try api.post("/v1/browsers/\(window)/close-tabs", ["all": true, "allNonPinned": true]).status == 422)
            #expect(try api.post("/v1/browsers/\(window)/close-tabs", ["all": false]).status == 422)
            let result = try api.post("/v1/browsers/\(window)/close-tabs", ["allNonPinned": true])
            #expect(result["closedTabIds"] as? [String] == [b, c] && result["activeTabId"] as? String == a)
            let restored = try api.post("/v1/browsers/\(window)/restore-closed-tab")
            // The batch detached c, then b: b is the most recently closed.
            #expect(restored.status == 201 && restored["url"] as? String == "https://b.example/")
            #expect(try api.post("/v1/browsers/\(window)/close-tabs", ["tabIds": ["tffffffffffffffff"]]).status == 422)
        }
    }
}

@Suite(.offThePool) struct APIGroupTests {
    /// `TabStripModel::MoveToGroup` / `InsertionParams::InGroup` across windows (model-fidelity issue):
    /// a tab of another window of the profile joins the group, moving into the group's window.
    @Test func aTabOfAnotherWindowJoinsAGroup() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let other = try api.window(profile)
            let first = try api.tab(window, "https://1.example/")
            _ = try api.tab(window, "https://2.example/")
            let group = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [first], "title": "G"]).id
            let traveller = try api.tab(other, "https://traveller.example/")
            let added = try api.post("/v1/groups/\(group)/add-tabs", ["tabIds": [traveller]])
            #expect(added.status == 200 && added["count"] as? Int == 2)
            let moved = try api.get("/v1/tabs/\(traveller)")
            #expect(moved["browserId"] as? String == window && moved["groupId"] as? String == group && moved["index"] as? Int == 1)
            #expect(try api.get("/v1/browsers/\(other)")["tabCount"] as? Int == 0)
            // Another profile's tab stays out (422); an incognito tab cannot join a regular group (409).
            let stranger = try api.tab(try api.window(try api.profile("Other")), "https://s.example/")
            #expect(try api.post("/v1/groups/\(group)/add-tabs", ["tabIds": [stranger]]).status == 422)
            let incognito = try api.window(try api.post("/v1/profiles/\(profile)/incognito").id)
            let secret = try api.tab(incognito, "https://secret.example/")
            #expect(try api.post("/v1/groups/\(group)/add-tabs", ["tabIds": [secret]]).problemType == "/problems/incognito-mismatch")
            #expect(try api.get("/v1/tabs/\(secret)")["browserId"] as? String == incognito)
        }
    }

    @Test func groupLifecycle() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let ids = try (0..<5).map { try api.tab(window, "https://\($0).example") }
            let created = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [ids[1], ids[3]], "title": "Work"])
            #expect(created.status == 201 && created["color"] as? String == "grey" && created["start"] as? Int == 1)
            #expect(created["tabIds"] as? [String] == [ids[1], ids[3]])
            let group = created.id
            #expect(try api.get("/v1/groups/\(group)")["count"] as? Int == 2)
            let patched = try api.send("PATCH", "/v1/groups/\(group)", ["color": "cyan", "collapsed": true])
            #expect(patched["color"] as? String == "cyan" && patched["collapsed"] as? Bool == true)
            #expect(try api.send("PATCH", "/v1/groups/\(group)", ["color": "cyan", "collapsed": true]).etagVersion == patched.etagVersion)
            #expect(try api.send("PATCH", "/v1/groups/\(group)", ["color": "mauve"]).status == 422)
            let added = try api.post("/v1/groups/\(group)/add-tabs", ["tabIds": [ids[4]]])
            #expect(added["count"] as? Int == 3)
            let moved = try api.post("/v1/groups/\(group)/move", ["beforeIndex": 0])
            #expect(moved["start"] as? Int == 0)
            let ungrouped = try api.post("/v1/browsers/\(window)/ungroup-tabs", ["tabIds": [ids[4]]])
            #expect((ungrouped["items"] as? [[String: Any]])?.first?["groupId"] is NSNull)
            #expect(try api.send("DELETE", "/v1/groups/\(group)").status == 204)
            #expect(try api.get("/v1/groups/\(group)").problemType == "/problems/group-not-found")
            let second = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [ids[0]]]).id
            let closed = try api.post("/v1/groups/\(second)/close")
            #expect(closed["closedTabIds"] as? [String] == [ids[0]])
            #expect(try api.post("/v1/browsers/\(window)/groups", ["tabIds": []]).status == 422)
            #expect(try api.post("/v1/groups/\(second)/move", ["beforeIndex": 0]).status == 404)
        }
    }

    /// The spec's scenario: pinned tabs, a group and openers built over HTTP; closing the active tab
    /// picks the next one by Chromium's rules.
    @Test func endToEndScenario() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let p = try api.tab(window, "https://p.example", ["pinned": true, "activate": false])
            let a = try api.tab(window, "https://a.example")
            let x = try api.tab(window, "https://x.example", ["openerTabId": a, "transition": "link", "activate": false])
            let y = try api.tab(window, "https://y.example", ["openerTabId": a, "transition": "link", "activate": false])
            let z = try api.tab(window, "https://z.example", ["activate": false])
            let group = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [x, y]]).id
            let names = [p: "p", a: "a", x: "x", y: "y", z: "z"]
            #expect(try api.layout(window, names: names) == "p | a* x y z")
            #expect(try api.get("/v1/groups/\(group)")["start"] as? Int == 2)
            // Closing a (active) activates its first child x.
            _ = try api.send("DELETE", "/v1/tabs/\(a)")
            #expect(try api.layout(window, names: names) == "p | x* y z")
            // Closing x (opener gone): its group's nearest survivor, y.
            _ = try api.send("DELETE", "/v1/tabs/\(x)")
            #expect(try api.layout(window, names: names) == "p | y* z")
            _ = try api.send("DELETE", "/v1/tabs/\(y)")
            #expect(try api.layout(window, names: names) == "p | z*")
            #expect(try api.get("/v1/groups/\(group)").status == 404)
            _ = try api.send("DELETE", "/v1/tabs/\(z)")
            #expect(try api.layout(window, names: names) == "p* |")
        }
    }
}
