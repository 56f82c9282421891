import BrowserdApp
import Foundation
import MiniHTTPClient
import Testing

/// The picture of a tab's page (`PUT`/`GET /v1/tabs/{id}/snapshot`, `tabs.snapshot`): checked, served
/// with its entity tag, counted in the profile's budget, stored for a regular profile only, gone with
/// its tab, and there after a kill -9 on both stores.
@Suite(.offThePool) struct TabSnapshotTests {
    /// A JPEG-looking body: the JPEG signature, then `marker`, then filler up to `size` bytes.
    static func jpeg(_ marker: String, size: Int = 2_000) -> [UInt8] {
        var bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array(marker.utf8)
        bytes += (0..<max(0, size - bytes.count)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        return bytes
    }

    @Test func aPictureIsCheckedServedAndWatched() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let tab = try api.tab(window, "https://a.example")
            let other = try api.tab(window, "https://b.example")
            #expect(try api.get("/v1/tabs/\(tab)")["snapshot"] is NSNull)
            #expect(try api.get("/v1/tabs/\(tab)/snapshot").problemType == "/problems/snapshot-not-found")
            let watcher = try SSEClient(app, "/v1/browsers/\(window)/events?topics=tabs")
            _ = try watcher.until("tabs.populate")

            let picture = Self.jpeg("first")
            let put = try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: picture, contentType: "image/jpeg")
            #expect(put.status == 200)
            let snapshot = try #require(put["snapshot"] as? [String: Any])
            let etag = try #require(snapshot["etag"] as? String)
            #expect(snapshot["mediaType"] as? String == "image/jpeg" && snapshot["bytes"] as? Int == picture.count && snapshot["capturedAt"] is String)
            let event = try watcher.until("tabs.snapshot").last
            #expect(event?.json["tabId"] as? String == tab && (event?.json["snapshot"] as? [String: Any])?["etag"] as? String == etag)

            let got = try api.get("/v1/tabs/\(tab)/snapshot")
            #expect(got.status == 200 && got.body == picture && got.header("content-type") == "image/jpeg")
            #expect(got.header("etag") == "\"\(etag)\"" && got.header("cache-control") == "private, no-cache")
            // A tenant's bytes: never sniffed, never a document that runs or loads anything.
            #expect(got.header("x-content-type-options") == "nosniff" && got.header("content-security-policy") == "default-src 'none'")
            let unchanged = try api.send("GET", "/v1/tabs/\(tab)/snapshot", headers: [("If-None-Match", "\"\(etag)\"")])
            #expect(unchanged.status == 304 && unchanged.body.isEmpty)
            #expect(try api.send("GET", "/v1/tabs/\(tab)/snapshot", headers: [("If-None-Match", "\"other\"")]).status == 200)
            // Lists and the window's stream show it; the other tab has none.
            let items = try api.get("/v1/browsers/\(window)")["tabs"] as? [[String: Any]] ?? []
            #expect((items.first { $0["id"] as? String == tab }?["snapshot"] as? [String: Any])?["etag"] as? String == etag)
            #expect(items.first { $0["id"] as? String == other }?["snapshot"] is NSNull)
            let second = try SSEClient(app, "/v1/browsers/\(window)/events?topics=tabs")
            let populate = try second.until("tabs.populate").last?.json["items"] as? [[String: Any]] ?? []
            #expect((populate.first { $0["id"] as? String == tab }?["snapshot"] as? [String: Any])?["bytes"] as? Int == picture.count)

            // The same picture again changes nothing (it keeps the time it was first taken); a new one
            // replaces it (a new entity tag).
            let again = try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: picture, contentType: "image/jpeg")
            #expect(again.status == 200 && (again["snapshot"] as? [String: Any])?["capturedAt"] as? String == snapshot["capturedAt"] as? String)
            #expect(again.etagVersion == put.etagVersion)
            let replaced = try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: Self.jpeg("second"), contentType: "image/jpeg")
            #expect((replaced["snapshot"] as? [String: Any])?["etag"] as? String != etag)
            #expect(try api.get("/v1/tabs/\(tab)/snapshot").body == Self.jpeg("second"))

            // Refused: another type, a body that is not what it says, too large, an unknown tab.
            #expect(try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: picture, contentType: "text/plain").problemType == "/problems/unsupported-media-type")
            #expect(try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: picture, contentType: "image/png").problemType == "/problems/invalid-image")
            #expect(try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: [], contentType: "image/jpeg").problemType == "/problems/invalid-image")
            let large = try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: Self.jpeg("large", size: 256 * 1024 + 1), contentType: "image/jpeg")
            #expect(large.status == 413)
            #expect(try api.send("PUT", "/v1/tabs/tffffffffffffffff/snapshot", raw: picture, contentType: "image/jpeg").status == 404)
            let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
            #expect(try api.send("PUT", "/v1/tabs/\(other)/snapshot", raw: png, contentType: "image/png; charset=binary").status == 200)
            #expect(try api.get("/v1/tabs/\(other)/snapshot").header("content-type") == "image/png")

            // It goes with its tab.
            #expect(try api.send("DELETE", "/v1/tabs/\(tab)").status == 204)
            #expect(try api.get("/v1/tabs/\(tab)/snapshot").problemType == "/problems/tab-not-found")
        }
    }

    /// Pictures count in the profile's byte budget (its incognito profile's too): past it, 507.
    @Test func picturesCountInTheProfilesBudget() async throws {
        try await withApplication({ $0.modelLimits.profileBytes = 256 * 1024 }) { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let a = try api.tab(window, "https://a.example")
            let b = try api.tab(window, "https://b.example")
            #expect(try api.send("PUT", "/v1/tabs/\(a)/snapshot", raw: Self.jpeg("a", size: 200_000), contentType: "image/jpeg").status == 200)
            let full = try api.send("PUT", "/v1/tabs/\(b)/snapshot", raw: Self.jpeg("b", size: 100_000), contentType: "image/jpeg")
            #expect(full.status == 507, "\(String(decoding: full.body, as: UTF8.self))")
            // A smaller picture in place of the large one makes room; closing the tab gives it all back.
            #expect(try api.send("PUT", "/v1/tabs/\(a)/snapshot", raw: Self.jpeg("a", size: 50_000), contentType: "image/jpeg").status == 200)
            #expect(try api.send("PUT", "/v1/tabs/\(b)/snapshot", raw: Self.jpeg("b", size: 100_000), contentType: "image/jpeg").status == 200)
            let incognito = try api.window(try api.post("/v1/profiles/\(profile)/incognito").id)
            let c = try api.tab(incognito, "https://c.example")
            #expect(try api.send("PUT", "/v1/tabs/\(c)/snapshot", raw: Self.jpeg("c", size: 150_000), contentType: "image/jpeg").status == 507)
            #expect(try api.send("DELETE", "/v1/tabs/\(b)").status == 204)
            #expect(try api.send("PUT", "/v1/tabs/\(c)/snapshot", raw: Self.jpeg("c", size: 150_000), contentType: "image/jpeg").status == 200)
        }
    }

    /// An incognito tab's picture is served from memory and never touches the disk; a regular one's is
    /// written (the same search finds it, so the search is not blind).
    @Test func incognitoPicturesNeverTouchTheDisk() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-snapshots-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let secret = "incognito-picture-\(UUID().uuidString.lowercased())"
        let kept = "regular-picture-\(UUID().uuidString.lowercased())"
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let regular = try api.tab(try api.window(profile), "https://regular.example")
            #expect(try api.send("PUT", "/v1/tabs/\(regular)/snapshot", raw: Self.jpeg(kept), contentType: "image/jpeg").status == 200)
            let window = try api.window(try api.post("/v1/profiles/\(profile)/incognito").id)
            for i in 0..<5 {
                let tab = try api.tab(window, "https://private.example/\(i)")
                #expect(try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: Self.jpeg("\(secret)-\(i)"), contentType: "image/jpeg").status == 200)
                #expect(try api.get("/v1/tabs/\(tab)/snapshot").body == Self.jpeg("\(secret)-\(i)"))
            }
        }
        func filesHolding(_ marker: String) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: data).filter { name in
                let bytes = try Data(contentsOf: URL(fileURLWithPath: data).appendingPathComponent(name))
                return bytes.range(of: Data(marker.utf8)) != nil
            }
        }
        #expect(try filesHolding(secret).isEmpty)
        #expect(try !filesHolding(kept).isEmpty)
    }
}

/// A close-all deletes its tabs' rows, their pictures' rows with them; its undo brings the tabs back
/// with their pictures, in memory and on disk, through restarts: whether this run held the picture's
/// bytes (put in this run) or only storage did (put in an earlier run).
@Suite(.offThePool) struct UndoneClosingPictureTests {
    @Test func anUndoneCloseAllKeepsItsPicturesAcrossRestarts() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-undo-pictures-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let picture = TabSnapshotTests.jpeg("kept-through-undo", size: 30_000)
        /// Closes every tab of `window`, undoes it, and checks the picture of `tab` is served.
        @Sendable func closeAllAndUndo(_ api: APIClient, profile: String, window: String, tab: String) throws {
            let closing = try api.post("/v1/browsers/\(window)/close-all", ["undoSeconds": 600])
            #expect(closing.status == 200 && closing["state"] as? String == "pending")
            let undone = try api.post("/v1/profiles/\(profile)/closings/\(closing.id)/undo")
            #expect(undone.status == 200 && undone["state"] as? String == "undone")
            let got = try api.get("/v1/tabs/\(tab)/snapshot")
            #expect(got.status == 200 && got.body == picture, "\(got.status) \(String(decoding: got.body.prefix(300), as: UTF8.self))")
        }
        // First run: the picture's bytes are in memory when the tabs close.
        let (profile, window, tab) = try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let tab = try api.tab(window, "https://pictured.example/")
            _ = try api.tab(window, "https://other.example/")
            #expect(try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: picture, contentType: "image/jpeg").status == 200)
            try closeAllAndUndo(api, profile: profile, window: window, tab: tab)
            return (profile, window, tab)
        }
        // Second run: written again by the undo, so storage serves it; then closed and undone again
        // while only storage holds its bytes.
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let got = try api.get("/v1/tabs/\(tab)/snapshot")
            #expect(got.status == 200 && got.body == picture)
            try closeAllAndUndo(api, profile: profile, window: window, tab: tab)
        }
        // Third run: still there, with the same tag as before.
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let got = try api.get("/v1/tabs/\(tab)/snapshot")
            #expect(got.status == 200 && got.body == picture)
            let listed = try api.get("/v1/tabs/\(tab)")["snapshot"] as? [String: Any]
            #expect(listed?["bytes"] as? Int == picture.count)
        }
    }
}

/// An acknowledged picture survives kill -9 on both stores; it is served from storage after the
/// restart (with the same entity tag), moves with its tab, and goes with it.
@Suite(.serialized, .offThePool) struct TabSnapshotDurabilityTests {
    @Test(arguments: TestStore.available)
    func anAcknowledgedPictureSurvivesKillDashNine(_ store: TestStore) async throws {
        try await store.withArguments { arguments in
            let picture = TabSnapshotTests.jpeg("durable", size: 40_000)
            let killed = try BrowserdProcess(arguments: ["--port", "0"] + arguments)
            let firstPort = try killed.waitForPort()
            let (tab, closed, etag) = try await blocking { () throws -> (String, String, String) in
                let api = try HTTPClientConnection(host: "127.0.0.1", port: firstPort)
                func post(_ path: String, _ body: String) throws -> [String: Any] {
                    crashJSON(try api.request("POST", path, headers: crashJSONHeaders, body: Array(body.utf8)))
                }
                let profile = try post("/v1/profiles", #"{"name":"pictures"}"#)["id"] as? String ?? ""
                let first = try post("/v1/browsers", "{\"profileId\":\"\(profile)\"}")["id"] as? String ?? ""
                let second = try post("/v1/browsers", "{\"profileId\":\"\(profile)\"}")["id"] as? String ?? ""
                let tab = try post("/v1/browsers/\(first)/tabs", #"{"url":"https://kept.example/"}"#)["id"] as? String ?? ""
                let closed = try post("/v1/browsers/\(first)/tabs", #"{"url":"https://gone.example/"}"#)["id"] as? String ?? ""
                let jpeg = [("Content-Type", "image/jpeg")]
                let put = try api.request("PUT", "/v1/tabs/\(tab)/snapshot", headers: jpeg, body: picture)
                #expect(put.status == 200)
                #expect(try api.request("PUT", "/v1/tabs/\(closed)/snapshot", headers: jpeg, body: picture).status == 200)
                #expect(try api.request("DELETE", "/v1/tabs/\(closed)").status == 204)
                // The tab moves to the other window: its picture goes with it.
                let move = try api.request("POST", "/v1/tabs/\(tab)/move", headers: crashJSONHeaders, body: Array("{\"browserId\":\"\(second)\",\"index\":0}".utf8))
                #expect(move.status == 200)
                return (tab, closed, (crashJSON(put)["snapshot"] as? [String: Any])?["etag"] as? String ?? "")
            }
            let (server, port) = try killed.crashAndRestart(arguments: ["--port", "0"] + arguments)
            defer { server.stop() }
            try await blocking {
                let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
                let listed = crashJSON(try untilAvailable { try api.request("GET", "/v1/tabs/\(tab)") })
                #expect((listed["snapshot"] as? [String: Any])?["etag"] as? String == etag)
                let got = try untilAvailable { try api.request("GET", "/v1/tabs/\(tab)/snapshot") }
                #expect(got.status == 200 && got.body == picture)
                #expect(got.headers.first { $0.name == "etag" }?.value == "\"\(etag)\"")
                #expect(try api.request("GET", "/v1/tabs/\(closed)/snapshot").status == 404)
            }
        }
    }
}
