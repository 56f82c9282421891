import Foundation
import TestSupport
import Testing

/// Issue "Hostile files", finding 5: an imported document brings ids of its own choosing, and none
/// may be another profile's: not a group's (the group routes find a group by id across profiles),
/// not a recently-closed entry's (the store removes an entry's rows by its id), not a closed tab's
/// group or tab.
@Suite(.offThePool) struct ImportIDCollisionTests {
    static func document(
        group: String = "g00000000000000a1", closedGroup: String? = nil, entry: String = "c00000000000000e1", closedTab: String = "t00000000000000c1"
    ) -> String {
        let time = "2026-01-01T00:00:00.000Z"
        let history = #"[{"url":"https://x.example/","title":"","transition":"link","timestamp":"\#(time)"}]"#
        let closed =
            #"{"id":"c00000000000000c1","tabId":"\#(closedTab)","windowId":"w00000000000000a9","index":0,"groupId":\#(closedGroup.map { "\"\($0)\"" } ?? "null"),"#
            + #""group":\#(closedGroup == nil ? "null" : #"{"title":"","color":"blue","collapsed":false}"#),"wasActive":true,"wasPinned":false,"title":"","#
            + #""faviconUrl":null,"closedAt":"\#(time)","historyIndex":0,"history":\#(history)}"#
        let second = closed.replacingOccurrences(of: "c00000000000000c1", with: "c00000000000000c2")
            .replacingOccurrences(of: closedTab, with: "t00000000000000c2")
        return #"{"format":"browserd-profile","version":1,"profile":{"id":"p00000000000000a1","name":"I","createdAt":"\#(time)"},"#
            + #""recentlyClosed":[{"id":"\#(entry)","kind":"window","tabs":[\#(closed),\#(second)]}],"#
            + #""windows":[{"id":"w00000000000000a1","version":1,"createdAt":"\#(time)","lastActiveAt":"\#(time)","activeIndex":0,"pinnedCount":0,"#
            + #""groups":[{"id":"\#(group)","title":"","color":"blue","collapsed":false}],"#
            + #""tabs":[{"id":"t00000000000000a1","title":"","loading":false,"progress":1,"faviconUrl":null,"createdAt":"\#(time)","lastActiveAt":"\#(time)","#
            + #""groupId":"\#(group)","openerId":null,"openerNavigationIndex":null,"historyIndex":0,"history":\#(history)}]}]}"#
    }

    @Test func noIDADocumentBringsMayBeAnotherProfiles() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            // The other tenant: a live group, and a closed window (a window entry) with a closed group in it.
            let other = try api.profile("Other")
            let window = try api.window(other)
            let tab = try api.tab(window, "https://mine.example/")
            let group = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [tab]]).id
            let closing = try api.window(other)
            let a = try api.tab(closing, "https://a.example/")
            _ = try api.tab(closing, "https://b.example/")
            let closedGroup = try api.post("/v1/browsers/\(closing)/groups", ["tabIds": [a]]).id
            #expect(try api.send("DELETE", "/v1/browsers/\(closing)").status == 204)
            let entries = try api.get("/v1/profiles/\(other)/recently-closed").json["items"] as? [[String: Any]] ?? []
            let entry = try #require(entries.first?["id"] as? String)

            func attempt(_ body: String) throws -> APIClient.Reply { try api.send("POST", "/v1/profiles/import", raw: Array(body.utf8)) }
            #expect(try attempt(Self.document()).status == 201, "the document itself is sound")
            #expect(try api.send("DELETE", "/v1/profiles/p00000000000000a1").status == 204)
            for (what, body) in [
                ("a live group's id for a window's group", Self.document(group: group)),
                ("a live group's id for a closed tab's group", Self.document(closedGroup: group)),
                ("a closed group's id", Self.document(group: closedGroup)),
                ("a recently-closed entry's id", Self.document(entry: entry)),
                ("a live tab's id for a closed tab", Self.document(closedTab: tab)),
            ] {
                let refused = try attempt(body)
                #expect(refused.status == 409 && refused.problemType == "/problems/id-taken", "\(what): \(refused.status) \(refused.json)")
                #expect(try api.get("/v1/profiles/p00000000000000a1").status == 404, "\(what): nothing of it stays")
            }
            // The owner still reaches its group, and its recently closed entry is whole.
            #expect(try api.get("/v1/groups/\(group)").status == 200)
            #expect(try api.send("PATCH", "/v1/groups/\(group)", ["title": "Still mine"]).status == 200)
            let after = try api.get("/v1/profiles/\(other)/recently-closed").json["items"] as? [[String: Any]] ?? []
            #expect(after.first?["id"] as? String == entry && after.first?["tabCount"] as? Int == 2)
            // Within one document, a group id may be one window's only.
            let time = "2026-01-01T00:00:00.000Z"
            let another =
                #"{"id":"w00000000000000b1","version":1,"createdAt":"\#(time)","lastActiveAt":"\#(time)","activeIndex":0,"pinnedCount":0,"#
                + #""groups":[{"id":"g00000000000000a1","title":"","color":"blue","collapsed":false}],"tabs":[{"id":"t00000000000000b1","title":"","#
                + #""loading":false,"progress":1,"faviconUrl":null,"createdAt":"\#(time)","lastActiveAt":"\#(time)","groupId":"g00000000000000a1","#
                + #""openerId":null,"openerNavigationIndex":null,"historyIndex":0,"#
                + #""history":[{"url":"https://y.example/","title":"","transition":"link","timestamp":"\#(time)"}]}]}"#
            let twice = Self.document().replacingOccurrences(of: #""windows":[{"#, with: #""windows":["# + another + ",{")
            let repeated = try attempt(twice)
            #expect(repeated.status == 422 && repeated.json["field"] as? String == "windows[1].groups", "\(repeated.json)")
        }
    }
}
