import TestSupport
import Testing

@testable import BrowserModel

/// Spec §1 InsertWebState and §2 insertion index.
@Suite(.computing) struct InsertTests {
    @Test func automaticInsertAppendsToTheRegularSection() throws {
        let b = try ListBuilder("a | b c*")
        let recorder = ChangeRecorder(b)
        #expect(try b.list.insert(b["x"]) == 3)
        #expect(b.describe() == "a | b c* x")
        #expect(recorder.take() == ["insert(x,3)"])
    }

    @Test func explicitIndexInsideTheAllowedRangeIsUsed() throws {
        let b = try ListBuilder("a | b c*")
        #expect(try b.list.insert(b["x"], .atIndex(1)) == 1)
        #expect(b.describe() == "a | x b c*")
    }

    @Test func regularIndexInThePinnedSectionGoesToTheRangeEnd() throws {
        let b = try ListBuilder("a b | c")
        #expect(try b.list.insert(b["x"], .atIndex(0)) == 3)
        #expect(b.describe() == "a b | c x")
    }

    @Test func pinnedInsertGoesToTheEndOfThePinnedSection() throws {
        let b = try ListBuilder("a b | c")
        #expect(try b.list.insert(b["x"], .automatic().pinned()) == 2)
        #expect(try b.list.insert(b["y"], .atIndex(1).pinned()) == 1)
        #expect(try b.list.insert(b["z"], .atIndex(5).pinned()) == 4)
        #expect(b.describe() == "a y b x z | c")
        #expect(b.list.pinnedCount == 5)
    }

    @Test func insertingBeforeTheActiveTabShiftsTheActiveIndex() throws {
        let b = try ListBuilder("| a b*")
        try b.list.insert(b["x"], .atIndex(0))
        #expect(b.list.activeIndex == 2)
        #expect(b.describe() == "| x a b*")
    }

    @Test func activateOnInsertIsReportedThroughTheInsertStatusOnly() throws {
        let b = try ListBuilder("| a* b")
        let recorder = ChangeRecorder(b)
        try b.list.insert(b["x"], .automatic().activating())
        #expect(recorder.take() == ["insert(x,2) active:a->x"])
        #expect(b.describe() == "| a b x*")
    }

    @Test func openerPlacesAfterItsLastChild() throws {
        let b = try ListBuilder("| a* b c")
        try b.list.insert(b["x"], .automatic().withOpener(b["a"]))
        #expect(b.describe() == "| a* x b c")
        try b.list.insert(b["y"], .automatic().withOpener(b["a"]))
        #expect(b.describe() == "| a* x y b c")
        #expect(b.list.opener(at: 2)?.webState === b["a"])
    }

    @Test func lastChildIsFoundCircularlyFromTheOpener() throws {
        // A child of c sits before c: scanning from c+1 wraps to it, and it is the last match.
        let b = try ListBuilder("| a b c* d")
        try b.list.setOpener(b["c"], at: 0)
        try b.list.insert(b["x"], .automatic().withOpener(b["c"]))
        #expect(b.describe() == "| a x b c* d")
    }

    @Test func childOpenedBeforeTheOpenerNavigatedIsNotASibling() throws {
        let b = try ListBuilder("|")
        let a = b["a"]
        try a.navigate(to: "https://one.example/", transition: .typed)
        try b.list.insert(a, .automatic().activating())
        try b.list.insert(b["c"], .automatic())
        try b.list.insert(b["x"], .automatic().withOpener(a))
        #expect(b.describe() == "| a* x c")
        try a.navigate(to: "https://two.example/", transition: .link)
        try b.list.insert(b["y"], .automatic().withOpener(a))
        // x was opened at a's navigation index 0; a is now at 1, so y goes right after a.
        #expect(b.describe() == "| a* y x c")
    }

    @Test func inheritOpenerClearsEveryOpenerAndUsesTheActiveTab() throws {
        let b = try ListBuilder("| a b* c")
        try b.list.setOpener(b["a"], at: 2)
        let recorder = ChangeRecorder(b)
        try b.list.insert(b["x"], .automatic().inheritingOpener())
        #expect(b.list.opener(at: b.index("c")) == nil)
        // Only c had an opener to lose: it alone is told, after the insert.
        #expect(recorder.take() == ["insert(x,2)", "opener(c,3)"])
        #expect(b.list.opener(at: b.index("x"))?.webState === b["b"])
        #expect(b.describe() == "| a b* x c")
    }

    @Test func inheritedOpenerSurvivesAnActivationChange() throws {
        // Storing the opener clears the reset flag the inherit-opener insert set (spec §5).
        let b = try ListBuilder("| a* b")
        try b.list.insert(b["x"], .automatic().inheritingOpener().activating())
        try b.list.activate(at: b.index("b"))
        #expect(b.list.opener(at: b.index("x"))?.webState === b["a"])
    }

    @Test func inheritOpenerWithoutActiveTabHasNoOpener() throws {
        let b = try ListBuilder("| a b")
        try b.list.insert(b["x"], .automatic().inheritingOpener())
        #expect(b.list.opener(at: 2) == nil)
        #expect(b.describe() == "| a b x")
    }

    @Test func requestedGroupPlacesInsideTheGroup() throws {
        let b = try ListBuilder("| a [1 b c] d")
        let recorder = ChangeRecorder(b)
        #expect(try b.list.insert(b["x"], .automatic().inGroup(b.groups["1"])) == 3)
        #expect(b.describe() == "| a [1 b c x] d")
        #expect(recorder.take() == ["insert(x,3,1)"])
        #expect(try b.list.insert(b["y"], .atIndex(0).inGroup(b.groups["1"])) == 4)
        #expect(b.describe() == "| a [1 b c x y] d")
        #expect(b.groups["1"]!.range == TabGroupRange(start: 1, count: 4))
    }

    @Test func openersGroupIsInheritedAndOverridesPinned() throws {
        let b = try ListBuilder("| a [1 b* c] d")
        try b.list.insert(b["x"], .automatic().withOpener(b["b"]).pinned())
        #expect(b.describe() == "| a [1 b* x c] d")
        #expect(b.list.pinnedCount == 0)
    }

    @Test func insertingBetweenTwoTabsOfAGroupJoinsIt() throws {
        let b = try ListBuilder("| a [1 b c] d")
        #expect(try b.list.insert(b["x"], .atIndex(2)) == 2)
        #expect(b.describe() == "| a [1 b x c] d")
        #expect(b.list.group(at: 2) === b.groups["1"])
    }

    @Test func insertingAtAGroupEdgeDoesNotJoin() throws {
        let b = try ListBuilder("| a [1 b c] d")
        try b.list.insert(b["x"], .atIndex(1))
        try b.list.insert(b["y"], .atIndex(4))
        #expect(b.describe() == "| a x [1 b c] y d")
    }

    @Test func preconditionsAreReportedAndNothingChanges() throws {
        let b = try ListBuilder("| a [1 b]")
        let other = try ListBuilder("| z [2 y]")
        let recorder = ChangeRecorder(b)
        #expect(throws: ModelError.groupInvariant("a tab cannot be inserted both pinned and in a group")) {
            try b.list.insert(b["x"], .automatic().pinned().inGroup(b.groups["1"]))
        }
        #expect(throws: ModelError.groupNotFound(other.groups["2"]!.id)) {
            try b.list.insert(b["x"], .automatic().inGroup(other.groups["2"]))
        }
        #expect(throws: ModelError.openerNotInList(other["z"].id)) {
            try b.list.insert(b["x"], .automatic().withOpener(other["z"]))
        }
        #expect(throws: ModelError.indexOutOfRange(index: 3, validRange: 0...2)) { try b.list.insert(b["x"], .atIndex(3)) }
        #expect(throws: ModelError.indexOutOfRange(index: -1, validRange: 0...2)) { try b.list.insert(b["x"], .atIndex(-1)) }
        #expect(throws: ModelError.tabAlreadyInList(b["a"].id)) { try b.list.insert(b["a"]) }
        #expect(recorder.take().isEmpty)
        #expect(b.describe() == "| a [1 b]")
    }

    @Test func fullListRefusesInserts() throws {
        let b = try ListBuilder("| a b", maxCount: 2)
        #expect(throws: ModelError.limitReached(what: "tabs per window", limit: 2)) { try b.list.insert(b["x"]) }
    }
}
