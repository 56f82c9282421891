import BrowserdClient
import Foundation
import TestSupport
import Testing

@testable import BrowserdRenderer

/// A tab's history as Chromium's own `NavigationController` holds it (issue 56), with a real Chromium.
extension RendererTests {
    /// `history.pushState` with the current URL: Chromium adds an entry (two with the same URL, the
    /// index on the second), and so does browserd; `replaceState` with it replaces, adding none.
    @Test func aSameURLPushStateAddsAnEntryAsChromiumDoes() async throws {
        try await Setup.with(liveTabs: 1) { setup in
            let pages = setup.pages
            let a = try await setup.open("/a.html")
            _ = try await Self.eventually("page A loaded", state: { await describe(setup, a) }) {
                let tab = try await setup.tab(a)
                return tab.title == "Page A" && !tab.loading ? tab : nil
            }
            #expect(try await setup.renderer.evaluate("history.pushState({}, '', location.href); 'pushed'", inTab: a) == "pushed")
            let pushed = try await Self.eventually("the same-URL entry", state: { await describe(setup, a) }) {
                let tab = try await setup.tab(a)
                return tab.historyCount == 2 ? tab : nil
            }
            #expect(pushed.historyIndex == 1 && pushed.url == pages.url("/a.html") && pushed.title == "Page A", "the document's title stays")
            let chromium = try #require(try await setup.renderer.pageHistory(ofTab: a))
            #expect(chromium.entries.map(\.url) == [pages.url("/a.html"), pages.url("/a.html")] && chromium.currentIndex == 1)
            let history = try await setup.client.api.getTabHistory(path: .init(tabId: a)).ok.body.json
            #expect(history.entries.map(\.url) == chromium.entries.map(\.url) && history.currentIndex == chromium.currentIndex)

            #expect(try await setup.renderer.evaluate("history.replaceState({}, '', location.href); 'replaced'", inTab: a) == "replaced")
            // A later push shows the replace was taken (nothing added by it) before it.
            #expect(try await setup.renderer.evaluate("history.pushState({}, '', '/a.html#after'); 'after'", inTab: a) == "after")
            let after = try await Self.eventually("the entry after", state: { await describe(setup, a) }) {
                let tab = try await setup.tab(a)
                return tab.url == pages.url("/a.html#after") ? tab : nil
            }
            #expect(after.historyCount == 3 && after.historyIndex == 2)
            let list = try #require(try await setup.renderer.pageHistory(ofTab: a))
            #expect(list.entries.count == 3 && list.currentIndex == 2)
        }
    }
}
