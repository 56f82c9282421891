import BrowserdApp
import Foundation
import MiniHTTPClient
import TestSupport
import Testing

/// Renderers register with browserd and hold profiles by lease under fences (issue 55), through a
/// live server on its store: every profile with windows gets exactly one renderer, least loaded
/// first; nothing moves while its holder renews; a drained or departed renderer's profiles move; a
/// report under a fence that is no longer current is refused; who may register; bad input.
@Suite(.offThePool) struct RendererRegistryTests {
    static let admin = "renderer-admin-token-0123456789"

    static func profiles(_ status: [String: Any]) -> [String: Int] {
        var held: [String: Int] = [:]
        for item in status["profiles"] as? [[String: Any]] ?? [] { held[item["profileId"] as? String ?? ""] = item["fence"] as? Int }
        return held
    }

    static func put(_ api: APIClient, _ name: String, capacity: Int = 10) throws -> APIClient.Reply {
        try api.send("PUT", "/v1/renderers/\(name)", ["capacity": capacity, "devtoolsUrl": "ws://127.0.0.1:9222"])
    }

    @Test func profilesWithWindowsGetExactlyOneRendererAndFencesRefuseLateReports() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let (p1, p2, idle) = (try api.profile("one"), try api.profile("two"), try api.profile("no windows"))
            let w1 = try api.window(p1)
            _ = try api.window(p2)
            let tab = try api.tab(w1)

            // The first renderer takes every profile with windows; the one without waits for none.
            let a = try Self.put(api, "a")
            #expect(a.status == 200)
            let heldByA = Self.profiles(a.json)
            #expect(Set(heldByA.keys) == [p1, p2])
            #expect(Set(heldByA.values).count == 2, "each its own fence")
            #expect(a.json["devtoolsUrl"] as? String == "ws://127.0.0.1:9222" && a.json["draining"] as? Bool == false)
            // A second renderer takes nothing that is held (no flapping); a new profile's first window
            // goes to the least loaded.
            #expect(Self.profiles(try Self.put(api, "b").json).isEmpty)
            #expect(Self.profiles(try Self.put(api, "a").json) == heldByA, "renewing changes nothing")
            let w3 = try api.window(idle)
            #expect(Self.profiles(try Self.put(api, "b").json).keys.sorted() == [idle])
            let list = try api.get("/v1/renderers").json["items"] as? [[String: Any]] ?? []
            #expect(list.map { $0["name"] as? String } == ["a", "b"])
            let metrics = String(decoding: try api.get("/metrics").body, as: UTF8.self)
            #expect(metrics.contains("browserd_renderers_registered 2") && metrics.contains("browserd_renderer_assigned_profiles 3"), "\(metrics.count)")
            #expect(try api.get("/v1/profiles/\(p1)/rendering").json["renderer"] as? [String: Any]?? != nil)
            #expect((try api.get("/v1/profiles/\(p1)/rendering").json["renderer"] as? [String: Any])?["name"] as? String == "a")

            // The holder's report under its fence is taken; another fence, another name: 409; a
            // malformed header: 400.
            let fence = heldByA[p1] ?? 0
            func report(_ header: String) throws -> Int {
                try api.send("PATCH", "/v1/tabs/\(tab)", ["title": "reported"], headers: [("Browserd-Renderer", header)]).status
            }
            #expect(try report("a; fence=\(fence)") == 200)
            #expect(try report("a; fence=\(fence + 100)") == 409)
            #expect(try report("b; fence=\(fence)") == 409)
            #expect(try report("a") == 400)
            let refused = try api.send("PATCH", "/v1/tabs/\(tab)", ["title": "late"], headers: [("Browserd-Renderer", "b; fence=1")])
            #expect(refused.problemType?.hasSuffix("renderer-fenced") == true)

            // a drains: its profiles go to b at once, under new fences; a's reports are refused.
            let drained = try api.post("/v1/renderers/a/drain")
            #expect(drained.status == 200 && drained.json["draining"] as? Bool == true && Self.profiles(drained.json).isEmpty)
            let heldByB = Self.profiles(try Self.put(api, "b").json)
            #expect(Set(heldByB.keys) == [p1, p2, idle])
            #expect((heldByB[p1] ?? 0) > fence)
            #expect(try report("a; fence=\(fence)") == 409)
            #expect(try report("b; fence=\(heldByB[p1] ?? 0)") == 200)

            // A profile whose windows all close is let go at the next decision.
            #expect(try api.send("DELETE", "/v1/browsers/\(w3)").status == 204)
            #expect(Set(Self.profiles(try Self.put(api, "b").json).keys) == [p1, p2])

            // Excluded: b lets p2 go at once. Pinned to a renderer that is not registered, p2 (no longer
            // excluded) gets the least loaded one with room meanwhile.
            let excluded = try api.send("PUT", "/v1/profiles/\(p2)/rendering", ["pin": "c", "excluded": true])
            #expect(excluded.status == 200 && excluded.json["excluded"] as? Bool == true && excluded.json["pin"] as? String == "c")
            #expect(excluded.json["renderer"] is NSNull)
            #expect(Set(Self.profiles(try Self.put(api, "b").json).keys) == [p1])
            let pinned = try api.send("PUT", "/v1/profiles/\(p2)/rendering", ["pin": "c"]).json
            #expect((pinned["renderer"] as? [String: Any])?["name"] as? String == "b" && pinned["excluded"] as? Bool == false)
            #expect(Set(Self.profiles(try Self.put(api, "b").json).keys) == [p1, p2])
            #expect(try api.send("PUT", "/v1/profiles/\(p2)/rendering", ["pin": "bad name"]).status == 422)
            #expect(try api.send("PUT", "/v1/profiles/\(p2)/rendering", ["excluded": "yes"]).status == 422)

            // b leaves: its profiles are released (a, draining, takes none).
            #expect(try api.send("DELETE", "/v1/renderers/b").status == 204)
            #expect(try api.send("DELETE", "/v1/renderers/b").status == 404)
            #expect(try api.get("/v1/profiles/\(p1)/rendering").json["renderer"] is NSNull)
            #expect(try api.get("/v1/renderers/b").status == 404)
        }
    }

    /// A profile's first window is placed at once, and its renderer told on its stream (it renews
    /// then), rather than waiting for some renderer's next renewal.
    @Test func aFirstWindowIsPlacedAtOnceAndItsRendererTold() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            #expect(try SSEClient(app, "/v1/renderers/b/events").status == 404, "not registered")
            _ = try Self.put(api, "a", capacity: 1)
            _ = try Self.put(api, "b", capacity: 1)
            // Short reads: a quiet stream is told apart in half a second.
            let streamA = try SSEClient(app, "/v1/renderers/a/events", timeout: .milliseconds(500))
            let streamB = try SSEClient(app, "/v1/renderers/b/events", timeout: .milliseconds(500))
            #expect(streamB.status == 200)
            // Each stream is told once at its start (a renderer that reconnects renews at once).
            #expect(try streamA.next()?.name == "assignments.changed")
            let first = try #require(try streamB.next())
            #expect(first.name == "assignments.changed" && first.json["renderer"] as? String == "b")

            // a has room first (the names tie at no load): the first profile's window goes to a at once,
            // the second's to b; each renderer is told, and no renewal was needed for either.
            let (p1, p2) = (try api.profile("one"), try api.profile("two"))
            _ = try api.window(p1)
            #expect(try streamA.next()?.name == "assignments.changed")
            #expect((try api.get("/v1/profiles/\(p1)/rendering").json["renderer"] as? [String: Any])?["name"] as? String == "a")
            _ = try api.window(p2)
            #expect(try streamB.next()?.name == "assignments.changed")
            #expect((try api.get("/v1/profiles/\(p2)/rendering").json["renderer"] as? [String: Any])?["name"] as? String == "b")
            #expect(Set(Self.profiles(try Self.put(api, "b", capacity: 1).json).keys) == [p2])
            // A second window changes nothing: nobody is told.
            _ = try api.window(p1)
            #expect(streamA.isQuiet(for: .milliseconds(300)))

            // b makes room (its own renewal: it is not told); drained, a's profile moves to b at once, and
            // both are told.
            #expect(Set(Self.profiles(try Self.put(api, "b", capacity: 2).json).keys) == [p2])
            #expect(streamB.isQuiet(for: .milliseconds(200)))
            #expect(try api.post("/v1/renderers/a/drain").status == 200)
            #expect(try streamA.next()?.name == "assignments.changed", "a's profile was taken")
            #expect(try streamB.next()?.name == "assignments.changed", "b was given a's profile")
            #expect(Set(Self.profiles(try Self.put(api, "b", capacity: 2).json).keys) == [p1, p2])

            // At most four streams per renderer; others' tokens are refused by the guard (see below).
            let more = try (0..<3).map { _ in try SSEClient(app, "/v1/renderers/b/events") }
            #expect(more.allSatisfy { $0.status == 200 })
            let fifth = try SSEClient(app, "/v1/renderers/b/events")
            #expect(fifth.status == 429)
            more[0].close()
            var reopened = 0
            for _ in 0..<50 where reopened != 200 {
                reopened = try SSEClient(app, "/v1/renderers/b/events").status
                if reopened != 200 { Thread.sleep(forTimeInterval: 0.02) }
            }
            #expect(reopened == 200, "a closed stream frees its place")
        }
    }

    @Test func badRegistrationsAre4xx() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            for (body, field) in [
                (["capacity": 0] as [String: Any], "capacity"), (["capacity": 10_001], "capacity"), ([:], "capacity"),
                (["capacity": 1, "devtoolsUrl": "http://h:1"], "devtoolsUrl"), (["capacity": 1, "more": 1], "more"),
            ] {
                let reply = try api.send("PUT", "/v1/renderers/a", body)
                #expect(reply.status == 422, "\(body)")
                #expect("\(reply.json)".contains(field), "\(body): \(reply.json)")
            }
            #expect(try api.send("PUT", "/v1/renderers/a*b", ["capacity": 1]).status == 422)
            #expect(try api.send("PUT", "/v1/renderers/\(String(repeating: "n", count: 65))", ["capacity": 1]).status == 422)
            #expect(try api.post("/v1/renderers/nobody/drain").status == 404)
            #expect(try api.get("/v1/profiles/p0000000000000000/rendering").status == 404)
        }
    }

    @Test func onlyTheAdministratorRegistersRenderers() async throws {
        try await withApplication({ $0.adminToken = Self.admin }) { app in
            let api = try APIClient(app)
            let auth = [("Authorization", "Bearer \(Self.admin)")]
            let profile = try api.post("/v1/profiles", ["name": "p"], headers: auth).id
            let token = try api.post("/v1/profiles/\(profile)/tokens", headers: auth).json["token"] as? String ?? ""
            let bearer = [("Authorization", "Bearer \(token)")]
            #expect(try api.send("PUT", "/v1/renderers/r", ["capacity": 1], headers: bearer).status == 403)
            #expect(try api.send("GET", "/v1/renderers", headers: bearer).status == 403)
            #expect(try api.send("PUT", "/v1/renderers/r", ["capacity": 1]).status == 401)
            #expect(try api.send("PUT", "/v1/renderers/r", ["capacity": 1], headers: auth).status == 200)
            #expect(try api.send("PUT", "/v1/profiles/\(profile)/rendering", ["excluded": true], headers: bearer).status == 403)
            // A tenant reads which renderer holds its own profile.
            #expect(try api.send("GET", "/v1/profiles/\(profile)/rendering", headers: bearer).status == 200)

            // A renderer's own token: its registration, and the profiles it holds, nothing else.
            #expect(try api.post("/v1/renderers/r/token", headers: bearer).status == 403)
            let issued = try api.post("/v1/renderers/r/token", headers: auth)
            #expect(issued.status == 201)
            let rendererToken = issued.json["token"] as? String ?? ""
            #expect(rendererToken.hasPrefix("brt_r."))
            let asRenderer = [("Authorization", "Bearer \(rendererToken)")]
            // s registers and `other` is pinned to it before either profile has a window: whichever
            // is placed first, r gets `profile` (r and s tie at no load; r sorts first) and s `other`.
            let other = try api.post("/v1/profiles", ["name": "other"], headers: auth).id
            #expect(try api.send("PUT", "/v1/renderers/s", ["capacity": 1], headers: auth).status == 200)
            _ = try api.send("PUT", "/v1/profiles/\(other)/rendering", ["pin": "s"], headers: auth)
            let window = try api.post("/v1/browsers", ["profileId": profile], headers: auth).id
            let otherWindow = try api.post("/v1/browsers", ["profileId": other], headers: auth).id
            let held = try api.send("PUT", "/v1/renderers/r", ["capacity": 1], headers: asRenderer)
            #expect(held.status == 200 && Set(Self.profiles(held.json).keys) == [profile], "\(held.json)")
            #expect(try api.send("PUT", "/v1/renderers/s", ["capacity": 1], headers: asRenderer).status == 403, "another's registration")
            #expect(try SSEClient(app, "/v1/renderers/s/events", headers: asRenderer).status == 403, "another's stream")
            #expect(try SSEClient(app, "/v1/renderers/r/events", headers: asRenderer).status == 200, "its own stream")
            #expect(try SSEClient(app, "/v1/renderers/r/events", headers: bearer).status == 403, "a tenant's")
            #expect(try SSEClient(app, "/v1/renderers/r/events").status == 401, "no token")
            #expect(try api.send("GET", "/v1/renderers", headers: asRenderer).status == 403)
            #expect(try api.send("GET", "/v1/browsers/\(window)", headers: asRenderer).status == 200, "a window of a profile it holds")
            #expect(try api.send("GET", "/v1/browsers/\(otherWindow)", headers: asRenderer).status == 404, "another renderer's profile")
            #expect(try api.send("DELETE", "/v1/profiles/\(profile)", headers: asRenderer).status == 403)
            #expect(try api.post("/v1/profiles/\(profile)/tokens", headers: asRenderer).status == 403)
            #expect(try api.send("GET", "/v1/renderers/r", headers: [("Authorization", "Bearer \(rendererToken.dropLast())0")]).status == 401)
            #expect(try api.send("GET", "/v1/renderers/s", headers: [("Authorization", "Bearer brt_s.\(rendererToken.split(separator: ".").last ?? "")")]).status == 401)
        }
    }
}

/// An acknowledged assignment survives kill -9, on both stores: the renderer that renews within
/// its lease after the restart keeps its profiles under the same fences, and fences go on upwards.
@Suite(.serialized, .offThePool) struct RendererRegistryDurabilityTests {
    @Test(arguments: TestStore.available)
    func assignmentsAndFencesSurviveKillDashNine(_ store: TestStore) async throws {
        try await store.withArguments { arguments in
            let killed = try BrowserdProcess(arguments: ["--port", "0", "--renderer-lease-seconds", "30"] + arguments)
            let firstPort = try killed.waitForPort()
            let (profiles, held) = try await blocking { () throws -> ([String], [String: Int]) in
                let api = try HTTPClientConnection(host: "127.0.0.1", port: firstPort)
                func post(_ path: String, _ body: String) throws -> [String: Any] {
                    crashJSON(try api.request("POST", path, headers: crashJSONHeaders, body: Array(body.utf8)))
                }
                var profiles: [String] = []
                for name in ["one", "two"] {
                    let profile = try post("/v1/profiles", "{\"name\":\"\(name)\"}")["id"] as? String ?? ""
                    _ = try post("/v1/browsers", "{\"profileId\":\"\(profile)\"}")
                    profiles.append(profile)
                }
                let put = try api.request("PUT", "/v1/renderers/a", headers: crashJSONHeaders, body: Array(#"{"capacity":5}"#.utf8))
                let excluded = try api.request(
                    "PUT", "/v1/profiles/\(profiles[0])/rendering", headers: crashJSONHeaders, body: Array(#"{"pin":"z","excluded":false}"#.utf8))
                #expect(excluded.status == 200)
                return (profiles, RendererRegistryTests.profiles(crashJSON(put)))
            }
            #expect(Set(held.keys) == Set(profiles))
            let (server, port) = try killed.crashAndRestart(arguments: ["--port", "0", "--renderer-lease-seconds", "30"] + arguments)
            defer { server.stop() }
            try await blocking {
                let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
                let again = try untilAvailable {
                    try api.request("PUT", "/v1/renderers/a", headers: crashJSONHeaders, body: Array(#"{"capacity":5}"#.utf8))
                }
                #expect(RendererRegistryTests.profiles(crashJSON(again)) == held, "the same profiles, the same fences")
                #expect(crashJSON(try api.request("GET", "/v1/profiles/\(profiles[0])/rendering"))["pin"] as? String == "z", "the pin kept")
                _ = try api.request("PUT", "/v1/renderers/b", headers: crashJSONHeaders, body: Array(#"{"capacity":5}"#.utf8))
                _ = try api.request("POST", "/v1/renderers/a/drain", headers: crashJSONHeaders)
                let b = try api.request("PUT", "/v1/renderers/b", headers: crashJSONHeaders, body: Array(#"{"capacity":5}"#.utf8))
                let moved = RendererRegistryTests.profiles(crashJSON(b))
                #expect(Set(moved.keys) == Set(profiles))
                #expect(moved.values.min() ?? 0 > held.values.max() ?? 0, "fences go on upwards")
            }
        }
    }

    /// Several instances on one database decide together: renderers registering with different
    /// instances split the profiles, each profile held once, and a report under the holder's fence is
    /// taken by either instance (forwarded to the profile's owner, which checks it).
    @Test func instancesOnOneDatabaseDecideTogether() async throws {
        guard TestStore.available.contains(.postgres) else { return }
        try await TestStore.postgres.withArguments { arguments in
            let first = try BrowserdProcess(arguments: ["--port", "0"] + arguments)
            defer { first.stop() }
            let second = try BrowserdProcess(arguments: ["--port", "0"] + arguments)
            defer { second.stop() }
            let (one, two) = (try first.waitForPort(), try second.waitForPort())
            try await blocking {
                let api1 = try HTTPClientConnection(host: "127.0.0.1", port: one)
                let api2 = try HTTPClientConnection(host: "127.0.0.1", port: two)
                func post(_ api: HTTPClientConnection, _ path: String, _ body: String) throws -> [String: Any] {
                    crashJSON(try untilAvailable { try api.request("POST", path, headers: crashJSONHeaders, body: Array(body.utf8)) })
                }
                func register(_ api: HTTPClientConnection, _ name: String) throws -> [String: Int] {
                    let reply = try untilAvailable {
                        try api.request("PUT", "/v1/renderers/\(name)", headers: crashJSONHeaders, body: Array(#"{"capacity":10}"#.utf8))
                    }
                    #expect(reply.status == 200)
                    return RendererRegistryTests.profiles(crashJSON(reply))
                }
                _ = try register(api1, "a")
                _ = try register(api2, "b")
                var tabs: [String: String] = [:]
                for name in ["one", "two", "three", "four"] {
                    let profile = try post(api1, "/v1/profiles", "{\"name\":\"\(name)\"}")["id"] as? String ?? ""
                    let window = try post(api1, "/v1/browsers", "{\"profileId\":\"\(profile)\"}")["id"] as? String ?? ""
                    tabs[profile] = try post(api1, "/v1/browsers/\(window)/tabs", #"{"url":"https://a.example/"}"#)["id"] as? String ?? ""
                }
                // Each instance's decision sees the other's: two each, none twice.
                let heldByA = try register(api1, "a")
                let heldByB = try register(api2, "b")
                #expect(heldByA.count == 2 && heldByB.count == 2, "\(heldByA) \(heldByB)")
                #expect(Set(heldByA.keys).union(heldByB.keys) == Set(tabs.keys))
                #expect(Set(heldByA.values).isDisjoint(with: heldByB.values), "fences are never handed out twice")
                #expect(try register(api2, "a") == heldByA, "either instance renews the same registration")
                // A report under the holder's fence, through either instance; another's fence is refused.
                let (profile, fence) = try #require(heldByA.first)
                let tab = tabs[profile] ?? ""
                for api in [api1, api2] {
                    let taken = try untilAvailable {
                        try api.request(
                            "PATCH", "/v1/tabs/\(tab)", headers: crashJSONHeaders + [("Browserd-Renderer", "a; fence=\(fence)")],
                            body: Array(#"{"title":"reported"}"#.utf8))
                    }
                    #expect(taken.status == 200, "\(crashJSON(taken))")
                    let refused = try api.request(
                        "PATCH", "/v1/tabs/\(tab)", headers: crashJSONHeaders + [("Browserd-Renderer", "b; fence=\(fence)")],
                        body: Array(#"{"title":"late"}"#.utf8))
                    #expect(refused.status == 409)
                }
                // a drains through the second instance: b holds everything, as both instances list.
                #expect(try api2.request("POST", "/v1/renderers/a/drain", headers: crashJSONHeaders).status == 200)
                #expect(try register(api1, "b").count == 4)
                let listed = crashJSON(try api1.request("GET", "/v1/renderers"))["items"] as? [[String: Any]] ?? []
                #expect(listed.map { RendererRegistryTests.profiles($0).count } == [0, 4])
            }
        }
    }
}
