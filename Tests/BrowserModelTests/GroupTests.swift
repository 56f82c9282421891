import TestSupport
import Testing

@testable import BrowserModel

/// Spec §3: groups and pinned tabs.
@Suite(.computing) struct GroupTests {
    @Test func defaultColourIsTheFirstUnusedThenTheLeastUsed() {
        #expect(TabGroupColor.next(after: []) == .grey)
        #expect(TabGroupColor.next(after: [.grey, .red]) == .blue)
        let all = TabGroupColor.allCases
        #expect(TabGroupColor.next(after: all) == .grey)
        #expect(TabGroupColor.next(after: all + [.grey, .blue]) == .red)
    }

    @Test func newGroupsGetTheDefaultColour() throws {
        let b = try ListBuilder("| a b c")
        let first = try b.list.createGroup(indices: [0])
        let second = try b.list.createGroup(indices: [1])
        #expect(first.visualData.color == .grey)
        #expect(second.visualData.color == .blue)
        #expect(first.displayTitle == "1 tab")
    }

    @Test func createGroupAtTheFirstIndexNotifiesCreateThenMembers() throws {
        let b = try ListBuilder("| a b c d")
        let recorder = ChangeRecorder(b)
        let group = try b.list.createGroup(indices: [1, 3], visualData: TabGroupVisualData(title: "g"))
        b.name(group, "g")
        #expect(b.describe() == "| a [g b d] c")
        #expect(recorder.take() == ["groupCreate(g)", "status(b,1,-->g)", "move(d,3->2,-->g)"])
        #expect(group.range == TabGroupRange(start: 1, count: 2))
    }

    @Test func createGroupFromPinnedTabsUnpinsThemAfterThePinnedSection() throws {
        let b = try ListBuilder("a b* | c")
        let group = try b.list.createGroup(indices: [0, 1])
        b.name(group, "g")
        #expect(b.describe() == "| [g a b*] c")
        #expect(b.list.pinnedCount == 0)
        #expect(b.list.activeWebState === b["b"])
    }

    @Test func createGroupFromTheMiddleOfAGroupPivotsAfterThatGroup() throws {
        let b = try ListBuilder("| [1 a b c] d")
        let recorder = ChangeRecorder(b)
        try b.list.createGroup(indices: [1, 3], visualData: TabGroupVisualData(title: "g"))
        #expect(b.describe() == "| [1 a c] [g b d]")
        #expect(recorder.take() == ["groupCreate(g)", "move(b,1->2,1->g)", "status(d,3,-->g)"])
        #expect(b.list.invariantViolations().isEmpty)
    }

    @Test func createGroupStealsAWholeGroupAndDeletesIt() throws {
        let b = try ListBuilder("| a [1 b] c")
        let recorder = ChangeRecorder(b)
        try b.list.createGroup(indices: [0, 1], visualData: TabGroupVisualData(title: "g"))
        #expect(b.describe() == "| [g a b] c")
        #expect(recorder.take() == ["groupCreate(g)", "status(a,0,-->g)", "status(b,1,1->g)", "groupDelete(1)"])
    }

    @Test func createGroupErrors() throws {
        let b = try ListBuilder("| a [1 b]")
        #expect(throws: ModelError.self) { try b.list.createGroup(indices: []) }
        #expect(throws: ModelError.self) { try b.list.createGroup(indices: [5]) }
        #expect(throws: ModelError.groupAlreadyExists(b.groups["1"]!.id)) { try b.list.createGroup(indices: [0], id: b.groups["1"]!.id) }
    }

    @Test func moveToGroupAppendsLeftTabsThenRightTabs() throws {
        let b = try ListBuilder("| a b [1 c d] e f")
        let recorder = ChangeRecorder(b)
        try b.list.moveToGroup(indices: [0, 2, 5], group: b.groups["1"]!)
        #expect(b.describe() == "| b [1 c d a f] e")
        #expect(recorder.take() == ["move(a,0->3,-->1)", "move(f,5->4,-->1)"])
    }

    @Test func moveToGroupUnpinsPinnedTabs() throws {
        let b = try ListBuilder("p | a [1 b]")
        let recorder = ChangeRecorder(b)
        try b.list.moveToGroup(indices: [0], group: b.groups["1"]!)
        #expect(b.describe() == "| a [1 b p]")
        #expect(recorder.take() == ["move(p,0->2,pinned,-->1)"])
    }

    @Test func removeFromGroupsPutsTabsJustAfterTheGroupInOrder() throws {
        let b = try ListBuilder("p | [1 a b c] d")
        let recorder = ChangeRecorder(b)
        try b.list.removeFromGroups(indices: [0, 1, 2, 4])
        #expect(b.describe() == "p | [1 c] a b d")
        #expect(recorder.take() == ["move(b,2->3,1->-)", "move(a,1->2,1->-)"])
    }

    @Test func removeLastMembersDeletesTheGroup() throws {
        let b = try ListBuilder("| [1 a b]")
        let recorder = ChangeRecorder(b)
        try b.list.removeFromGroups(indices: [0, 1])
        #expect(b.describe() == "| a b")
        #expect(recorder.take() == ["status(b,1,1->-)", "status(a,0,1->-)", "groupDelete(1)"])
    }

    @Test func moveGroupRightSubtractsItsSize() throws {
        let b = try ListBuilder("| [1 a b*] c d")
        let recorder = ChangeRecorder(b)
        try b.list.moveGroup(b.groups["1"]!, before: 4)
        #expect(b.describe() == "| c d [1 a b*]")
        #expect(recorder.take() == ["groupMove(1,[0, 2)->[2, 4))"])
        #expect(b.list.activeIndex == 3)
    }

    @Test func moveGroupLeftIsClampedAfterThePinnedTabs() throws {
        let b = try ListBuilder("p | a [1 b c]")
        try b.list.moveGroup(b.groups["1"]!, before: 0)
        #expect(b.describe() == "p | [1 b c] a")
    }

    @Test func moveGroupSnapsToTheStartOfAnotherGroup() throws {
        let b = try ListBuilder("| [1 a] [2 b c] d")
        try b.list.moveGroup(b.groups["1"]!, before: 2)
        // Pointing into group 2 snaps to its start, which is where group 1 already ends: no move.
        #expect(b.describe() == "| [1 a] [2 b c] d")
        try b.list.moveGroup(b.groups["1"]!, before: 3)
        #expect(b.describe() == "| [2 b c] [1 a] d")
        try b.list.moveGroup(b.groups["1"]!, before: 1)
        #expect(b.describe() == "| [1 a] [2 b c] d")
    }

    @Test func moveGroupIntoItselfOrToItsPlaceIsANoOp() throws {
        let b = try ListBuilder("| a [1 b c] d")
        let recorder = ChangeRecorder(b)
        try b.list.moveGroup(b.groups["1"]!, before: 2)
        try b.list.moveGroup(b.groups["1"]!, before: 1)
        try b.list.moveGroup(b.groups["1"]!, before: 3)
        #expect(recorder.take().isEmpty)
        #expect(throws: ModelError.self) { try b.list.moveGroup(b.groups["1"]!, before: 5) }
    }

    @Test func deleteGroupKeepsTheTabsInPlace() throws {
        let b = try ListBuilder("| a [1 b c] d")
        let recorder = ChangeRecorder(b)
        try b.list.deleteGroup(b.groups["1"]!)
        #expect(b.describe() == "| a b c d")
        #expect(recorder.take() == ["status(b,1,1->-)", "status(c,2,1->-)", "groupDelete(1)"])
        #expect(throws: ModelError.self) { try b.list.deleteGroup(b.groups["1"]!) }
    }

    @Test func visualDataUpdateIgnoresIdenticalDataButCountsCollapsed() throws {
        let b = try ListBuilder("| [1 a]")
        let group = b.groups["1"]!
        let recorder = ChangeRecorder(b)
        #expect(try !b.list.updateVisualData(of: group, to: group.visualData))
        var data = group.visualData
        data.collapsed = true
        #expect(try b.list.updateVisualData(of: group, to: data))
        data.color = .cyan
        data.title = "Work"
        #expect(try b.list.updateVisualData(of: group, to: data))
        #expect(recorder.take() == ["groupVisual(1,old:1/grey/false)", "groupVisual(1,old:1/grey/true)"])
        #expect(group.displayTitle == "Work")
    }

    @Test func pinnedTabsAreNeverGroupedAndGroupsStayInTheRegularSection() throws {
        let b = try ListBuilder("p q | [1 a b] c")
        try b.list.setPinned(true, at: 2)
        #expect(b.describe() == "p q a | [1 b] c")
        #expect(b.list.invariantViolations().isEmpty)
    }
}
