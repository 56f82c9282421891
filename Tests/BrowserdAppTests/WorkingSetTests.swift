import BrowserdApp
import Foundation
import Synchronization
import TestSupport
import Testing

/// The working set (issue: memory and start-up follow it): profiles load on first use, concurrent first
/// touches share one load, every answer is the same whether a profile was loaded at start or on use,
/// and idle profiles leave memory (unless a stream, a WebDriver session or an incognito profile keeps
/// them) and come back unchanged.
@Suite(.serialized, .offThePool) struct WorkingSetTests {
    struct Seeded: Sendable {
        let profiles: [String]
        let windows: [String]
        let tabs: [String]
        let groups: [String]
        /// Each read path and its answer's bytes before the restart.
        let answers: [String: [UInt8]]
    }

    /// Two profiles, each with two windows of tabs (a pinned one, a group, an opener, history), a
    /// closed tab; their read answers.
    static func seed(_ data: String) async throws -> Seeded {
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            var (profiles, windows, tabs, groups) = ([String](), [String](), [String](), [String]())
            for p in 0..<2 {
                let profile = try api.profile("P\(p)")
                profiles.append(profile)
                for _ in 0..<2 {
                    let window = try api.window(profile)
                    windows.append(window)
                    _ = try api.tab(window, "https://pinned.example/", ["pinned": true, "activate": false])
                    let a = try api.tab(window, "https://a.example/")
                    for step in 0..<5 { _ = try api.post("/v1/tabs/\(a)/navigate", ["url": "https://a.example/\(step)"]) }
                    let child = try api.tab(window, "https://child.example/", ["openerTabId": a, "activate": false])
                    groups.append(try api.post("/v1/browsers/\(window)/groups", ["tabIds": [child], "title": "G", "color": "blue"]).id)
                    let doomed = try api.tab(window, "https://closed.example/", ["activate": false])
                    _ = try api.send("DELETE", "/v1/tabs/\(doomed)")
                    tabs += [a, child]
                }
            }
            var answers: [String: [UInt8]] = [:]
            for path in Self.paths(profiles: profiles, windows: windows, tabs: tabs, groups: groups) {
                answers[path] = try api.get(path).body
            }
            return Seeded(profiles: profiles, windows: windows, tabs: tabs, groups: groups, answers: answers)
        }
    }

    /// One statement per kind: as a single chain of `+` this took the type checker 27 s.
    static func paths(profiles: [String], windows: [String], tabs: [String], groups: [String]) -> [String] {
        var paths: [String] = ["/v1/profiles"]
        for profile in profiles {
            paths += ["/v1/profiles/\(profile)", "/v1/profiles/\(profile)/recently-closed", "/v1/browsers?profileId=\(profile)"]
        }
        for window in windows { paths += ["/v1/browsers/\(window)", "/v1/browsers/\(window)/tabs"] }
        for tab in tabs { paths += ["/v1/tabs/\(tab)", "/v1/tabs/\(tab)/history"] }
        for group in groups { paths.append("/v1/groups/\(group)") }
        return paths
    }

    static func metric(_ app: Application, _ name: String) throws -> Double {
        let text = String(decoding: try app.get("/metrics").body, as: UTF8.self)
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    static func dataDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("browserd-working-set-\(UUID())").path
    }

    @Test func nothingLoadsAtStartAndEachProfileLoadsOnItsFirstUse() async throws {
        let data = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await Self.seed(data)
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            #expect(app.service.heldProfiles.isEmpty, "no profile is loaded at start")
            // The list of profiles comes from the directory: the same bytes, nothing loaded.
            #expect(try api.get("/v1/profiles").body == seeded.answers["/v1/profiles"])
            #expect(app.service.heldProfiles.isEmpty)
            // A window read loads its profile, and only that one.
            let window = seeded.windows[0]
            #expect(try api.get("/v1/browsers/\(window)").body == seeded.answers["/v1/browsers/\(window)"])
            #expect(app.service.heldProfiles.map(\.rawValue) == [seeded.profiles[0]])
            #expect(try Self.metric(app, "browserd_profile_loads_total") == 1)
            #expect(try Self.metric(app, "browserd_profiles_loaded") == 1)
            // A tab of the other profile (found through the database) loads it.
            let tab = seeded.tabs[2 * 2]
            #expect(try api.get("/v1/tabs/\(tab)").body == seeded.answers["/v1/tabs/\(tab)"])
            #expect(Set(app.service.heldProfiles.map(\.rawValue)) == Set(seeded.profiles))
            // Every answer is as before the restart.
            for (path, before) in seeded.answers {
                let after = try api.get(path)
                #expect(after.status == 200 && after.body == before, "\(path) differs after a lazy load")
            }
            #expect(try Self.metric(app, "browserd_profile_loads_total") == 2)
            // An id no profile holds is still 404.
            #expect(try api.get("/v1/browsers/b0000000000000000").status == 404)
        }
    }

    @Test func eachKindOfSubjectLoadsItsProfile() async throws {
        let data = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await Self.seed(data)
        // A group, a tab change, a profile's windows, all windows, a deletion: each on a fresh start.
        let requests: [(String, String, String?, Int)] = [
            ("GET", "/v1/groups/\(seeded.groups[0])", nil, 200),
            ("POST", "/v1/tabs/\(seeded.tabs[0])/activate", "{}", 200),
            ("GET", "/v1/browsers?profileId=\(seeded.profiles[1])", nil, 200),
            ("POST", "/v1/browsers", "{\"profileId\": \"\(seeded.profiles[1])\"}", 201),
            ("GET", "/v1/events?profileId=\(seeded.profiles[0])", nil, 200),
        ]
        for (method, path, json, status) in requests {
            try await withApplication(dataDirectory: data) { app in
                let api = try APIClient(app)
                if path.contains("/events") {
                    let stream = try SSEClient(app, path)
                    defer { stream.close() }
                    #expect(stream.status == status)
                    let first = try stream.next()
                    #expect(first?.name == "browsers.populate" && (first?.json["browsers"] as? [Any])?.count == 2, "\(String(describing: first))")
                } else {
                    let body = json.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) }
                    let reply = try api.send(method, path, body)
                    #expect(reply.status == status, "\(method) \(path): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
                }
                #expect(app.service.heldProfiles.count == 1, "\(method) \(path) loads one profile")
            }
        }
        // Listing every window loads every profile the caller reaches.
        try await withApplication(dataDirectory: data) { app in
            let listed = try APIClient(app).get("/v1/browsers")["items"] as? [Any]
            #expect(listed?.count == 5)
            #expect(app.service.heldProfiles.count == 2)
        }
        // A profile deleted without being loaded first stays deleted.
        try await withApplication(dataDirectory: data) { app in
            let deleted = try APIClient(app).send("DELETE", "/v1/profiles/\(seeded.profiles[0])")
            #expect(deleted.status == 204)
        }
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            #expect(try api.get("/v1/profiles/\(seeded.profiles[0])").status == 404)
            #expect((try api.get("/v1/profiles")["items"] as? [Any])?.count == 1)
        }
    }

    @Test func concurrentFirstTouchesShareOneLoad() async throws {
        let data = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await Self.seed(data)
        try await withApplication(dataDirectory: data) { app in
            let failures = Mutex<[String]>([])
            let threads = (0..<16).map { index in
                Thread {
                    let path = "/v1/browsers/\(seeded.windows[index % 2])"
                    let reply = Result { try APIClient(app).get(path) }
                    if case .success(let reply) = reply, reply.body == seeded.answers[path] { return }
                    let told = (try? reply.get()).map { "\($0.status) \(String(decoding: $0.body, as: UTF8.self))" } ?? "\(reply)"
                    failures.withLock { $0.append("\(path): \(told)") }
                }
            }
            for thread in threads { thread.start() }
            while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }
            // Every first touch waits for the whole load: none sees a profile half restored.
            #expect(failures.withLock { $0 } == [])
            let loads = try Self.metric(app, "browserd_profile_loads_total")
            #expect(loads == 1, "16 first touches, one load")
        }
    }

    @Test func preloadingAnswersTheSame() async throws {
        let data = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await Self.seed(data)
        try await withApplication(dataDirectory: data, { $0.preloadProfiles = true }) { app in
            #expect(Set(app.service.heldProfiles.map(\.rawValue)) == Set(seeded.profiles), "--preload-profiles loads all at start")
            let api = try APIClient(app)
            for (path, before) in seeded.answers {
                let after = try api.get(path)
                #expect(after.body == before, "\(path)")
            }
            #expect(try Self.metric(app, "browserd_profile_loads_total") == 0)
        }
    }

    @Test func idleProfilesLeaveMemoryAndComeBackUnchanged() async throws {
        let data = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await Self.seed(data)
        try await withApplication(dataDirectory: data, { $0.profileIdle = .seconds(1) }) { app in
            let api = try APIClient(app)
            let (kept, idle) = (seeded.windows[0], seeded.windows[2])
            // A stream keeps the first profile; the second is only read.
            let stream = try SSEClient(app, "/v1/browsers/\(kept)/events?topics=tabs")
            defer { stream.close() }
            _ = try stream.next()
            #expect(try api.get("/v1/browsers/\(idle)").body == seeded.answers["/v1/browsers/\(idle)"])
            #expect(app.service.heldProfiles.count == 2)
            // Dropped from memory first, counted once what it queued is committed.
            try Self.waitUntil {
                try app.service.heldProfiles.map(\.rawValue) == [seeded.profiles[0]]
                    && Self.metric(app, "browserd_profile_evictions_total") == 1
            }
            // Touched again: loaded again, unchanged; a change made then survives the next drop.
            let tab = try api.tab(idle, "https://after.example/")
            try Self.waitUntil { app.service.heldProfiles.count == 1 }
            #expect(try api.get("/v1/tabs/\(tab)")["url"] as? String == "https://after.example/")
            #expect((try api.get("/v1/browsers/\(idle)")["tabs"] as? [Any])?.count == 4)
            // An incognito profile keeps its regular profile in memory (it exists only there).
            let incognito = try api.post("/v1/profiles/\(seeded.profiles[1])/incognito", [:])
            #expect(incognito.status == 201 || incognito.status == 200)
            Thread.sleep(forTimeInterval: 2.5)
            #expect(app.service.heldProfiles.count == 2, "a profile with an incognito profile stays")
        }
    }

    @Test func aNewWebDriverSessionFindsTheStoredWebDriverProfile() async throws {
        let data = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let first: String = try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let session = try api.post("/webdriver/session", ["capabilities": [:] as [String: Any]])
            #expect(session.status == 200)
            return ((session.json["value"] as? [String: Any])?["sessionId"] as? String ?? "").split(separator: ".").first.map(String.init) ?? ""
        }
        try await withApplication(dataDirectory: data) { app in
            let session = try APIClient(app).post("/webdriver/session", ["capabilities": [:] as [String: Any]])
            let profile = ((session.json["value"] as? [String: Any])?["sessionId"] as? String ?? "").split(separator: ".").first.map(String.init)
            #expect(profile == first, "the stored \"webdriver\" profile is loaded and used, not a new one made")
            #expect((try APIClient(app).get("/v1/profiles")["items"] as? [Any])?.count == 1)
        }
    }

    @Test func tabsLoadUnrealizedAndRealizeOnFirstNeed() async throws {
        let data = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await Self.seed(data)
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let (window, tab, other) = (seeded.windows[0], seeded.tabs[0], seeded.tabs[1])
            // Lists, reads and a stream's snapshot never realize.
            #expect(try api.get("/v1/browsers/\(window)").body == seeded.answers["/v1/browsers/\(window)"])
            #expect(try api.get("/v1/browsers/\(window)/tabs").body == seeded.answers["/v1/browsers/\(window)/tabs"])
            #expect(try api.get("/v1/tabs/\(tab)").body == seeded.answers["/v1/tabs/\(tab)"])
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events")
            _ = try stream.until("location.update")
            stream.close()
            #expect(app.service.tabsRealized == 0, "nothing realized by lists, reads and snapshots")
            // Its history realizes one tab, once.
            #expect(try api.get("/v1/tabs/\(tab)/history").body == seeded.answers["/v1/tabs/\(tab)/history"])
            #expect(try api.get("/v1/tabs/\(tab)/history").status == 200)
            #expect(app.service.tabsRealized == 1)
            #expect(try api.post("/v1/tabs/\(other)/reload", [:]).status == 200)
            #expect(app.service.tabsRealized == 1, "a reload needs no history")
            #expect(try api.post("/v1/tabs/\(other)/back", [:]).status == 200)
            #expect(app.service.tabsRealized == 2)
            #expect(try Self.metric(app, "browserd_tabs_realized_total") == 2)
        }
    }

    /// The same changes on the same stored state, once with every tab realized at start and once with
    /// tabs realized as they are needed: every answer is the same, byte for byte.
    @Test func unrealizedTabsAnswerExactlyAsRealizedOnes() async throws {
        let data = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await Self.seed(data)
        let copy = data + "-copy"
        try FileManager.default.copyItem(atPath: data, toPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        @Sendable func script(_ app: Application) throws -> [String] {
            let api = try APIClient(app)
            let (w0, w1) = (seeded.windows[0], seeded.windows[1])
            let (a, child, b) = (seeded.tabs[0], seeded.tabs[1], seeded.tabs[2])
            var answers: [String] = []
            func record(_ reply: APIClient.Reply) { answers.append("\(reply.status) \(String(decoding: reply.body, as: UTF8.self))") }
            record(try api.post("/v1/tabs/\(a)/back", [:]))
            record(try api.post("/v1/tabs/\(a)/forward", [:]))
            record(try api.post("/v1/tabs/\(a)/go", ["offset": -3]))
            record(try api.post("/v1/tabs/\(child)/navigate", ["url": "https://next.example/"]))
            record(try api.send("PATCH", "/v1/tabs/\(b)", ["title": "Renamed"]))
            record(try api.post("/v1/tabs/\(b)/move", ["index": 0]))
            record(try api.post("/v1/tabs/\(b)/move", ["browserId": w0, "index": 1]))
            record(try api.post("/v1/tabs/\(child)/pin", [:]))
            record(try api.post("/v1/tabs/\(a)/duplicate", [:]))
            record(try api.send("DELETE", "/v1/tabs/\(child)"))
            record(try api.post("/v1/browsers/\(w1)/close-tabs", ["all": true]))
            for path in ["/v1/browsers/\(w0)", "/v1/browsers/\(w1)", "/v1/profiles/\(seeded.profiles[0])/recently-closed"] {
                record(try api.get(path))
            }
            for tab in [a, b] { record(try api.get("/v1/tabs/\(tab)/history")) }
            // Ids made in the run (a duplicate's, a closed entry's) and times differ between the two runs.
            return answers.map { $0.replacing(#/"[tcg][0-9a-f]{16}"/#, with: "\"id\"") }
                .map { $0.replacing(#/"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"/#, with: "\"time\"") }
        }
        let realized = try await withApplication(dataDirectory: data, { $0.preloadProfiles = true }) { app in try script(app) }
        let lazy: [String] = try await withApplication(dataDirectory: copy) { app in
            let answers = try script(app)
            #expect(app.service.tabsRealized > 0)
            return answers
        }
        #expect(realized.count == lazy.count)
        for (one, other) in zip(realized, lazy) { #expect(one == other) }
    }

    static func waitUntil(timeout: Duration = .seconds(5), _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition() { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Issue.record("the condition did not hold within \(timeout)")
    }
}

/// The database's full check runs after ready (it reads every page): a damaged file still starts,
/// and `/readyz` then says what is wrong.
@Suite(.offThePool) struct DeferredCheckTests {
    @Test func aDamagedPageMakesReadinessFailAfterStart() async throws {
        let data = WorkingSetTests.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            // Long histories: most of the file is their overflow pages.
            let long = String(repeating: "x", count: 1000)
            for tab in 0..<40 {
                let id = try api.tab(window, "https://a.example/\(tab)")
                for step in 0..<10 { _ = try api.post("/v1/tabs/\(id)/navigate", ["url": "https://a.example/\(tab)/\(step)?\(long)"]) }
            }
        }
        let path = (data as NSString).appendingPathComponent("browserd.sqlite")
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: (size / 2) / 4096 * 4096)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
        try await withApplication(dataDirectory: data) { app in
            try WorkingSetTests.waitUntil { try app.get("/readyz").status == 503 }
            let reason = String(decoding: try app.get("/readyz").body, as: UTF8.self)
            #expect(reason.contains("quick_check"), "\(reason)")
        }
    }
}
