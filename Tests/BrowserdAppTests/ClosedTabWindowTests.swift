import Foundation
import TestSupport
import Testing

/// What a closed tab keeps of its history (`TabRestoreServiceHelper::PopulateTab`: the current entry, up
/// to 6 before it and up to 7 after it) is what is stored: after a restart, a tab entry, a window entry
/// and a group entry each restore the same window of 20 entries.
@Suite(.offThePool) struct ClosedTabWindowTests {
    /// Opens a tab of 20 entries (`https://e.example/0` … `/19`) in `window`, its current entry `current`.
    private func tab(_ api: APIClient, in window: String, current: Int) throws -> String {
        let tab = try api.tab(window, "https://e.example/0")
        for step in 1..<20 { #expect(try api.post("/v1/tabs/\(tab)/navigate", ["url": "https://e.example/\(step)"]).status == 200) }
        if current != 19 { #expect(try api.post("/v1/tabs/\(tab)/go", ["offset": current - 19]).status == 200) }
        return tab
    }

    private func history(_ api: APIClient, _ tab: String) throws -> (urls: [String], index: Int) {
        let json = try api.get("/v1/tabs/\(tab)/history").json
        let urls = (json["entries"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }
        return (urls, json["currentIndex"] as? Int ?? -2)
    }

    @Test func aTabEntryAWindowEntryAndAGroupEntryKeepChromiumsWindowThroughARestart() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-closed-window-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        // current index → the indexes remembered.
        let cases: [(current: Int, kept: ClosedRange<Int>, index: Int)] = [(10, 4...17, 6), (13, 7...19, 6), (0, 0...7, 0)]
        let profile = try await withApplication(dataDirectory: data) { app -> String in
            let api = try APIClient(app)
            let profile = try api.profile()
            // A tab entry: one tab of two closed.
            let first = try api.window(profile)
            let a = try tab(api, in: first, current: cases[0].current)
            _ = try api.tab(first, "https://stays.example/")
            #expect(try api.send("DELETE", "/v1/tabs/\(a)").status == 204)
            // A window entry: a window of two tabs closed.
            let second = try api.window(profile)
            _ = try tab(api, in: second, current: cases[1].current)
            _ = try api.tab(second, "https://with-b.example/")
            #expect(try api.send("DELETE", "/v1/browsers/\(second)").status == 204)
            // A group entry: a whole group of two tabs closed.
            let c = try tab(api, in: first, current: cases[2].current)
            let d = try api.tab(first, "https://with-c.example/")
            let group = try api.post("/v1/browsers/\(first)/groups", ["tabIds": [c, d], "title": "G"]).id
            #expect(try api.post("/v1/groups/\(group)/close").status == 200)
            let kinds = (try api.get("/v1/profiles/\(profile)/recently-closed").json["items"] as? [[String: Any]] ?? [])
                .compactMap { $0["kind"] as? String }
            #expect(kinds == ["group", "window", "tab"])
            return profile
        }
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let entries = try api.get("/v1/profiles/\(profile)/recently-closed").json["items"] as? [[String: Any]] ?? []
            #expect(entries.count == 3)
            for entry in entries {
                let id = try #require(entry["id"] as? String)
                #expect(try api.post("/v1/profiles/\(profile)/recently-closed/\(id)/restore").status == 201)
            }
            // A restored tab is a new tab (a new id): found by the URL it shows.
            var shown: [String: String] = [:]
            for window in try api.get("/v1/browsers?profileId=\(profile)").json["items"] as? [[String: Any]] ?? [] {
                for tab in try api.get("/v1/browsers/\(window["id"] as? String ?? "")").json["tabs"] as? [[String: Any]] ?? [] {
                    if let url = tab["url"] as? String, let id = tab["id"] as? String { shown[url] = id }
                }
            }
            for expected in cases {
                let tab = try #require(shown["https://e.example/\(expected.current)"])
                let (urls, index) = try history(api, tab)
                #expect(urls == expected.kept.map { "https://e.example/\($0)" }, "current \(expected.current)")
                #expect(index == expected.index, "current \(expected.current)")
            }
        }
    }
}
