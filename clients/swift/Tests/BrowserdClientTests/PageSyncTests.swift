import BrowserdClient
import Foundation
import TestSupport
import Testing

@testable import BrowserdRenderer

#if canImport(Glibc)
    import Glibc
#endif

/// The renderer's decisions, without Chromium or a server: the pipe's framing, which tabs are live,
/// and how a page and its tab keep in step (`PageSync`).
@Suite(.computing) struct PageSyncTests {
    static func tab(_ url: String, index: Int, count: Int, loading: Bool = false, progress: Double = 1, title: String = "") -> ModelTab {
        ModelTab(id: "t1", url: url, title: title, loading: loading, progress: progress, historyIndex: index, historyCount: count)
    }

    static func history(_ urls: [String], current: Int, ids: [Int]? = nil) -> PageHistory {
        PageHistory(
            currentIndex: current,
            entries: urls.enumerated().map { PageHistory.Entry(id: ids?[$0.offset] ?? $0.offset + 1, url: $0.element) })
    }

    /// A page that loaded the tab's first entry.
    static func loaded() -> PageSync {
        var sync = PageSync(model: tab("http://a.test/", index: 0, count: 1))
        #expect(sync.start() == [.load(url: "http://a.test/")])
        #expect(sync.event(.committed(history(["about:blank", "http://a.test/"], current: 1), loaderID: nil), now: 0) == [])
        return sync
    }

    @Test func aListWithoutTheCommittedURLIsAskedForAgainUntilItIsStaleOrTheLastTry() {
        let early = Self.history(["http://a.test/", ""], current: 1)
        #expect(PageSync.reading(early, committed: "http://b.test/", attempt: 0, attempts: 3, newerCommitWaits: false) == .askAgain)
        // A newer commit waits: this list is stale anyway; the last try takes what it got, filled in.
        let filled = Self.history(["http://a.test/", "http://b.test/"], current: 1)
        #expect(PageSync.reading(early, committed: "http://b.test/", attempt: 0, attempts: 3, newerCommitWaits: true) == .use(filled))
        #expect(PageSync.reading(early, committed: "http://b.test/", attempt: 2, attempts: 3, newerCommitWaits: false) == .use(filled))
        // A list that holds it, or a URL the renderer never shows (file:), is taken as it is.
        #expect(PageSync.reading(filled, committed: "http://b.test/", attempt: 0, attempts: 3, newerCommitWaits: false) == .use(filled))
        #expect(PageSync.reading(early, committed: "file:///etc/passwd", attempt: 0, attempts: 3, newerCommitWaits: false) == .use(early))
        #expect(PageSync.filled(Self.history(["http://a.test/", "http://c.test/"], current: 1), committed: "http://b.test/").current?.url == "http://c.test/")
    }

    @Test func theBlankEntryBeforeAPagesFirstDocumentGoesOnce() {
        var sync = PageSync(model: Self.tab("http://a.test/", index: 0, count: 1))
        let first = Self.history(["about:blank", "http://a.test/"], current: 1)
        let once = sync.firstCommitLeavesBlankEntry(first)
        let twice = sync.firstCommitLeavesBlankEntry(first)
        #expect(once && !twice, "its first commit only")
        var other = PageSync(model: Self.tab("http://a.test/", index: 0, count: 1))
        let plain = other.firstCommitLeavesBlankEntry(Self.history(["http://a.test/"], current: 0))
        let later = other.firstCommitLeavesBlankEntry(first)
        #expect(!plain && !later, "asked once: a later list is no first commit")
        // A popup's page was never blank of the renderer's making: its first commit is the tab's entry.
        var popup = PageSync(adopting: Self.tab("http://a.test/", index: 0, count: 1))
        let adopted = popup.firstCommitLeavesBlankEntry(first)
        #expect(!adopted)
    }

    @Test func framingSplitsOnNULAcrossReads() throws {
        var framing = DevToolsFraming(maximumMessageBytes: 16)
        #expect(framing.append(Array(#"{"id":1}"#.utf8) + [0] + Array(#"{"a"#.utf8)).map { String(decoding: $0, as: UTF8.self) } == [#"{"id":1}"#])
        #expect(framing.append(Array(#":2}"#.utf8) + [0, 0]).map { String(decoding: $0, as: UTF8.self) } == [#"{"a:2}"#, ""])
        // A message past the limit (a page's own making) is skipped to its end; the next comes whole.
        #expect(framing.append([UInt8](repeating: 65, count: 17)).isEmpty)
        #expect(framing.append([UInt8](repeating: 65, count: 100) + [0] + Array(#"{"b":3}"#.utf8) + [0]).map { String(decoding: $0, as: UTF8.self) } == [#"{"b":3}"#])
        #expect(framing.skippedMessages == 1)
        #expect(DevToolsFraming.frame(Array("x".utf8)) == [120, 0])
    }

    @Test func aNewPageLoadsTheCurrentEntryAndReportsNothingOfItsOwnLoad() {
        var sync = Self.loaded()
        #expect(sync.ownLoad == nil)
        // browserd's own pages stay blank.
        var newTab = PageSync(model: Self.tab("browserd://newtab", index: 0, count: 1))
        #expect(newTab.start() == [])
    }

    @Test func aPopupsPageLoadsByItselfAndItsFirstCommitIsTheTabsOneEntry() {
        // The tab was made before the popup's URL was known: its commit replaces the placeholder.
        var blank = PageSync(adopting: Self.tab("about:blank", index: 0, count: 1, loading: true, progress: 0))
        #expect(blank.ownLoad == nil)
        #expect(
            blank.event(.committed(Self.history(["http://p.test/"], current: 0), loaderID: "L1"), now: 0)
                == [.reportNavigation(url: "http://p.test/", transition: "link", replace: true)])
        // Made with the popup's URL: its commit is that entry, nothing to report but what it shows.
        var known = PageSync(adopting: Self.tab("http://p.test/", index: 0, count: 1, loading: true, progress: 0))
        #expect(known.event(.committed(Self.history(["http://p.test/"], current: 0), loaderID: "L1"), now: 0) == [])
        #expect(
            known.event(.pageState(title: "Popup", faviconURL: nil, url: "http://p.test/"), now: 0)
                == [.reportPageState(title: "Popup", loading: nil, progress: nil, faviconURL: nil)])
        // The popup's next navigation of its own is a new entry, as any page's.
        #expect(
            known.event(.committed(Self.history(["http://p.test/", "http://q.test/"], current: 1), loaderID: "L2"), now: 1)
                == [.reportNavigation(url: "http://q.test/", transition: "link", replace: false)])
    }

    @Test func aCrashIsReportedOnceAndTheModelsReloadBringsThePageBack() {
        var sync = Self.loaded()
        #expect(sync.event(.crashed, now: 1) == [.reportCrash])
        var crashed = Self.tab("http://a.test/", index: 0, count: 1)
        crashed.crashed = true
        #expect(sync.reported(.reportCrash, answer: crashed, now: 1) == [])
        #expect(sync.event(.model(crashed), now: 1) == [], "no echo")
        #expect(sync.event(.crashed, now: 2) == [], "already shown as crashed")
        // The reload clears it in the model, and reloads the entry the page still holds.
        #expect(sync.event(.model(Self.tab("http://a.test/", index: 0, count: 1, loading: true, progress: 0)), now: 3) == [.reload])
    }

    @Test func aCommandOfTheModelDrivesThePage() {
        var sync = Self.loaded()
        // navigate (a new entry, loading from the start)
        #expect(sync.event(.model(Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)), now: 1) == [.load(url: "http://b.test/")])
        #expect(sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: nil), now: 1) == [])
        // back: the page still holds the entry
        #expect(sync.event(.model(Self.tab("http://a.test/", index: 0, count: 2, loading: true, progress: 0)), now: 2) == [.traverse(entryID: 2)])
        #expect(sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 1), loaderID: nil), now: 2) == [])
        // reload: the same entry asks for a load again
        #expect(sync.event(.model(Self.tab("http://a.test/", index: 0, count: 2)), now: 3) == [])
        #expect(sync.event(.model(Self.tab("http://a.test/", index: 0, count: 2, loading: true, progress: 0)), now: 3) == [.reload])
        // page state of another reporter asks for nothing
        #expect(sync.event(.model(Self.tab("http://a.test/", index: 0, count: 2, title: "A")), now: 4) == [])
    }

    @Test func aMoveToAnEntryThePageNeverHadLoadsItsURL() {
        var sync = Self.loaded()
        // The model's history is longer than the page's: going back past it loads the URL.
        _ = sync.event(.model(Self.tab("http://a.test/", index: 5, count: 6)), now: 0)
        #expect(sync.event(.model(Self.tab("http://z.test/", index: 2, count: 6, loading: true, progress: 0)), now: 1) == [.load(url: "http://z.test/")])
    }

    @Test func whatThePageDoesByItselfIsReportedAsChromiumRecordsIt() {
        var sync = Self.loaded()
        // a link: a new entry
        #expect(
            sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: nil), now: 1)
                == [.reportNavigation(url: "http://b.test/", transition: "link", replace: false)])
        _ = sync.reported(
            .reportNavigation(url: "http://b.test/", transition: "link", replace: false),
            answer: Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0), now: 1)
        // pushState: a same-document entry is a new entry too
        #expect(
            sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/", "http://b.test/#s"], current: 3), loaderID: nil), now: 2)
                == [.reportNavigation(url: "http://b.test/#s", transition: "link", replace: false)])
        _ = sync.reported(
            .reportNavigation(url: "http://b.test/#s", transition: "link", replace: false),
            answer: Self.tab("http://b.test/#s", index: 2, count: 3, loading: true, progress: 0), now: 2)
        // history.back() from the page: a move
        #expect(
            sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/", "http://b.test/#s"], current: 2), loaderID: nil), now: 3)
                == [.reportMove(offset: -1)])
        _ = sync.reported(.reportMove(offset: -1), answer: Self.tab("http://b.test/", index: 1, count: 3, loading: true, progress: 0), now: 3)
        // location.replace: a new entry in the current one's place
        #expect(
            sync.event(
                .committed(Self.history(["about:blank", "http://a.test/", "http://c.test/", "http://b.test/#s"], current: 2, ids: [1, 2, 9, 4]), loaderID: nil), now: 4)
                == [.reportNavigation(url: "http://c.test/", transition: "link", replace: true)])
        // replaceState: the same entry, another URL
        #expect(
            sync.event(
                .committed(Self.history(["about:blank", "http://a.test/", "http://c.test/r", "http://b.test/#s"], current: 2, ids: [1, 2, 9, 4]), loaderID: nil), now: 5)
                == [.reportNavigation(url: "http://c.test/r", transition: "link", replace: true)])
    }

    @Test func aRedirectOfOurOwnLoadReplacesTheEntryWithItsFinalURL() {
        var sync = Self.loaded()
        #expect(sync.event(.model(Self.tab("http://r.test/from", index: 1, count: 2, loading: true, progress: 0)), now: 1) == [.load(url: "http://r.test/from")])
        sync.loadStarted(loaderID: "L1")
        // Another document's commit (an earlier load's, late) is not ours.
        #expect(sync.event(.committed(Self.history(["about:blank", "http://x.test/"], current: 1), loaderID: "L0"), now: 1) == [])
        #expect(
            sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://r.test/to"], current: 2), loaderID: "L1"), now: 1)
                == [.reportNavigation(url: "http://r.test/to", transition: "link", replace: true)])
    }

    /// back, then forward before back committed: forward follows once back committed, from where back
    /// left the page.
    @Test func aModelThatMovesAgainBeforeThePageCommittedIsFollowedInOrder() {
        var sync = Self.loaded()
        _ = sync.event(.model(Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)), now: 1)
        sync.loadStarted(loaderID: "Lb")
        #expect(sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: "Lb"), now: 1) == [])
        #expect(sync.event(.model(Self.tab("http://a.test/", index: 0, count: 2, loading: true, progress: 0)), now: 2) == [.traverse(entryID: 2)])
        // One load at a time: forward waits for back's commit, then goes from where the page stands.
        #expect(sync.event(.model(Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)), now: 2) == [])
        #expect(sync.loadPending)
        #expect(
            sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 1), loaderID: "Lback"), now: 2)
                == [.traverse(entryID: 3)])
        #expect(sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: "Lfwd"), now: 2) == [])
        #expect(sync.ownLoad == nil)
        // The page's own back now is a move again.
        #expect(
            sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 1), loaderID: "L"), now: 3) == [.reportMove(offset: -1)])
    }

    @Test func theEchoOfAReportIsNoCommandButALaterEqualCommandIs() {
        var sync = Self.loaded()
        _ = sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: nil), now: 1)
        let produced = Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)
        _ = sync.reported(.reportNavigation(url: "http://b.test/", transition: "link", replace: false), answer: produced, now: 1)
        // The stream shows what the report produced: no load.
        #expect(sync.event(.model(produced), now: 1.1) == [])
        // The page finished loading.
        #expect(
            sync.event(.loading(false, progress: 1), now: 1.2) == [.reportPageState(title: nil, loading: false, progress: 1, faviconURL: nil), .takePicture])
        _ = sync.reported(.reportPageState(title: nil, loading: nil, progress: nil, faviconURL: nil), answer: Self.tab("http://b.test/", index: 1, count: 2), now: 1.2)
        #expect(sync.event(.model(Self.tab("http://b.test/", index: 1, count: 2)), now: 1.3) == [])
        // A client's reload later produces the same position as the echo did: it is a command.
        #expect(sync.event(.model(produced), now: 2) == [.reload])
    }

    @Test func anExpectationNotMetInTimeIsForgotten() {
        var sync = Self.loaded()
        let produced = Self.tab("http://a.test/", index: 0, count: 1, loading: true, progress: 0)
        _ = sync.reported(.reportPageState(title: nil, loading: nil, progress: nil, faviconURL: nil), answer: Self.tab("http://a.test/", index: 0, count: 1), now: 0)
        _ = sync.reported(.reportPageState(title: nil, loading: true, progress: nil, faviconURL: nil), answer: produced, now: 0)
        _ = sync.event(.model(Self.tab("http://a.test/", index: 0, count: 1)), now: 0.5)
        // The echo of `produced` was lost (a reset); a reload long after is a command.
        #expect(sync.event(.model(produced), now: PageSync.expectationLifetime + 1) == [.reload])
    }

    @Test func titlesAndLoadingAreReportedOnChangeOnlyAndProgressNeverLooksLikeACommand() {
        var sync = Self.loaded()
        #expect(sync.event(.loading(true, progress: 0), now: 1) == [.reportPageState(title: nil, loading: true, progress: 0.1, faviconURL: nil)])
        _ = sync.reported(
            .reportPageState(title: nil, loading: nil, progress: nil, faviconURL: nil),
            answer: Self.tab("http://a.test/", index: 0, count: 1, loading: true, progress: 0.1), now: 1)
        #expect(
            sync.event(.pageState(title: "A", faviconURL: "http://a.test/i.png"), now: 2) == [
                .reportPageState(title: "A", loading: nil, progress: nil, faviconURL: .some("http://a.test/i.png"))
            ])
        // The same again before the model's answer: nothing more.
        #expect(sync.event(.pageState(title: "A", faviconURL: "http://a.test/i.png"), now: 2) == [])
        #expect(
            sync.event(.pageState(title: "A late", faviconURL: "http://a.test/i.png"), now: 3) == [
                .reportPageState(title: "A late", loading: nil, progress: nil, faviconURL: nil)
            ])
    }

    static func item(_ id: String) -> Components.Schemas.TabItem {
        .init(
            id: id, url: "http://\(id).test/", title: "", loading: false, progress: 1, crashed: false, faviconUrl: nil, pinned: false, groupId: nil,
            openerTabId: nil, historyIndex: 0, historyCount: 1)
    }

    @Test func theActiveTabAndTheMostRecentOthersAreLive() {
        var window = WindowTabs()
        window.apply(.tabsPopulate(.init(browserId: "w", items: ["a", "b", "c", "d"].map(Self.item), selectedId: "a")))
        // Without times, the newest (last) count as the most recent after the active one.
        #expect(window.livePages(extra: 2) == ["a", "d", "c"])
        window.apply(.tabsInsert(.init(browserId: "w", item: Self.item("e"), index: 4, selectedId: "a")))
        #expect(window.livePages(extra: 2) == ["a", "e", "d"])
        window.apply(.tabsSelect(.init(browserId: "w", tabId: "b")))
        #expect(window.livePages(extra: 2) == ["b", "a", "e"])
        window.apply(.tabsRemove(.init(browserId: "w", tabId: "a", selectedId: "b")))
        #expect(window.livePages(extra: 2) == ["b", "e", "d"])
        #expect(window.livePages(extra: 0) == ["b"])
        #expect(window.order == ["b", "c", "d", "e"])
    }
}

extension PageSyncTests {
    @Test func aTitleOfAnEntryTheModelLoadedIsReported() {
        var sync = Self.loaded()
        #expect(sync.event(.pageState(title: "Page A", faviconURL: nil), now: 1) == [.reportPageState(title: "Page A", loading: nil, progress: nil, faviconURL: nil)])
        _ = sync.reported(
            .reportPageState(title: nil, loading: nil, progress: nil, faviconURL: nil), answer: Self.tab("http://a.test/", index: 0, count: 1, title: "Page A"), now: 1)
        #expect(sync.event(.model(Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)), now: 2) == [.load(url: "http://b.test/")])
        #expect(sync.event(.loading(true, progress: 0.1), now: 2) == [.reportPageState(title: nil, loading: true, progress: 0.1, faviconURL: nil)])
        _ = sync.reported(
            .reportPageState(title: nil, loading: nil, progress: nil, faviconURL: nil),
            answer: Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0.1), now: 2)
        #expect(sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: "Lb"), now: 2) == [])
        #expect(sync.event(.pageState(title: "B early", faviconURL: nil), now: 2) == [.reportPageState(title: "B early", loading: nil, progress: nil, faviconURL: nil)])
    }
}

extension PageSyncTests {
    /// The list fetched after a commit may already hold what the page did next: our load's commit
    /// counts as such, and the pushed entry is reported after it.
    @Test func aPushStateSeenWithTheLoadsCommitIsReportedAfterIt() {
        var sync = Self.loaded()
        _ = sync.event(.model(Self.tab("http://p.test/", index: 1, count: 2, loading: true, progress: 0)), now: 1)
        sync.loadStarted(loaderID: "Lp")
        let history = Self.history(["about:blank", "http://a.test/", "http://p.test/", "http://p.test/#pushed"], current: 3)
        #expect(
            sync.event(.committed(history, loaderID: "Lp", url: "http://p.test/"), now: 1)
                == [.reportNavigation(url: "http://p.test/#pushed", transition: "link", replace: false)])
    }
}

extension PageSyncTests {
    /// A title reported while a client moved the tab: the answer shows the move, which the page
    /// follows (and the same state on the stream later is that move's echo, not a second command).
    @Test func anAnswerThatShowsAClientsMoveIsThatMove() {
        var sync = Self.loaded()
        _ = sync.event(.model(Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)), now: 1)
        sync.loadStarted(loaderID: "Lb")
        _ = sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: "Lb"), now: 1)
        let report = PageSync.Action.reportPageState(title: "B", loading: nil, progress: nil, faviconURL: nil)
        let moved = Self.tab("http://a.test/", index: 0, count: 2, loading: true, progress: 0, title: "B")
        #expect(sync.reported(report, answer: moved, now: 2) == [.traverse(entryID: 2)])
        #expect(sync.event(.model(moved), now: 2) == [])
    }
}

extension PageSyncTests {
    /// A new document's title may come before its commit: it waits for it, and the old document's
    /// never lands on the new entry.
    @Test func aTitleWaitsForItsDocumentsCommit() {
        var sync = Self.loaded()
        _ = sync.event(.model(Self.tab("http://c.test/", index: 1, count: 2, loading: true, progress: 0)), now: 1)
        sync.loadStarted(loaderID: "Lc")
        #expect(sync.event(.pageState(title: "Page A", faviconURL: nil, url: "http://a.test/"), now: 1) == [])
        #expect(sync.event(.pageState(title: "Page C", faviconURL: nil, url: "http://c.test/"), now: 1) == [])
        #expect(
            sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://c.test/"], current: 2), loaderID: "Lc"), now: 1)
                == [.reportPageState(title: "Page C", loading: nil, progress: nil, faviconURL: nil)])
    }

    /// pushState: the document's title is the new entry's too (the report of the entry clears it).
    @Test func aPushedEntryGetsItsDocumentsTitle() {
        var sync = Self.loaded()
        _ = sync.event(.pageState(title: "A", faviconURL: nil, url: "http://a.test/"), now: 1)
        _ = sync.reported(
            .reportPageState(title: "A", loading: nil, progress: nil, faviconURL: nil), answer: Self.tab("http://a.test/", index: 0, count: 1, title: "A"),
            now: 1)
        let pushed = Self.history(["about:blank", "http://a.test/", "http://a.test/#p"], current: 2)
        let report = PageSync.Action.reportNavigation(url: "http://a.test/#p", transition: "link", replace: false)
        #expect(sync.event(.committed(pushed, loaderID: nil), now: 2) == [report])
        #expect(
            sync.reported(report, answer: Self.tab("http://a.test/#p", index: 1, count: 2, loading: true, progress: 0), now: 2)
                == [.reportPageState(title: "A", loading: nil, progress: nil, faviconURL: nil)])
    }
}

extension PageSyncTests {
    /// The renderer loads http and https only; any other tab URL shows the renderer's own error page
    /// (browserd's pages and an empty tab stay blank), and nothing of it is reported.
    @Test func onlyHTTPAndHTTPSLoad() {
        for url in [
            "file:///etc/passwd", "FILE:///etc/", "data:text/html,<title>x</title>", "javascript:alert(1)", "view-source:http://a.test/",
            "chrome://settings", "devtools://devtools/bundled/inspector.html", "ftp://a.test/", "http:", "httpx://a.test/",
        ] {
            #expect(!PageSync.pageCanShow(url), "\(url)")
            var sync = PageSync(model: Self.tab(url, index: 0, count: 1))
            #expect(sync.start() == [.load(url: PageSync.notLoadedPage)], "\(url)")
            // Its document commits: no report, no title.
            #expect(sync.event(.committed(Self.history([PageSync.notLoadedPage], current: 0), loaderID: nil), now: 0) == [])
            #expect(sync.event(.pageState(title: "Not loaded", faviconURL: nil, url: PageSync.notLoadedPage), now: 0) == [])
        }
        for url in ["http://a.test/", "HTTPS://a.test/x"] { #expect(PageSync.pageCanShow(url)) }
        var blank = PageSync(model: Self.tab("about:blank", index: 0, count: 1))
        #expect(blank.start() == [])
        // A loaded page whose tab the model moves to a file: URL leaves for the error page.
        var sync = Self.loaded()
        #expect(sync.event(.model(Self.tab("file:///etc/passwd", index: 1, count: 2, loading: true, progress: 0)), now: 1) == [.load(url: PageSync.notLoadedPage)])
    }

    /// What a page reports fits the model: a title's first 1,024 characters (never refused), a
    /// favicon URL over 64 KiB not sent (the tab shows none).
    @Test func reportsFitBeforeTheyAreSent() {
        var sync = Self.loaded()
        let long = String(repeating: "é", count: 1_500) + "🙂"
        let huge = "data:image/png;base64," + String(repeating: "A", count: 1_500_000)
        let actions = sync.event(.pageState(title: long, faviconURL: huge, url: "http://a.test/"), now: 1)
        #expect(actions == [.reportPageState(title: String(repeating: "é", count: 1_024), loading: nil, progress: nil, faviconURL: nil)])
        // A favicon within the limit goes as it is.
        let small = "data:image/png;base64," + String(repeating: "A", count: 1_000)
        #expect(
            sync.event(.pageState(title: long, faviconURL: small, url: "http://a.test/"), now: 2)
                == [.reportPageState(title: nil, loading: nil, progress: nil, faviconURL: .some(small))])
        // Logs see lengths, never the values.
        let logged = PageSync.Action.reportPageState(title: long, loading: nil, progress: nil, faviconURL: .some(huge)).description
        #expect(logged.count < 200 && logged.contains("1501 characters") && logged.contains("1500022 bytes"), "\(logged)")
    }

    /// Commits coalesced during a storm (one list, several new entries): each new entry is reported in
    /// order, so the model holds what the page holds.
    /// A page whose first document committed and was read (its blank entry judged).
    static func following() -> PageSync {
        var sync = loaded()
        _ = sync.firstCommitLeavesBlankEntry(history(["http://a.test/"], current: 0))
        #expect(sync.followsSteps)
        return sync
    }

    @Test func aStepOfThePagesOwnIsReportedFromItselfAndTheListOnlyGivesItsIDs() {
        var sync = Self.following()
        // A client's goto (a new document, `typed`): reported at once, no list read.
        #expect(
            sync.event(.stepped(url: "http://b.test/", step: .push, sameDocument: false, transition: "typed"), now: 1)
                == [.reportNavigation(url: "http://b.test/", transition: "typed", replace: false)])
        _ = sync.reported(
            .reportNavigation(url: "http://b.test/", transition: "typed", replace: false), answer: Self.tab("http://b.test/", index: 1, count: 2), now: 1)
        // pushState of the same URL: Chromium's list has a new entry, and so does the model's (told it
        // is a push within the document, which the model adds even to the current URL).
        #expect(
            sync.event(.stepped(url: "http://b.test/", step: .push, sameDocument: true, transition: "link"), now: 2)
                == [.reportNavigation(url: "http://b.test/", transition: "link", replace: false, sameDocument: true)])
        _ = sync.reported(
            .reportNavigation(url: "http://b.test/", transition: "link", replace: false, sameDocument: true),
            answer: Self.tab("http://b.test/", index: 2, count: 3), now: 2)
        // replaceState: the current entry; of its own URL, nothing.
        #expect(
            sync.event(.stepped(url: "http://b.test/r", step: .replace, sameDocument: true, transition: "link"), now: 3)
                == [.reportNavigation(url: "http://b.test/r", transition: "link", replace: true)])
        _ = sync.reported(
            .reportNavigation(url: "http://b.test/r", transition: "link", replace: true), answer: Self.tab("http://b.test/r", index: 2, count: 3), now: 3)
        #expect(sync.event(.stepped(url: "http://b.test/r", step: .replace, sameDocument: true, transition: "link"), now: 4) == [])
        // The list read afterwards names the entries; it reports nothing, even what it shows beyond
        // (a later commit's events report that one).
        let read = Self.history(
            ["about:blank", "http://a.test/", "http://b.test/", "http://b.test/r", "http://b.test/later"], current: 4, ids: [1, 2, 7, 8, 9])
        #expect(sync.event(.refreshed(read), now: 5) == [])
        #expect(sync.page?.entries.map(\.id) == [1, 2, 7, 8])
        // The model goes back one: Chromium's own entry, by the id the list gave.
        #expect(sync.event(.model(Self.tab("http://b.test/", index: 1, count: 3, loading: true, progress: 0)), now: 6) == [.traverse(entryID: 7)])
    }

    /// Ids a step made up are no entries of Chromium's: the model's move to such an entry reads the
    /// page's list first (the only read steps ever need) and traverses to the entry it names; a list
    /// that names it not (it moved on meanwhile) loads the URL; a reload's commit is matched by any entry.
    @Test func madeUpIDsAreNeverAskedOfChromium() {
        var sync = Self.following()
        _ = sync.event(.stepped(url: "http://b.test/", step: .push, sameDocument: false, transition: "link"), now: 1)
        _ = sync.reported(
            .reportNavigation(url: "http://b.test/", transition: "link", replace: false), answer: Self.tab("http://b.test/", index: 1, count: 2), now: 1)
        _ = sync.event(.stepped(url: "http://c.test/", step: .push, sameDocument: false, transition: "link"), now: 2)
        _ = sync.reported(
            .reportNavigation(url: "http://c.test/", transition: "link", replace: false), answer: Self.tab("http://c.test/", index: 2, count: 3), now: 2)
        var unnamed = sync
        #expect(sync.event(.model(Self.tab("http://b.test/", index: 1, count: 3, loading: true, progress: 0)), now: 3) == [.readHistory])
        #expect(sync.ownLoad == nil)
        let named = Self.history(["about:blank", "http://a.test/", "http://b.test/", "http://c.test/"], current: 3, ids: [1, 2, 7, 9])
        #expect(sync.event(.refreshed(named), now: 3) == [.traverse(entryID: 7)])
        #expect(sync.ownLoad?.kind == .traverse(entryID: 7))
        // A read that does not name it (another list by then): the URL loads, and no second read is asked.
        #expect(unnamed.event(.model(Self.tab("http://b.test/", index: 1, count: 3, loading: true, progress: 0)), now: 3) == [.readHistory])
        let moved = Self.history(["about:blank", "http://x.test/", "http://y.test/", "http://z.test/"], current: 3, ids: [1, 12, 13, 14])
        #expect(unnamed.event(.refreshed(moved), now: 3) == [.load(url: "http://b.test/")])
        // A read nobody asked for decides nothing.
        var quiet = Self.following()
        #expect(quiet.event(.refreshed(Self.history(["about:blank", "http://a.test/"], current: 1, ids: [1, 2])), now: 1) == [])
        var reloading = Self.following()
        _ = reloading.event(.stepped(url: "http://b.test/", step: .push, sameDocument: false, transition: "link"), now: 1)
        _ = reloading.reported(
            .reportNavigation(url: "http://b.test/", transition: "link", replace: false), answer: Self.tab("http://b.test/", index: 1, count: 2), now: 1)
        #expect(reloading.event(.model(Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)), now: 2) == [.reload])
        let read = Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2, ids: [1, 2, 7])
        #expect(reloading.event(.committed(read, loaderID: "L"), now: 3) == [])
        #expect(reloading.ownLoad == nil, "the reload's commit was taken as its own")
    }

    /// Entries steps made are named by a list read later even when Chromium dropped its oldest
    /// entries meanwhile (a storm past its 50): lined up by an entry of Chromium's own both hold, else
    /// by the made-up entries' URLs — so a storm read from the list after its first steps is new
    /// entries, not one replaced (seen: a 2,000-push storm ended as one entry in the model).
    @Test func madeUpIDsAreNamedAcrossChromiumsDroppedEntries() {
        let ours = PageHistory(
            currentIndex: 2, entries: [.init(id: 5, url: "http://s.test/"), .init(id: -1, url: "http://s.test/#1"), .init(id: -2, url: "http://s.test/#2")])
        // Chromium dropped the first two of ours and went on to #4.
        let read = Self.history(["http://s.test/#2", "http://s.test/#3", "http://s.test/#4"], current: 2, ids: [22, 23, 24])
        #expect(PageSync.alignment(of: ours, with: read) == -2)
        // With an entry of Chromium's own in both, it decides.
        let kept = Self.history(["http://s.test/", "http://s.test/#1", "http://s.test/#2", "http://s.test/#3"], current: 3, ids: [5, 21, 22, 23])
        #expect(PageSync.alignment(of: ours, with: kept) == 0)
        // One URL everywhere (same-URL pushes): no shift.
        let same = PageHistory(currentIndex: 1, entries: [.init(id: -1, url: "http://s.test/"), .init(id: -2, url: "http://s.test/")])
        #expect(PageSync.alignment(of: same, with: Self.history(["http://s.test/", "http://s.test/", "http://s.test/"], current: 2)) == 0)
        // Through a commit read from the list: the storm's entries after #2 are new ones.
        var sync = Self.following()
        for n in 1...2 {
            let url = "http://a.test/#\(n)"
            _ = sync.event(.stepped(url: url, step: .push, sameDocument: true, transition: "link"), now: Double(n))
            _ = sync.reported(
                .reportNavigation(url: url, transition: "link", replace: false, sameDocument: false),
                answer: Self.tab(url, index: n, count: n + 1), now: Double(n))
        }
        let storm = Self.history(["http://a.test/#1", "http://a.test/#2", "http://a.test/#3", "http://a.test/#4"], current: 3, ids: [31, 32, 33, 34])
        #expect(
            sync.event(.committed(storm, loaderID: nil, url: "http://a.test/#4"), now: 5)
                == [
                    .reportNavigation(url: "http://a.test/#3", transition: "link", replace: false),
                    .reportNavigation(url: "http://a.test/#4", transition: "link", replace: false),
                ])
    }

    /// A load of ours whose page pushed past Chromium's 50 entries before its list was read (its own
    /// entry dropped from the list): it committed where it says, not at the list's last entry as a
    /// redirect would (seen: a 2,000-push storm ended as one replaced entry in the model); the list's
    /// entries follow it, the first in its place, as in Chromium's list.
    @Test func aLoadWhoseEntryAStormPushedOutIsNoRedirect() {
        var sync = PageSync(model: Self.tab("http://s.test/storm", index: 0, count: 1))
        #expect(sync.start() == [.load(url: "http://s.test/storm")])
        let list = Self.history(["http://s.test/storm#51", "http://s.test/storm#52"], current: 1, ids: [60, 61])
        #expect(
            sync.event(.committed(list, loaderID: "L", url: "http://s.test/storm"), now: 1)
                == [
                    .reportNavigation(url: "http://s.test/storm#51", transition: "link", replace: true),
                    .reportNavigation(url: "http://s.test/storm#52", transition: "link", replace: false),
                ])
        #expect(sync.ownLoad == nil)
    }

    @Test func aNewNavigationsStepIsKnownAsItStarts() {
        #expect(PageSync.startedStep(kind: "differentDocument", to: "http://b.test/", requested: true, intent: .replace, showing: "http://a.test/") == .replace)
        #expect(PageSync.startedStep(kind: "differentDocument", to: "http://b.test/", requested: true, intent: nil, showing: "http://a.test/") == nil)
        // Nobody in the page asked: a client's navigate, a push unless to the URL shown.
        #expect(PageSync.startedStep(kind: "differentDocument", to: "http://b.test/", requested: false, intent: nil, showing: "http://a.test/") == .push)
        #expect(PageSync.startedStep(kind: "differentDocument", to: "http://a.test/", requested: false, intent: nil, showing: "http://a.test/") == nil)
        #expect(PageSync.startedStep(kind: "historyDifferentDocument", to: "http://b.test/", requested: true, intent: .traverse, showing: nil) == nil)
        #expect(PageSync.startedStep(kind: "reload", to: "http://a.test/", requested: false, intent: nil, showing: "http://a.test/") == nil)
    }

    @Test func aStepThatDoesNotSayEnoughIsReadFromTheList() {
        var sync = Self.following()
        #expect(!sync.follows(.traverse, to: "http://b.test/"))
        #expect(!sync.follows(.reload, to: "http://a.test/"))
        #expect(!sync.follows(.push, to: "file:///etc/passwd"))
        #expect(sync.event(.stepped(url: "http://a.test/", step: .traverse, sameDocument: false, transition: "link"), now: 1) == [])
        // Neither before the first document was read, nor while a load of the renderer's is under way.
        #expect(!Self.loaded().followsSteps)
        #expect(sync.event(.model(Self.tab("http://c.test/", index: 1, count: 2, loading: true, progress: 0)), now: 2) == [.load(url: "http://c.test/")])
        #expect(!sync.follows(.push, to: "http://d.test/"))
        #expect(PageSync.transition(forReason: "formSubmissionPost") == "form_submit")
        #expect(PageSync.transition(forReason: "anchorClick") == "link")
    }

    @Test func aListReadAfterUnnamedStepsReportsOnlyWhatCameAfterThem() {
        var sync = Self.following()
        #expect(sync.event(.stepped(url: "http://b.test/", step: .push, sameDocument: false, transition: "link"), now: 1).count == 1)
        _ = sync.reported(
            .reportNavigation(url: "http://b.test/", transition: "link", replace: false), answer: Self.tab("http://b.test/", index: 1, count: 2), now: 1)
        // No refresh came between (a commit waited): the next commit's list names b's entry by its place and URL.
        let read = Self.history(["about:blank", "http://a.test/", "http://b.test/", "http://c.test/"], current: 3, ids: [1, 2, 5, 6])
        #expect(
            sync.event(.committed(read, loaderID: "L"), now: 2) == [.reportNavigation(url: "http://c.test/", transition: "link", replace: false)])
        // Past Chromium's 50 entries, the oldest goes from the made-up list as from Chromium's.
        var long = Self.following()
        for index in 0..<60 {
            _ = long.event(.stepped(url: "http://b.test/\(index)", step: .push, sameDocument: true, transition: "link"), now: Double(index))
        }
        #expect(long.page?.entries.count == PageSync.maximumPageEntries)
        #expect(long.page?.current?.url == "http://b.test/59")
    }

    @Test func coalescedCommitsReportEveryNewEntry() {
        var sync = Self.loaded()
        let urls = ["about:blank", "http://a.test/", "http://a.test/#1", "http://a.test/#2", "http://a.test/#3"]
        #expect(
            sync.event(.committed(Self.history(urls, current: 4), loaderID: nil, url: "http://a.test/#3"), now: 1)
                == (2...4).map { .reportNavigation(url: urls[$0], transition: "link", replace: false) })
        // location.replace followed by a pushState: the first replaces the entry shown, the next follows it.
        var replaced = Self.loaded()
        #expect(
            replaced.event(
                .committed(Self.history(["about:blank", "http://r.test/", "http://r.test/#p"], current: 2, ids: [1, 7, 8]), loaderID: nil), now: 1)
                == [
                    .reportNavigation(url: "http://r.test/", transition: "link", replace: true),
                    .reportNavigation(url: "http://r.test/#p", transition: "link", replace: false),
                ])
    }
}

/// A page's inbox: bounded, stale news coalesced, nothing the page's task ignores kept.
@Suite(.computing) struct PageInboxTests {
    static func event(_ method: String, _ params: JSONValue = [:]) -> LivePage.Input {
        .devtools(DevToolsEvent(method: method, params: params, sessionID: "s"))
    }

    static func methods(_ inbox: inout PageInbox) -> [String] {
        var seen: [String] = []
        while let input = inbox.pop() {
            switch input {
            case .model(let tab): seen.append("model \(tab.url)")
            case .devtools(let event): seen.append("\(event.method) \(event.params["url"]?.string ?? event.params["payload"]?.string ?? "")")
            case .resync(let loader): seen.append("resync \(loader ?? "-")")
            case .stepTimeout(let number): seen.append("step timeout \(number)")
            case .loadAnswered(let number, _, let error): seen.append("load \(number) answered \(error ?? "-")")
            case .flushPageState(let number): seen.append("page state \(number)")
            }
        }
        return seen
    }

    @Test func aPushStateStormWaitsAsOneCommit() {
        var inbox = PageInbox()
        inbox.push(Self.event("Page.frameNavigated", ["frame": ["id": "F", "loaderId": "L1", "url": "http://a.test/"]]))
        for index in 0..<2_000 {
            inbox.push(Self.event("Page.navigatedWithinDocument", ["frameId": "F", "url": .string("http://a.test/#\(index)")]))
            inbox.push(Self.event("Runtime.bindingCalled", ["name": .string(pageStateBinding), "payload": .string("t\(index)")]))
            inbox.push(Self.event("Runtime.consoleAPICalled", ["type": "log"]))
            inbox.push(.model(PageSyncTests.tab("http://m.test/\(index)", index: 0, count: 1)))
        }
        #expect(inbox.count == 4)
        #expect(inbox.hasPendingCommit)
        #expect(
            Self.methods(&inbox) == [
                "Page.frameNavigated ", "Page.navigatedWithinDocument http://a.test/#1999", "Runtime.bindingCalled t1999", "model http://m.test/1999",
            ])
        #expect(!inbox.hasPendingCommit)
    }

    @Test func aStormsStepsGoWithItsCoalescedCommits() {
        var inbox = PageInbox()
        inbox.push(Self.event("Page.frameNavigated", ["frame": ["id": "F", "loaderId": "L1", "url": "http://a.test/"]]))
        inbox.push(Self.event("Page.navigatedWithinDocument", ["frameId": "F", "url": "http://a.test/#0"]))
        inbox.push(Self.event("Runtime.bindingCalled", ["name": .string(navigationBinding), "payload": "s0"]))
        inbox.push(Self.event("Page.navigatedWithinDocument", ["frameId": "F", "url": "http://a.test/#1"]))
        // The second commit stands for both and says so: the page's task reads the list for it.
        var seen: [JSONValue] = []
        var copy = inbox
        while let input = copy.pop() { if case .devtools(let event) = input, event.method == "Page.navigatedWithinDocument" { seen.append(event.params) } }
        #expect(seen.count == 1 && seen.first?[PageInbox.coalescedMark] == true)
        for index in 2..<2_000 {
            inbox.push(Self.event("Page.frameRequestedNavigation", ["frameId": "F", "reason": "scriptInitiated"]))
            inbox.push(Self.event("Page.navigatedWithinDocument", ["frameId": "F", "url": .string("http://a.test/#\(index)")]))
            inbox.push(Self.event("Runtime.bindingCalled", ["name": .string(navigationBinding), "payload": .string("s\(index)")]))
        }
        // Bounded: the steps go with the commits at an overflow, whose resync reads the list.
        #expect(inbox.count <= PageInbox.capacity + 1)
        #expect(inbox.hasPendingCommit)
    }

    /// A command (a state that asks for a load) followed by an echo of a report applied on top of it:
    /// both wait, so the page still loads; a later command replaces both.
    @Test func aCommandIsNeverCoalescedIntoAnEcho() {
        var inbox = PageInbox()
        inbox.push(.model(PageSyncTests.tab("http://a.test/", index: 0, count: 2, loading: true, progress: 0)))
        inbox.push(.model(PageSyncTests.tab("http://a.test/", index: 0, count: 2, loading: false, progress: 1, title: "A")))
        inbox.push(.model(PageSyncTests.tab("http://a.test/", index: 0, count: 2, loading: false, progress: 1, title: "A2")))
        #expect(inbox.count == 2)
        inbox.push(.model(PageSyncTests.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)))
        #expect(Self.methods(&inbox) == ["model http://b.test/"])
    }

    @Test func aNewDocumentIsNeverCoalescedAway() {
        var inbox = PageInbox()
        inbox.push(Self.event("Page.navigatedWithinDocument", ["frameId": "F", "url": "http://a.test/#1"]))
        inbox.push(Self.event("Page.frameNavigated", ["frame": ["id": "F", "loaderId": "L2"]]))
        inbox.push(Self.event("Page.navigatedWithinDocument", ["frameId": "F", "url": "http://b.test/#1"]))
        inbox.push(Self.event("Page.navigatedWithinDocument", ["frameId": "S", "url": "http://sub.test/#1"]))
        inbox.push(Self.event("Page.lifecycleEvent", ["name": "DOMContentLoaded"]))
        inbox.push(Self.event("Page.domContentEventFired", ["timestamp": 1]))
        #expect(
            Self.methods(&inbox) == [
                "Page.navigatedWithinDocument http://a.test/#1", "Page.frameNavigated ", "Page.navigatedWithinDocument http://b.test/#1",
                "Page.navigatedWithinDocument http://sub.test/#1", "Page.domContentEventFired ",
            ])
    }

    /// A page loading documents in a loop: past the capacity, its commits become one resync that
    /// carries the latest document's loader; a crash and the model's state stay.
    @Test func anOverflowBecomesOneResync() {
        var inbox = PageInbox()
        inbox.push(.model(PageSyncTests.tab("http://m.test/", index: 0, count: 1)))
        inbox.push(Self.event("Inspector.targetCrashed"))
        for index in 0..<(PageInbox.capacity * 4) {
            inbox.push(Self.event("Page.frameNavigated", ["frame": ["id": "F", "loaderId": .string("L\(index)")]]))
            inbox.push(Self.event("Page.frameStoppedLoading", ["frameId": "F"]))
        }
        #expect(inbox.count <= PageInbox.capacity)
        let seen = Self.methods(&inbox)
        #expect(seen.prefix(2) == ["model http://m.test/", "Inspector.targetCrashed "])
        #expect(seen.filter { $0.hasPrefix("resync L") }.count == 1 && seen[2].hasPrefix("resync L"), "\(seen.prefix(4))")
        // What came after the last overflow waits as it came: the latest document last.
        #expect(seen.last == "Page.frameStoppedLoading ")
    }
}

/// The fence's decisions: on the address a request really goes to.
@Suite(.computing) struct NetworkPolicyTests {
    static func addresses(_ texts: String...) -> [IPAddress] { texts.compactMap(IPAddress.init) }

    @Test func thisMachineAndPrivateNetworksAreFencedInEveryForm() {
        let fenced = [
            "127.0.0.1", "127.0.0.2", "127.255.255.254", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
            "100.64.0.1", "224.0.0.1", "255.255.255.255", "::1", "::", "[::1]", "::ffff:127.0.0.1", "[::ffff:7f00:1]", "::ffff:10.0.0.1",
            "::127.0.0.1", "64:ff9b::a00:1", "2002:7f00:1::", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "ff02::1", "fec0::1",
            "168.63.129.16", "192.0.2.1", "198.51.100.1", "203.0.113.9", "2001:0:4136:e378::1", "64:ff9b:1::a", "::ffff:0:7f00:1", "2001:db8::1",
        ]
        for text in fenced {
            let address = IPAddress(text)
            #expect(address != nil, "\(text) parses")
            if let address { #expect(NetworkPolicy.isFenced(address), "\(text)") }
        }
        for text in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "192.169.0.1"] {
            #expect(!NetworkPolicy.isFenced(IPAddress(text)!), "\(text)")
        }
        // Forms inet_pton does not take are no address (Chromium turns them into dotted quads first).
        for text in ["2130706433", "0x7f.1", "127.1", "localhost", ""] { #expect(IPAddress(text) == nil, "\(text)") }
    }

    @Test func anAllowedOriginOrNetworkLetsItsDestinationThrough() {
        let policy = NetworkPolicy(
            allowedOrigins: ["http://127.0.0.1:8000", "https://localhost", "http://[::1]:9000", "http://Service.Internal.:81"],
            allowedNetworks: ["10.20.0.0/16", "fd00::/8"].compactMap(IPNetwork.init))
        let loopback = Self.addresses("127.0.0.1")
        #expect(policy.decide(host: "127.0.0.1", port: 8000, addresses: loopback) == .connect(Self.addresses("127.0.0.1")))
        // By the name the request gives only: another name of the same address is not the origin (DNS rebinding).
        if case .refuse = policy.decide(host: "localhost", port: 8000, addresses: loopback) {} else { Issue.record("another name let through") }
        if case .refuse = policy.decide(host: "rebind.test", port: 8000, addresses: loopback) {} else { Issue.record("a rebinding name let through") }
        #expect(policy.decide(host: "127.0.0.1", port: 8080, addresses: loopback) != .connect(Self.addresses("127.0.0.1")), "another port")
        #expect(policy.decide(host: "localhost", port: 443, addresses: Self.addresses("::1", "127.0.0.1")) == .connect(Self.addresses("::1", "127.0.0.1")))
        #expect(policy.decide(host: "LOCALHOST.", port: 443, addresses: loopback) == .connect(Self.addresses("127.0.0.1")))
        #expect(policy.decide(host: "::1", port: 9000, addresses: Self.addresses("::1")) == .connect(Self.addresses("::1")))
        #expect(policy.decide(host: "service.internal", port: 81, addresses: Self.addresses("10.9.9.9")) == .connect(Self.addresses("10.9.9.9")))
        #expect(policy.decide(host: "db", port: 5432, addresses: Self.addresses("10.20.3.4")) == .connect(Self.addresses("10.20.3.4")))
        #expect(policy.decide(host: "db", port: 5432, addresses: Self.addresses("10.21.3.4")) != .connect(Self.addresses("10.21.3.4")))
        #expect(policy.decide(host: "fd01::5", port: 80, addresses: Self.addresses("fd01::5")) == .connect(Self.addresses("fd01::5")))
        // A name resolving to a public and a private address reaches only the public one.
        #expect(policy.decide(host: "rebind.test", port: 80, addresses: Self.addresses("192.168.0.9", "93.184.216.34")) == .connect(Self.addresses("93.184.216.34")))
        if case .refuse = policy.decide(host: "localhost.", port: 8001, addresses: loopback) {} else { Issue.record("localhost. refused") }
        // This machine's own public address is this machine.
        let own = Self.addresses("93.184.216.34")
        if case .refuse = policy.decide(host: "me.test", port: 80, addresses: own, localAddresses: Set(own)) {} else { Issue.record("own address") }
        let mapped = Self.addresses("::ffff:93.184.216.34")
        if case .refuse = policy.decide(host: "me.test", port: 80, addresses: mapped, localAddresses: Set(own)) {} else { Issue.record("own, mapped") }
        // The fence's own port on loopback, never, even where loopback is allowed.
        let open = NetworkPolicy(allowedOrigins: ["http://127.0.0.1:3128"], allowedNetworks: [IPNetwork("127.0.0.0/8")!])
        for host in ["127.0.0.1", "127.0.0.5", "::ffff:127.0.0.1", "0.0.0.0"] {
            if case .refuse = open.decide(host: host, port: 3128, addresses: Self.addresses(host), ownPort: 3128) {} else { Issue.record("own port via \(host)") }
        }
        #expect(open.decide(host: "127.0.0.5", port: 3129, addresses: Self.addresses("127.0.0.5"), ownPort: 3128) == .connect(Self.addresses("127.0.0.5")))
        #expect(ProxyState.interfaceAddresses().contains(IPAddress("127.0.0.1")!), "getifaddrs reads lo")
        if case .refuse = policy.decide(host: "nowhere", port: 80, addresses: []) {} else { Issue.record("no address refused") }
        #expect(IPNetwork("10.0.0.0/33") == nil && IPNetwork("bogus/8") == nil && IPNetwork("10.0.0.1")?.prefixLength == 32)
    }

    @Test func proxyRequestsParseAsTunnelsOrAbsoluteForms() throws {
        let tunnel = try ProxyRequest.parse(Array("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\nhello".utf8))
        #expect(tunnel.request == ProxyRequest(kind: .tunnel, host: "::1", port: 443) && tunnel.headLength == 47)
        let plain = try ProxyRequest.parse(
            Array("GET http://Localhost.:8080/a?b=1 HTTP/1.1\r\nHost: localhost.:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n".utf8))
        #expect(plain.request.host == "Localhost." && plain.request.port == 8080)
        #expect(plain.request.kind == .forward(head: Array("GET /a?b=1 HTTP/1.1\r\nHost: localhost.:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n".utf8)))
        #expect(try ProxyRequest.parse(Array("GET http://a.test HTTP/1.1\r\n\r\n".utf8)).request.port == 80)
        // A query without a path, the scheme in any case, hop-by-hop names in any case and padding,
        // a value's bytes as Chromium wrote them (not UTF-8 here).
        let odd = try ProxyRequest.parse(
            Array("POST HTTP://a.test?q=1 HTTP/1.0\r\nKEEP-ALIVE: 5\r\nte\t: trailers\r\nX-B: ".utf8) + [0xFF, 0xFE] + Array("\r\n\r\n".utf8))
        #expect(odd.request.host == "a.test" && odd.request.port == 80)
        #expect(odd.request.kind == .forward(head: Array("POST /?q=1 HTTP/1.0\r\nX-B: ".utf8) + [0xFF, 0xFE] + Array("\r\nConnection: close\r\n\r\n".utf8)))
        #expect(throws: ProxyRequest.ParseError.incomplete) { try ProxyRequest.parse(Array("GET http://a.test/ HTTP/1.1\r\n".utf8)) }
        #expect(throws: ProxyRequest.ParseError.tooLarge) { try ProxyRequest.parse([UInt8](repeating: 65, count: ProxyRequest.maximumHeadBytes + 1)) }
        for bad in [
            "GET /relative HTTP/1.1\r\n\r\n", "GET https://a.test/ HTTP/1.1\r\n\r\n", "CONNECT a.test HTTP/1.1\r\n\r\n",
            "CONNECT a.test:99999 HTTP/1.1\r\n\r\n", "GET http://user@a.test/ HTTP/1.1\r\n\r\n", "GET http://a.test/ SPDY/3\r\n\r\n",
            "GET  http://a.test/ HTTP/1.1\r\n\r\n", "GET http://a.test/ HTTP/1.1\r\nNo colon here\r\n\r\n", "GET http:/a.test/ HTTP/1.1\r\n\r\n",
        ] {
            #expect(throws: ProxyRequest.ParseError.self, "\(bad)") { try ProxyRequest.parse(Array(bad.utf8)) }
        }
    }
}

/// A page's DevTools session over a real pipe pair (the browser's side played here): its events go
/// to its own handler, and its target's detach fails its waiting calls at once.
@Suite(.computing) struct DevToolsSessionTests {
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var methods: [String] = []
        func add(_ method: String) { lock.withLock { methods.append(method) } }
        var all: [String] { lock.withLock { methods } }
    }

    /// The browser's side of a pipe pair: what the connection wrote, and events to write to it.
    final class Browser {
        let connection: DevToolsConnection
        private let commands: Int32
        private let events: Int32

        init() {
            var commands: [Int32] = [-1, -1]
            var events: [Int32] = [-1, -1]
            #expect(pipe(&commands) == 0 && pipe(&events) == 0)
            connection = DevToolsConnection(commandFD: commands[1], eventFD: events[0])
            (self.commands, self.events) = (commands[0], events[1])
        }

        deinit {
            connection.close()
            close(commands)
            close(events)
        }

        func send(_ json: String) { _ = (json.utf8 + [0]).withContiguousStorageIfAvailable { write(events, $0.baseAddress, $0.count) } }

        /// The next command the connection wrote (without its NUL).
        func command() -> [UInt8] {
            var written: [UInt8] = []
            while !written.contains(0) {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = read(commands, &buffer, buffer.count)
                #expect(count > 0)
                if count <= 0 { break }
                written += buffer[0..<count]
            }
            return Array(written.prefix { $0 != 0 })
        }
    }

    @Test func aSessionOwnsItsEventsAndItsEnd() async throws {
        let browser = Browser()
        let connection = browser.connection
        let seen = Seen()
        let session = connection.session("S1") { seen.add($0.method) }
        func send(_ json: String) { browser.send(json) }
        let call = Task { try await session.call("Page.navigate", ["url": "http://a.test/"]) }
        // The command reached the browser's side, with the session's id.
        #expect(String(decoding: browser.command(), as: UTF8.self).contains(#""sessionId":"S1""#))
        send(#"{"method":"Page.frameNavigated","params":{},"sessionId":"S1"}"#)
        send(#"{"method":"Page.frameNavigated","params":{},"sessionId":"S2"}"#)
        send(#"{"method":"Target.detachedFromTarget","params":{"sessionId":"S1"}}"#)
        await #expect(throws: DevToolsError.detached(method: "Page.navigate")) { try await call.value }
        #expect(seen.all == ["Page.frameNavigated", "Target.detachedFromTarget"])
        #expect(!session.isAttached)
        // Another session's event, unrouted, is the connection's.
        var iterator = connection.events.makeAsyncIterator()
        let other = await iterator.next()
        #expect(other?.method == "Page.frameNavigated" && other?.sessionID == "S2")
    }

    /// A page's session takes only the events its task acts on (``LivePage/PageEvent``): the rest
    /// (lifecycle marks, execution contexts, a console storm) are dropped as read, and answers to the
    /// session's calls still come back.
    @Test func aPageSessionTakesOnlyWhatItActsOn() async throws {
        let browser = Browser()
        let seen = Seen()
        let session = browser.connection.session("S1", events: LivePage.eventMethods) { seen.add($0.method) }
        func send(_ json: String) { browser.send(json) }
        let dropped = [
            "Page.lifecycleEvent", "Runtime.consoleAPICalled", "Runtime.executionContextCreated", "Page.loadEventFired", "Page.frameAttached",
            "Page.frameStartedLoadingX", "Page.frameStarted",
        ]
        for method in dropped { send(#"{"method":"\#(method)","params":{"name":"load"},"sessionId":"S1"}"#) }
        for kind in LivePage.PageEvent.allCases { send(#"{"method":"\#(kind.rawValue)","params":{},"sessionId":"S1"}"#) }
        // An answer to the session's call comes back whatever the filter (it is no event).
        let call = Task { try await session.call("Page.getFrameTree") }
        let id = try #require(JSONValue.parse(browser.command())["id"]?.int)
        send(#"{"id":\#(id),"result":{"frameTree":{}},"sessionId":"S1"}"#)
        #expect(try await call.value["frameTree"] != nil)
        #expect(seen.all == LivePage.PageEvent.allCases.map(\.rawValue))
    }

    /// A call's timeout (a ``LoopTimer``): one the browser never answers fails with `timedOut`; one
    /// answered is not failed afterwards by its timer, and the connection goes on.
    @Test func aCallNoOneAnswersTimesOutAndAnAnsweredOneStaysAnswered() async throws {
        let browser = Browser()
        let connection = browser.connection
        await #expect(throws: DevToolsError.timedOut(method: "Page.stopLoading")) {
            try await connection.call("Page.stopLoading", timeout: .milliseconds(50))
        }
        #expect(String(decoding: browser.command(), as: UTF8.self).contains("Page.stopLoading"))
        // A timeout due at once still finds its call waiting (it is armed once the call waits).
        for _ in 0..<20 {
            await #expect(throws: DevToolsError.timedOut(method: "Page.stopLoading")) {
                try await connection.call("Page.stopLoading", timeout: .zero)
            }
            _ = browser.command()
        }
        let answered = Task { try await connection.call("Page.getFrameTree", timeout: .milliseconds(100)) }
        let id = try #require(JSONValue.parse(browser.command())["id"]?.int)
        browser.send(#"{"id":\#(id),"result":{"frameTree":{}}}"#)
        #expect(try await answered.value["frameTree"] != nil)
        // Past the answered call's timeout: a later call is answered as usual (no stray failure).
        try await Task.sleep(for: .milliseconds(150))
        let later = Task { try await connection.call("Browser.getVersion") }
        let next = try #require(JSONValue.parse(browser.command())["id"]?.int)
        browser.send(#"{"id":\#(next),"result":{"product":"Chrome"}}"#)
        #expect(try await later.value["product"]?.string == "Chrome")
    }
}

/// Work after a delay on an event loop: it runs once due, and a cancelled one never does.
@Suite(.computing) struct LoopTimerTests {
    @Test func dueWorkRunsAndCancelledWorkDoesNot() async throws {
        let fired = DevToolsSessionTests.Seen()
        let cancelled = LoopTimer.after(.milliseconds(50)) { fired.add("cancelled") }
        cancelled.cancel()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            LoopTimer.after(.milliseconds(250)) {
                fired.add("due")
                done.resume()
            }
        }
        #expect(fired.all == ["due"])
    }
}

/// Which tab has a page where: a value, driven here without Chromium.
@Suite(.computing) struct PageTableTests {
    static func opened(_ actions: [PageTable<String>.Action]) -> [String] {
        actions.compactMap { if case .open(let tab, _) = $0 { tab } else { nil } }.sorted()
    }

    static func closed(_ actions: [PageTable<String>.Action]) -> [String] {
        actions.compactMap { if case .close(let tab, _) = $0 { tab } else { nil } }.sorted()
    }

    @Test func wantedTabsGetPagesAndOthersClose() {
        var table = PageTable<String>()
        let first = table.reconcile(window: "w1", wanted: ["a", "b"], present: ["a", "b", "c"], now: 0)
        #expect(Self.opened(first) == ["a", "b"] && Self.closed(first).isEmpty)
        table.added("a", page: "page a", window: "w1")
        table.added("b", page: "page b", window: "w1")
        table.attached("a", session: "S1", target: "T1")
        #expect(table.tab(ofTarget: "T1") == "a" && table.session(ofTab: "a") == "S1" && table.target(ofTab: "a") == "T1")
        // b is still in the window but no longer live: its page closes at once.
        let next = table.reconcile(window: "w1", wanted: ["a", "c"], present: ["a", "b", "c"], now: 1)
        #expect(Self.opened(next) == ["c"] && Self.closed(next) == ["b"])
        #expect(table.liveTabs == ["w1": ["a"]])
        #expect(table.removeAll().sorted() == ["page a"] && table.tab(ofTarget: "T1") == nil)
    }

    /// A tab that leaves its window keeps its page for the window that wants it next; one that went
    /// for good (closed) loses it after the grace.
    @Test func aMovedTabKeepsItsPage() {
        var table = PageTable<String>()
        _ = table.reconcile(window: "w1", wanted: ["a", "b"], present: ["a", "b"], now: 0)
        table.added("a", page: "page a", window: "w1")
        table.added("b", page: "page b", window: "w1")
        // Both leave w1 (a moved, b closed: the stream says only that they left).
        #expect(table.reconcile(window: "w1", wanted: [], present: [], now: 1).isEmpty)
        #expect(table.liveTabs.isEmpty)
        // w2 wants a: it takes a's page as it is, no new one.
        #expect(table.reconcile(window: "w2", wanted: ["a"], present: ["a"], now: 1.5).isEmpty)
        #expect(table.liveTabs == ["w2": ["a"]] && table.page(ofTab: "a") == "page a")
        #expect(table.sweep(now: 2, windows: ["w1", "w2"]).isEmpty, "within the grace")
        #expect(Self.closed(table.sweep(now: 1 + PageTable<String>.moveGrace, windows: ["w1", "w2"])) == ["b"])
        // A window no longer followed: its pages close.
        #expect(Self.closed(table.sweep(now: 10, windows: ["w1"])) == ["a"])
    }
}

extension PageSyncTests {
    /// A picture when a new document has loaded; a document that stays (pushState) gets one at most
    /// every two seconds.
    @Test func picturesAreTakenWhenDue() {
        var sync = Self.loaded()
        // The first stop of loading: no picture yet, so one is due.
        #expect(sync.event(.loading(false, progress: 1), now: 0).contains(.takePicture))
        #expect(!sync.event(.loading(false, progress: 1), now: 1).contains(.takePicture), "a stop right after, same document")
        #expect(sync.event(.loading(false, progress: 1), now: 3.5).contains(.takePicture), "the interval passed")
        _ = sync.event(.model(Self.tab("http://b.test/", index: 1, count: 2, loading: true, progress: 0)), now: 4)
        sync.loadStarted(loaderID: "Lb")
        _ = sync.event(.committed(Self.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: "Lb"), now: 4)
        #expect(sync.event(.loading(false, progress: 1), now: 4.1).contains(.takePicture), "a new document")
        #expect(!sync.event(.loading(true, progress: 0.1), now: 4.2).contains(.takePicture), "never while loading")
    }

    /// A page that closes itself closes its tab, once.
    @Test func aPageThatClosesItselfClosesItsTabOnce() {
        var sync = Self.loaded()
        #expect(sync.event(.closedByPage, now: 1) == [.reportClosed])
        #expect(sync.event(.closedByPage, now: 1) == [])
        #expect(sync.closedByPage)
    }
}

extension NetworkPolicyTests {
    /// WebRTC's policy goes in the profile's preferences (Chromium's own values kept beside it).
    @Test func preferencesMergeIntoChromiumsOwn() throws {
        let existing = Data(#"{"webrtc":{"other":1},"profile":{"name":"x"}}"#.utf8)
        let merged = ChromiumPreferences.merged(ChromiumPreferences.profile, into: existing)
        let root = try #require(try JSONSerialization.jsonObject(with: merged) as? [String: Any])
        let webrtc = try #require(root["webrtc"] as? [String: Any])
        #expect(webrtc["ip_handling_policy"] as? String == "disable_non_proxied_udp" && webrtc["other"] as? Int == 1)
        #expect((root["profile"] as? [String: Any])?["name"] as? String == "x")
        #expect(ChromiumPreferences.merged(ChromiumPreferences.localState, into: Data("not json".utf8)).count > 10)
    }
}

extension NetworkPolicyTests {
    /// A preferences file that is there but cannot be read stops the start, never overwritten with ours alone.
    @Test func anUnreadablePreferencesFileIsNotOverwritten() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("prefs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        // A directory where the file should be: reading it fails.
        try FileManager.default.createDirectory(at: root.appendingPathComponent("Default/Preferences"), withIntermediateDirectories: true)
        #expect(throws: (any Error).self) { try ChromiumPreferences.write(to: root.path) }
        let fresh = FileManager.default.temporaryDirectory.appendingPathComponent("prefs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: fresh) }
        try ChromiumPreferences.write(to: fresh.path)
        #expect(FileManager.default.fileExists(atPath: fresh.appendingPathComponent("Local State").path))
    }
}
