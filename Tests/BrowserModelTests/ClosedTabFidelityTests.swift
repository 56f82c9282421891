import Testing

@testable import BrowserModel

/// What a closed tab remembers, as Chromium remembers it (model-fidelity issue, rules 1 and 2).
@Suite struct ClosedTabFidelityTests {
    private func session() -> ProfileSession { ProfileSession(browserState: BrowserState(name: "Work")) }

    /// `ClosingWebStateObserverBrowserAgent::RecordHistoryForWebStateAtIndex` (desktop:
    /// `IsTabInteresting`): a tab whose only entry is the new-tab page is not remembered.
    @Test func aTabThatOnlyShowedTheNewTabPageIsNotRemembered() throws {
        let s = session()
        let browser = try s.createBrowser()
        let ntp = tabWithHistory([NavigationItem.newTabPageURL])
        let left = tabWithHistory([NavigationItem.newTabPageURL, "https://away.example/"])
        try browser.webStateList.insert(ntp, .automatic())
        try browser.webStateList.insert(left, .automatic())
        try browser.webStateList.close(at: 0, flags: .userAction)
        #expect(s.recentlyClosed.entries.isEmpty)
        try browser.webStateList.close(at: 0, flags: .userAction)
        #expect(s.recentlyClosed.entries.map(\.tabs[0].tabID) == [left.id], "a tab that navigated away from the NTP is remembered")
    }

    /// `TabRestoreServiceImplTest.RestoreManyNavigations` (`PopulateTab`, `gMaxPersistNavigationCount`
    /// = 6): 9 entries with the last current come back as entries 3–9, index 6.
    @Test func aClosedTabKeepsAWindowOfItsHistory() throws {
        let s = session()
        let browser = try s.createBrowser()
        let urls = (1...9).map { "https://e.example/\($0)" }
        let tab = tabWithHistory(urls)
        try browser.webStateList.insert(tab, .automatic())
        try browser.webStateList.close(at: 0, flags: .userAction)
        let remembered = try #require(s.recentlyClosed.entries.first?.tabs[0])
        #expect(remembered.history.items.map(\.url) == Array(urls[2...8]))
        #expect(remembered.history.currentIndex == 6)
    }

    @Test func theWindowIsSixEntriesOnEachSideOfTheCurrentOne() throws {
        let tab = tabWithHistory((0..<20).map { "https://e.example/\($0)" })
        tab.go(offset: -10)  // current: 9
        let window = tab.history.restoreWindow()
        #expect(window.items.map(\.url) == (3...15).map { "https://e.example/\($0)" })
        #expect(window.currentIndex == 6)
        let short = tabWithHistory(["https://a.example/", "https://b.example/"]).history
        #expect(short.restoreWindow() == short)
    }

    /// Every path that records a closed tab applies the rules: close-many and a window's close too.
    @Test func closeManyAndWindowCloseApplyTheSameRules() throws {
        let s = session()
        let browser = try s.createBrowser()
        try browser.webStateList.insert(tabWithHistory([NavigationItem.newTabPageURL]), .automatic())
        try browser.webStateList.insert(tabWithHistory((1...9).map { "https://m.example/\($0)" }), .automatic())
        try s.closeBrowser(browser)
        #expect(s.recentlyClosed.entries.count == 1)
        #expect(s.recentlyClosed.entries.first?.tabs[0].history.count == 7)
    }
}
