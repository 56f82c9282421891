import BrowserAccess
import BrowserModel
import BrowserRecords
import BrowserServices
import Foundation
import HTTPServer
import Synchronization
import TestSupport
import Testing

@testable import BrowserAPI

/// Issue 56: while a renderer's live page shows a tab (its profile's lease names the page), a client's
/// navigation pends until the page commits or discards it; without one it commits at once, and a
/// renderer's report of the page's own navigation (`committed`) never pends.
@Suite(.offThePool) struct PendingNavigationAPITests {
    static let admin = "admin-token-0123456789"
    let auth = [("Authorization", "Bearer \(Self.admin)")]

    struct Setup {
        let api: InProcessAPI
        let profile: String
        let tab: String
    }

    private func setup(live: Bool = true, leases: RendererLeases = RendererLeases(), sink: (any DurableSink)? = nil) async -> Setup {
        let api = InProcessAPI(tokens: TokenStore(adminToken: Self.admin), leases: leases, sink: sink)
        let profile = await api.send(.post, "/v1/profiles", body: #"{"name":"p"}"#, headers: auth).id
        let window = await api.send(.post, "/v1/browsers", body: #"{"profileId":"\#(profile)"}"#, headers: auth).id
        let tab = await api.send(.post, "/v1/browsers/\(window)/tabs", body: #"{"url":"https://a.example/"}"#, headers: auth).id
        if live {
            let put = await api.send(.put, "/v1/profiles/\(profile)/renderer", body: DevToolsDirectoryTests.announcement(tab: tab), headers: auth)
            #expect(put.status == 200)
        }
        return Setup(api: api, profile: profile, tab: tab)
    }

    private func historyURLs(_ s: Setup) async -> [String] {
        let history = await s.api.send(.get, "/v1/tabs/\(s.tab)/history", headers: auth).json
        return (history["entries"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }
    }

    /// A renderer that dies without giving its lease up: once the lease runs out, the navigation
    /// pending for its page commits, as for a tab without a page (it stayed pending until the tab's
    /// next navigation before). A lease still running leaves it pending.
    @Test func aNavigationPendingForALeaseThatRanOutCommits() async throws {
        let clock = TestClock()
        let s = await setup(leases: RendererLeases(now: clock.read))
        let answer = await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://b.example/"}"#, headers: auth)
        #expect(answer.json["pending"] is [String: Any])
        clock.advance(by: .seconds(14))
        #expect(await s.api.routes.settleExpiredLeases() == 0)
        #expect(await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json["pending"] is [String: Any], "the lease still runs")
        clock.advance(by: .seconds(2))
        #expect(await s.api.routes.settleExpiredLeases() == 1)
        let tab = await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json
        #expect(tab["pending"] == nil && tab["url"] as? String == "https://b.example/" && tab["historyCount"] as? Int == 2)
        #expect(await historyURLs(s) == ["https://a.example/", "https://b.example/"])
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/renderer", headers: auth).status == 404)
        #expect(await s.api.routes.settleExpiredLeases() == 0, "a lease is settled once")
    }

    /// A store that fails as a lease runs out keeps its pending navigation from committing then; it
    /// commits at a later sweep once the store takes changes again (it stayed pending before).
    @Test func aPendingNavigationAFailingStoreHeldBackCommitsLater() async throws {
        let sink = FailingSink()
        let clock = TestClock()
        let leases = RendererLeases(now: clock.read)
        let s = await setup(leases: leases, sink: sink)
        #expect(await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://b.example/"}"#, headers: auth).json["pending"] != nil)
        sink.failing.withLock { $0 = "disk full" }
        clock.advance(by: .seconds(16))
        #expect(await s.api.routes.settleExpiredLeases() == 1)
        #expect(await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json["pending"] is [String: Any], "the store refused it")
        _ = await s.api.routes.settleExpiredLeases()
        #expect(await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json["pending"] is [String: Any], "still refused")
        sink.failing.withLock { $0 = nil }
        #expect(await s.api.routes.settleExpiredLeases() == 0, "no lease ran out since")
        let tab = await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json
        #expect(tab["pending"] == nil && tab["url"] as? String == "https://b.example/")
        #expect(leases.takeUnsettled().isEmpty, "settled once")
    }

    /// A renderer that comes back after its lease ran out, before the sweep: the pages its old lease
    /// named and the new one does not still commit their pending navigations.
    @Test func aNewAnnouncementSettlesTheExpiredLeasesPages() async throws {
        let clock = TestClock()
        let s = await setup(leases: RendererLeases(now: clock.read))
        _ = await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://b.example/"}"#, headers: auth)
        clock.advance(by: .seconds(16))
        let empty = DevToolsDirectoryTests.announcement(tab: s.tab).replacingOccurrences(of: #"[{"tabId":"\#(s.tab)","targetId":"T1"}]"#, with: "[]")
        #expect(await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: empty, headers: auth).status == 200)
        #expect(await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json["pending"] == nil)
    }

    @Test func aNavigationPendsUntilThePageCommitsIt() async throws {
        let s = await setup()
        let answer = await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://b.example/","transition":"typed"}"#, headers: auth)
        #expect(answer.status == 200)
        let pending = try #require(answer.json["pending"] as? [String: Any])
        #expect(answer.json["url"] as? String == "https://b.example/", "a new navigation's pending entry is the visible one")
        #expect(answer.json["historyCount"] as? Int == 1 && answer.json["historyIndex"] as? Int == 0)
        #expect(pending["url"] as? String == "https://b.example/" && pending["historyIndex"] is NSNull && pending["transition"] as? String == "typed")
        #expect(await historyURLs(s) == ["https://a.example/"], "a pending entry is never in history")
        let id = try #require(pending["id"] as? Int)

        // A wrong id is a conflict that changes nothing; bad bodies are 422s naming the member.
        let stale = await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/commit", body: #"{"id":\#(id == 1 ? 2 : 1)}"#, headers: auth)
        #expect(stale.status == 409 && (stale.json["type"] as? String ?? "").hasSuffix("pending-navigation-gone"))
        for body in [#"{}"#, #"{"id":0}"#, #"{"id":"x"}"#, #"{"id":\#(id),"url":"javascript:alert(1)"}"#, #"{"id":\#(id),"extra":1}"#] {
            let bad = await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/commit", body: body, headers: auth)
            #expect(bad.status == 422, "\(body)")
        }
        #expect(await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json["pending"] != nil)

        let committed = await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/commit", body: #"{"id":\#(id),"url":"https://b.example/final"}"#, headers: auth)
        #expect(committed.status == 200 && committed.json["pending"] == nil, "\(String(decoding: committed.body, as: UTF8.self))")
        #expect(committed.json["historyCount"] as? Int == 2 && committed.json["url"] as? String == "https://b.example/final")
        #expect(await historyURLs(s) == ["https://a.example/", "https://b.example/final"])
        // Once committed it is gone.
        #expect(await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/commit", body: #"{"id":\#(id)}"#, headers: auth).status == 409)
    }

    @Test func aDiscardedNavigationLeavesTheTabAsItWas() async throws {
        let s = await setup()
        let answer = await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://b.example/204"}"#, headers: auth)
        let id = try #require((answer.json["pending"] as? [String: Any])?["id"] as? Int)
        #expect(await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/discard", body: #"{}"#, headers: auth).status == 422)
        let discarded = await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/discard", body: #"{"id":\#(id)}"#, headers: auth)
        #expect(discarded.status == 200 && discarded.json["pending"] == nil)
        #expect(discarded.json["url"] as? String == "https://a.example/" && discarded.json["loading"] as? Bool == false)
        #expect(await historyURLs(s) == ["https://a.example/"])
        #expect(await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/discard", body: #"{"id":\#(id)}"#, headers: auth).status == 409)
    }

    @Test func movesAndReloadsPendAtTheirEntry() async throws {
        let s = await setup()
        // The page's own navigation, already committed, never pends.
        let own = await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://b.example/","committed":true}"#, headers: auth)
        #expect(own.json["pending"] == nil && own.json["historyCount"] as? Int == 2)
        #expect(await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://c.example/","committed":"yes"}"#, headers: auth).status == 422)

        let back = await s.api.send(.post, "/v1/tabs/\(s.tab)/back", headers: auth)
        let pending = try #require(back.json["pending"] as? [String: Any])
        #expect(pending["historyIndex"] as? Int == 0 && pending["url"] as? String == "https://a.example/")
        #expect(back.json["url"] as? String == "https://b.example/", "a pending move is not the visible entry")
        #expect(back.json["historyIndex"] as? Int == 1)
        let id = try #require(pending["id"] as? Int)
        let moved = await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/commit", body: #"{"id":\#(id)}"#, headers: auth)
        #expect(moved.json["historyIndex"] as? Int == 0 && moved.json["historyCount"] as? Int == 2)

        let reload = await s.api.send(.post, "/v1/tabs/\(s.tab)/reload", headers: auth)
        #expect((reload.json["pending"] as? [String: Any])?["historyIndex"] as? Int == 0)
        let go = await s.api.send(.post, "/v1/tabs/\(s.tab)/go", body: #"{"offset":1}"#, headers: auth)
        #expect((go.json["pending"] as? [String: Any])?["historyIndex"] as? Int == 1, "a new pending navigation replaces the one before")
        let reported = await s.api.send(.post, "/v1/tabs/\(s.tab)/go", body: #"{"offset":1,"committed":true}"#, headers: auth)
        #expect(reported.json["pending"] == nil && reported.json["historyIndex"] as? Int == 1, "the page's own move ends the pending one")
    }

    @Test func withoutALivePageANavigationCommitsAtOnce() async throws {
        let s = await setup(live: false)
        let answer = await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://b.example/"}"#, headers: auth)
        #expect(answer.json["pending"] == nil && answer.json["historyCount"] as? Int == 2)
        #expect(await s.api.send(.post, "/v1/tabs/\(s.tab)/pending/commit", body: #"{"id":1}"#, headers: auth).status == 409)
    }

    /// A page the renderer's lease no longer names (its live page closed, the renderer went) leaves
    /// no page to decide: the navigation pending for it commits at once.
    @Test func aPageThatLeavesTheLeaseCommitsItsPendingNavigation() async throws {
        let s = await setup()
        let asked = await s.api.send(.post, "/v1/tabs/\(s.tab)/navigate", body: #"{"url":"https://b.example/"}"#, headers: auth)
        #expect(asked.json["pending"] != nil)
        let noPages = DevToolsDirectoryTests.announcement(tab: s.tab).replacingOccurrences(
            of: #"[{"tabId":"\#(s.tab)","targetId":"T1"}]"#, with: "[]")
        #expect(await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: noPages, headers: auth).status == 200)
        let tab = await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json
        #expect(tab["pending"] == nil && tab["historyCount"] as? Int == 2)
        #expect(await historyURLs(s) == ["https://a.example/", "https://b.example/"])

        // The renderer gives its lease up: the same.
        _ = await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: DevToolsDirectoryTests.announcement(tab: s.tab), headers: auth)
        let back = await s.api.send(.post, "/v1/tabs/\(s.tab)/back", headers: auth)
        #expect(back.json["pending"] != nil)
        #expect(await s.api.send(.delete, "/v1/profiles/\(s.profile)/renderer", headers: auth).status == 204)
        let after = await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: auth).json
        #expect(after["pending"] == nil && after["historyIndex"] as? Int == 0)
    }
}

/// A store that refuses changes while `failing` says why (as the app's does after a failed commit,
/// until its recovery probe passes).
final class FailingSink: DurableSink {
    let failing = Mutex<String?>(nil)
    var unavailableReason: String? { failing.withLock { $0 } }

    func enqueue(_ change: ChangeSet) -> @Sendable () async throws -> Void { {} }
}

/// The time a test's leases are judged by: it moves only when the test moves it, so a lease runs out
/// when the test says, however slow the machine.
final class TestClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    @Sendable func read() -> ContinuousClock.Instant { instant.withLock { $0 } }

    func advance(by duration: Duration) { instant.withLock { $0 += duration } }
}
