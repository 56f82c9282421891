import TestSupport
import Testing

@testable import BrowserModel

/// Spec §7 (profiles, browser list, incognito), §1 cross-window move, recently closed tabs, limits.
@Suite(.computing) struct ProfileSessionTests {
    private func session(_ limits: ModelLimits = ModelLimits()) -> ProfileSession {
        ProfileSession(browserState: BrowserState(name: "Work"), limits: limits)
    }

    private func tab(_ url: String) -> WebState { tabWithHistory([url]) }

    @Test func offTheRecordProfileIsCreatedOnceOnDemand() throws {
        let s = session()
        #expect(s.offTheRecord == nil)
        #expect(throws: ModelError.self) { try s.createBrowser(incognito: true) }
        let (otr, created) = try s.createOffTheRecord()
        #expect(created && otr.isOffTheRecord && otr.original === s.browserState)
        let again = try s.createOffTheRecord()
        #expect(!again.created && again.profile === otr)
        #expect(throws: ModelError.self) { try otr.offTheRecordCreatingIfNeeded() }
        #expect(s.profile(withID: otr.id) === otr)
    }

    @Test func destroyingTheOffTheRecordProfileClosesItsWindowsAndForgetsTheirTabs() throws {
        let s = session()
        try s.createOffTheRecord()
        let regular = try s.createBrowser()
        let incognito = try s.createBrowser(incognito: true)
        try incognito.webStateList.insert(tab("https://secret.example/"))
        let closed = try s.destroyOffTheRecord()
        #expect(closed.map(\.id) == [incognito.id])
        #expect(s.offTheRecord == nil)
        #expect(s.browserList.browsers().map(\.id) == [regular.id])
        #expect(s.recentlyClosed.entries.isEmpty)
    }

    @Test func browserListAddsOnceAndRemovesQuietlyWhenAbsent() throws {
        final class Spy: BrowserListObserver {
            var lines: [String] = []
            func browserList(_ list: BrowserList, didAdd browser: Browser) { lines.append("add") }
            func browserList(_ list: BrowserList, didRemove browser: Browser) { lines.append("remove") }
        }
        let list = BrowserList()
        let spy = Spy()
        list.addObserver(spy)
        let state = BrowserState(name: "p")
        let browser = Browser(browserState: state)
        try list.add(browser)
        #expect(throws: ModelError.self) { try list.add(browser) }
        list.remove(browser)
        list.remove(browser)
        #expect(spy.lines == ["add", "remove"])
    }

    @Test func browsersAreListedByType() throws {
        let s = session()
        try s.createOffTheRecord()
        let a = try s.createBrowser()
        let b = try s.createBrowser(incognito: true)
        #expect(s.browserList.browsers(.regular).map(\.id) == [a.id])
        #expect(s.browserList.browsers(.incognito).map(\.id) == [b.id])
        #expect(s.browserList.browsers(.all).count == 2)
        #expect(b.kind == .incognito && a.kind == .regular)
    }

    @Test func crossWindowMoveDetachesAndInsertsActivatingInAnEmptyWindow() throws {
        let s = session()
        let source = try s.createBrowser()
        let destination = try s.createBrowser()
        let x = tab("https://x.example/")
        let y = tab("https://y.example/")
        try source.webStateList.insert(x, .automatic().activating())
        try source.webStateList.insert(y)
        let index = try s.moveTab(x.id, to: destination, index: 0)
        #expect(index == 0)
        #expect(destination.webStateList.activeWebState === x)
        #expect(source.webStateList.activeWebState === y)
        #expect(s.locate(x.id)?.browser === destination)
        #expect(s.recentlyClosed.entries.isEmpty)
    }

    /// Chromium's MoveTabFromBrowserToBrowser detaches the tab and inserts it with the index only: the
    /// pinned flag does not travel. A regular tab given an index inside the destination's pinned section
    /// lands at its first regular index.
    @Test func crossWindowMoveDropsThePinnedStateAndChecksTheIndex() throws {
        let s = session()
        let source = try s.createBrowser()
        let destination = try s.createBrowser()
        let p = tab("https://p.example/")
        let q = tab("https://q.example/")
        let child = tab("https://child.example/")
        try source.webStateList.insert(p, .automatic().pinned().activating())
        try source.webStateList.insert(q, .automatic().pinned())
        try source.webStateList.insert(child, .automatic().withOpener(p))
        let d0 = tab("https://d0.example/")
        let d1 = tab("https://d1.example/")
        try destination.webStateList.insert(d0, .automatic().pinned())
        try destination.webStateList.insert(d1, .automatic().activating())
        #expect(throws: ModelError.indexOutOfRange(index: 3, validRange: 0...2)) { try s.moveTab(p.id, to: destination, index: 3) }
        // InsertWebState_InsertionInPinnedRange: an index outside the section the tab joins sends it to
        // the section's end, as every insert does (DetermineInsertionIndex).
        #expect(try s.moveTab(p.id, to: destination, index: 0) == 2, "index 0 is in the pinned section: the regular section's end")
        #expect(!destination.webStateList.isPinned(at: 2) && destination.webStateList.pinnedCount == 1)
        #expect(destination.webStateList.activeWebState === d1, "not activated unless asked")
        // The source: one pinned tab fewer, the child lost its opener, the next active tab chosen.
        #expect(source.webStateList.pinnedCount == 1 && source.webStateList.opener(at: source.webStateList.index(of: child)) == nil)
        #expect(source.webStateList.activeWebState != nil && source.webStateList.activeWebState !== p)
        // Only an explicit request pins it, inside the pinned section.
        #expect(try s.moveTab(q.id, to: destination, index: 3, pinned: true) == 1)
        #expect(destination.webStateList.isPinned(at: 1) && destination.webStateList.pinnedCount == 2)
        #expect(destination.webStateList.invariantViolations().isEmpty && source.webStateList.invariantViolations().isEmpty)
    }

    @Test func moveWithinOneWindowIsAPlainMove() throws {
        let s = session()
        let window = try s.createBrowser()
        let a = tab("https://a.example/")
        let b = tab("https://b.example/")
        try window.webStateList.insert(a)
        try window.webStateList.insert(b)
        #expect(try s.moveTab(a.id, to: window, index: 1) == 1)
        #expect(throws: ModelError.self) { try s.moveTab(a.id, to: window, index: 2) }
    }

    @Test func tabsNeverMoveBetweenIncognitoAndRegular() throws {
        let s = session()
        try s.createOffTheRecord()
        let regular = try s.createBrowser()
        let incognito = try s.createBrowser(incognito: true)
        let x = tab("https://x.example/")
        try regular.webStateList.insert(x)
        #expect(throws: ModelError.self) { try s.moveTab(x.id, to: incognito, index: nil) }
        #expect(regular.webStateList.count == 1)
    }

    @Test func closedRegularTabsAreRememberedNewestFirstAndCapped() throws {
        let s = session(ModelLimits(recentlyClosedEntries: 3))
        let window = try s.createBrowser()
        for i in 0..<5 { try window.webStateList.insert(tab("https://e.example/\(i)")) }
        for _ in 0..<5 { try window.webStateList.close(at: 0, flags: .userAction) }
        #expect(s.recentlyClosed.entries.map { $0.tabs[0].history.currentItem!.url } == ["https://e.example/4", "https://e.example/3", "https://e.example/2"])
    }

    @Test func restoreGoesBackToItsIndexInItsWindowAndActivates() throws {
        let s = session()
        let window = try s.createBrowser()
        let tabs = (0..<4).map { tab("https://e.example/\($0)") }
        for t in tabs { try window.webStateList.insert(t) }
        try window.webStateList.activate(at: 2)
        try window.webStateList.close(at: 2, flags: .userAction)
        let entry = try #require(s.recentlyClosed.entries.first)
        #expect(entry.tabs[0].wasActive && entry.tabs[0].index == 2 && entry.browserID == window.id)
        let (browser, restored, index) = try s.restoreClosedTab(entry.id)
        #expect(browser === window && index == 2)
        #expect(window.webStateList.activeWebState === restored)
        #expect(restored.visibleURL == "https://e.example/2")
        #expect(restored.id != tabs[2].id)
        #expect(s.recentlyClosed.entries.isEmpty)
        #expect(throws: ModelError.closedTabNotFound(entry.id)) { try s.restoreClosedTab(entry.id) }
    }

    @Test func restoreReturnsIntoItsGroupWhenTheGroupStillExists() throws {
        let s = session()
        let window = try s.createBrowser()
        for i in 0..<3 { try window.webStateList.insert(tab("https://e.example/\(i)")) }
        let group = try window.webStateList.createGroup(indices: [1, 2])
        try window.webStateList.close(at: 2, flags: .userAction)
        let (_, restored, index) = try s.restoreMostRecentClosedTab(in: window)
        #expect(index == 2 && window.webStateList.group(at: index) === group)
        // Activated although it was not active when closed (TabRestoreTest.MiddleTab, iOS AddRestoredTab).
        #expect(window.webStateList.activeWebState === restored)
    }

    /// `activate: false` restores in the background, also a tab that was active when closed.
    @Test func restoreInTheBackgroundLeavesTheActiveTab() throws {
        let s = session()
        let window = try s.createBrowser()
        let tabs = (0..<3).map { tab("https://e.example/\($0)") }
        for t in tabs { try window.webStateList.insert(t) }
        try window.webStateList.activate(at: 1)
        try window.webStateList.close(at: 1, flags: .userAction)
        let active = window.webStateList.activeWebState
        #expect(s.recentlyClosed.entries.first?.tabs[0].wasActive == true)
        let (_, restored, index) = try s.restoreMostRecentClosedTab(in: window, activate: false)
        #expect(index == 1 && window.webStateList.activeWebState === active && active !== restored)
    }

    /// `TabRestoreServiceHelper::RestoreEntryById`: with no live window of the tab's browser id, a new
    /// window is made for it (not the most recently active one).
    @Test func restoreFromAClosedWindowOpensANewWindow() throws {
        let s = session()
        let doomed = try s.createBrowser()
        try doomed.webStateList.insert(tab("https://gone.example/"))
        let older = try s.createBrowser()
        let newer = try s.createBrowser()
        try older.webStateList.insert(tab("https://o.example/"), .automatic().activating())
        try newer.webStateList.insert(tab("https://n.example/"))
        try s.closeBrowser(doomed)
        let entry = try #require(s.recentlyClosed.entries.first)
        let (browser, restored, index) = try s.restoreClosedTab(entry.id)
        #expect(browser !== older && browser !== newer && browser !== doomed)
        #expect(index == 0 && browser.webStateList.activeWebState === restored && !browser.isIncognito)
        #expect(s.browserList.browsers().count == 3)
    }

    @Test func restoreWithoutAnyWindowOpensOne() throws {
        let s = session()
        let window = try s.createBrowser()
        try window.webStateList.insert(tab("https://a.example/"))
        try s.closeBrowser(window)
        let (browser, _, _) = try s.restoreClosedTab(s.recentlyClosed.entries[0].id)
        #expect(s.browserList.browsers().map(\.id) == [browser.id])
    }

    @Test func incognitoAndCleanupAndReplacedTabsAreNotRemembered() throws {
        let s = session()
        try s.createOffTheRecord()
        let incognito = try s.createBrowser(incognito: true)
        try incognito.webStateList.insert(tab("https://secret.example/"))
        try incognito.webStateList.close(at: 0, flags: .userAction)
        let regular = try s.createBrowser()
        try regular.webStateList.insert(tab("https://a.example/"))
        try regular.webStateList.insert(tab("https://b.example/"))
        try regular.webStateList.close(at: 0, flags: .tabsCleanup)
        try regular.webStateList.replace(at: 0, with: tab("https://c.example/"))
        #expect(s.recentlyClosed.entries.isEmpty)
    }

    @Test func locateFindsTabsAcrossWindowsAndForgetsClosedOnes() throws {
        let s = session()
        let a = try s.createBrowser()
        let b = try s.createBrowser()
        let x = tab("https://x.example/")
        let y = tab("https://y.example/")
        try a.webStateList.insert(x)
        try b.webStateList.insert(y)
        #expect(s.locate(y.id)?.browser === b && s.locate(y.id)?.index == 0)
        try b.webStateList.close(at: 0)
        #expect(s.locate(y.id) == nil)
        #expect(s.tabCount == 1)
    }

    @Test func windowCapIsEnforced() throws {
        let s = session(ModelLimits(windowsPerProfile: 2))
        try s.createBrowser()
        try s.createBrowser()
        #expect(throws: ModelError.limitReached(what: "windows per profile", limit: 2)) { try s.createBrowser() }
    }

    @Test func executorRunsOperationsSerially() async throws {
        let executor = ProfileExecutor(session: ProfileSession(browserState: BrowserState(name: "p")))
        let id = try await executor.perform { s in try s.createBrowser().id }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<50 {
                group.addTask { () async throws -> Void in
                    _ = try await executor.perform { s -> Int in
                        try s.browser(withID: id)!.webStateList.insert(tabWithHistory(["https://e.example/\(i)"]))
                    }
                }
            }
            try await group.waitForAll()
        }
        let count = await executor.perform { s in s.browser(withID: id)!.webStateList.count }
        #expect(count == 50)
    }
}
