import BrowserdApp
import Foundation
import Testing

/// What a page (through its renderer's reports) or a tenant can make browserd hold is charged to the
/// profile's byte budget: favicon URLs (bounded per URL too), and the tabs a close-all parks until it
/// is confirmed. A long title is truncated, never refused.
@Suite(.offThePool) struct PageReportBudgetTests {
    /// A `data:` favicon of `size` bytes (distinct per `marker`).
    static func favicon(_ marker: String, size: Int) -> String {
        let head = "data:image/png;base64,\(marker)"
        return head + String(repeating: "A", count: max(0, size - head.utf8.count))
    }

    /// Favicon URLs count in the budget: a profile of 256 KiB takes four favicons of 60 KiB, not ten
    /// (before: all ten, 600 KB of favicons in a 256 KiB profile); a smaller favicon in place of a
    /// larger one, or a navigation (which clears it), gives room back.
    @Test func faviconURLsAreChargedToTheBudget() async throws {
        try await withApplication({ $0.modelLimits.profileBytes = 256 * 1024 }) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            var accepted: [String] = []
            var refusals: [String?] = []
            for index in 0..<10 {
                let tab = try api.tab(window, "https://site\(index).example/")
                let reply = try api.send("PATCH", "/v1/tabs/\(tab)", ["faviconUrl": Self.favicon("t\(index)", size: 60 * 1024)])
                if reply.status == 200 { accepted.append(tab) } else { refusals.append(reply.problemType) }
            }
            #expect(accepted.count == 4, "\(accepted.count) favicons of 60 KiB held in a 256 KiB profile")
            #expect(refusals.allSatisfy { $0 == "/problems/profile-storage-full" })
            // The one refused keeps its old state (no favicon); a refused PATCH changed nothing.
            let tabs = try api.get("/v1/browsers/\(window)")["tabs"] as? [[String: Any]] ?? []
            #expect(tabs.filter { $0["faviconUrl"] is String }.count == accepted.count)
            // A smaller one makes room, as does a navigation (the favicon goes with the page).
            #expect(try api.send("PATCH", "/v1/tabs/\(accepted[0])", ["faviconUrl": "https://site0.example/favicon.ico"]).status == 200)
            #expect(try api.post("/v1/tabs/\(accepted[1])/navigate", ["url": "https://elsewhere.example/"]).status == 200)
            let last = try #require(tabs.last?["id"] as? String)
            #expect(try api.send("PATCH", "/v1/tabs/\(last)", ["faviconUrl": Self.favicon("late", size: 60 * 1024)]).status == 200)
        }
    }

    /// A favicon URL over 64 KiB (data: included) is refused with a problem naming the limit; one of
    /// exactly 64 KiB is taken. The refusal is logged by its length, never whole.
    @Test func aFaviconURLOver64KiBIsRefusedNamingTheLimit() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let tab = try api.tab(window, "https://a.example/")
            let large = try api.send("PATCH", "/v1/tabs/\(tab)", ["faviconUrl": Self.favicon("large", size: 64 * 1024 + 1), "title": "kept?"])
            #expect(large.status == 422 && large.problemType == "/problems/invalid-field" && large["field"] as? String == "faviconUrl")
            let detail = large["detail"] as? String ?? ""
            #expect(detail.contains("65536") && detail.contains("64 KiB") && !detail.contains("AAAAAAAA"), "\(detail)")
            #expect(try api.get("/v1/tabs/\(tab)")["faviconUrl"] is NSNull)
            let exact = try api.send("PATCH", "/v1/tabs/\(tab)", ["faviconUrl": Self.favicon("exact", size: 64 * 1024)])
            #expect(exact.status == 200 && (exact["faviconUrl"] as? String)?.utf8.count == 64 * 1024)
        }
    }

    /// A PATCH the budget refuses is in the window's action log with the favicon's length, not the favicon.
    @Test func aRefusedPatchIsLoggedByLength() async throws {
        try await withApplication({ $0.modelLimits.profileBytes = 32 * 1024 }) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let tab = try api.tab(window, "https://a.example/")
            let favicon = Self.favicon("logged", size: 60 * 1024)
            #expect(try api.send("PATCH", "/v1/tabs/\(tab)", ["faviconUrl": favicon]).status == 507)
            let log = try api.get("/v1/browsers/\(window)/actions")
            let entry = (log["items"] as? [[String: Any]] ?? []).last { $0["name"] as? String == "tabs.updatePageState" }
            let argument = (entry?["arguments"] as? [String: String])?["faviconURL"] ?? ""
            #expect(entry?["result"] as? String != "ok" && argument.contains("(\(favicon.utf8.count) bytes)"), "\(argument)")
            #expect(argument.utf8.count < 200 && log.body.count < 4_096)
        }
    }

    /// A title longer than 1,024 characters is truncated to its first 1,024 (code points, as the limit
    /// counts: here two-byte ones), never refused; the rest of the PATCH applies.
    @Test func aLongTitleIsTruncated() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let tab = try api.tab(try api.window(try api.profile()), "https://a.example/")
            let title = String(repeating: "é", count: 1_000) + String(repeating: "ü", count: 1_500)
            let reply = try api.send("PATCH", "/v1/tabs/\(tab)", ["title": title, "loading": false])
            #expect(reply.status == 200, "\(String(decoding: reply.body.prefix(300), as: UTF8.self))")
            let kept = reply["title"] as? String ?? ""
            #expect(kept.unicodeScalars.count == 1_024 && kept == String(repeating: "é", count: 1_000) + String(repeating: "ü", count: 24))
            #expect(reply["loading"] as? Bool == false)
            #expect(try api.get("/v1/tabs/\(tab)")["title"] as? String == kept)
        }
    }

    /// Close-all (undoable) keeps its tabs charged until it is confirmed: eight rounds of filling a
    /// 1 MiB profile with pictures in a new window, each window closed with undo, then every undo, used
    /// to leave 8 MB of pictures in it; now the second round's pictures are refused and the undos
    /// bring back what the budget held. Confirming gives the bytes back.
    @Test func parkedTabsStayChargedUntilConfirmed() async throws {
        try await withApplication({ $0.modelLimits.profileBytes = 1 << 20 }) { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            var windows: [String] = []
            var closings: [String] = []
            var accepted = 0
            for round in 0..<8 {
                // A close-all confirms one still pending for the same window: one window per round.
                let window = try api.window(profile)
                windows.append(window)
                for index in 0..<5 {
                    let tab = try api.tab(window, "https://r\(round)-\(index).example/")
                    let picture = TabSnapshotTests.jpeg("r\(round)-\(index)", size: 200_000)
                    let put = try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: picture, contentType: "image/jpeg")
                    if put.status == 200 { accepted += 1 } else { #expect(put.status == 507) }
                }
                let closing = try api.post("/v1/browsers/\(window)/close-all", ["undoSeconds": 600])
                #expect(closing.status == 200 && closing["state"] as? String == "pending")
                closings.append(closing.id)
            }
            for id in closings.reversed() {
                #expect(try api.post("/v1/profiles/\(profile)/closings/\(id)/undo").status == 200)
            }
            let tabs = try windows.flatMap { try api.get("/v1/browsers/\($0)")["tabs"] as? [[String: Any]] ?? [] }
            let held = tabs.compactMap { ($0["snapshot"] as? [String: Any])?["bytes"] as? Int }.reduce(0, +)
            #expect(tabs.count == 40 && accepted == 5 && held == 1_000_000, "\(accepted) pictures, \(held) bytes held in a 1 MiB profile")
            // Closed again and confirmed at once: the bytes are given back.
            let final = try api.post("/v1/profiles/\(profile)/close-all", ["undoSeconds": 0])
            #expect(final["state"] as? String == "confirmed")
            let tab = try api.tab(windows[0], "https://after.example/")
            #expect(try api.send("PUT", "/v1/tabs/\(tab)/snapshot", raw: TabSnapshotTests.jpeg("after", size: 200_000), contentType: "image/jpeg").status == 200)
        }
    }
}

/// An incognito profile's updates are bounded per second as its regular profile's writes are (the
/// write quota: `--profile-write-bytes-per-second`): its changes are never stored, yet each is charged
/// with what it would write, to the same bucket, so a storm of PATCHes (each an event to every
/// watcher) gets 429 as a regular one does. Before: never refused.
@Suite(.offThePool) struct OffTheRecordRateTests {
    @Test func incognitoUpdatesAreBoundedLikeRegularWrites() async throws {
        try await withApplication({ $0.profileWriteBytesPerSecond = 4_096 }) { app in
            /// How many title updates `tab` takes before a 429 (nil: none of `tries`).
            func acceptedBeforeRefusal(_ api: APIClient, _ tab: String, tries: Int = 200) throws -> Int? {
                for index in 0..<tries {
                    let title = "\(index) " + String(repeating: "x", count: 1_000)
                    let reply = try api.send("PATCH", "/v1/tabs/\(tab)", ["title": title])
                    if reply.status == 429 {
                        #expect(reply.problemType == "/problems/write-rate-exceeded" && reply.header("retry-after") != nil)
                        return index
                    }
                    #expect(reply.status == 200)
                }
                return nil
            }
            let api = try APIClient(app)
            let regularProfile = try api.profile("regular")
            let regular = try api.tab(try api.window(regularProfile), "https://a.example/")
            let regularCount = try #require(try acceptedBeforeRefusal(api, regular))
            let other = try api.profile("other")
            let incognito = try api.post("/v1/profiles/\(other)/incognito").id
            let tab = try api.tab(try api.window(incognito), "https://b.example/")
            let incognitoCount = try #require(try acceptedBeforeRefusal(api, tab), "incognito updates were never refused")
            // The same bound: the same order of updates before the refusal (the records differ a little).
            #expect(abs(incognitoCount - regularCount) <= regularCount / 2 + 2, "regular \(regularCount), incognito \(incognitoCount)")
        }
    }
}
