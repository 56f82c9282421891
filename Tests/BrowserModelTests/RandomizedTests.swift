import TestSupport
import Testing

@testable import BrowserModel

/// ≥ 100,000 random operations over several windows of one profile; after each, every invariant holds,
/// and an operation that throws leaves every window as it was.
@Suite(.computing) struct RandomizedTests {
    private struct Snapshot: Equatable {
        var tabs: [TabID]
        var groups: [TabGroupID?]
        var active: Int
        var pinned: Int
    }

    private func snapshot(_ list: WebStateList) -> Snapshot {
        Snapshot(
            tabs: list.webStates.map(\.id), groups: (0..<list.count).map { list.group(at: $0)?.id },
            active: list.activeIndex, pinned: list.pinnedCount)
    }

    @Test func invariantsHoldUnderRandomOperations() throws {
        let seed: UInt64 = 0xB0D5_2026
        var rng = SplitMix64(seed: seed)
        let session = ProfileSession(browserState: BrowserState(name: "random"))
        try session.createOffTheRecord()
        var windows = [
            try session.createBrowser(), try session.createBrowser(), try session.createBrowser(),
            try session.createBrowser(incognito: true),
        ]
        var operations = 0
        var failures = 0
        let colors = TabGroupColor.allCases
        /// Close-alls still undoable, with each window's layout when it closed: undone into a window
        /// that stayed empty, it must come back exactly so (`TabsCloser::UndoCloseTabs`).
        var closings: [(id: ClosedTabID, layouts: [BrowserID: Snapshot])] = []
        var undone = 0

        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int.random(in: 0..<items.count, using: &rng)] }
        func anyIndex(_ list: WebStateList, slack: Int = 1) -> Int { Int.random(in: -1...(list.count + slack), using: &rng) }
        func someIndices(_ list: WebStateList) -> Set<Int> {
            Set((0..<Int.random(in: 1...3, using: &rng)).map { _ in Int.random(in: 0..<max(1, list.count), using: &rng) })
        }

        while operations < 100_000 {
            let window = windows[Int.random(in: 0..<windows.count, using: &rng)]
            let list = window.webStateList
            let before = windows.map { snapshot($0.webStateList) }
            let crowded = list.count > 40
            let choice = Int.random(in: 0..<(crowded ? 34 : 27), using: &rng)
            do {
                switch choice {
                case 0, 1, 2, 3:
                    var params = InsertionParams()
                    if Bool.random(using: &rng) { params.index = anyIndex(list) }
                    if Int.random(in: 0..<3, using: &rng) == 0 {
                        params.opener = pick(list.webStates)
                    } else if Int.random(in: 0..<6, using: &rng) == 0 {
                        params.inheritOpener = true
                    }
                    params.activate = Bool.random(using: &rng)
                    params.pinned = Int.random(in: 0..<5, using: &rng) == 0
                    if Int.random(in: 0..<4, using: &rng) == 0 { params.group = pick(list.groups) }
                    try list.insert(tabWithHistory(["https://r.example/\(operations)"]), params)
                case 4: try list.move(from: anyIndex(list), to: anyIndex(list))
                case 5: try list.close(at: anyIndex(list), flags: .userAction)
                case 6: try list.activate(at: anyIndex(list))
                case 7: try list.setPinned(Bool.random(using: &rng), at: anyIndex(list))
                case 8: try list.setOpener(pick(list.webStates), at: anyIndex(list))
                case 9: try list.createGroup(indices: someIndices(list))
                case 10:
                    if let group = pick(list.groups) { try list.moveToGroup(indices: someIndices(list), group: group) }
                case 11: try list.removeFromGroups(indices: someIndices(list))
                case 12:
                    if let group = pick(list.groups) { try list.moveGroup(group, before: anyIndex(list)) }
                case 13:
                    if let group = pick(list.groups) { try list.deleteGroup(group) }
                case 14:
                    if let group = pick(list.groups) {
                        try list.updateVisualData(
                            of: group,
                            to: TabGroupVisualData(
                                title: "g", color: pick(colors)!, collapsed: Bool.random(using: &rng)))
                    }
                case 15:
                    if let tab = pick(list.webStates), let target = pick(windows) {
                        try session.moveTab(
                            tab.id, to: target, index: Bool.random(using: &rng) ? anyIndex(target.webStateList) : nil,
                            activate: Bool.random(using: &rng))
                    }
                case 16: try list.replace(at: anyIndex(list), with: tabWithHistory(["https://replaced.example/"]))
                case 17:
                    let indices = someIndices(list)
                    let expected =
                        indices.allSatisfy(list.containsIndex)
                        ? list.newActiveIndex(removing: indices).map { list.webState(at: $0)! } : nil
                    try list.close(atIndices: indices, flags: .userAction)
                    #expect(list.activeWebState === expected, "seed \(seed) op \(operations): wrong tab activated")
                case 18:
                    if let tab = pick(list.webStates) {
                        if Bool.random(using: &rng) {
                            try tab.navigate(to: "https://n.example/\(operations)", transition: .link)
                        } else {
                            try tab.go(offset: Int.random(in: -2...2, using: &rng))
                        }
                    }
                case 19: try list.closeOthers(keeping: anyIndex(list))
                case 20:
                    if let entry = pick(session.recentlyClosed.entries) {
                        // A tab whose window is gone comes back in a new window (Chromium's tab restore).
                        let (target, _, _) = try session.restoreClosedTab(entry.id)
                        if !windows.contains(where: { $0 === target }) { windows.append(target) }
                    }
                case 21:
                    if Int.random(in: 0..<200, using: &rng) == 0 {
                        try session.closeBrowser(window)
                        windows.removeAll { $0 === window }
                        windows.append(try session.createBrowser(incognito: window.isIncognito))
                    }
                case 22:
                    if let group = pick(list.groups) { try session.closeGroup(group, in: window) }
                case 23:
                    let layouts = [window.id: snapshot(list)]
                    let closing = try session.closeTabs(in: [window], policy: Bool.random(using: &rng) ? .allTabs : .regularTabs)
                    closings.append((closing.id, layouts))
                case 24:
                    if let index = closings.indices.randomElement(using: &rng) {
                        let (id, layouts) = closings.remove(at: index)
                        let empty = Set(windows.filter(\.webStateList.isEmpty).map(\.id))
                        for (target, tabs) in try session.undoClosing(id) {
                            if !windows.contains(where: { $0 === target }) { windows.append(target) }
                            if empty.contains(target.id), let layout = layouts[target.id], layout.pinned == 0 || tabs.count == layout.tabs.count {
                                #expect(snapshot(target.webStateList) == layout, "seed \(seed) op \(operations): undo did not restore the window")
                                undone += 1
                            }
                        }
                    }
                case 25:
                    if let index = closings.indices.randomElement(using: &rng) { session.confirmClosing(closings.remove(at: index).id) }
                case 26:
                    if let tab = pick(list.webStates), let target = pick(windows), let group = pick(target.webStateList.groups) {
                        try session.moveTab(
                            tab.id, to: target, index: Bool.random(using: &rng) ? anyIndex(target.webStateList) : nil,
                            group: group)
                    }
                default:
                    try list.closeAllNonPinned(flags: .userAction)
                }
            } catch let error as ModelError {
                failures += 1
                let after = windows.map { snapshot($0.webStateList) }
                #expect(after == before, "seed \(seed) op \(operations) threw \(error) but changed the model")
            }
            operations += 1
            // An index lookup of a random tab (before the invariants number every entry) finds it.
            if let tab = pick(list.webStates) {
                let expected = list.webStates.firstIndex { $0 === tab }
                if list.index(ofTabWithID: tab.id) != expected || list.index(of: tab) != expected {
                    Issue.record("seed \(seed) op \(operations) choice \(choice): tab \(tab.id) is at \(expected ?? -1), lookup says \(list.index(of: tab))")
                    return
                }
            }
            for w in windows {
                let problems = w.webStateList.invariantViolations()
                if !problems.isEmpty {
                    Issue.record("seed \(seed) op \(operations) choice \(choice): \(problems)")
                    return
                }
            }
            let located = windows.reduce(0) { $0 + $1.webStateList.count }
            if located != session.tabCount {
                Issue.record("seed \(seed) op \(operations): \(session.tabCount) tabs indexed, \(located) in windows")
                return
            }
        }
        #expect(operations == 100_000)
        #expect(undone > 100, "undo was checked against the layout it closed \(undone) times")
        #expect(failures > 0 && failures < operations)
    }
}
