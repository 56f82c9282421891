import BrowserdClient
import TestSupport
import Testing

@testable import BrowserdRenderer

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

    @Test func framingSplitsOnNULAcrossReads() throws {
        var framing = DevToolsFraming(maximumMessageBytes: 16)
        #expect(try framing.append(Array(#"{"id":1}"#.utf8) + [0] + Array(#"{"a"#.utf8)).map { String(decoding: $0, as: UTF8.self) } == [#"{"id":1}"#])
        #expect(try framing.append(Array(#":2}"#.utf8) + [0, 0]).map { String(decoding: $0, as: UTF8.self) } == [#"{"a:2}"#, ""])
        #expect(throws: DevToolsFraming.Failure.messageTooLarge(17)) { try framing.append([UInt8](repeating: 65, count: 17)) }
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
        #expect(sync.event(.loading(false, progress: 1), now: 1.2) == [.reportPageState(title: nil, loading: false, progress: 1, faviconURL: nil)])
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
    @Test func loopbackIsReachableOnlyAtAnAllowedOrigin() {
        let policy = LoopbackPolicy(allowedOrigins: ["http://127.0.0.1:8000", "https://localhost"])
        #expect(policy.allows("http://127.0.0.1:8000/page.html"))
        #expect(!policy.allows("http://127.0.0.1:8080/v1/profiles"))
        #expect(!policy.allows("http://127.1.2.3:8000/"))
        #expect(policy.allows("https://localhost:443/x"))
        #expect(!policy.allows("http://localhost/x"))
        #expect(!policy.allows("http://[::1]:8000/"))
        #expect(!policy.allows("ws://0.0.0.0:5432/"))
        #expect(policy.allows("https://example.com/"))
        #expect(policy.allows("http://localhost.example.com/"))
        #expect(LoopbackPolicy.patterns.contains("http://127.*"))
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
