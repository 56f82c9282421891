import BrowserdClient
import Foundation
import TestSupport
import Testing

@testable import BrowserdRenderer

#if canImport(Glibc)
    import Glibc
#endif

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
            let seen = await describe(setup, a)
            #expect(after.historyCount == 3 && after.historyIndex == 2, "\(seen)")
            let list = try #require(try await setup.renderer.pageHistory(ofTab: a))
            #expect(list.entries.count == 3 && list.currentIndex == 2)
        }
    }

    /// The page's own commits are reported from their steps, without reading Chromium's list; a
    /// client's back to an entry a step made asks Chromium's list once for its id and traverses to it
    /// (a load instead would add an entry to Chromium's list: the two lists would differ).
    @Test func backToEntriesThePageMadeTraversesChromiumsOwn() async throws {
        try await Setup.with(liveTabs: 1) { setup in
            let pages = setup.pages
            let api = setup.client.api
            let a = try await setup.open("/a.html")
            _ = try await Self.eventually("page A loaded", state: { await describe(setup, a) }) {
                let tab = try await setup.tab(a)
                return tab.title == "Page A" && !tab.loading ? tab : nil
            }
            // A new document the page asks for, then an entry it pushes within it.
            #expect(try await setup.renderer.evaluate("location.href = '/c.html'; 'going'", inTab: a) == "going")
            _ = try await Self.eventually("page C loaded", state: { await describe(setup, a) }) {
                let tab = try await setup.tab(a)
                return tab.title == "Page C" && !tab.loading ? tab : nil
            }
            #expect(try await setup.renderer.evaluate("history.pushState({}, '', '/c.html#x'); 'pushed'", inTab: a) == "pushed")
            let three = [pages.url("/a.html"), pages.url("/c.html"), pages.url("/c.html#x")]
            #expect(try await historiesAgree(setup, a, "three entries the page made") == three)
            // Back to C (an entry a step made): Chromium's own entry, not a new one.
            _ = try await api.goTab(path: .init(tabId: a), body: .json(.init(offset: -1))).ok
            #expect(try await historiesAgree(setup, a, "back on C") == three)
            let onC = try #require(try await setup.renderer.pageHistory(ofTab: a))
            #expect(onC.currentIndex == 1 && onC.entries.count == 3)
            _ = try await api.goTab(path: .init(tabId: a), body: .json(.init(offset: -1))).ok
            #expect(try await historiesAgree(setup, a, "back on A") == three)
            let onA = try #require(try await setup.renderer.pageHistory(ofTab: a))
            #expect(onA.currentIndex == 0 && onA.entries.count == 3)
            let tab = try await setup.tab(a)
            #expect(tab.url == pages.url("/a.html") && tab.historyIndex == 0 && tab.historyCount == 3)
        }
    }

    /// A port on loopback nothing listens on (bound, then closed).
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure("no port to close") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// browserd's history of `tab` equals Chromium's own list for its page, and holds no pending entry.
    func historiesAgree(_ setup: Setup, _ tab: String, _ what: String) async throws -> [String] {
        try await Self.eventually(what, state: { await describe(setup, tab) }) {
            let model = try await setup.tab(tab)
            guard model.pending == nil, !model.loading, let chromium = try await setup.renderer.pageHistory(ofTab: tab) else { return nil }
            let history = try await setup.client.api.getTabHistory(path: .init(tabId: tab)).ok.body.json
            return history.entries.map(\.url) == chromium.entries.map(\.url) && history.currentIndex == chromium.currentIndex
                ? history.entries.map(\.url) : nil
        }
    }

    /// Chromium's pending entry (spec §6): a client's navigation of a live tab pends until its page
    /// commits it. A 204 and a download never commit (Chromium's list is unchanged, and browserd's);
    /// a navigation replaced by another before it commits leaves no entry; a network error commits an
    /// error page at its URL.
    @Test func pendingNavigationsEndAsChromiumsDo() async throws {
        let closed = try Self.closedPort()
        try await Setup.with(liveTabs: 1, gateway: true, extraOrigins: { _ in ["http://127.0.0.1:\(closed)"] }) { setup in
            let pages = setup.pages
            let api = setup.client.api
            let a = try await setup.open("/a.html")
            // The renderer's lease names the tab's page: from then on a client's navigation pends.
            _ = try await Self.eventually("page A loaded and announced", state: { await describe(setup, a) }) {
                let tab = try await setup.tab(a)
                return tab.title == "Page A" && !tab.loading && tab.targetId != nil ? tab : nil
            }
            #expect(try await historiesAgree(setup, a, "A alone") == [pages.url("/a.html")])

            for (path, what) in [("/204", "no content"), ("/download", "a download")] {
                let asked = try await api.navigateTab(path: .init(tabId: a), body: .json(.init(url: pages.url(path), transition: .typed))).ok.body.json
                #expect(asked.pending?.url == pages.url(path) && asked.url == pages.url(path), "\(what): pending and visible")
                #expect(asked.historyCount == 1, "\(what): nothing committed yet")
                let after = try await historiesAgree(setup, a, "\(what) discarded")
                #expect(after == [pages.url("/a.html")], "\(what): the entry before it stays current")
                #expect(try await setup.tab(a).url == pages.url("/a.html"))
            }

            // A slow navigation replaced by another before it commits: only the second is an entry.
            let slow = try await api.navigateTab(path: .init(tabId: a), body: .json(.init(url: pages.url("/slow.html")))).ok.body.json
            #expect(slow.pending != nil)
            let history = try await api.getTabHistory(path: .init(tabId: a)).ok.body.json
            #expect(history.entries.map(\.url) == [pages.url("/a.html")], "a pending entry is never in history")
            try await Task.sleep(for: .milliseconds(300))
            let replacing = try await api.navigateTab(path: .init(tabId: a), body: .json(.init(url: pages.url("/c.html")))).ok.body.json
            #expect(replacing.pending?.url == pages.url("/c.html") && replacing.pending?.id != slow.pending?.id)
            #expect(try await historiesAgree(setup, a, "the second navigation committed") == [pages.url("/a.html"), pages.url("/c.html")])
            // The slow answer, once it comes, changes nothing.
            try await Task.sleep(for: .seconds(3))
            #expect(try await historiesAgree(setup, a, "still two") == [pages.url("/a.html"), pages.url("/c.html")])

            // A network error commits Chromium's error page at the URL.
            let refused = "http://127.0.0.1:\(closed)/x"
            _ = try await api.navigateTab(path: .init(tabId: a), body: .json(.init(url: refused))).ok.body.json
            #expect(try await historiesAgree(setup, a, "the error entry") == [pages.url("/a.html"), pages.url("/c.html"), refused])
        }
    }

    /// Chromium's manual subframe navigation: a link clicked in an iframe adds an entry with the
    /// top-level URL unchanged; the client's back moves the iframe, not the page.
    @Test func aLinkInAnIframeAddsAnEntryAndBackMovesTheIframe() async throws {
        try await Setup.with(liveTabs: 1, gateway: true) { setup in
            let pages = setup.pages
            let f = try await setup.open("/frames.html")
            _ = try await Self.eventually("the frames page loaded and announced", state: { await describe(setup, f) }) {
                let tab = try await setup.tab(f)
                return tab.title == "Frames" && !tab.loading && tab.targetId != nil ? tab : nil
            }
            let inner = "document.getElementById('f').contentWindow.location.pathname"
            _ = try await Self.eventually("the iframe's first page") { try await setup.renderer.evaluate(inner, inTab: f) == "/inner1.html" ? true : nil }
            #expect(
                try await setup.renderer.evaluate("document.getElementById('f').contentDocument.getElementById('l').click(); 'clicked'", inTab: f) == "clicked")
            let clicked = try await Self.eventually("the subframe entry", state: { await describe(setup, f) }) {
                let tab = try await setup.tab(f)
                return tab.historyCount == 2 ? tab : nil
            }
            #expect(clicked.url == pages.url("/frames.html") && clicked.historyIndex == 1)
            #expect(try await historiesAgree(setup, f, "both lists") == [pages.url("/frames.html"), pages.url("/frames.html")])
            let history = try await setup.client.api.getTabHistory(path: .init(tabId: f)).ok.body.json
            #expect(history.entries.last?.transition == .manualSubframe)
            #expect(try await setup.renderer.evaluate(inner, inTab: f) == "/inner2.html")

            let back = try await setup.client.api.backTab(path: .init(tabId: f)).ok.body.json
            #expect(back.pending?.historyIndex == 0, "a move pends")
            _ = try await Self.eventually("back committed", state: { await describe(setup, f) }) {
                let tab = try await setup.tab(f)
                return tab.historyIndex == 0 && tab.pending == nil ? tab : nil
            }
            _ = try await Self.eventually("the iframe went back") { try await setup.renderer.evaluate(inner, inTab: f) == "/inner1.html" ? true : nil }
            #expect(try await setup.renderer.evaluate("location.pathname", inTab: f) == "/frames.html", "the page stayed")
            #expect(try await historiesAgree(setup, f, "both at the first entry") == [pages.url("/frames.html"), pages.url("/frames.html")])
        }
    }
}
