import BrowserdApp
import Foundation
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

/// Restart round trip and crash safety with real files and real processes.
@Suite(.serialized, .offThePool) struct PersistenceTests {
    /// Removes `volatile` keys (none today) and returns the JSON for field-by-field comparison.
    private func document(_ api: APIClient, _ path: String) throws -> NSDictionary {
        try api.get(path).json as NSDictionary
    }

    @Test func complexStateComesBackIdenticalAfterRestart() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-restart-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        struct Saved: Sendable {
            let windows: [String]
            let tabs: [String]
            let profiles: [String]
            let documents: [String: Data]
        }
        let saved: Saved = try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            var paths: [String] = []
            var windows: [String] = []
            var tabs: [String] = []
            var profiles: [String] = []
            for p in 0..<2 {
                let profile = try api.profile("P\(p)")
                profiles.append(profile)
                for _ in 0..<2 {
                    let window = try api.window(profile)
                    windows.append(window)
                    let pinned = try api.tab(window, "https://pinned.example", ["pinned": true, "activate": false])
                    let a = try api.tab(window, "https://a.example")
                    for step in 0..<60 { _ = try api.post("/v1/tabs/\(a)/navigate", ["url": "https://a.example/\(step)"]) }
                    _ = try api.post("/v1/tabs/\(a)/go", ["offset": -10])
                    let child = try api.tab(window, "https://child.example", ["openerTabId": a, "activate": false])
                    let other = try api.tab(window, "https://other.example", ["activate": false])
                    _ = try api.send("PATCH", "/v1/tabs/\(child)", ["title": "Child ✓", "loading": false, "faviconUrl": "https://child.example/f.ico"])
                    let group = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [child, other], "title": "Work", "color": "purple"]).id
                    _ = try api.send("PATCH", "/v1/groups/\(group)", ["collapsed": true])
                    let doomed = try api.tab(window, "https://closed.example", ["activate": false])
                    _ = try api.send("DELETE", "/v1/tabs/\(doomed)")
                    tabs += [pinned, a, child, other]
                    paths += ["/v1/browsers/\(window)", "/v1/tabs/\(a)/history", "/v1/tabs/\(child)"]
                }
                paths.append("/v1/profiles/\(profile)/recently-closed")
            }
            var documents: [String: Data] = [:]
            for path in paths { documents[path] = Data(try api.get(path).body) }
            return Saved(windows: windows, tabs: tabs, profiles: profiles, documents: documents)
        }
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            for (path, before) in saved.documents {
                let after = try api.get(path)
                #expect(after.status == 200, "\(path)")
                let old = try JSONSerialization.jsonObject(with: before) as? NSDictionary
                let new = try JSONSerialization.jsonObject(with: Data(after.body)) as? NSDictionary
                #expect(
                    old == new,
                    "\(path) differs after restart:\nbefore \(String(decoding: before, as: UTF8.self))\nafter  \(after.body.count) bytes \(String(decoding: after.body, as: UTF8.self))"
                )
            }
            #expect((try api.get("/v1/profiles")["items"] as? [Any])?.count == 2)
        }
    }

    @Test func longHistoriesKeepTheSaveWindowOf75() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-history-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let tab: String = try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let tab = try api.tab(try api.window(try api.profile()), "https://e.example/start")
            for step in 0..<80 { _ = try api.post("/v1/tabs/\(tab)/navigate", ["url": "https://e.example/\(step)"]) }
            _ = try api.post("/v1/tabs/\(tab)/go", ["offset": -10])  // 81 entries, current 70
            return tab
        }
        try await withApplication(dataDirectory: data) { app in
            let history = try APIClient(app).get("/v1/tabs/\(tab)/history")
            let entries = history["entries"] as? [[String: Any]] ?? []
            // offset = max(0, min(70 − 37, 81 − 75)) = 6: entries 6…80 are kept, current 70 − 6 = 64.
            #expect(entries.count == 75)
            #expect(history["currentIndex"] as? Int == 64)
            #expect(entries.first?["url"] as? String == "https://e.example/5")
        }
    }

    @Test func incognitoIsNeverWritten() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-incognito-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let marker = "incognito-marker-\(UUID().uuidString.lowercased())"
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            _ = try api.tab(try api.window(profile), "https://regular.example")
            let incognito = try api.post("/v1/profiles/\(profile)/incognito").id
            let window = try api.window(incognito)
            for i in 0..<50 {
                let tab = try api.tab(window, "https://\(marker).example/\(i)")
                // Answers of idempotent incognito requests (which carry the marker) are never stored either.
                let keyed = try api.send("PATCH", "/v1/tabs/\(tab)", ["title": marker], headers: [("Idempotency-Key", "\(marker)-\(i)")])
                #expect(keyed.status == 200)
                _ = try api.post(
                    "/v1/browsers/\(window)/tabs", ["url": "https://\(marker).example/k\(i)"],
                    headers: [("Idempotency-Key", "k-\(marker)-\(i)")])
                if i % 2 == 0 { _ = try api.send("DELETE", "/v1/tabs/\(tab)") }
            }
        }
        var found: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: data) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: data).appendingPathComponent(name))
            if bytes.range(of: Data(marker.utf8)) != nil { found.append(name) }
        }
        #expect(found.isEmpty, "marker found in \(found)")
    }

    /// Concurrent clients open, close and move tabs while the server is killed with SIGKILL at random
    /// moments and restarted: every acknowledged open is there afterwards, every acknowledged close is
    /// gone, and the window's invariants hold. Every open carries an `Idempotency-Key`; an open whose
    /// answer was lost is retried after the restart and must never make a second tab.
    /// `BROWSERD_CRASH_ROUNDS` sets the number of kills (CI: 6).
    /// Run on each store (SQLite, and PostgreSQL when the tests have a server).
    @Test(arguments: TestStore.available)
    func acknowledgedMutationsSurviveKillDashNine(_ store: TestStore) async throws {
        try await store.withArguments { try await crashTest(storeArguments: $0, store: store) }
    }

    private func crashTest(storeArguments: [String], store: TestStore) async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["BROWSERD_CRASH_ROUNDS"] ?? "") ?? 6
        let ledger = CrashLedger()
        var window = ""
        for round in 0...rounds {
            let server = try BrowserdProcess(arguments: ["--port", "0"] + storeArguments)
            let port = try server.waitForPort()
            if window.isEmpty {
                window = try await blocking {
                    let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
                    let profile =
                        try crashJSON(api.request("POST", "/v1/profiles", headers: crashJSONHeaders, body: Array(#"{"name":"crash"}"#.utf8)))["id"] as? String ?? ""
                    return try crashJSON(
                        api.request(
                            "POST", "/v1/browsers", headers: crashJSONHeaders,
                            body: Array("{\"profileId\":\"\(profile)\"}".utf8)))["id"] as? String ?? ""
                }
            }
            let target = window
            // Check what survived the previous kill; retry the opens whose answers were lost, with their keys.
            try await blocking {
                let retry = try HTTPClientConnection(host: "127.0.0.1", port: port)
                for (key, body) in ledger.takeUnanswered() {
                    let reply = try untilAvailable {
                        try retry.request(
                            "POST", "/v1/browsers/\(target)/tabs",
                            headers: crashJSONHeaders + [("Idempotency-Key", key)], body: Array(body.utf8))
                    }
                    #expect(reply.status == 201, "round \(round): retry of \(key) got \(reply.status)")
                    if let id = crashJSON(reply)["id"] as? String { ledger.open(id) }
                }
                let reader = try HTTPClientConnection(host: "127.0.0.1", port: port)
                let listing = try crashJSON(untilAvailable { try reader.request("GET", "/v1/browsers/\(target)") })
                let tabs = listing["tabs"] as? [[String: Any]] ?? []
                let present = Set(tabs.compactMap { $0["id"] as? String })
                // A close that was sent but not answered may or may not have happened.
                for id in ledger.opened where !ledger.closing.contains(id) {
                    #expect(present.contains(id), "round \(round): acknowledged tab \(id) lost")
                }
                for id in ledger.closed { #expect(!present.contains(id), "round \(round): acknowledged close of \(id) undone") }
                let active = listing["activeIndex"] as? Int ?? -2
                let pinned = listing["pinnedCount"] as? Int ?? -1
                #expect(active >= -1 && active < max(1, tabs.count), "round \(round): active index \(active)")
                #expect(pinned >= 0 && pinned <= tabs.count)
                #expect(tabs.enumerated().allSatisfy { ($0.element["index"] as? Int) == $0.offset })
                let urls = tabs.compactMap { $0["url"] as? String }
                #expect(Set(urls).count == urls.count, "round \(round): a retried open made a second tab")
            }
            if round == rounds {
                server.signal(SIGTERM)
                _ = server.waitForExit()
                break
            }
            // Mutate from four clients; kill at a random moment.
            let stop = Date().addingTimeInterval(Double.random(in: 0.15...0.6))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<4 {
                    group.addTask {
                        try await blocking {
                            guard let api = try? HTTPClientConnection(host: "127.0.0.1", port: port, timeout: .seconds(2)) else { return }
                            var mine: [String] = []
                            var i = 0
                            while Date() < stop {
                                i += 1
                                if i % 3 == 0, let victim = mine.popLast() {
                                    ledger.attemptClose(victim)
                                    guard let reply = try? api.request("DELETE", "/v1/tabs/\(victim)") else { return }
                                    if reply.status == 204 { ledger.close(victim) }
                                } else {
                                    let body = "{\"url\":\"https://crash.example/\(round)/\(client)/\(i)\",\"activate\":\(i % 2 == 0)}"
                                    let key = "open-\(round)-\(client)-\(i)"
                                    guard
                                        let reply = try? api.request(
                                            "POST", "/v1/browsers/\(target)/tabs",
                                            headers: crashJSONHeaders + [("Idempotency-Key", key)],
                                            body: Array(body.utf8))
                                    else {
                                        ledger.unanswered(key: key, body: body)
                                        return
                                    }
                                    if reply.status == 201, let id = crashJSON(reply)["id"] as? String {
                                        ledger.open(id)
                                        mine.append(id)
                                    }
                                }
                            }
                        }
                    }
                }
                group.addTask {
                    let wait = stop.timeIntervalSinceNow
                    if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000) - 20)) }
                    server.signal(SIGKILL)
                }
                try await group.waitForAll()
            }
            _ = server.waitForExit()
        }
        #expect(ledger.opened.count > rounds * 10)
        print(
            "crash test (\(store.rawValue)): \(rounds) SIGKILLs, \(ledger.opened.count) acknowledged opens, \(ledger.closed.count) acknowledged closes, \(ledger.retried) lost answers retried by key"
        )
    }
}

@Suite(.serialized, .offThePool) struct IdempotencyDurabilityTests {
    /// A keyed request answered 201 before a SIGKILL gets the same answer after the restart, and the
    /// tab exists once; the same key with another body is still refused.
    @Test func retryAfterKillDashNineGetsTheStoredAnswer() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-idem-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let killed = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let firstPort = try killed.waitForPort()
        let body = Array(#"{"url":"https://once.example/"}"#.utf8)
        let key = crashJSONHeaders + [("Idempotency-Key", "\"open-once\"")]
        let (window, first) = try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: firstPort)
            let profile = try crashJSON(api.request("POST", "/v1/profiles", headers: crashJSONHeaders, body: Array(#"{"name":"i"}"#.utf8)))["id"] as? String ?? ""
            let window =
                try crashJSON(
                    api.request(
                        "POST", "/v1/browsers", headers: crashJSONHeaders,
                        body: Array("{\"profileId\":\"\(profile)\"}".utf8)))["id"] as? String ?? ""
            let first = try api.request("POST", "/v1/browsers/\(window)/tabs", headers: key, body: body)
            return (window, first)
        }
        #expect(first.status == 201)
        killed.signal(SIGKILL)
        _ = killed.waitForExit()
        let server = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let port = try server.waitForPort()
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
            let retry = try api.request("POST", "/v1/browsers/\(window)/tabs", headers: key, body: body)
            #expect(retry.status == 201)
            #expect(retry.body == first.body)
            #expect(retry.headers.first { $0.name.lowercased() == "idempotent-replayed" }?.value == "true")
            #expect(
                retry.headers.first { $0.name.lowercased() == "location" }?.value
                    == first.headers.first { $0.name.lowercased() == "location" }?.value)
            let tabs = crashJSON(try api.request("GET", "/v1/browsers/\(window)"))["tabs"] as? [[String: Any]] ?? []
            #expect(tabs.count == 1)
            let other = try api.request(
                "POST", "/v1/browsers/\(window)/tabs", headers: key,
                body: Array(#"{"url":"https://twice.example/"}"#.utf8))
            #expect(other.status == 422)
        }
    }
}

/// Window and group entries and a pending close-all, acknowledged, then SIGKILL: after the restart the
/// window and group entries are there whole, and the close-all's tabs are recently closed (a close that
/// was acknowledged is never lost, even while it was still undoable).
@Suite(.serialized, .offThePool) struct ClosedEntryDurabilityTests {
    @Test(arguments: TestStore.available)
    func closedWindowsGroupsAndAPendingCloseAllSurviveKillDashNine(_ store: TestStore) async throws {
        try await store.withArguments { try await closedEntriesCrash(storeArguments: $0) }
    }

    private func closedEntriesCrash(storeArguments: [String]) async throws {
        let killed = try BrowserdProcess(arguments: ["--port", "0"] + storeArguments)
        let firstPort = try killed.waitForPort()
        let profile = try await blocking { () throws -> String in
            let api = try HTTPClientConnection(host: "127.0.0.1", port: firstPort)
            func post(_ path: String, _ body: String) throws -> [String: Any] {
                crashJSON(try api.request("POST", path, headers: crashJSONHeaders, body: Array(body.utf8)))
            }
            let profile = try post("/v1/profiles", #"{"name":"closed"}"#)["id"] as? String ?? ""
            func window(_ urls: [String]) throws -> (String, [String]) {
                let id = try post("/v1/browsers", "{\"profileId\":\"\(profile)\"}")["id"] as? String ?? ""
                return (id, try urls.map { try post("/v1/browsers/\(id)/tabs", "{\"url\":\"https://\($0).example/\"}")["id"] as? String ?? "" })
            }
            let (w1, _) = try window(["a", "b"])
            #expect(try api.request("DELETE", "/v1/browsers/\(w1)").status == 204)
            let (w2, tabs2) = try window(["c", "d", "e"])
            let group = try post("/v1/browsers/\(w2)/groups", "{\"tabIds\":[\"\(tabs2[0])\",\"\(tabs2[1])\"],\"title\":\"Kept\",\"color\":\"purple\"}")
            #expect(try api.request("POST", "/v1/groups/\(group["id"] as? String ?? "")/close", headers: crashJSONHeaders).status == 200)
            let (w3, _) = try window(["f", "g"])
            let closing = try post("/v1/browsers/\(w3)/close-all", #"{"undoSeconds":600}"#)
            #expect(closing["state"] as? String == "pending")
            return profile
        }
        let (server, port) = try killed.crashAndRestart(arguments: ["--port", "0"] + storeArguments)
        defer { server.stop() }
        try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
            let listing = try untilAvailable { try api.request("GET", "/v1/profiles/\(profile)/recently-closed") }
            let entries = crashJSON(listing)["items"] as? [[String: Any]] ?? []
            #expect(entries.map { $0["kind"] as? String ?? "" } == ["tab", "tab", "group", "window"])
            #expect(entries.map { $0["url"] as? String ?? "" } == ["https://f.example/", "https://g.example/", "https://c.example/", "https://b.example/"])
            let group = entries[2]["group"] as? [String: Any]
            #expect(group?["title"] as? String == "Kept" && group?["color"] as? String == "purple" && entries[2]["tabCount"] as? Int == 2)
            #expect(entries[3]["tabCount"] as? Int == 2)
            let restored = crashJSON(
                try api.request(
                    "POST", "/v1/profiles/\(profile)/recently-closed/\(entries[3]["id"] as? String ?? "")/restore",
                    headers: crashJSONHeaders))
            let window = crashJSON(try api.request("GET", "/v1/browsers/\(restored["browserId"] as? String ?? "")"))
            #expect((window["tabs"] as? [[String: Any]])?.map { $0["url"] as? String ?? "" } == ["https://a.example/", "https://b.example/"])
        }
    }
}

/// What the crash test's clients got acknowledged.
final class CrashLedger: Sendable {
    private let state = Mutex<(opened: [String], closing: Set<String>, closed: Set<String>, unanswered: [(String, String)])>(([], [], [], []))
    func open(_ id: String) { state.withLock { $0.opened.append(id) } }
    func attemptClose(_ id: String) { state.withLock { _ = $0.closing.insert(id) } }
    func close(_ id: String) { state.withLock { _ = $0.closed.insert(id) } }
    func unanswered(key: String, body: String) { state.withLock { $0.unanswered.append((key, body)) } }
    private let retries = Mutex(0)
    var retried: Int { retries.withLock { $0 } }
    func takeUnanswered() -> [(key: String, body: String)] {
        retries.withLock { $0 += state.withLock { $0.unanswered.count } }
        return state.withLock { state in
            defer { state.unanswered = [] }
            return state.unanswered.map { (key: $0.0, body: $0.1) }
        }
    }
    var opened: [String] { state.withLock { $0.opened } }
    var closing: Set<String> { state.withLock { $0.closing } }
    var closed: Set<String> { state.withLock { $0.closed } }
}

let crashJSONHeaders = [("Content-Type", "application/json")]

/// What a client does with a 503 and its `Retry-After`: asks again, here for up to 15 s (on
/// PostgreSQL, a restarted instance first takes the profile over from its previous run).
func untilAvailable(_ request: () throws -> HTTPClientConnection.Response) throws -> HTTPClientConnection.Response {
    var reply = try request()
    for _ in 0..<60 where reply.status == 503 {
        usleep(250_000)
        reply = try request()
    }
    return reply
}

func crashJSON(_ response: HTTPClientConnection.Response) -> [String: Any] {
    ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]) ?? [:]
}

@Suite(.offThePool) struct BackupTests {
    @Test func adminBackupWritesAConsistentCopy() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            _ = try api.tab(try api.window(try api.profile()), "https://backup.example")
            let reply = try api.post("/v1/admin/backup")
            #expect(reply.status == 201)
            let path = try #require(reply["path"] as? String)
            #expect((reply["bytes"] as? Int ?? 0) > 0)
            let copy = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(copy.range(of: Data("https://backup.example/".utf8)) != nil)
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}

@Suite(.serialized, .offThePool) struct StorageFaultTests {
    /// A file-size limit makes commits fail: answers are 503, nothing crashes, readiness says why; once
    /// the limit is lifted the state is written again and every acknowledged change survives a crash.
    @Test func fullDiskGives503AndRecovers() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-full-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let port = try server.waitForPort()
        func prlimit(_ value: String) throws { try server.limitFileSize(value) }
        let (acknowledged, window): ([String], String) = try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
            func post(_ path: String, _ json: String) throws -> HTTPClientConnection.Response {
                try api.request("POST", path, headers: [("Content-Type", "application/json")], body: Array(json.utf8))
            }
            func id(_ r: HTTPClientConnection.Response) -> String {
                ((try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any])?["id"] as? String ?? ""
            }
            let profile = id(try post("/v1/profiles", #"{"name":"full"}"#))
            let window = id(try post("/v1/browsers", "{\"profileId\":\"\(profile)\"}"))
            return ([], window)
        }
        // Cap files at their current size plus a little: the WAL soon cannot grow.
        let sizes = try FileManager.default.contentsOfDirectory(atPath: data).compactMap {
            try FileManager.default.attributesOfItem(atPath: data + "/" + $0)[.size] as? Int
        }
        try prlimit(String((sizes.max() ?? 0) + 64 * 1024) + ":unlimited")  // soft only: it can be raised again
        let outcome: ([String], Bool, Bool) = try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
            var acked = acknowledged
            var saw503 = false
            for i in 0..<400 {
                let reply = try api.request(
                    "POST", "/v1/browsers/\(window)/tabs", headers: [("Content-Type", "application/json")],
                    body: Array("{\"url\":\"https://full.example/\(i)/\(String(repeating: "x", count: 2000))\"}".utf8))
                if reply.status == 201 {
                    acked.append(((try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any])?["id"] as? String ?? "")
                } else {
                    #expect(reply.status == 503, "\(reply.status)")
                    saw503 = true
                    break
                }
            }
            // A refused write blocks readiness; the recovery's probe (at once) may still fit in the
            // last free page and clear it, and the next write be refused again. Each probe that fits
            // takes that room, so within a few writes nothing fits and /readyz stays 503.
            var ready = try api.request("GET", "/readyz")
            var refused = try api.request(
                "POST", "/v1/browsers/\(window)/tabs", headers: [("Content-Type", "application/json")],
                body: Array(#"{"url":"https://refused.example"}"#.utf8))
            for attempt in 0..<20 where !(ready.status == 503 && ready.text.contains("storage")) || refused.status != 503 {
                if refused.status == 201 {
                    acked.append(((try? JSONSerialization.jsonObject(with: Data(refused.body))) as? [String: Any])?["id"] as? String ?? "")
                }
                refused = try api.request(
                    "POST", "/v1/browsers/\(window)/tabs", headers: [("Content-Type", "application/json")],
                    body: Array("{\"url\":\"https://refused.example/\(attempt)\"}".utf8))
                ready = try api.request("GET", "/readyz")
            }
            #expect(ready.status == 503 && ready.text.contains("storage"))
            #expect(refused.status == 503)
            #expect(try api.request("GET", "/v1/browsers/\(window)").status == 200)
            return (acked, saw503, refused.status == 503)
        }
        #expect(outcome.1)
        try prlimit("unlimited:unlimited")
        let recovered = try await blocking { server.waitUntilReady(port: port, within: 10) }
        #expect(recovered, "log:\n\(server.log.suffix(3000))")
        server.signal(SIGKILL)
        _ = server.waitForExit()
        let again = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let againPort = try again.waitForPort()
        try await blocking {
            let listing = try HTTPClientConnection(host: "127.0.0.1", port: againPort).request("GET", "/v1/browsers/\(window)/tabs")
            let present = Set(
                (((try? JSONSerialization.jsonObject(with: Data(listing.body))) as? [String: Any])?["items"] as? [[String: Any]] ?? [])
                    .compactMap { $0["id"] as? String })
            for tab in outcome.0 { #expect(present.contains(tab), "acknowledged tab \(tab) lost") }
        }
        again.signal(SIGTERM)
        #expect(again.waitForExit() == 0)
    }
}

@Suite(.offThePool) struct TokenPersistenceTests {
    @Test func issuedAndRevokedTokensSurviveRestarts() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-tokens-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let admin = [("Authorization", "Bearer \(APIAuthTests.admin)")]
        let configure: (inout BrowserdConfiguration) -> Void = { $0.adminToken = APIAuthTests.admin }
        let (token, tokenID, profile): (String, String, String) = try await withApplication(dataDirectory: data, configure) { app in
            let api = try APIClient(app)
            let profile = try api.send("POST", "/v1/profiles", ["name": "T"], headers: admin).id
            let issued = try api.send("POST", "/v1/profiles/\(profile)/tokens", headers: admin)
            return (issued["token"] as? String ?? "", issued.id, profile)
        }
        try await withApplication(dataDirectory: data, configure) { app in
            let api = try APIClient(app)
            #expect(try api.send("GET", "/v1/profiles/\(profile)", headers: [("Authorization", "Bearer \(token)")]).status == 200)
            #expect(try api.send("DELETE", "/v1/profiles/\(profile)/tokens/\(tokenID)", headers: admin).status == 204)
        }
        try await withApplication(dataDirectory: data, configure) { app in
            let reply = try APIClient(app).send("GET", "/v1/profiles/\(profile)", headers: [("Authorization", "Bearer \(token)")])
            #expect(reply.status == 401)
        }
        // Only the hash is on disk.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: data).appendingPathComponent("browserd.sqlite"))
        #expect(bytes.range(of: Data(token.utf8)) == nil)
    }
}

@Suite(.offThePool) struct RelaxedDurabilityTests {
    /// Relaxed mode answers before the commit, and a graceful stop still writes everything queued.
    @Test func relaxedModeStillSavesOnAGracefulStop() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-relaxed-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (window, tabs): (String, [String]) = try await withApplication(dataDirectory: data, { $0.relaxedDurability = true }) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            return (window, try (0..<20).map { try api.tab(window, "https://relaxed.example/\($0)") })
        }
        try await withApplication(dataDirectory: data) { app in
            let listed = try APIClient(app).get("/v1/browsers/\(window)/tabs")["items"] as? [[String: Any]]
            #expect(listed?.compactMap { $0["id"] as? String } == tabs)
        }
    }
}
