import Foundation
import TestSupport
import Testing

@testable import BrowserModel

/// Spec §6 (issue 56): a client's navigation pends until its page commits it or ends it without a
/// commit (Chromium's pending entry, `DiscardNonCommittedEntries`, `GetVisibleEntry`).
@Suite(.computing) struct PendingNavigationTests {
    private func loaded(_ urls: [String], title: String = "A") throws -> WebState {
        let tab = tabWithHistory(urls)
        try tab.updatePageState(title: title, isLoading: false)
        return tab
    }

    @Test func aNewNavigationIsVisibleButNotCommittedUntilThePageCommitsIt() throws {
        let tab = try loaded(["https://a.example/"])
        let pending = try tab.startNavigation(to: "https://b.example/", transition: .typed)
        #expect(tab.visibleURL == "https://b.example/", "a new, client-started pending entry is the visible one")
        #expect(tab.lastCommittedURL == "https://a.example/")
        #expect(tab.historyCount == 1 && tab.lastCommittedIndex == 0)
        #expect(try tab.history.items.map(\.url) == ["https://a.example/"], "a pending entry is never in history")
        #expect(tab.isLoading && tab.progress == 0 && tab.pendingNavigation == pending)

        try tab.commitPending(pending.id)
        #expect(tab.pendingNavigation == nil)
        #expect(try tab.history.items.map(\.url) == ["https://a.example/", "https://b.example/"])
        #expect(tab.lastCommittedIndex == 1 && tab.title == "" && tab.isLoading)
        #expect(tab.progress == WebState.committedProgress, "committed: the page loads it (never progress 0, a command's state)")
        #expect(try tab.history.currentItem?.transition == .typed)
    }

    @Test func aRedirectCommitsWhereThePageEnded() throws {
        let tab = try loaded(["https://a.example/"])
        let pending = try tab.startNavigation(to: "https://b.example/", transition: .link)
        try tab.commitPending(pending.id, url: "https://c.example/final")
        #expect(try tab.history.items.map(\.url) == ["https://a.example/", "https://c.example/final"])
    }

    @Test func aDiscardedNavigationLeavesTheEntryBeforeItCurrent() throws {
        let tab = try loaded(["https://a.example/", "https://b.example/"])
        try tab.go(offset: -1)
        try tab.updatePageState(title: "A", isLoading: false)
        let before = try tab.history
        let budget = ByteBudget(limit: 1 << 20)
        tab.budget = budget
        let used = budget.used
        let pending = try tab.startNavigation(to: "https://no-content.example/204", transition: .typed)
        #expect(budget.used == used + "https://no-content.example/204".utf8.count, "a pending URL is held: it is charged")
        try tab.discardPending(pending.id)
        #expect(tab.pendingNavigation == nil && !tab.isLoading && tab.progress == 1)
        #expect(try tab.history == before, "forward entries stay: nothing committed")
        #expect(tab.visibleURL == "https://a.example/" && tab.title == "A")
        #expect(budget.used == used)
    }

    @Test func aNewPendingNavigationReplacesTheOneBefore() throws {
        let tab = try loaded(["https://a.example/"])
        let first = try tab.startNavigation(to: "https://slow.example/", transition: .typed)
        let second = try tab.startNavigation(to: "https://b.example/", transition: .typed)
        #expect(first.id != second.id && tab.pendingNavigation == second)
        #expect(throws: ModelError.pendingNavigationGone(tab.id, id: first.id)) { try tab.commitPending(first.id) }
        #expect(throws: ModelError.pendingNavigationGone(tab.id, id: first.id)) { try tab.discardPending(first.id) }
        #expect(tab.pendingNavigation == second, "a late answer about the replaced one changes nothing")
        try tab.commitPending(second.id)
        #expect(try tab.history.items.map(\.url) == ["https://a.example/", "https://b.example/"])
    }

    @Test func aMoveIsPendingAndTheCommittedEntryStaysVisible() throws {
        let tab = try loaded(["https://a.example/", "https://b.example/", "https://c.example/"], title: "C")
        #expect(try tab.startMove(offset: 5) == nil, "out of range: nothing pends")
        let back = try #require(try tab.startMove(offset: -2))
        #expect(back.index == 0 && back.url == "https://a.example/")
        #expect(tab.visibleURL == "https://c.example/", "Chromium shows a pending entry only for a new navigation")
        #expect(tab.lastCommittedIndex == 2 && tab.isLoading)
        try tab.commitPending(back.id)
        #expect(tab.lastCommittedIndex == 0 && tab.historyCount == 3 && tab.visibleURL == "https://a.example/")
    }

    /// Chromium's `GetIndexForOffset` counts from the pending entry's index: back, then forward before
    /// back committed, goes to where the tab was.
    @Test func aMoveCountsFromAMoveStillPending() throws {
        let tab = try loaded(["https://a.example/", "https://b.example/"])
        let back = try #require(try tab.startMove(offset: -1))
        #expect(back.index == 0)
        let forward = try #require(try tab.startMove(offset: 1))
        #expect(forward.index == 1 && tab.pendingNavigation == forward)
        #expect(try tab.startMove(offset: 1) == nil, "past the end of the history")
        try tab.commitPending(forward.id)
        #expect(tab.lastCommittedIndex == 1 && tab.historyCount == 2)
    }

    /// Chromium's `IsLoading` follows the pending navigation: a late report that the document before it
    /// stopped loading does not end it; a crash discards it (no page is left to commit it).
    @Test func loadingLastsWhileANavigationPends() throws {
        let tab = try loaded(["https://a.example/", "https://b.example/"])
        let back = try #require(try tab.startMove(offset: -1))
        let changes = try tab.updatePageState(isLoading: false, progress: 0.5)
        #expect(tab.isLoading && changes == [.progress] && tab.pendingNavigation == back)
        try tab.discardPending(back.id)
        #expect(!tab.isLoading)
        _ = try tab.startNavigation(to: "https://c.example/", transition: .typed)
        let crashed = try tab.updatePageState(isCrashed: true)
        #expect(crashed.contains(.crashed) && crashed.contains(.navigation))
        #expect(tab.pendingNavigation == nil && !tab.isLoading && tab.visibleURL == "https://b.example/")
    }

    @Test func aReloadPendsAtTheCurrentEntryAndKeepsItsTitle() throws {
        let tab = try loaded(["https://a.example/"])
        let reload = try #require(tab.startReload())
        #expect(reload.index == 0 && reload.transition == .reload && tab.isLoading)
        try tab.commitPending(reload.id)
        #expect(tab.historyCount == 1 && tab.title == "A")
        // A navigation to the current URL pends as a load of that entry: it adds nothing when it commits.
        let same = try tab.startNavigation(to: "https://a.example/", transition: .typed)
        #expect(same.index == 0)
        try tab.commitPending(same.id)
        #expect(tab.historyCount == 1)
    }

    @Test func aPageCommitOfItsOwnEndsAPendingNavigation() throws {
        let tab = try loaded(["https://a.example/"])
        let pending = try tab.startNavigation(to: "https://b.example/", transition: .typed)
        // The page pushes within its document: a new navigation still loads.
        try tab.navigate(pushingWithinDocument: "https://a.example/#x", transition: .link)
        #expect(tab.pendingNavigation == pending)
        // The page commits a new document of its own: the pending one is over.
        try tab.navigate(to: "https://c.example/", transition: .link)
        #expect(tab.pendingNavigation == nil)
        #expect(throws: ModelError.pendingNavigationGone(tab.id, id: pending.id)) { try tab.commitPending(pending.id) }
        // A pending move whose entry the page's push pruned is gone too.
        try tab.go(offset: -1)
        _ = try #require(try tab.startMove(offset: 1))
        try tab.navigate(pushingWithinDocument: "https://a.example/#y", transition: .link)
        #expect(tab.pendingNavigation == nil)
    }

    @Test func anUnrealizedTabsNavigationThrowsBeforeAnythingChanges() throws {
        let tab = WebState(
            id: .make(), metadata: HistoryMetadata(visibleURL: "https://a.example/", currentIndex: 0, count: 1, byteCount: 17), title: "A",
            isLoading: false, progress: 1, faviconURL: nil, createdAt: Date(), lastActiveAt: Date())
        #expect(throws: ModelError.historiesNotLoaded([tab.id])) { try tab.startNavigation(to: "https://b.example/", transition: .typed) }
        #expect(throws: ModelError.historiesNotLoaded([tab.id])) { try tab.startMove(offset: -1) }
        #expect(tab.pendingNavigation == nil && !tab.isLoading)
    }

    /// Chromium's manual subframe navigation (a link in an iframe) adds an entry with the top-level URL
    /// unchanged; `TabRestoreServiceHelper::PopulateTab` counts such entries as any other.
    @Test func subframeEntriesCountInTheClosedTabWindow() throws {
        var history = NavigationHistory()
        history.commit(NavigationItem(url: "https://frames.example/", transition: .typed, timestamp: Date()))
        for _ in 0..<8 {
            history.commit(NavigationItem(url: "https://frames.example/", transition: .manualSubframe, timestamp: Date()), sameDocument: true)
        }
        #expect(history.count == 9 && history.currentIndex == 8)
        let window = history.restoreWindow()
        #expect(window.count == 7 && window.currentIndex == 6, "the current entry and 6 before it, subframe entries counted")
        #expect(window.items.allSatisfy { $0.url == "https://frames.example/" })
    }
}
