import BrowserdApp
import FirefoxSession
import Foundation
import MiniHTTPClient
import TestSupport
import Testing

/// `POST /v1/profiles/import?format=firefox`: sessions written by the real Firefox (the fixtures of
/// `tests/fixtures/firefox`, made by its `make_fixtures.py`) read back as Firefox holds them; every
/// malformed file is a 4xx that leaves nothing behind; an acknowledged import survives `kill -9`.
///
/// The expectations are written from each fixture's JSON (`*.json` beside it), not from an answer.
@Suite(.serialized, .offThePool) struct FirefoxImportTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("tests/fixtures/firefox")

    static func fixture(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: fixtures.appendingPathComponent("\(name).jsonlz4")))
    }

    static func json(_ reply: APIClient.Reply) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any] ?? [:]
    }

    static func post(_ api: APIClient, _ body: [UInt8], type: String = "application/octet-stream", query: String = "") throws -> APIClient.Reply {
        try api.send("POST", "/v1/profiles/import?format=firefox\(query)", raw: body, contentType: type)
    }

    /// A tab as the test states it: its history's URLs (after the base), titles, current index, pinned, group title.
    struct Tab: Equatable, CustomStringConvertible {
        var urls: [String]
        var titles: [String]
        var current: Int
        var pinned = false
        var group: String?
        var description: String { "\(urls) \(titles) @\(current)\(pinned ? " pinned" : "")\(group.map { " in \($0)" } ?? "")" }
    }

    struct Group: Equatable {
        var title: String
        var color: String
        var collapsed: Bool
    }

    /// What the API holds of one window: its tabs, the active index, its groups in order.
    static func window(_ api: APIClient, _ id: String, base: String) throws -> (tabs: [Tab], active: Int, groups: [Group]) {
        let window = json(try api.get("/v1/browsers/\(id)"))
        let groups = (window["groups"] as? [[String: Any]] ?? [])
        let titles = Dictionary(groups.map { ($0["id"] as? String ?? "", $0["title"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        var tabs: [Tab] = []
        for tab in window["tabs"] as? [[String: Any]] ?? [] {
            let history = json(try api.get("/v1/tabs/\(tab["id"] as? String ?? "")/history"))
            let entries = history["entries"] as? [[String: Any]] ?? []
            tabs.append(
                Tab(
                    urls: entries.map { ($0["url"] as? String ?? "").replacingOccurrences(of: base, with: "") },
                    titles: entries.map { $0["title"] as? String ?? "" }, current: history["currentIndex"] as? Int ?? -2,
                    pinned: tab["pinned"] as? Bool ?? false, group: (tab["groupId"] as? String).flatMap { titles[$0] }))
        }
        return (
            tabs, window["activeIndex"] as? Int ?? -2,
            groups.map { Group(title: $0["title"] as? String ?? "", color: $0["color"] as? String ?? "", collapsed: $0["collapsed"] as? Bool ?? false) }
        )
    }

    static func one(_ name: String, _ current: Int = 0, titles: [String]? = nil, pinned: Bool = false, group: String? = nil) -> Tab {
        Tab(urls: ["/" + name], titles: titles ?? [name.replacingOccurrences(of: "/", with: " ")], current: current, pinned: pinned, group: group)
    }

    @Test func severalWindowsReadBackAsFirefoxHoldsThem() async throws {
        // From several-windows.json: windows[0] (selected 3), windows[1] (selected 2), one closed window,
        // two closed tabs of windows[0], groups "Work" (blue) and "Later" (gray, collapsed).
        let base = "http://127.0.0.1:40785"
        try await withApplication { app in
            let api = try APIClient(app)
            let reply = try Self.post(api, try Self.fixture("several-windows"), query: "&name=Laptop")
            #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
            let answer = Self.json(reply)
            let profile = (answer["profile"] as? [String: Any])?["id"] as? String ?? ""
            #expect((answer["profile"] as? [String: Any])?["name"] as? String == "Laptop")
            #expect(reply.header("location") == "/v1/profiles/\(profile)")
            #expect(answer["tabCount"] as? Int == 11 && answer["closedCount"] as? Int == 3)
            #expect((answer["warnings"] as? [Any])?.isEmpty == true, "\(answer["warnings"] ?? "")")
            let windows = answer["windowIds"] as? [String] ?? []
            #expect(windows.count == 2)
            guard windows.count == 2 else { return }

            let first = try Self.window(api, windows[0], base: base)
            #expect(
                first.tabs == [
                    Self.one("alpha", pinned: true), Self.one("bravo", pinned: true),
                    Tab(urls: ["/charlie", "/charlie/two", "/charlie/three"], titles: ["charlie", "charlie two", "charlie three"], current: 1),
                    Self.one("delta", group: "Work"), Self.one("echo", group: "Work"),
                    Self.one("golf", group: "Later"), Self.one("hotel", group: "Later"), Self.one("papa"),
                ])
            #expect(first.active == 2, "selected 3: charlie")
            #expect(first.groups == [Group(title: "Work", color: "blue", collapsed: false), Group(title: "Later", color: "grey", collapsed: true)])

            let second = try Self.window(api, windows[1], base: base)
            #expect(second.tabs == [Self.one("juliet"), Self.one("kilo"), Self.one("lima")])
            #expect(second.active == 1, "selected 2: kilo")

            // Newest first: the closed window (mike, november), then foxtrot, then india.
            let closed = Self.json(try api.get("/v1/profiles/\(profile)/recently-closed"))["items"] as? [[String: Any]] ?? []
            #expect(closed.map { $0["kind"] as? String } == ["window", "tab", "tab"])
            #expect(closed.map { ($0["url"] as? String ?? "").replacingOccurrences(of: base, with: "") } == ["/mike", "/foxtrot", "/india"])
            let closedWindow = closed.first?["tabs"] as? [[String: Any]] ?? []
            #expect(closedWindow.map { ($0["url"] as? String ?? "").replacingOccurrences(of: base, with: "") } == ["/mike", "/november/two"])
            #expect(closedWindow.map { $0["wasActive"] as? Bool } == [true, false])
            #expect(closed.dropFirst().first?["index"] as? Int == 5, "foxtrot was at pos 5")

            // The export shows all of it: both windows with every tab and its history, the three entries.
            let export = Self.json(try api.get("/v1/profiles/\(profile)/export"))
            let exported = export["windows"] as? [[String: Any]] ?? []
            #expect(exported.map { ($0["tabs"] as? [Any])?.count } == [8, 3])
            let charlie = (exported.first?["tabs"] as? [[String: Any]] ?? [])[2]
            #expect((charlie["history"] as? [Any])?.count == 3 && charlie["historyIndex"] as? Int == 1)
            #expect((export["recentlyClosed"] as? [Any])?.count == 3)

            // Restoring the closed window brings november back with its history (current: november/two).
            let restored = Self.json(try api.post("/v1/profiles/\(profile)/recently-closed/\(closed[0]["id"] as? String ?? "")/restore", [:]))
            let restoredWindow = restored["browserId"] as? String ?? ""
            let back = try Self.window(api, restoredWindow, base: base)
            #expect(back.tabs.map(\.urls) == [["/mike"], ["/november", "/november/two"]] && back.tabs.last?.current == 1)
        }
    }

    @Test func oddTabsFollowTheDocumentedChoices() async throws {
        // From odd-tabs.json: one window (selected 2), a five-entry history on its third entry, a
        // container tab, about:robots before a page, a hidden tab, a closed tab that was pinned.
        let base = "http://127.0.0.1:46075"
        try await withApplication { app in
            let api = try APIClient(app)
            let reply = try Self.post(api, try Self.fixture("odd-tabs"))
            #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
            let answer = Self.json(reply)
            let warnings = (answer["warnings"] as? [[String: Any]] ?? []).map { $0["at"] as? String ?? "" }
            #expect(warnings == ["windows[0].tabs[1]", "windows[0].tabs[2].entries[0]", "windows[0].tabs[3]"])
            #expect((answer["profile"] as? [String: Any])?["name"] as? String == "Firefox session")
            let windows = answer["windowIds"] as? [String] ?? []
            guard let id = windows.first else {
                Issue.record("no window")
                return
            }
            let window = try Self.window(api, id, base: base)
            #expect(
                window.tabs == [
                    Tab(urls: ["/one", "/one/a", "/one/b", "/one/c", "/one/d"], titles: ["one", "one a", "one b", "one c", "one d"], current: 2),
                    Self.one("work"), Self.one("after-robots"), Self.one("hidden"),
                ])
            #expect(window.active == 1)
            let profile = (answer["profile"] as? [String: Any])?["id"] as? String ?? ""
            let closed = Self.json(try api.get("/v1/profiles/\(profile)/recently-closed"))["items"] as? [[String: Any]] ?? []
            #expect(closed.count == 1 && closed.first?["wasPinned"] as? Bool == true)
            #expect((closed.first?["url"] as? String)?.hasSuffix("/was-pinned") == true)
        }
    }

    @Test func theDecodedJSONImportsAsTheFileDoes() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let json = try MozLz4.decode(try Self.fixture("odd-tabs"), limit: 1 << 20)
            let reply = try Self.post(api, json, type: "application/json")
            #expect(reply.status == 201)
            #expect((Self.json(reply)["tabCount"] as? Int) == 4)
        }
    }

    @Test func malformedFilesAreRefusedAndLeaveNothing() async throws {
        try await withApplication({ $0.maxImportBytes = 1 << 20 }) { app in
            let api = try APIClient(app)
            let directory = try SSEClient(app, "/v1/events")
            defer { directory.close() }
            _ = try directory.until("profiles.populate")
            let good = try Self.fixture("odd-tabs")
            func refused(_ body: [UInt8], type: String = "application/octet-stream", query: String = "") throws -> (Int, String, String) {
                let reply = try Self.post(api, body, type: type, query: query)
                return (reply.status, reply.problemType ?? "", Self.json(reply)["detail"] as? String ?? "")
            }
            var magic = good
            magic[0] = UInt8(ascii: "M")
            var (status, type, detail) = try refused(magic)
            #expect(status == 422 && type == "/problems/invalid-session-file" && detail.contains("mozLz4 magic"))
            (status, type, detail) = try refused(Array(good.prefix(good.count / 2)))
            #expect(status == 422 && detail.contains("LZ4 block"), "\(detail)")
            var huge = good
            huge.replaceSubrange(8..<12, with: [0, 0, 0, 0xF0])  // claims 4 GB
            (status, type, detail) = try refused(huge)
            #expect(status == 413 && type == "/problems/session-too-large" && detail.contains("claims 4026531840"))
            (status, type, detail) = try refused(MozLz4.encode(Array(#"{"windows": {"tabs": []}}"#.utf8)))
            #expect(status == 422 && detail.contains("windows: is object, not an array"))
            (status, type, detail) = try refused(MozLz4.encode(Array(#"{"windows": [}"#.utf8)))
            #expect(status == 422 && detail.contains("not JSON") && detail.contains("at byte 13"), "\(detail)")
            (status, _, _) = try refused(good, type: "text/plain")
            #expect(status == 415)
            (status, _, detail) = try refused(good, query: "&name=%20")
            #expect(status == 422 && detail.contains("'name'"))
            let unknownFormat = try api.send("POST", "/v1/profiles/import?format=chrome", raw: good, contentType: "application/octet-stream")
            #expect(unknownFormat.status == 422)
            // Nothing was made: no profile, no event.
            #expect((Self.json(try api.get("/v1/profiles"))["items"] as? [Any])?.isEmpty == true)
            #expect(try api.post("/v1/profiles", ["name": "after"]).status == 201)
            #expect(try directory.until("profiles.add").map(\.name) == ["profiles.add"], "the first event after the refusals is this one")
        }
    }

    @Test func theProfilesByteBudgetApplies() async throws {
        try await withApplication({ $0.modelLimits.profileBytes = 64 * 1024 }) { app in
            let api = try APIClient(app)
            let entries = (0..<40).map { #"{"url":"https://e.example/\#($0)/\#(String(repeating: "x", count: 2_000))","title":"t"}"# }
            let session = #"{"windows":[{"tabs":[{"entries":[\#(entries.joined(separator: ","))],"index":40}],"selected":1}]}"#
            let reply = try Self.post(api, MozLz4.encode(Array(session.utf8)))
            #expect(reply.status == 507 && reply.problemType == "/problems/profile-storage-full")
            #expect((Self.json(try api.get("/v1/profiles"))["items"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func aGroupSplitByAnotherTabIsImportedWholeWithAWarning() async throws {
        let session = #"""
            {"windows":[{"tabs":[
              {"entries":[{"url":"https://a.example/","title":"a"}],"index":1,"groupId":"g"},
              {"entries":[{"url":"https://b.example/","title":"b"}],"index":1},
              {"entries":[{"url":"https://c.example/","title":"c"}],"index":1,"groupId":"g"}],
              "groups":[{"id":"g","name":"Split","color":"purple","collapsed":false}],"selected":1}]}
            """#
        try await withApplication { app in
            let api = try APIClient(app)
            let reply = try Self.post(api, MozLz4.encode(Array(session.utf8)))
            #expect(reply.status == 201)
            let answer = Self.json(reply)
            let warnings = answer["warnings"] as? [[String: Any]] ?? []
            #expect(warnings.map { $0["at"] as? String } == ["windows[0].groups[0]"])
            #expect((warnings.first?["detail"] as? String)?.contains("moved next to its first tab") == true)
            let window = try Self.window(api, (answer["windowIds"] as? [String] ?? [""])[0], base: "https://")
            #expect(window.tabs.map(\.urls) == [["a.example/"], ["c.example/"], ["b.example/"]])
            #expect(window.tabs.map(\.group) == ["Split", "Split", nil])
        }
    }

    @Test func theImportIsAnnouncedOnTheDirectoryStream() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let directory = try SSEClient(app, "/v1/events")
            defer { directory.close() }
            _ = try directory.until("profiles.populate")
            let reply = try Self.post(api, try Self.fixture("several-windows"))
            let id = (Self.json(reply)["profile"] as? [String: Any])?["id"] as? String
            let added = try directory.until("profiles.add")
            let profile = added.last?.json["profile"] as? [String: Any]
            #expect(profile?["id"] as? String == id && profile?["windowCount"] as? Int == 2)
            // Its windows stream to whoever watches the profile (it loads on that first use).
            let windows = try SSEClient(app, "/v1/events?profileId=\(id ?? "")")
            defer { windows.close() }
            let populate = try windows.until("browsers.populate").last?.json
            let listed = (populate?["browsers"] as? [[String: Any]] ?? populate?["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            #expect(Set(listed) == Set(Self.json(reply)["windowIds"] as? [String] ?? ["?"]), "\(populate ?? [:])")
        }
    }

    @Test func anAcknowledgedImportSurvivesKillDashNine() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-firefox-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let killed = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let port = try killed.waitForPort()
        let body = try Self.fixture("several-windows")
        let answer = try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
            return try api.request(
                "POST", "/v1/profiles/import?format=firefox", headers: [("Content-Type", "application/octet-stream")], body: body)
        }
        #expect(answer.status == 201)
        killed.signal(SIGKILL)
        _ = killed.waitForExit()
        let windows = (try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])?["windowIds"] as? [String] ?? []
        let server = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let again = try server.waitForPort()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: again)
            for id in windows {
                let window = crashJSON(try api.request("GET", "/v1/browsers/\(id)"))
                #expect((window["tabs"] as? [Any])?.count == (id == windows.first ? 8 : 3))
            }
        }
    }
}
