import BrowserServices
import Foundation
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

@testable import BrowserdApp

/// Coordinators, routes, navigators, the incognito lock and the action log, through the API.
@Suite(.offThePool) struct PresentationTests {
    private func changes(_ reply: APIClient.Reply) -> [String] {
        (reply["changes"] as? [[String: Any]] ?? []).map { "\($0["op"] as? String ?? "") \($0["kind"] as? String ?? "")" }
    }

    private func modal(_ tree: [String: Any]) -> [String: Any]? {
        (tree["children"] as? [[String: Any]] ?? []).first { !["content", "ntp", "toolbar", "locationBar"].contains($0["kind"] as? String ?? "") }
    }

    private func route(_ api: APIClient, _ window: String, _ url: String) throws -> APIClient.Reply {
        try api.post("/v1/browsers/\(window)/route", ["url": url])
    }

    @Test func theTreeAlwaysHoldsContentToolbarAndLocationBar() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            var tree = try api.get("/v1/browsers/\(window)/ui").json
            #expect(tree["kind"] as? String == "browser")
            #expect((tree["children"] as? [[String: Any]])?.map { $0["kind"] as? String } == ["content", "toolbar", "locationBar"])
            #expect((tree["navigator"] as? [String])?.contains("showTabGrid") == true)
            // The content node is the new-tab page while the active tab shows it.
            let tab = try api.post("/v1/browsers/\(window)/commands/openNewTab", ["args": [:]])
            #expect(tab.status == 200)
            tree = try api.get("/v1/browsers/\(window)/ui").json
            let content = (tree["children"] as? [[String: Any]])?.first
            #expect(content?["kind"] as? String == "ntp")
            _ = try api.post("/v1/browsers/\(window)/commands/loadURL", ["args": ["url": "https://a.example/"]])
            tree = try api.get("/v1/browsers/\(window)/ui").json
            #expect((tree["children"] as? [[String: Any]])?.first?["kind"] as? String == "content")
        }
    }

    @Test func settingsPrivacyFromEveryStartingState() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            _ = try api.tab(window)
            // From the plain browser: settings presented, privacy pushed.
            var reply = try route(api, window, "browserd://settings/privacy")
            #expect(reply.status == 200)
            #expect(changes(reply) == ["presented settings", "pushed settings.page"])
            let settings = try #require(modal(reply["tree"] as? [String: Any] ?? [:]))
            #expect((settings["children"] as? [[String: Any]])?.map { ($0["params"] as? [String: String])?["section"] } == ["privacy"])
            // From settings/privacy: nothing changes, and the ui stream says nothing.
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events?topics=ui")
            _ = try stream.until("ui.tree")
            let quiet = try SSEClient(app, "/v1/browsers/\(window)/events?topics=ui", timeout: .milliseconds(400))
            _ = try quiet.until("ui.tree")
            reply = try route(api, window, "browserd://settings/privacy")
            #expect(reply.status == 200 && changes(reply).isEmpty)
            #expect(quiet.isQuiet(for: .milliseconds(300)))
            // From settings root: only privacy pushed.
            reply = try route(api, window, "browserd://settings")
            #expect(changes(reply) == ["popped settings.page"])
            reply = try route(api, window, "browserd://settings/privacy")
            #expect(changes(reply) == ["pushed settings.page"])
            // From the tab grid: the grid dismissed first, then settings and privacy.
            reply = try route(api, window, "browserd://tab-grid?page=regular")
            #expect(changes(reply) == ["dismissed settings", "presented tabGrid"])
            reply = try route(api, window, "browserd://settings/privacy")
            #expect(changes(reply) == ["dismissed tabGrid", "presented settings", "pushed settings.page"])
            // The ui stream carried the same changes, in order.
            let names = try stream.take(7).map(\.name)
            #expect(names == ["ui.popped", "ui.pushed", "ui.dismissed", "ui.presented", "ui.dismissed", "ui.presented", "ui.pushed"])
        }
    }

    @Test func tabRouteFromSettingsDismissesThenActivates() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let first = try api.tab(window, "https://a.example/")
            _ = try api.tab(window, "https://b.example/")
            _ = try route(api, window, "browserd://settings/privacy")
            let reply = try route(api, window, "browserd://tab/\(first)")
            #expect(reply.status == 200)
            #expect(changes(reply) == ["dismissed settings", "changed content"])
            #expect(try api.get("/v1/browsers/\(window)")["activeIndex"] as? Int == 0)
            let content = ((reply["tree"] as? [String: Any])?["children"] as? [[String: Any]])?.first
            #expect((content?["params"] as? [String: String])?["tabId"] == first)
            // Already there: nothing.
            #expect(changes(try route(api, window, "browserd://tab/\(first)")).isEmpty)
            // A tab of no window, and unknown routes, are refused with nothing changed.
            #expect(try route(api, window, "browserd://tab/tnope").problemType == "/problems/route-not-handled")
            for bad in [
                "browserd://nowhere", "browserd://settings/bogus", "browserd://tab-grid?page=x", "browserd://history?x=1",
                "https://example.com/", "browserd://open", "browserd://search?q=",
            ] {
                let refused = try route(api, window, bad)
                #expect(refused.status == 422, "\(bad)")
                #expect(refused.problemType == "/problems/invalid-route", "\(bad)")
            }
        }
    }

    @Test func openAndSearchRoutesGoThroughTheMediator() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            var reply = try route(api, window, "browserd://open?url=https%3A%2F%2Fo.example%2Fx&background=1")
            #expect(reply.status == 200)
            var tabs = try api.get("/v1/browsers/\(window)")["tabs"] as? [[String: Any]] ?? []
            #expect(tabs.map { $0["url"] as? String } == ["https://o.example/x"])
            reply = try route(api, window, "browserd://search?q=swift%20server")
            tabs = try api.get("/v1/browsers/\(window)")["tabs"] as? [[String: Any]] ?? []
            #expect((tabs.last?["url"] as? String)?.hasPrefix("https://www.google.com/search?q=swift") == true)
            // An incognito link from a regular window opens in the profile's incognito window.
            reply = try route(api, window, "browserd://open?url=https%3A%2F%2Fsecret.example%2F&incognito=1")
            #expect(reply.status == 200)
            let windows = try api.get("/v1/browsers")["items"] as? [[String: Any]] ?? []
            #expect(windows.contains { $0["incognito"] as? Bool == true })
        }
    }

    @Test func theIncognitoLockRefusesWithNothingChanged() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            _ = try api.tab(window)
            #expect(try api.post("/v1/profiles/\(profile)/incognito/lock")["incognitoLocked"] as? Bool == true)
            let treeBefore = try api.get("/v1/browsers/\(window)/ui").body
            let windowBefore = try api.get("/v1/browsers/\(window)").body
            for url in ["browserd://tab-grid?page=incognito", "browserd://open?url=https%3A%2F%2Fx.example&incognito=1"] {
                let refused = try route(api, window, url)
                #expect(refused.status == 423, "\(url)")
                #expect(refused.problemType == "/problems/interceptor-rejected")
            }
            let command = try api.post("/v1/browsers/\(window)/commands/showTabGrid", ["args": ["page": "incognito"]])
            #expect(command.status == 423)
            #expect(try api.post("/v1/browsers/\(window)/commands/openNewTab", ["args": ["incognito": true]]).status == 423)
            #expect(try api.get("/v1/browsers/\(window)/ui").body == treeBefore)
            #expect(try api.get("/v1/browsers/\(window)").body == windowBefore)
            #expect((try api.get("/v1/browsers")["items"] as? [[String: Any]] ?? []).allSatisfy { $0["incognito"] as? Bool == false })
            // Regular content is still allowed; unlocking lets incognito through again.
            #expect(try route(api, window, "browserd://tab-grid?page=regular").status == 200)
            #expect(try api.post("/v1/profiles/\(profile)/incognito/unlock")["incognitoLocked"] as? Bool == false)
            #expect(try route(api, window, "browserd://tab-grid?page=incognito").status == 200)
            // The lock takes the regular profile's id.
            let otr = try api.post("/v1/profiles/\(profile)/incognito").id
            #expect(try api.post("/v1/profiles/\(otr)/incognito/lock").status == 422)
            #expect(try api.post("/v1/profiles/pnope/incognito/lock").status == 404)
        }
    }

    @Test func navigatorsLimitWhatEachScreenMaySend() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let tab = try api.tab(window)
            // Not registered while the grid is not shown.
            #expect(try api.post("/v1/browsers/\(window)/commands/hideTabGrid", ["args": [:]]).problemType == "/problems/command-not-found")
            let shown = try api.post("/v1/browsers/\(window)/commands/showTabGrid", ["args": ["page": "regular"]])
            #expect(shown.status == 200)
            let result = shown["result"] as? [String: Any]
            #expect((result?["changes"] as? [[String: Any]])?.first?["op"] as? String == "presented")
            // The grid is top-most: it may not load a URL; the REST resource endpoints are not screens and still work.
            let refused = try api.post("/v1/browsers/\(window)/commands/loadURL", ["args": ["url": "https://x.example"]])
            #expect(refused.status == 409 && refused.problemType == "/problems/not-in-navigator")
            #expect(try api.post("/v1/tabs/\(tab)/navigate", ["url": "https://rest.example/"]).status == 200)
            // From the location bar node it may.
            #expect(try api.post("/v1/browsers/\(window)/commands/loadURL", ["args": ["url": "https://x.example"], "from": "u3"]).status == 200)
            #expect(try api.post("/v1/browsers/\(window)/commands/showSettings", ["args": [:], "from": "u3"]).status == 409)
            #expect(
                try api.post("/v1/browsers/\(window)/commands/loadURL", ["args": ["url": "https://x.example"], "from": "u999"]).problemType
                    == "/problems/node-not-presented")
            // hideTabGrid is registered while the grid is shown, and unregistered when it goes.
            #expect(try api.post("/v1/browsers/\(window)/commands/hideTabGrid", ["args": [:]]).status == 200)
            #expect(try api.post("/v1/browsers/\(window)/commands/hideTabGrid", ["args": [:]]).status == 404)
            let names = (try api.get("/v1/browsers/\(window)/commands")["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            #expect(names.contains("showTabGrid") && names.contains("route") && !names.contains("hideTabGrid"))
        }
    }

    @Test func aShareSheetIsClosedOnlyByItsUser() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let tab = try api.tab(window)
            let shared = try api.post("/v1/browsers/\(window)/commands/share", ["args": ["tabId": tab]])
            #expect(shared.status == 200)
            let node = (((shared["result"] as? [String: Any])?["changes"] as? [[String: Any]])?.first?["nodeId"] as? String) ?? ""
            let refused = try route(api, window, "browserd://settings")
            #expect(refused.status == 409 && refused.problemType == "/problems/cannot-be-dismissed")
            #expect(try api.post("/v1/browsers/\(window)/commands/dismissModal", ["args": [:], "from": node]).status == 200)
            #expect(try route(api, window, "browserd://settings").status == 200)
        }
    }

    @Test func theActionLogAndStreamsRecordASequenceExactly() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events?topics=ui,actions")
            _ = try stream.until("ui.tree")
            let tab = try api.tab(window, "https://a.example/path?secret=1")
            _ = try route(api, window, "browserd://tab-grid")
            _ = try api.post("/v1/browsers/\(window)/commands/hideTabGrid", ["args": [:]])
            _ = try api.post("/v1/browsers/\(window)/commands/focusOmnibox", ["args": [:]])
            _ = try route(api, window, "browserd://tab/tmissing")
            let log = try api.get("/v1/browsers/\(window)/actions").json
            let items = log["items"] as? [[String: Any]] ?? []
            // In the order they finished: dismissModal, sent by hideTabGrid's handler, comes first.
            #expect(items.map { $0["name"] as? String ?? "" } == ["tabs.open", "route", "dismissModal", "hideTabGrid", "focusOmnibox", "route"])
            #expect(items.map { $0["result"] as? String ?? "" } == ["ok", "ok", "ok", "ok", "ok", "notHandled"])
            let opened = items.first?["arguments"] as? [String: String] ?? [:]
            #expect(opened["url"] == "https://a.example/path", "URLs are shortened: \(opened)")
            #expect(!(String(decoding: try api.get("/v1/browsers/\(window)/actions").body, as: UTF8.self)).contains("secret"))
            #expect(items.map { $0["seq"] as? Int ?? 0 } == [1, 2, 3, 4, 5, 6])
            // Paging.
            let page = try api.get("/v1/browsers/\(window)/actions?after=4&limit=1").json
            #expect((page["items"] as? [[String: Any]])?.map { $0["seq"] as? Int } == [5])
            #expect(page["nextAfter"] as? Int == 5)
            #expect(try api.get("/v1/browsers/\(window)/actions?after=-1").status == 400)
            // The streams carried the same actions, and the tree's changes.
            let events = try stream.take(10)
            let appended = events.filter { $0.name == "actions.append" }.map { ($0.json["action"] as? [String: Any])?["name"] as? String ?? "" }
            #expect(appended == ["tabs.open", "route", "dismissModal", "hideTabGrid", "focusOmnibox", "route"])
            let ui = events.filter { $0.name.hasPrefix("ui.") }.map(\.name)
            #expect(ui == ["ui.changed", "ui.presented", "ui.dismissed", "ui.changed"], "\(ui)")
            _ = tab
            // Metrics count actions by name and result.
            let metrics = String(decoding: try app.get("/metrics").body, as: UTF8.self)
            #expect(metrics.contains("browserd_actions_total{name=\"route\",result=\"error\"} 1"))
            #expect(metrics.contains("browserd_actions_total{name=\"route\",result=\"ok\"} 1"))
        }
    }

    @Test func incognitoWindowsLogNamesAndResultsOnly() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let otr = try api.post("/v1/profiles/\(profile)/incognito").id
            let window = try api.window(otr)
            _ = try api.tab(window, "https://private.example/")
            let items = try api.get("/v1/browsers/\(window)/actions")["items"] as? [[String: Any]] ?? []
            #expect(items.map { $0["name"] as? String } == ["tabs.open"])
            #expect((items.first?["arguments"] as? [String: Any])?.isEmpty == true)
            #expect(!String(decoding: try api.get("/v1/browsers/\(window)/actions").body, as: UTF8.self).contains("private"))
        }
    }

    @Test func aRouteDuringRestoreIsSavedAndFollowedOnceReady() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-saved-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let window = try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            _ = try api.tab(window)
            return window
        }
        var configuration = BrowserdConfiguration(server: .init(host: "127.0.0.1", port: 0, threads: 2), dataDirectory: data)
        configuration.server.shutdownGracePeriod = .seconds(2)
        let app = Application(configuration: configuration, logger: .init(label: "t"))
        let release = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let waiting = Mutex(false)
        app.restoreGate.withLock {
            $0 = {
                await withCheckedContinuation { continuation in
                    release.withLock { $0 = continuation }
                    waiting.withLock { $0 = true }
                }
            }
        }
        let starting = Task { try await app.start() }
        while !waiting.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        let replies = try await blocking { () -> (Int, Int, Int) in
            let api = try APIClient(app)
            let older = try api.post("/v1/browsers/\(window)/route", ["url": "browserd://history"])
            let newer = try api.post("/v1/browsers/\(window)/route", ["url": "browserd://settings/privacy"])
            let bad = try api.post("/v1/browsers/\(window)/route", ["url": "browserd://nowhere"])
            #expect(newer["savedRouteId"] as? String != nil)
            return (older.status, newer.status, bad.status)
        }
        #expect(replies.0 == 202 && replies.1 == 202 && replies.2 == 422)
        release.withLock { $0?.resume() }
        try await starting.value
        try await blocking {
            let api = try APIClient(app)
            let tree = try api.get("/v1/browsers/\(window)/ui").json
            let modal = (tree["children"] as? [[String: Any]] ?? []).last
            #expect(modal?["kind"] as? String == "settings", "the newer saved route ran")
            let items = try api.get("/v1/browsers/\(window)/actions")["items"] as? [[String: Any]] ?? []
            #expect(items.map { $0["name"] as? String } == ["route"])
            #expect((items.first?["arguments"] as? [String: String])?["route"] == "browserd://settings/privacy")
        }
        await app.shutdown()
    }
}
