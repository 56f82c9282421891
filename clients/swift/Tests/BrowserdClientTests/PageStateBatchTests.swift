import BrowserdClient
import Foundation
import TestSupport
import Testing

@testable import BrowserdRenderer

/// A page's state reports held and sent as one (``PageStateBatch``): latest values, in order with commits.
@Suite(.computing) struct PageStateBatchTests {
    typealias Action = PageSync.Action

    static func state(title: String? = nil, loading: Bool? = nil, progress: Double? = nil, favicon: String?? = nil) -> Action {
        .reportPageState(title: title, loading: loading, progress: progress, faviconURL: favicon)
    }

    @Test func reportsHeldTogetherGoAsOneWithTheirLatestValues() {
        var batch = PageStateBatch()
        let none = batch.take()
        #expect(batch.isEmpty && none == nil, "nothing held: nothing to send")
        let held = [
            batch.hold(Self.state(title: "One")), batch.hold(Self.state(loading: true, progress: 0.1)),
            batch.hold(Self.state(loading: true, progress: 0.7)), batch.hold(Self.state(title: "Two", favicon: .some("http://a.test/icon.png"))),
        ]
        let reload = batch.hold(.reload)
        #expect(held == [true, true, true, true] && !reload, "only page state is held")
        let taken = batch.take()
        #expect(taken == Self.state(title: "Two", loading: true, progress: 0.7, favicon: .some("http://a.test/icon.png")))
        let again = batch.take()
        #expect(batch.isEmpty && again == nil, "taken once")
        // A favicon that went away is a value too (null), not "unchanged".
        _ = batch.hold(Self.state(favicon: .some("http://a.test/icon.png")))
        _ = batch.hold(Self.state(favicon: .some(nil)))
        let gone = batch.take()
        #expect(gone == Self.state(favicon: .some(nil)))
    }

    @Test func beforeACommitThatStartsALoadOnlyTheTitleAndFaviconGo() {
        var batch = PageStateBatch()
        _ = batch.hold(Self.state(title: "Old page", loading: false, progress: 1))
        // A new entry: browserd sets loading and progress itself; the title belongs to the entry before.
        let beforeEntry = batch.take(before: .reportNavigation(url: "http://b.test/", transition: "link", replace: false))
        #expect(beforeEntry == Self.state(title: "Old page"))
        _ = batch.hold(Self.state(loading: true, progress: 0.1))
        let beforeMove = batch.take(before: .reportMove(offset: -1))
        #expect(beforeMove == nil && batch.isEmpty, "a move starts its own load: nothing left to send")
        // A push within the document, a pending navigation's commit, a crash: everything goes first.
        for next: Action in [
            .reportNavigation(url: "http://a.test/#x", transition: "link", replace: false, sameDocument: true), .reportCommit(id: 1, url: nil),
            .reportCrash, .reportClosed,
        ] {
            _ = batch.hold(Self.state(title: "T", loading: false, progress: 1))
            let first = batch.take(before: next)
            #expect(first == Self.state(title: "T", loading: false, progress: 1), "\(next)")
        }
    }

    /// A page that starts and stops loading within one batch (a same-document navigation): the stop
    /// is judged against the start told, not against a model that has not seen it, so the batch ends
    /// with the stop (judged against the model, the stop looked like no change and the tab stayed
    /// loading: seen with a real Chromium).
    @Test func aStopAfterAStartNotYetSentIsTold() {
        var sync = PageSyncTests.following()
        var batch = PageStateBatch()
        for event: PageSync.Event in [.loading(true, progress: 0.1), .loading(false, progress: 1)] {
            for action in sync.event(event, now: 1) { _ = batch.hold(action) }
        }
        let sent = batch.take()
        #expect(sent == Self.state(loading: false, progress: 1))
        // Once browserd answered, the model is the judge again.
        _ = sync.reported(sent!, answer: PageSyncTests.tab("http://a.test/", index: 0, count: 1), now: 2)
        #expect(sync.event(.loading(false, progress: 1), now: 3).isEmpty, "no change from what browserd holds")
    }
}

/// What the renderer makes of browserd's answers to a page's reports, against a live browserd.
@Suite(.serialized, .offThePool, .timeLimit(.minutes(1))) struct ReportAnswerTests {
    /// A tab id goes in a report's path as one segment: browserd's ids as they are, anything else escaped.
    @Test func anIdIsOnePathSegment() {
        #expect(TabReports.pathSegment("t1A-._~z9") == "t1A-._~z9")
        #expect(TabReports.pathSegment("../../v1/profiles") == "..%2F..%2Fv1%2Fprofiles")
        #expect(TabReports.pathSegment("a b?c#d") == "a%20b%3Fc%23d")
        #expect(TabReports.pathSegment("é") == "%C3%A9")
    }

    /// A tab closed while its page's report was on its way answers "tab not found": the page's task
    /// then neither logs a refusal nor retries member by member. A refused member (a favicon URL that
    /// is no URL: 422) is not taken for a tab that is gone.
    @Test func aClosedTabIsGoneAndARefusalIsNot() async throws {
        let server = try await LiveServer()
        let client = BrowserdClient(server: server.url)
        let profile = try await client.api.createProfile(body: .json(.init(name: "gone"))).created.body.json
        let window = try await client.api.createWindow(body: .json(.init(profileId: profile.id))).created.body.json
        let tab = try await client.api.openTab(path: .init(browserId: window.id), body: .json(.init(url: "https://a.example/"))).created.body.json
        // As a page's task sends them (``TabReports``), and as the generated client does.
        let reports = TabReports(client: client)
        do {
            _ = try await reports.update(tab.id, title: nil, loading: nil, progress: nil, faviconURL: "not a url")
            Issue.record("a favicon URL that is no URL was taken")
        } catch {
            #expect(BrowserdProblem.from(error)?.status == 422)
            #expect(!LivePage.tabIsGone(error))
        }
        _ = try await client.api.closeTab(path: .init(tabId: tab.id)).noContent
        do {
            _ = try await reports.update(tab.id, title: "late", loading: nil, progress: nil, faviconURL: nil)
            Issue.record("a closed tab took a title")
        } catch {
            #expect(LivePage.tabIsGone(error))
        }
        do {
            _ = try await client.api.updateTab(path: .init(tabId: tab.id), body: .json(.init(title: "late"))).ok
            Issue.record("a closed tab took a title")
        } catch {
            #expect(LivePage.tabIsGone(error))
        }
        // An id that is not one path segment is escaped, never a way to another path.
        await #expect(throws: BrowserdProblem.self) {
            _ = try await reports.update("../../v1/profiles", title: "x", loading: nil, progress: nil, faviconURL: nil)
        }
    }

    /// A page's reports as bytes keep to the contract: what ``TabReports`` sends decodes as the
    /// generated `NavigateTab` and `PatchTab`, browserd takes it, and its answer read as JSON is the
    /// tab the generated `Tab` gives (a pending navigation's too).
    @Test func reportsAsBytesKeepToTheContract() async throws {
        let navigate = TabReports.navigateBody(url: "https://b.example/?q=\u{e9}", transition: "form_submit", replace: true, sameDocument: true)
        let decoded = try JSONDecoder().decode(Components.Schemas.NavigateTab.self, from: Data(navigate.serialized))
        #expect(decoded.url == "https://b.example/?q=\u{e9}" && decoded.transition == .formSubmit && decoded.replace == true)
        #expect(decoded.sameDocument == true && decoded.committed == true)
        #expect(
            try JSONDecoder().decode(
                Components.Schemas.NavigateTab.self,
                from: Data(TabReports.navigateBody(url: "https://c.example/", transition: "link", replace: false, sameDocument: false).serialized)
            ).sameDocument == nil)
        let patch = try JSONDecoder().decode(
            Components.Schemas.PatchTab.self,
            from: Data(TabReports.patchBody(title: "T \"q\"", loading: true, progress: 0.7, faviconURL: "https://b.example/f.ico").serialized))
        #expect(patch.title == "T \"q\"" && patch.loading == true && patch.progress == 0.7 && patch.faviconUrl == "https://b.example/f.ico")
        #expect(TabReports.patchBody(title: nil, loading: nil, progress: 0.1, faviconURL: nil) == ["progress": .number(0.1)])

        let server = try await LiveServer()
        let client = BrowserdClient(server: server.url)
        let reports = TabReports(client: client)
        let profile = try await client.api.createProfile(body: .json(.init(name: "bytes"))).created.body.json
        let window = try await client.api.createWindow(body: .json(.init(profileId: profile.id))).created.body.json
        let tab = try await client.api.openTab(path: .init(browserId: window.id), body: .json(.init(url: "https://a.example/"))).created.body.json
        let committed = try await reports.navigate(tab.id, url: "https://b.example/", transition: "link", replace: false, sameDocument: false)
        #expect(committed.url == "https://b.example/" && committed.historyIndex == 1 && committed.historyCount == 2)
        let stated = try await reports.update(tab.id, title: "B", loading: true, progress: 0.7, faviconURL: "https://b.example/f.ico")
        #expect(stated.title == "B" && stated.loading && stated.progress == 0.7 && stated.faviconURL == "https://b.example/f.ico")
        let raw = try await client.send(.get, "/v1/tabs/\(tab.id)", json: nil, operationID: "getTab")
        let generated = try await client.api.getTab(path: .init(tabId: tab.id)).ok.body.json
        #expect(ModelTab(answer: try JSONValue.parse(raw)) == ModelTab(generated))
        // A pending navigation (a renderer's tab only has one) read as the generated `Tab` reads it.
        guard case .object(var members) = try JSONValue.parse(raw) else {
            Issue.record("a tab is an object")
            return
        }
        members["pending"] = ["id": 7, "url": "https://c.example/", "historyIndex": .null, "transition": "link", "startedAt": "2026-01-01T00:00:00.000Z"]
        #expect(ModelTab(answer: .object(members))?.pending == ModelTab.Pending(id: 7, url: "https://c.example/", index: nil))
        members["pending"] = ["url": "https://c.example/"]
        #expect(ModelTab(answer: .object(members)) == nil)
        members["pending"] = nil
        members["historyIndex"] = "1"
        #expect(ModelTab(answer: .object(members)) == nil)
    }
}

/// Which of a page's DevTools events its inbox keeps (``PageInbox/kept(_:)``): the ones its task
/// acts on (``LivePage/PageEvent``), of bindings' calls only its own two.
@Suite(.computing) struct PageEventFilterTests {
    static func event(_ method: String, _ params: JSONValue = [:]) -> DevToolsEvent {
        DevToolsEvent(method: method, params: params, sessionID: "s")
    }

    @Test func onlyWhatThePageActsOnIsKept() {
        for method in [
            "Page.frameRequestedNavigation", "Page.frameStartedNavigating", "Page.frameNavigated", "Page.navigatedWithinDocument",
            "Page.frameStartedLoading", "Page.frameStoppedLoading", "Page.domContentEventFired", "Target.detachedFromTarget",
            "Inspector.detached", "Inspector.targetCrashed",
        ] {
            #expect(PageInbox.kept(Self.event(method)) != nil, "\(method)")
        }
        for binding in [pageStateBinding, navigationBinding] {
            #expect(PageInbox.kept(Self.event("Runtime.bindingCalled", ["name": .string(binding)])) == .bindingCalled)
        }
        #expect(PageInbox.kept(Self.event("Runtime.bindingCalled", ["name": "someoneElses"])) == nil)
        for method in [
            "Page.lifecycleEvent", "Runtime.executionContextCreated", "Runtime.executionContextDestroyed", "Runtime.executionContextsCleared",
            "Runtime.consoleAPICalled", "Page.loadEventFired", "Page.frameResized", "Page.frameAttached",
        ] {
            #expect(PageInbox.kept(Self.event(method)) == nil, "\(method)")
        }
    }
}
