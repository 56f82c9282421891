import TestSupport
import Testing

@testable import BrowserModel

/// Spec §2: the tab that becomes active when tabs are removed, step by step.
@Suite(.computing) struct NextActiveTests {
    @Test func noActiveTabStaysNone() throws {
        let b = try ListBuilder("| a b c")
        try b.list.close(at: 1)
        #expect(b.list.activeIndex == -1)
    }

    @Test func removingEverythingLeavesNone() throws {
        let b = try ListBuilder("| a b*")
        try b.list.close(atIndices: [0, 1])
        #expect(b.list.activeIndex == -1)
    }

    @Test func activeNotRemovedStaysActive() throws {
        let b = try ListBuilder("| a b c*")
        let recorder = ChangeRecorder(b)
        try b.list.close(at: 0)
        #expect(b.describe() == "| b c*")
        #expect(!recorder.take().contains { $0.contains("active:") })
    }

    @Test func firstChildOfTheActiveTabWins() throws {
        let b = try ListBuilder("| a b* c d e")
        try b.list.setOpener(b["b"], at: b.index("e"))
        try b.list.setOpener(b["b"], at: b.index("d"))
        try b.list.close(at: 1)
        #expect(b.describe() == "| a c d* e")
    }

    @Test func childSearchWrapsAround() throws {
        let b = try ListBuilder("| a b c d*")
        try b.list.setOpener(b["d"], at: b.index("b"))
        try b.list.close(at: 3)
        #expect(b.describe() == "| a b* c")
    }

    @Test func childIgnoresTheNavigationIndex() throws {
        let b = try ListBuilder("|")
        let a = tabWithHistory(["https://a.example/"])
        try b.list.insert(a, .automatic().activating())
        try b.list.insert(b["x"], .automatic())
        try b.list.insert(b["c"], .automatic().withOpener(a))
        try a.navigate(to: "https://a.example/next", transition: .link)
        try b.list.close(at: 0)
        #expect(b.list.activeWebState === b["c"])
    }

    @Test func siblingWinsOverTheOpener() throws {
        let b = try ListBuilder("| o a b* c s")
        try b.list.setOpener(b["o"], at: b.index("b"))
        try b.list.setOpener(b["o"], at: b.index("s"))
        try b.list.close(at: b.index("b"))
        #expect(b.list.activeWebState === b["s"])
    }

    @Test func openerWhenThereIsNoSibling() throws {
        let b = try ListBuilder("| o a b* c")
        try b.list.setOpener(b["o"], at: b.index("b"))
        try b.list.close(at: b.index("b"))
        #expect(b.list.activeWebState === b["o"])
    }

    @Test func removedOpenerIsSkipped() throws {
        let b = try ListBuilder("| o a b* c")
        try b.list.setOpener(b["o"], at: b.index("b"))
        try b.list.close(atIndices: [0, 2])
        #expect(b.describe() == "| a c*")
    }

    @Test func sameGroupNearestRightThenLeft() throws {
        let right = try ListBuilder("| a [1 b c* d] e")
        try right.list.close(at: 2)
        #expect(right.describe() == "| a [1 b d*] e")
        let left = try ListBuilder("| a [1 b c d*] e")
        try left.list.close(at: 3)
        #expect(left.describe() == "| a [1 b c*] e")
    }

    @Test func groupRuleNeedsAllRemovedTabsInOneGroup() throws {
        let b = try ListBuilder("| a [1 b c* d] e")
        try b.list.close(atIndices: [2, 3, 4])
        #expect(b.describe() == "| a [1 b*]")
    }

    @Test func collapsedGroupsAreSkippedThenAllowed() throws {
        let b = try ListBuilder("| a b* [1 c d] e")
        try b.list.updateVisualData(of: b.groups["1"]!, to: TabGroupVisualData(title: "1", collapsed: true))
        try b.list.close(at: 1)
        #expect(b.describe() == "| a [1 c d] e*")
        let onlyCollapsed = try ListBuilder("| a* [1 c d]")
        try onlyCollapsed.list.updateVisualData(of: onlyCollapsed.groups["1"]!, to: TabGroupVisualData(collapsed: true))
        try onlyCollapsed.list.close(at: 0)
        #expect(onlyCollapsed.describe() == "| [1 c* d]")
    }

    @Test func nearestInTheSectionRightFirst() throws {
        let b = try ListBuilder("| a b* c")
        try b.list.close(at: 1)
        #expect(b.describe() == "| a c*")
        let last = try ListBuilder("| a b c*")
        try last.list.close(at: 2)
        #expect(last.describe() == "| a b*")
    }

    @Test func pinnedSectionIsPreferredForAPinnedActiveTab() throws {
        let b = try ListBuilder("a b* | c")
        try b.list.close(at: 1)
        #expect(b.describe() == "a* | c")
    }

    @Test func otherSectionLast() throws {
        let pinned = try ListBuilder("a* | b c")
        try pinned.list.close(at: 0)
        #expect(pinned.describe() == "| b* c")
        let regular = try ListBuilder("a b | c*")
        try regular.list.close(at: 2)
        #expect(regular.describe() == "a b* |")
    }
}
