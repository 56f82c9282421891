import Foundation
import TestSupport
import Testing

@testable import BrowserModel

/// Window and group entries of the recently-closed list, close-all with undo (`TabsCloser`), and moving a
/// tab into a group (model-fidelity issue: what the API could not express).
@Suite(.computing) struct ClosedEntryTests {
    private func session() -> ProfileSession { ProfileSession(browserState: BrowserState(name: "Work")) }

    /// A window: `p0 | a (g: b c*) d`, p0 pinned, b and c in group "Read" (cyan), c active.
    private func window(_ s: ProfileSession) throws -> (Browser, [WebState], TabGroup) {
        let browser = try s.createBrowser()
        let tabs = ["p0", "a", "b", "c", "d"].map { tabWithHistory(["https://\($0).example/"]) }
        for tab in tabs { try browser.webStateList.insert(tab, .automatic()) }
        try browser.webStateList.setPinned(true, at: 0)
        let group = try browser.webStateList.createGroup(indices: [2, 3], visualData: TabGroupVisualData(title: "Read", color: .cyan))
        try browser.webStateList.activate(at: 3)
        return (browser, tabs, group)
    }

    private func layout(_ list: WebStateList) -> String {
        (0..<list.count).map { index -> String in
            let tab = list.webState(at: index)!
            var name = String(tab.visibleURL.dropFirst(8).prefix { $0 != "." })
            if list.isPinned(at: index) { name = "^" + name }
            if let group = list.group(at: index) { name += "[\(group.visualData.title)]" }
            if index == list.activeIndex { name += "*" }
            return name
        }.joined(separator: " ")
    }

    // MARK: Window entries

    /// `TabRestoreServiceHelper::BrowserClosing`: closing a window records one window entry holding all its
    /// (remembered) tabs, with pinned state, groups and the active tab; `TabRestoreServiceImplTest` restores
    /// a window entry into a new window.
    @Test func closingAWindowRecordsOneWindowEntryThatRestoresIntoANewWindow() throws {
        let s = session()
        let (browser, _, group) = try window(s)
        try browser.webStateList.insert(tabWithHistory([NavigationItem.newTabPageURL]), .automatic())
        try s.closeBrowser(browser)
        #expect(s.recentlyClosed.entries.count == 1)
        let entry = try #require(s.recentlyClosed.entries.first)
        #expect(entry.kind == .window && entry.tabs.count == 5, "the NTP-only tab is not remembered")
        #expect(entry.tabs.map(\.wasPinned) == [true, false, false, false, false])
        #expect(entry.leadingTab.tabID == entry.tabs[3].tabID && entry.tabs[3].wasActive)
        #expect(entry.tabs[2].group == ClosedTabGroup(id: group.id, visualData: group.visualData))

        let (restored, leading, index) = try s.restoreClosedTab(entry.id)
        #expect(restored !== browser && s.browserList.count == 1)
        #expect(layout(restored.webStateList) == "^p0 a b[Read] c[Read]* d")
        #expect(restored.webStateList.group(withID: group.id)?.visualData == group.visualData, "the group keeps its id and look")
        #expect(index == 3 && leading === restored.webStateList.activeWebState)
        #expect(s.recentlyClosed.entries.isEmpty)
    }

    /// `BrowserClosing`'s short-circuit: a window with one remembered tab records a tab entry.
    @Test func aWindowWithOneTabRecordsATabEntry() throws {
        let s = session()
        let browser = try s.createBrowser()
        try browser.webStateList.insert(tabWithHistory(["https://only.example/"]), .automatic())
        try s.closeBrowser(browser)
        #expect(s.recentlyClosed.entries.map(\.kind) == [.tab])
        let browser2 = try s.createBrowser()
        try browser2.webStateList.insert(tabWithHistory([NavigationItem.newTabPageURL]), .automatic())
        try s.closeBrowser(browser2)
        #expect(s.recentlyClosed.entries.count == 1, "a window of new-tab pages leaves nothing")
    }

    // MARK: Group entries

    /// Closing a whole group records one group entry; restoring it rebuilds the group (same id, title,
    /// colour) at the end of its window, leading with its first tab.
    @Test func closingAGroupRecordsOneGroupEntry() throws {
        let s = session()
        let (browser, tabs, group) = try window(s)
        let list = browser.webStateList
        try s.closeGroup(group, in: browser)
        #expect(layout(list) == "^p0 a d*")
        let entry = try #require(s.recentlyClosed.entries.first)
        #expect(entry.kind == .group && entry.tabs.map(\.tabID) == [tabs[2].id, tabs[3].id])
        #expect(s.recentlyClosed.mostRecent(in: browser.id)?.id == entry.id)

        let (target, leading, index) = try s.restoreMostRecentClosedTab(in: browser)
        #expect(target === browser)
        #expect(layout(list) == "^p0 a d b[Read]* c[Read]")
        #expect(list.group(withID: group.id)?.visualData == group.visualData)
        #expect(index == 3 && leading.visibleURL == "https://b.example/")
    }

    /// A group entry whose window is gone comes back in a new window.
    @Test func aGroupWhoseWindowIsGoneRestoresIntoANewWindow() throws {
        let s = session()
        let (browser, _, group) = try window(s)
        try s.closeGroup(group, in: browser)
        let entry = try #require(s.recentlyClosed.entries.first)
        try s.closeBrowser(browser)
        let (target, _, _) = try s.restoreClosedTab(entry.id)
        #expect(target !== browser && layout(target.webStateList) == "b[Read]* c[Read]")
    }

    /// Desktop `BrowserLiveTabContext::AddRestoredTab`: a tab whose group is gone is restored into a
    /// group rebuilt with the saved visual data.
    @Test func aTabWhoseGroupIsGoneRebuildsItsGroup() throws {
        let s = session()
        let (browser, _, group) = try window(s)
        let list = browser.webStateList
        try list.close(at: 2, flags: .userAction)
        try list.close(at: 2, flags: .userAction)
        #expect(list.group(withID: group.id) == nil)
        let newest = try #require(s.recentlyClosed.entries.first)
        try s.restoreClosedTab(newest.id)
        #expect(layout(list) == "^p0 a c[Read]* d")
        #expect(list.group(withID: group.id) != nil, "the group keeps its id when it is free")
    }

    // MARK: Close all, undo (TabsCloser)

    /// An unrealized tab is never closed unremembered (issue 53): a close-all over it refuses before it
    /// changes anything, and once realized (as the service does, from storage) it is remembered with
    /// its history.
    @Test func aCloseAllOverAnUnrealizedTabRefusesThenRemembersIt() throws {
        let s = session()
        let browser = try s.createBrowser()
        let stored = try UnrealizedWebStateTests.history(["https://a.example/", "https://b.example/"], current: 1)
        let tab = UnrealizedWebStateTests.unrealized(stored)
        try browser.webStateList.insert(tab, .automatic().activating())
        #expect(throws: ModelError.historiesNotLoaded([tab.id])) { try s.closeTabs(in: [browser], policy: .allTabs) }
        #expect(browser.webStateList.count == 1 && s.recentlyClosed.parked.isEmpty, "nothing changed")
        tab.realize(with: stored)
        let closing = try s.closeTabs(in: [browser], policy: .allTabs)
        s.confirmClosing(closing.id)
        let remembered = try #require(s.recentlyClosed.entries.first?.tabs.first)
        #expect(remembered.tabID == tab.id && remembered.history.items.map(\.url) == ["https://a.example/", "https://b.example/"])
    }

    /// iOS `TabsCloser` (`tabs_closer_unittest.mm`: CloseTabs then UndoCloseTabs): one call closes every
    /// tab and one call brings them back with order, pinned state, groups, openers and the active tab;
    /// nothing is recorded as recently closed meanwhile.
    @Test func closeAllThenUndoBringsEverythingBack() throws {
        let s = session()
        let (browser, tabs, group) = try window(s)
        let list = browser.webStateList
        try list.setOpener(tabs[1], at: 4)
        let before = layout(list)
        let closing = try s.closeTabs(in: [browser], policy: .allTabs)
        #expect(list.isEmpty && closing.tabs.map(\.id) == tabs.map(\.id))
        #expect(s.recentlyClosed.entries.isEmpty && s.recentlyClosed.parked[closing.id]?.tabs.count == 5)

        let back = try s.undoClosing(closing.id)
        #expect(back.count == 1 && back[0].browser === browser)
        #expect(layout(list) == before)
        #expect((0..<5).map { list.webState(at: $0)!.id } == tabs.map(\.id), "the same tabs, not copies")
        #expect(list.group(withID: group.id)?.visualData == group.visualData)
        #expect(list.opener(at: 4)?.webState === tabs[1])
        #expect(s.recentlyClosed.entries.isEmpty && s.recentlyClosed.parked.isEmpty)
        #expect(throws: ModelError.closingNotFound(closing.id)) { try s.undoClosing(closing.id) }
    }

    /// `ConfirmDeletion`: the closed tabs are recorded one by one, as closing them from the last does.
    @Test func confirmingRecordsTheTabs() throws {
        let s = session()
        let (browser, tabs, _) = try window(s)
        let closing = try s.closeTabs(in: [browser], policy: .regularTabs)
        #expect(layout(browser.webStateList) == "^p0*", "regularTabs keeps the pinned tab")
        s.confirmClosing(closing.id)
        #expect(s.recentlyClosed.entries.map(\.tabs[0].tabID) == Array(tabs[1...].map(\.id)))
        #expect(s.recentlyClosed.parked.isEmpty && s.closings.isEmpty)
        #expect(throws: ModelError.closingNotFound(closing.id)) { try s.undoClosing(closing.id) }
    }

    /// Undo after the window closed: the tabs come back in a new window.
    @Test func undoAfterTheWindowClosedOpensANewWindow() throws {
        let s = session()
        let (browser, _, _) = try window(s)
        let before = layout(browser.webStateList)
        let closing = try s.closeTabs(in: [browser], policy: .allTabs)
        try s.closeBrowser(browser)
        let back = try s.undoClosing(closing.id)
        #expect(back[0].browser !== browser && layout(back[0].browser.webStateList) == before)
    }

    /// Parked tabs saved by a close-all never confirmed count as confirmed when loaded.
    @Test func parkedTabsLoadAsConfirmed() throws {
        let s = session()
        let (browser, _, _) = try window(s)
        let closing = try s.closeTabs(in: [browser], policy: .allTabs)
        let parked = try #require(s.recentlyClosed.parked[closing.id])
        let other = RecentlyClosedTabs()
        other.restore([], parked: [parked])
        #expect(other.entries.count == 5 && other.entries.allSatisfy { $0.kind == .tab } && other.parked.isEmpty)
        #expect(other.entries.first?.tabs[0].wasPinned == true, "the first tab is the newest, as if closed from the last")
    }

    /// Parked tabs are loaded again at every start (their rows stay until they leave the list): an
    /// entry recorded after the crash stays newer than them at the next start too.
    @Test func parkedTabsKeepTheirPlaceByTime() throws {
        let s = session()
        let (browser, _, _) = try window(s)
        let closing = try s.closeTabs(in: [browser], policy: .allTabs, closedAt: Date(timeIntervalSince1970: 100))
        let parked = try #require(s.recentlyClosed.parked[closing.id])
        let later = ClosedTab(
            tabID: TabID.make(), history: try tabWithHistory(["https://later.example/"]).history, title: "",
            faviconURL: nil, browserID: browser.id, index: 0, group: nil, wasActive: false, wasPinned: false,
            closedAt: Date(timeIntervalSince1970: 200))
        let other = RecentlyClosedTabs()
        other.restore([ClosedEntry(tab: later)], parked: [parked])
        #expect(other.entries.map(\.tabs[0].closedAt.timeIntervalSince1970) == [200, 100, 100, 100, 100, 100])
        #expect(other.entries[1].tabs[0].wasPinned, "then the close-all's tabs, its first tab newest")
    }

    // MARK: Move into a group

    /// `MoveToGroup` in one window; `InsertionParams::InGroup` across windows (an index outside the
    /// group's range goes to its end).
    @Test func aTabMovesIntoAGroupOfItsWindowOrAnother() throws {
        let s = session()
        let (browser, _, group) = try window(s)
        let list = browser.webStateList
        let a = list.webState(at: 1)!
        try s.moveTab(a.id, to: browser, index: nil, group: group)
        #expect(layout(list) == "^p0 b[Read] c[Read]* a[Read] d")
        let other = try s.createBrowser()
        let x = tabWithHistory(["https://x.example/"])
        let y = tabWithHistory(["https://y.example/"])
        try other.webStateList.insert(x, .automatic())
        try other.webStateList.insert(y, .automatic())
        try s.moveTab(x.id, to: browser, index: 0, group: group)
        #expect(layout(list) == "^p0 b[Read] c[Read]* a[Read] x[Read] d", "index 0 is outside the group: its end")
        try s.moveTab(y.id, to: browser, index: 2, group: group)
        #expect(layout(list) == "^p0 b[Read] y[Read] c[Read]* a[Read] x[Read] d")
        #expect(throws: ModelError.self) { try s.moveTab(a.id, to: browser, index: nil, pinned: true, group: group) }
    }
}
