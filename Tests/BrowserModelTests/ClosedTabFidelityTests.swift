import Foundation
import TestSupport
import Testing

@testable import BrowserModel

/// What a closed tab remembers, as Chromium remembers it (model-fidelity issue, rules 1 and 2).
@Suite(.computing) struct ClosedTabFidelityTests {
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

    /// The three kinds of entry that store a tab, and the close-all whose parked tabs are recorded once
    /// confirmed: each goes through `PopulateTab`.
    enum Recording: CaseIterable, CustomTestStringConvertible {
        case tabEntry, windowEntry, groupEntry, confirmedCloseAll
        var testDescription: String { "\(self)" }
    }

    /// A tab with `history` (its current entry at `current`) closed by `recording`; what was remembered.
    private func remembered(_ history: NavigationHistory, by recording: Recording) throws -> NavigationHistory {
        let s = session()
        let browser = try s.createBrowser()
        let tab = WebState(history: history)
        try browser.webStateList.insert(tab, .automatic())
        try browser.webStateList.insert(tabWithHistory(["https://other.example/"]), .automatic())
        switch recording {
        case .tabEntry:
            try browser.webStateList.close(at: 0, flags: .userAction)
        case .windowEntry:
            try s.closeBrowser(browser)
        case .groupEntry:
            let group = try browser.webStateList.createGroup(indices: [0, 1])
            _ = try s.closeGroup(group, in: browser)
        case .confirmedCloseAll:
            let closing = try s.closeTabs(in: [browser], policy: .allTabs)
            s.confirmClosing(closing.id)
        }
        let kinds: [Recording: ClosedEntry.Kind] = [.tabEntry: .tab, .windowEntry: .window, .groupEntry: .group]
        let entry = try #require(s.recentlyClosed.entries.first { $0.tabs.contains { $0.tabID == tab.id } })
        if let kind = kinds[recording] { #expect(entry.kind == kind) }
        return try #require(entry.tabs.first { $0.tabID == tab.id }).history
    }

    private func history(_ count: Int, current: Int, empty: Set<Int> = [], reader: Set<Int> = []) throws -> NavigationHistory {
        let items = (0..<count).map { index in
            NavigationItem(
                url: empty.contains(index) ? "" : reader.contains(index) ? "chrome-distiller://x/?url=\(index)" : "https://e.example/\(index)",
                transition: .link, timestamp: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)))
        }
        return try NavigationHistory(items: items, currentIndex: current)
    }

    private func urls(_ indices: some Sequence<Int>) -> [String] { indices.map { "https://e.example/\($0)" } }

    /// `components/sessions/core/tab_restore_service_helper.cc`: `PopulateTab` calls
    /// `AddSerializedNavigationEntries` with `kCurrentAndPreceedingEntries` (the current entry and up to
    /// `gMaxPersistNavigationCount` = 6 before it: `added_count <= 6` admits 7) and then with
    /// `kEntriesFollowingCurrentEntry` (up to 7 after it); `current_navigation_index` is the first
    /// call's count minus one. 20 entries, the current one at 0, 6, 10, 13 and 19.
    @Test(arguments: Recording.allCases)
    func sixBeforeTheCurrentEntryAndSevenAfterIt(_ recording: Recording) throws {
        let expected: [Int: (ClosedRange<Int>, Int)] = [0: (0...7, 0), 6: (0...13, 6), 10: (4...17, 6), 13: (7...19, 6), 19: (13...19, 6)]
        for (current, (kept, index)) in expected.sorted(by: { $0.key < $1.key }) {
            let window = try remembered(try history(20, current: current), by: recording)
            #expect(window.items.map(\.url) == urls(kept), "current \(current)")
            #expect(window.currentIndex == index, "current \(current)")
            #expect(window.currentItem?.url == "https://e.example/\(current)")
        }
    }

    /// Fewer than 7 entries on a side: the walk stops at the end of the history.
    @Test(arguments: Recording.allCases)
    func aShortSideKeepsAllItHas(_ recording: Recording) throws {
        let window = try remembered(try history(5, current: 2), by: recording)
        #expect(window.items.map(\.url) == urls(0...4) && window.currentIndex == 2)
        let one = try remembered(try history(1, current: 0), by: recording)
        #expect(one.items.map(\.url) == urls([0]) && one.currentIndex == 0)
    }

    /// Entries with an empty URL (Chromium: an initial `NavigationEntry`) and reader-mode entries
    /// (`dom_distiller::kDomDistillerScheme`) are skipped without counting: the window widens past them.
    @Test(arguments: Recording.allCases)
    func emptyAndReaderModeEntriesAreSkippedAndTheWindowWidens(_ recording: Recording) throws {
        // Current 10: before it 8 (empty) and 5 (reader mode) are skipped, so the walk back reaches 2;
        // after it 12 (empty) is skipped, so the walk forward reaches 18.
        let window = try remembered(try history(20, current: 10, empty: [8, 12], reader: [5]), by: recording)
        #expect(window.items.map(\.url) == urls([2, 3, 4, 6, 7, 9, 10, 11, 13, 14, 15, 16, 17, 18]))
        #expect(window.currentIndex == 6 && window.currentItem?.url == "https://e.example/10")
    }

    /// The current entry itself skipped: the remembered index is the last entry the walk back kept.
    @Test func aSkippedCurrentEntryLeavesTheIndexOnTheOneBeforeIt() throws {
        let window = try history(20, current: 10, empty: [10]).restoreWindow()
        #expect(window.items.map(\.url) == urls([3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17]))
        #expect(window.currentIndex == 6 && window.currentItem?.url == "https://e.example/9")
        let front = try history(3, current: 0, empty: [0]).restoreWindow()
        #expect(front.items.map(\.url) == urls([1, 2]) && front.currentIndex == 0)
    }

    /// `CreateHistoricalTab` drops a tab whose window is empty: every entry was skipped.
    @Test func aTabWhoseEntriesAreAllSkippedIsNotRemembered() throws {
        let s = session()
        let browser = try s.createBrowser()
        try browser.webStateList.insert(WebState(history: try history(2, current: 1, empty: [0, 1])), .automatic())
        try browser.webStateList.insert(tabWithHistory(["https://other.example/"]), .automatic())
        try browser.webStateList.close(at: 0, flags: .userAction)
        #expect(s.recentlyClosed.entries.isEmpty)
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
