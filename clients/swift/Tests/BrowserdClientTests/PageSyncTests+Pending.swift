import BrowserdClient
import Foundation
import TestSupport
import Testing

@testable import BrowserdRenderer

/// Issue 56: a client's navigation pending in browserd is the page's to commit or discard.
@Suite(.computing) struct PendingPageSyncTests {
    static func pending(_ url: String, id: Int, index: Int? = nil, current: String = "http://a.test/", at: Int = 0, count: Int = 1) -> ModelTab {
        ModelTab(
            id: "t1", url: index == nil ? url : current, loading: true, progress: 0, historyIndex: at, historyCount: count,
            pending: .init(id: id, url: url, index: index))
    }

    @Test func aPendingNavigationsCommitIsReportedAsItsOwnWhereThePageEnded() {
        var sync = PageSyncTests.loaded()
        #expect(sync.event(.model(Self.pending("http://b.test/", id: 7)), now: 1) == [.load(url: "http://b.test/")])
        let sent = sync.loadSent(url: "http://b.test/")
        #expect(sent.number != nil && !sent.stale)
        // Chromium starts it (its loader is ours) and commits it after a redirect, before `Page.navigate` answers.
        sync.navigationStarted(loaderID: "Lb", url: "http://b.test/")
        #expect(
            sync.event(.committed(PageSyncTests.history(["about:blank", "http://a.test/", "http://b.test/to"], current: 2), loaderID: "Lb"), now: 1)
                == [.reportCommit(id: 7, url: "http://b.test/to")])
        #expect(sync.event(.loadAnswered(number: sent.number ?? 0, loaderID: "Lb", errorText: nil), now: 1) == [])
        // browserd's answer is the tab's new state, not a command.
        let answer = ModelTab(id: "t1", url: "http://b.test/to", loading: true, progress: 0.1, historyIndex: 1, historyCount: 2)
        #expect(sync.reported(.reportCommit(id: 7, url: "http://b.test/to"), answer: answer, now: 1) == [])
        #expect(sync.event(.model(answer), now: 1) == [])
        // Anchored there: a pending back is a traversal of Chromium's entry.
        #expect(
            sync.event(.model(Self.pending("http://a.test/", id: 8, index: 0, current: "http://b.test/to", at: 1, count: 2)), now: 2)
                == [.traverse(entryID: 2)])
        #expect(
            sync.event(.committed(PageSyncTests.history(["about:blank", "http://a.test/", "http://b.test/to"], current: 1), loaderID: "Lx"), now: 2)
                == [.reportCommit(id: 8, url: nil)])
    }

    @Test func anAbortedLoadDiscardsItsPendingNavigation() {
        var sync = PageSyncTests.loaded()
        #expect(sync.event(.model(Self.pending("http://b.test/204", id: 3)), now: 1) == [.load(url: "http://b.test/204")])
        let number = sync.loadSent(url: "http://b.test/204").number ?? 0
        // An answer of another load (an earlier one's) is not this one's.
        #expect(sync.event(.loadAnswered(number: number - 1, loaderID: "L0", errorText: "net::ERR_ABORTED"), now: 1) == [])
        #expect(sync.event(.loadAnswered(number: number, loaderID: "L2", errorText: "net::ERR_ABORTED"), now: 1) == [.reportDiscard(id: 3)])
        #expect(sync.ownLoad == nil)
    }

    @Test func aNetworkErrorCommitsTheErrorPagesEntry() {
        var sync = PageSyncTests.loaded()
        _ = sync.event(.model(Self.pending("http://127.0.0.1:9/x", id: 4)), now: 1)
        let number = sync.loadSent(url: "http://127.0.0.1:9/x").number ?? 0
        #expect(sync.event(.loadAnswered(number: number, loaderID: "Le", errorText: "net::ERR_CONNECTION_REFUSED"), now: 1) == [])
        #expect(
            sync.event(.committed(PageSyncTests.history(["about:blank", "http://a.test/", "http://127.0.0.1:9/x"], current: 2), loaderID: "Le"), now: 1)
                == [.reportCommit(id: 4, url: nil)])
    }

    @Test func aNewNavigationReplacesALoadUnderWayAtOnce() {
        var sync = PageSyncTests.loaded()
        #expect(sync.event(.model(Self.pending("http://slow.test/", id: 5)), now: 1) == [.load(url: "http://slow.test/")])
        let slow = sync.loadSent(url: "http://slow.test/").number ?? 0
        #expect(sync.event(.model(Self.pending("http://b.test/", id: 6)), now: 1) == [.load(url: "http://b.test/")], "not after the slow one's commit")
        #expect(sync.loadSent(url: "http://slow.test/").stale, "a load a newer one replaced before it went is not sent")
        #expect(sync.loadSent(url: "http://b.test/").number == slow + 1)
        // Chromium cancels the slow one: its answer discards nothing (browserd replaced it already).
        #expect(sync.event(.loadAnswered(number: slow, loaderID: "Ls", errorText: "net::ERR_ABORTED"), now: 1) == [])
        sync.navigationStarted(loaderID: "Lb", url: "http://b.test/")
        #expect(
            sync.event(.committed(PageSyncTests.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: "Lb"), now: 1)
                == [.reportCommit(id: 6, url: nil)])
    }

    @Test func aURLThePageDoesNotLoadCommitsAtOnce() {
        var sync = PageSyncTests.loaded()
        #expect(sync.event(.model(Self.pending("file:///etc/passwd", id: 9)), now: 1) == [.reportCommit(id: 9, url: nil), .load(url: PageSync.notLoadedPage)])
    }

    /// A link in an iframe: Chromium's list has a new entry with the same top-level URL.
    @Test func aSubframesNewEntryIsReportedAsAManualSubframeNavigation() {
        var sync = PageSyncTests.loaded()
        #expect(
            sync.event(.committed(PageSyncTests.history(["about:blank", "http://a.test/", "http://a.test/"], current: 2), loaderID: nil, subframe: true), now: 1)
                == [.reportNavigation(url: "http://a.test/", transition: "manual_subframe", replace: false, sameDocument: true)])
        // The iframe's own back is a move.
        #expect(
            sync.event(.committed(PageSyncTests.history(["about:blank", "http://a.test/", "http://a.test/"], current: 1), loaderID: nil, subframe: true), now: 2)
                == [.reportMove(offset: -1)])
    }

    /// Chromium records a subframe's entry a moment after the frame's commit event: an unchanged list is read again.
    @Test func aSubframesListIsReadAgainWhileItShowsNoChange() {
        let before = PageSyncTests.history(["http://a.test/"], current: 0)
        let after = PageSyncTests.history(["http://a.test/", "http://a.test/"], current: 1)
        #expect(PageSync.subframeReading(before, before: before, attempt: 0, attempts: 20, newerCommitWaits: false) == .askAgain)
        #expect(PageSync.subframeReading(after, before: before, attempt: 1, attempts: 20, newerCommitWaits: false) == .use(after))
        #expect(PageSync.subframeReading(before, before: before, attempt: 19, attempts: 20, newerCommitWaits: false) == .use(before), "not forever")
        #expect(PageSync.subframeReading(before, before: before, attempt: 0, attempts: 20, newerCommitWaits: true) == .use(before))
    }

    /// A report's answer that shows a client's move pending since (the tab's URL and place unchanged)
    /// is that command, not the report's echo.
    @Test func aMovePendingInAReportsAnswerIsACommand() {
        var sync = PageSyncTests.loaded()
        _ = sync.event(.model(Self.pending("http://b.test/", id: 1)), now: 1)
        sync.navigationStarted(loaderID: "Lb", url: "http://b.test/")
        _ = sync.event(.committed(PageSyncTests.history(["about:blank", "http://a.test/", "http://b.test/"], current: 2), loaderID: "Lb"), now: 1)
        let committed = ModelTab(id: "t1", url: "http://b.test/", loading: true, progress: 0.1, historyIndex: 1, historyCount: 2)
        _ = sync.reported(.reportCommit(id: 1, url: nil), answer: committed, now: 1)
        var back = Self.pending("http://a.test/", id: 2, index: 0, current: "http://b.test/", at: 1, count: 2)
        back.progress = 1
        back.loading = false
        #expect(
            sync.reported(.reportPageState(title: nil, loading: false, progress: 1, faviconURL: nil), answer: back, now: 2) == [.traverse(entryID: 2)])
        // Its event on the stream is no second command.
        #expect(sync.event(.model(back), now: 2) == [])
    }

    /// A list read for a commit whose step was late (a replaceState) may show the commit after it (a
    /// pushState) already: reported from the list, that push's own step adds nothing again.
    @Test func aStepAListReadReportedAlreadyIsNotReportedAgain() {
        var sync = PageSyncTests.loaded()
        _ = sync.firstCommitLeavesBlankEntry(PageSyncTests.history(["http://a.test/"], current: 0))
        #expect(
            sync.event(.stepped(url: "http://a.test/", step: .push, sameDocument: true, transition: "link"), now: 1)
                == [.reportNavigation(url: "http://a.test/", transition: "link", replace: false, sameDocument: true)])
        _ = sync.event(.refreshed(PageSyncTests.history(["about:blank", "http://a.test/", "http://a.test/"], current: 2, ids: [1, 2, 8])), now: 1)
        let read = PageSyncTests.history(["about:blank", "http://a.test/", "http://a.test/", "http://a.test/#after"], current: 3, ids: [1, 2, 9, 10])
        #expect(
            sync.event(.committed(read, loaderID: nil, url: "http://a.test/"), now: 2)
                == [
                    .reportNavigation(url: "http://a.test/", transition: "link", replace: true),
                    .reportNavigation(url: "http://a.test/#after", transition: "link", replace: false),
                ])
        #expect(sync.event(.stepped(url: "http://a.test/#after", step: .push, sameDocument: true, transition: "link"), now: 2) == [])
        // The next step is new again.
        #expect(
            sync.event(.stepped(url: "http://a.test/#next", step: .push, sameDocument: true, transition: "link"), now: 3)
                == [.reportNavigation(url: "http://a.test/#next", transition: "link", replace: false, sameDocument: true)])
    }
}
