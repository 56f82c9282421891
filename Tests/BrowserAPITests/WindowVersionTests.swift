import Foundation
import HTTPServer
import TestSupport
import Testing

/// Read-your-writes for every mutating endpoint (issue 17): a mutation bumps the window's version
/// (its ETag) if and only if it changed what a read of the window shows, and the next read shows it.
@Suite(.computing) struct WindowVersionTests {
    /// A fresh window: a (pinned), b, c opened by b, d in group g; b active.
    struct Fixture {
        let api: InProcessAPI
        let profile: String
        let window: String
        let tabs: [String: String]
        let group: String

        static func make() async -> Fixture {
            let api = InProcessAPI()
            let profile = await api.profile()
            let window = await api.window(profile)
            var tabs: [String: String] = [:]
            for name in ["a", "b", "c", "d"] { tabs[name] = await api.tab(window, "https://\(name).example/") }
            _ = await api.send(.post, "/v1/tabs/\(tabs["a"]!)/pin")
            _ = await api.send(.patch, "/v1/tabs/\(tabs["c"]!)", body: #"{"openerTabId":"\#(tabs["b"]!)"}"#)
            let group = await api.send(.post, "/v1/browsers/\(window)/groups", body: #"{"tabIds":["\#(tabs["d"]!)"],"title":"g"}"#).id
            // A closed tab to restore.
            let closed = await api.tab(window, "https://closed.example/")
            _ = await api.send(.delete, "/v1/tabs/\(closed)")
            _ = await api.send(.post, "/v1/tabs/\(tabs["b"]!)/activate")
            // c has finished loading; the others are still loading.
            _ = await api.send(.patch, "/v1/tabs/\(tabs["c"]!)", body: #"{"loading":false,"progress":1}"#)
            return Fixture(api: api, profile: profile, window: window, tabs: tabs, group: group)
        }

        /// The window as a read shows it, without its version; and its ETag.
        func read() async -> (body: String, etag: String?) {
            let answer = await api.send(.get, "/v1/browsers/\(window)")
            var json = answer.json
            json["version"] = nil
            let body = String(decoding: try! JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), as: UTF8.self)
            return (body, answer.header("ETag"))
        }
    }

    /// A mutation, and whether it changes the window read (nil: it may or may not; only the rule is checked).
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let changes: Bool
        let request: @Sendable (Fixture) -> (HTTPMethod, String, String?)
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "set an opener", changes: true) { f in (.patch, "/v1/tabs/\(f.tabs["d"]!)", #"{"openerTabId":"\#(f.tabs["b"]!)"}"#) },
        Case(name: "set the same opener", changes: false) { f in (.patch, "/v1/tabs/\(f.tabs["c"]!)", #"{"openerTabId":"\#(f.tabs["b"]!)"}"#) },
        Case(name: "clear an opener", changes: true) { f in (.patch, "/v1/tabs/\(f.tabs["c"]!)", #"{"openerTabId":null}"#) },
        Case(name: "clear no opener", changes: false) { f in (.patch, "/v1/tabs/\(f.tabs["d"]!)", #"{"openerTabId":null}"#) },
        Case(name: "title", changes: true) { f in (.patch, "/v1/tabs/\(f.tabs["b"]!)", #"{"title":"T"}"#) },
        Case(name: "same title", changes: false) { f in (.patch, "/v1/tabs/\(f.tabs["b"]!)", #"{"title":""}"#) },
        Case(name: "progress", changes: true) { f in (.patch, "/v1/tabs/\(f.tabs["b"]!)", #"{"progress":0.5}"#) },
        Case(name: "loading", changes: true) { f in (.patch, "/v1/tabs/\(f.tabs["b"]!)", #"{"loading":false}"#) },
        Case(name: "favicon", changes: true) { f in (.patch, "/v1/tabs/\(f.tabs["b"]!)", #"{"faviconUrl":"https://b.example/f.ico"}"#) },
        Case(name: "empty patch", changes: false) { f in (.patch, "/v1/tabs/\(f.tabs["b"]!)", "{}") },
        Case(name: "activate another tab", changes: true) { f in (.post, "/v1/tabs/\(f.tabs["c"]!)/activate", nil) },
        Case(name: "activate the active tab", changes: false) { f in (.post, "/v1/tabs/\(f.tabs["b"]!)/activate", nil) },
        Case(name: "pin", changes: true) { f in (.post, "/v1/tabs/\(f.tabs["c"]!)/pin", nil) },
        Case(name: "pin a pinned tab", changes: false) { f in (.post, "/v1/tabs/\(f.tabs["a"]!)/pin", nil) },
        Case(name: "unpin", changes: true) { f in (.post, "/v1/tabs/\(f.tabs["a"]!)/unpin", nil) },
        Case(name: "unpin an unpinned tab", changes: false) { f in (.post, "/v1/tabs/\(f.tabs["c"]!)/unpin", nil) },
        Case(name: "move", changes: true) { f in (.post, "/v1/tabs/\(f.tabs["c"]!)/move", #"{"index":1}"#) },
        Case(name: "move to where it is", changes: false) { f in (.post, "/v1/tabs/\(f.tabs["c"]!)/move", #"{"index":2}"#) },
        Case(name: "navigate", changes: true) { f in (.post, "/v1/tabs/\(f.tabs["b"]!)/navigate", #"{"url":"https://b.example/2"}"#) },
        Case(name: "back at the start", changes: false) { f in (.post, "/v1/tabs/\(f.tabs["b"]!)/back", nil) },
        Case(name: "forward at the end", changes: false) { f in (.post, "/v1/tabs/\(f.tabs["b"]!)/forward", nil) },
        Case(name: "reload a loaded tab", changes: true) { f in (.post, "/v1/tabs/\(f.tabs["c"]!)/reload", nil) },
        Case(name: "reload a tab still loading from the start", changes: false) { f in (.post, "/v1/tabs/\(f.tabs["b"]!)/reload", nil) },
        Case(name: "duplicate", changes: true) { f in (.post, "/v1/tabs/\(f.tabs["c"]!)/duplicate", nil) },
        Case(name: "replace", changes: true) { f in (.post, "/v1/tabs/\(f.tabs["c"]!)/replace", #"{"url":"https://r.example/"}"#) },
        Case(name: "close a tab", changes: true) { f in (.delete, "/v1/tabs/\(f.tabs["c"]!)", nil) },
        Case(name: "close the opener of another tab", changes: true) { f in (.delete, "/v1/tabs/\(f.tabs["b"]!)", nil) },
        Case(name: "open a tab", changes: true) { f in (.post, "/v1/browsers/\(f.window)/tabs", #"{"url":"https://n.example/"}"#) },
        Case(name: "close tabs", changes: true) { f in (.post, "/v1/browsers/\(f.window)/close-tabs", #"{"tabIds":["\#(f.tabs["c"]!)"]}"#) },
        Case(name: "close no tabs", changes: false) { f in (.post, "/v1/browsers/\(f.window)/close-tabs", #"{"tabIds":[]}"#) },
        Case(name: "restore a closed tab", changes: true) { f in (.post, "/v1/browsers/\(f.window)/restore-closed-tab", nil) },
        Case(name: "create a group", changes: true) { f in (.post, "/v1/browsers/\(f.window)/groups", #"{"tabIds":["\#(f.tabs["c"]!)"]}"#) },
        Case(name: "rename a group", changes: true) { f in (.patch, "/v1/groups/\(f.group)", #"{"title":"h"}"#) },
        Case(name: "rename a group to its name", changes: false) { f in (.patch, "/v1/groups/\(f.group)", #"{"title":"g"}"#) },
        Case(name: "collapse a group", changes: true) { f in (.patch, "/v1/groups/\(f.group)", #"{"collapsed":true}"#) },
        Case(name: "add a tab to a group", changes: true) { f in (.post, "/v1/groups/\(f.group)/add-tabs", #"{"tabIds":["\#(f.tabs["c"]!)"]}"#) },
        Case(name: "add a member to its group", changes: false) { f in (.post, "/v1/groups/\(f.group)/add-tabs", #"{"tabIds":["\#(f.tabs["d"]!)"]}"#) },
        Case(name: "ungroup", changes: true) { f in (.post, "/v1/browsers/\(f.window)/ungroup-tabs", #"{"tabIds":["\#(f.tabs["d"]!)"]}"#) },
        Case(name: "ungroup a tab in no group", changes: false) { f in (.post, "/v1/browsers/\(f.window)/ungroup-tabs", #"{"tabIds":["\#(f.tabs["c"]!)"]}"#) },
        Case(name: "move a group", changes: true) { f in (.post, "/v1/groups/\(f.group)/move", #"{"beforeIndex":1}"#) },
        Case(name: "delete a group", changes: true) { f in (.delete, "/v1/groups/\(f.group)", nil) },
        Case(name: "close a group", changes: true) { f in (.post, "/v1/groups/\(f.group)/close", nil) },
        Case(name: "a broadcast", changes: false) { f in (.put, "/v1/browsers/\(f.window)/broadcasts/toolbar.topHeight", #"{"value":40}"#) },
        Case(name: "a route", changes: false) { f in (.post, "/v1/browsers/\(f.window)/route", #"{"url":"browserd://settings"}"#) },
        Case(name: "a route that opens a tab", changes: true) { f in
            (.post, "/v1/browsers/\(f.window)/route", #"{"url":"browserd://open?url=https%3A%2F%2Fo.example%2F"}"#)
        },
        Case(name: "a command that opens a tab", changes: true) { f in (.post, "/v1/browsers/\(f.window)/commands/openNewTab", #"{"args":{}}"#) },
    ]

    @Test(arguments: cases)
    func versionChangesIffTheReadChanges(_ testCase: Case) async throws {
        let fixture = await Fixture.make()
        let before = await fixture.read()
        let (method, path, body) = testCase.request(fixture)
        let answer = await fixture.api.send(method, path, body: body)
        #expect((200..<300).contains(answer.status), "\(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        let after = await fixture.read()
        let readChanged = before.body != after.body
        #expect(readChanged == testCase.changes, "the read \(readChanged ? "changed" : "did not change")")
        #expect(
            (before.etag != after.etag) == readChanged,
            "version \(before.etag ?? "-") → \(after.etag ?? "-") while the read \(readChanged ? "changed" : "did not")")
        if let etag = answer.header("ETag"), method != .delete {
            #expect(etag == after.etag, "the answer's ETag is the version a read then shows")
        }
    }

    /// The opener a PATCH sets reads back at once from the tab and the window.
    @Test func anOpenerReadsBackAtOnce() async throws {
        let f = await Fixture.make()
        let d = f.tabs["d"]!
        let b = f.tabs["b"]!
        #expect(await f.api.send(.patch, "/v1/tabs/\(d)", body: #"{"openerTabId":"\#(b)"}"#).json["openerTabId"] as? String == b)
        #expect(await f.api.send(.get, "/v1/tabs/\(d)").json["openerTabId"] as? String == b)
        let tabs = await f.api.send(.get, "/v1/browsers/\(f.window)").json["tabs"] as? [[String: Any]]
        #expect(tabs?.first { $0["id"] as? String == d }?["openerTabId"] as? String == b)
        _ = await f.api.send(.patch, "/v1/tabs/\(d)", body: #"{"openerTabId":null}"#)
        #expect(await f.api.send(.get, "/v1/tabs/\(d)").json["openerTabId"] is NSNull)
    }
}
