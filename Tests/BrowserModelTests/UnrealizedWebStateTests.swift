import Foundation
import TestSupport
import Testing

@testable import BrowserModel

/// Unrealized tabs (Chromium's `WebState::CreateWithStorage`): their metadata answers without the
/// history; an operation that needs it throws `historiesNotLoaded` before changing anything (the model
/// does no I/O and never makes a history up); once given the stored history they behave exactly as a
/// tab that was realized from the start (random operations on twins, realized as the service does).
@Suite(.computing) struct UnrealizedWebStateTests {
    static func history(_ urls: [String], current: Int) throws -> NavigationHistory {
        try NavigationHistory(
            items: urls.enumerated().map { NavigationItem(url: $1, title: "T\($0)", transition: .link, timestamp: Date(timeIntervalSince1970: 1)) },
            currentIndex: current)
    }

    static func unrealized(_ stored: NavigationHistory, id: TabID = .make(), title: String = "page") -> WebState {
        let date = Date(timeIntervalSince1970: 100)
        let metadata = HistoryMetadata(
            visibleURL: stored.currentItem?.url ?? "", currentIndex: stored.currentIndex, count: stored.count, byteCount: stored.byteCount)
        return WebState(
            id: id, metadata: metadata, title: title, isLoading: false, progress: 0, faviconURL: nil, createdAt: date, lastActiveAt: date)
    }

    /// A realized tab and its unrealized twin (same id, page state and stored history).
    static func twins(_ stored: NavigationHistory) -> (WebState, WebState) {
        let id = TabID.make()
        let date = Date(timeIntervalSince1970: 100)
        return (WebState(id: id, history: stored, title: "page", createdAt: date, lastActiveAt: date), unrealized(stored, id: id))
    }

    /// Runs `operation` as the service does: when it asks for the history, the stored one is given
    /// and it runs again. Returns its result and how many times it asked.
    static func asTheServiceDoes<T>(_ tab: WebState, stored: NavigationHistory, _ operation: () throws -> T) throws -> (T, asked: Int) {
        do {
            return (try operation(), 0)
        } catch ModelError.historiesNotLoaded(let ids) {
            #expect(ids == [tab.id])
            tab.realize(with: stored)
            return (try operation(), 1)
        }
    }

    @Test func metadataAnswersWithoutTheHistory() throws {
        let stored = try Self.history(["https://a/", "https://b/", "https://c/"], current: 1)
        let (realized, unrealized) = Self.twins(stored)
        #expect(!unrealized.isRealized && realized.isRealized && unrealized.metadata?.count == 3)
        #expect(unrealized.visibleURL == "https://b/" && unrealized.lastCommittedIndex == 1 && unrealized.historyCount == 3)
        #expect(unrealized.canGoBack && unrealized.canGoForward && unrealized.byteCount == realized.byteCount)
        #expect(throws: ModelError.historiesNotLoaded([unrealized.id])) { try unrealized.history }
        // A budget is charged the same for both, before and after.
        let budget = ByteBudget(limit: 1 << 20)
        unrealized.budget = budget
        #expect(budget.used == realized.byteCount)
        unrealized.realize(with: stored)
        #expect(try unrealized.history == realized.history && unrealized.isRealized && unrealized.metadata == nil)
        #expect(budget.used == realized.byteCount)
        unrealized.realize(with: try Self.history(["https://other/"], current: 0))
        #expect(try unrealized.history == realized.history, "realized once: a second history is ignored")
    }

    /// Every operation that needs the history refuses on an unrealized tab, and leaves it (and its
    /// window) exactly as it was; the ones that do not need it work.
    @Test func whatNeedsTheHistoryRefusesBeforeChangingAnything() throws {
        let stored = try Self.history(["https://a/", "https://b/"], current: 1)
        let tab = Self.unrealized(stored)
        let list = WebStateList()
        try list.insert(WebState(history: try Self.history(["https://other/"], current: 0)))
        try list.insert(tab, .automatic().activating())
        func state() -> String { "\(tab.visibleURL) \(tab.title) \(tab.lastCommittedIndex) \(tab.historyCount) \(tab.byteCount) \(tab.isLoading) \(list.count)" }
        let before = state()
        func unchanged() -> Bool { state() == before && !tab.isRealized }
        let refused = ModelError.historiesNotLoaded([tab.id])
        #expect(throws: refused) { try tab.navigate(to: "https://c/", transition: .typed) }
        #expect(unchanged())
        #expect(throws: refused) { try tab.go(offset: -1) }
        #expect(throws: refused) { try tab.go(toIndex: 0) }
        #expect(throws: refused) { try tab.updatePageState(title: "new", isLoading: true) }
        #expect(unchanged(), "a title goes into the history: the loading state did not change either")
        #expect(throws: refused) { try tab.duplicate() }
        #expect(throws: refused) { try list.close(at: 1, flags: .userAction) }
        #expect(throws: refused) { try list.close(atIndices: [0, 1]) }
        #expect(throws: refused) { try list.closeAll(flags: .userAction) }
        #expect(throws: refused) { try list.closeOthers(keeping: 0) }
        #expect(unchanged() && list.webState(at: 0)?.visibleURL == "https://other/")
        // What does not need the history works unrealized.
        #expect(try tab.updatePageState(isLoading: true, progress: 0.5) == [.loading, .progress])
        tab.reload()
        #expect(!tab.isRealized)
        // A cleanup close remembers nothing, so it needs nothing.
        #expect(try list.close(at: 1, flags: .tabsCleanup) === tab)
    }

    @Test func twinsStayTheSameUnderRandomOperations() throws {
        var rng = SplitMix64(seed: 0x0123_2026)
        for round in 0..<200 {
            let count = Int.random(in: 1...8, using: &rng)
            let stored = try Self.history((0..<count).map { "https://r\(round).example/\($0)" }, current: Int.random(in: 0..<count, using: &rng))
            let (realized, unrealized) = Self.twins(stored)
            var asked = 0
            for step in 0..<Int.random(in: 1...12, using: &rng) {
                // A random mix: reads of metadata, navigations, page state, history moves, duplicates.
                switch Int.random(in: 0..<7, using: &rng) {
                case 0:
                    let time = Date(timeIntervalSince1970: 2)
                    try realized.navigate(to: "https://n\(step).example/", transition: .typed, at: time)
                    asked += try Self.asTheServiceDoes(unrealized, stored: stored) {
                        try unrealized.navigate(to: "https://n\(step).example/", transition: .typed, at: time)
                    }.asked
                case 1:
                    let offset = Int.random(in: -3...3, using: &rng)
                    let (moved, n) = try Self.asTheServiceDoes(unrealized, stored: stored) { try unrealized.go(offset: offset) }
                    #expect(try realized.go(offset: offset) == moved)
                    asked += n
                case 2:
                    try realized.updatePageState(title: "title \(step)", isLoading: false)
                    asked += try Self.asTheServiceDoes(unrealized, stored: stored) {
                        try unrealized.updatePageState(title: "title \(step)", isLoading: false)
                    }.asked
                case 3: for tab in [realized, unrealized] { tab.reload() }
                case 4:
                    let index = Int.random(in: -1...count, using: &rng)
                    let (moved, n) = try Self.asTheServiceDoes(unrealized, stored: stored) { try unrealized.go(toIndex: index) }
                    #expect(try realized.go(toIndex: index) == moved)
                    asked += n
                case 5:
                    let (copy, n) = try Self.asTheServiceDoes(unrealized, stored: stored) { try unrealized.duplicate() }
                    #expect(try realized.duplicate().history == copy.history)
                    asked += n
                default: break
                }
                #expect(realized.visibleURL == unrealized.visibleURL, "round \(round) step \(step)")
                #expect(realized.lastCommittedIndex == unrealized.lastCommittedIndex && realized.historyCount == unrealized.historyCount)
                #expect(realized.canGoBack == unrealized.canGoBack && realized.canGoForward == unrealized.canGoForward)
                #expect(realized.title == unrealized.title && realized.isLoading == unrealized.isLoading && realized.byteCount == unrealized.byteCount)
            }
            #expect(asked <= 1, "asked for its history once at most")
            if unrealized.isRealized { #expect(try realized.history == unrealized.history) }
        }
    }
}
