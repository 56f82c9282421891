import Foundation
import TestSupport
import Testing

@testable import BrowserModel

/// Unrealized tabs (Chromium's `WebState::CreateWithStorage`): their metadata answers without reading
/// the history, the first need reads it once, and from then on they behave exactly as a tab that was
/// realized from the start (random operations on twins).
@Suite(.computing) struct UnrealizedWebStateTests {
    static func history(_ urls: [String], current: Int) throws -> NavigationHistory {
        try NavigationHistory(
            items: urls.enumerated().map { NavigationItem(url: $1, title: "T\($0)", transition: .link, timestamp: Date(timeIntervalSince1970: 1)) },
            currentIndex: current)
    }

    /// A realized tab and its unrealized twin (same id, page state and stored history), and how many
    /// times the twin's history was read.
    static func twins(_ stored: NavigationHistory) -> (WebState, WebState, reads: () -> Int) {
        let id = TabID.make()
        let date = Date(timeIntervalSince1970: 100)
        let realized = WebState(id: id, history: stored, title: "page", createdAt: date, lastActiveAt: date)
        final class Reads: @unchecked Sendable { var count = 0 }
        let reads = Reads()
        let metadata = HistoryMetadata(
            visibleURL: stored.currentItem?.url ?? "", currentIndex: stored.currentIndex, count: stored.count, byteCount: stored.byteCount)
        let unrealized = WebState(
            id: id, metadata: metadata,
            realizer: { _ in
                reads.count += 1
                return stored
            }, title: "page", isLoading: false, progress: 0, faviconURL: nil, createdAt: date, lastActiveAt: date)
        return (realized, unrealized, { reads.count })
    }

    @Test func metadataAnswersWithoutReadingTheHistory() throws {
        let (realized, unrealized, reads) = Self.twins(try Self.history(["https://a/", "https://b/", "https://c/"], current: 1))
        #expect(!unrealized.isRealized && realized.isRealized)
        #expect(unrealized.visibleURL == "https://b/" && unrealized.lastCommittedIndex == 1 && unrealized.historyCount == 3)
        #expect(unrealized.canGoBack && unrealized.canGoForward && unrealized.byteCount == realized.byteCount)
        #expect(reads() == 0)
        // A budget is charged the same for both.
        let budget = ByteBudget(limit: 1 << 20)
        unrealized.budget = budget
        #expect(budget.used == realized.byteCount)
        #expect(unrealized.history == realized.history && unrealized.isRealized && reads() == 1)
        _ = unrealized.history
        #expect(reads() == 1, "realized once")
        #expect(budget.used == realized.byteCount)
    }

    @Test func anUnreadableHistoryKeepsItsVisibleEntry() throws {
        let stored = try Self.history(["https://a/", "https://b/"], current: 1)
        let tab = WebState(
            id: .make(), metadata: HistoryMetadata(visibleURL: "https://b/", currentIndex: 1, count: 2, byteCount: stored.byteCount),
            realizer: { _ in nil }, title: "", isLoading: false, progress: 0, faviconURL: nil, createdAt: Date(), lastActiveAt: Date())
        #expect(tab.history.currentItem?.url == "https://b/")
    }

    @Test func twinsStayTheSameUnderRandomOperations() throws {
        var rng = SplitMix64(seed: 0x0123_2026)
        for round in 0..<200 {
            let count = Int.random(in: 1...8, using: &rng)
            let stored = try Self.history((0..<count).map { "https://r\(round).example/\($0)" }, current: Int.random(in: 0..<count, using: &rng))
            let (realized, unrealized, _) = Self.twins(stored)
            for step in 0..<Int.random(in: 1...12, using: &rng) {
                // A random mix: reads of metadata, navigations, page state, history moves, duplicates.
                switch Int.random(in: 0..<7, using: &rng) {
                case 0: for tab in [realized, unrealized] { tab.navigate(to: "https://n\(step).example/", transition: .typed, at: Date(timeIntervalSince1970: 2)) }
                case 1:
                    let offset = Int.random(in: -3...3, using: &rng)
                    #expect(realized.go(offset: offset) == unrealized.go(offset: offset))
                case 2: for tab in [realized, unrealized] { tab.updatePageState(title: "title \(step)", isLoading: false) }
                case 3: for tab in [realized, unrealized] { tab.reload() }
                case 4:
                    let index = Int.random(in: -1...count, using: &rng)
                    #expect(realized.go(toIndex: index) == unrealized.go(toIndex: index))
                case 5: #expect(realized.duplicate().history == unrealized.duplicate().history)
                default: break
                }
                #expect(realized.visibleURL == unrealized.visibleURL, "round \(round) step \(step)")
                #expect(realized.lastCommittedIndex == unrealized.lastCommittedIndex && realized.historyCount == unrealized.historyCount)
                #expect(realized.canGoBack == unrealized.canGoBack && realized.canGoForward == unrealized.canGoForward)
                #expect(realized.title == unrealized.title && realized.isLoading == unrealized.isLoading && realized.byteCount == unrealized.byteCount)
            }
            #expect(realized.history == unrealized.history)
        }
    }
}
