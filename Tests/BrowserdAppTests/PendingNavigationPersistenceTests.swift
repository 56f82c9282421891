import BrowserdApp
import Foundation
import TestSupport
import Testing

/// Issue 56: a pending navigation is never stored; a restart drops it and the tab is as its page last
/// committed it.
@Suite(.serialized, .offThePool) struct PendingNavigationPersistenceTests {
    @Test func aRestartDropsAPendingNavigation() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-pending-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let tab: String = try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let tab = try api.tab(window, "https://a.example/")
            let lease: [String: Any] = [
                "name": "r1", "devtoolsUrl": "ws://127.0.0.1:9222", "controlKey": String(repeating: "k", count: 40),
                "browser": ["product": "Chrome/156", "protocolVersion": "1.3", "userAgent": "UA", "v8Version": "15", "webkitVersion": "@1"],
                "pages": [["tabId": tab, "targetId": "T1"]],
            ]
            #expect(try api.send("PUT", "/v1/profiles/\(profile)/renderer", lease).status == 200)
            let pending = try api.post("/v1/tabs/\(tab)/navigate", ["url": "https://b.example/"]).json
            #expect(pending["pending"] != nil && pending["url"] as? String == "https://b.example/")
            // A committed change after it is stored with the tab (its title), the pending entry is not.
            _ = try api.send("PATCH", "/v1/tabs/\(tab)", ["title": "Kept"])
            return tab
        }
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let restored = try api.get("/v1/tabs/\(tab)").json
            #expect(restored["pending"] == nil && restored["url"] as? String == "https://a.example/")
            #expect(restored["historyCount"] as? Int == 1 && restored["title"] as? String == "Kept")
            let history = try api.get("/v1/tabs/\(tab)/history").json
            #expect((history["entries"] as? [[String: Any]])?.compactMap { $0["url"] as? String } == ["https://a.example/"])
        }
    }
}
