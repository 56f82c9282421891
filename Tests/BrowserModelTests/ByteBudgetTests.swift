import Foundation
import TestSupport
import Testing

@testable import BrowserModel

/// The profile's byte budget (hostile tenants, finding 5): every byte of history text a profile
/// holds is counted as it changes, growth past the limit is refused, and what leaves gives room back.
@Suite(.computing) struct ByteBudgetTests {
    private let limit = 10_000

    private func session() -> ProfileSession {
        ProfileSession(
            browserState: BrowserState(name: "Work", budget: ByteBudget(limit: limit)),
            limits: ModelLimits(profileBytes: limit))
    }

    /// The bytes counted from scratch, to compare with the incremental count.
    private func recount(_ s: ProfileSession) -> Int {
        let tabs = s.browserList.browsers().flatMap { browser in
            (0..<browser.webStateList.count).compactMap { browser.webStateList.webState(at: $0) }
        }
        // Every tab of these sessions was made in this run: realized.
        let histories = tabs.map { try! $0.history.items.reduce(0) { $0 + $1.url.utf8.count + $1.title.utf8.count } + ($0.faviconURL?.utf8.count ?? 0) }
        let closed = s.recentlyClosed.entries.flatMap(\.tabs).map {
            $0.history.items.reduce(0) { $0 + $1.url.utf8.count + $1.title.utf8.count } + ($0.faviconURL?.utf8.count ?? 0)
        }
        return histories.reduce(0, +) + closed.reduce(0, +)
    }

    /// A tab's page picture counts in the budget (its bytes, replaced or removed as the picture is):
    /// a larger one past the limit is refused with nothing changed, the same picture again changes
    /// nothing (no notification), and the tab's leaving gives its picture's bytes back.
    @Test func picturesAreCountedAndBounded() throws {
        let s = session()
        let browser = try s.createBrowser()
        let tab = WebState()
        try tab.navigate(to: "https://a.example/", transition: .typed)
        try browser.webStateList.insert(tab)
        final class Spy: WebStateObserver {
            var changes: [WebStateChange] = []
            func webStateDidChange(_ webState: WebState, change: WebStateChange) { changes.append(change) }
        }
        let spy = Spy()
        tab.addObserver(spy)
        let text = s.browserState.budget.used
        func picture(_ tag: String, _ size: Int) -> PageSnapshot {
            PageSnapshot(etag: tag, mediaType: "image/jpeg", byteCount: size, capturedAt: Date(timeIntervalSince1970: 0), bytes: [UInt8](repeating: 1, count: size))
        }
        #expect(try tab.setSnapshot(picture("a", 4_000)))
        #expect(s.browserState.budget.used == text + 4_000 && spy.changes == [.snapshot])
        #expect(try !tab.setSnapshot(PageSnapshot(etag: "a", mediaType: "image/jpeg", byteCount: 4_000, capturedAt: Date())))
        #expect(spy.changes == [.snapshot] && tab.snapshot?.capturedAt == Date(timeIntervalSince1970: 0))
        #expect(throws: ModelError.self) { try tab.setSnapshot(picture("b", limit)) }
        #expect(tab.snapshot?.etag == "a" && s.browserState.budget.used == text + 4_000 && spy.changes == [.snapshot])
        #expect(try tab.setSnapshot(picture("c", 1_000)))
        #expect(s.browserState.budget.used == text + 1_000)
        try browser.webStateList.close(at: 0, flags: .userAction)
        #expect(s.browserState.budget.used == recount(s))
        #expect(try tab.setSnapshot(picture("d", 10)) && spy.changes == [.snapshot, .snapshot, .snapshot])
    }

    @Test func everyChangeIsCountedIncrementally() throws {
        let s = session()
        let browser = try s.createBrowser()
        let tab = WebState()
        try tab.navigate(to: "https://a.example/", transition: .typed)
        try browser.webStateList.insert(tab)
        #expect(s.browserState.budget.used == recount(s))
        try tab.navigate(to: "https://b.example/long/path", transition: .link)
        try tab.updatePageState(title: "A title with ü")
        #expect(s.browserState.budget.used == recount(s))
        try tab.go(offset: -1)
        try tab.navigate(to: "https://c.example/", transition: .link)  // drops the forward entry
        #expect(s.browserState.budget.used == recount(s))
        try browser.webStateList.close(at: 0, flags: .userAction)  // into recently closed
        #expect(s.recentlyClosed.entries.count == 1)
        #expect(s.browserState.budget.used == recount(s))
        #expect(s.browserState.budget.used > 0)
        s.recentlyClosed.removeAll()
        #expect(s.browserState.budget.used == 0)
    }

    @Test func growthPastTheLimitIsRefusedAndLeavingGivesRoomBack() throws {
        let s = session()
        let browser = try s.createBrowser()
        let budget = s.browserState.budget
        let tab = WebState()
        try browser.webStateList.insert(tab)
        let url = "https://a.example/" + String(repeating: "x", count: 1_000)
        var added = 0
        while (try? budget.check(adding: url.utf8.count + 2)) != nil {
            try tab.navigate(to: url + "\(added)", transition: .link)
            added += 1
        }
        #expect(added == 9)
        #expect(throws: ModelError.self) { try budget.check(adding: url.utf8.count) }
        #expect(budget.used <= limit)
        _ = try browser.webStateList.detach(at: 0)
        #expect(budget.used == 0)
        try budget.check(adding: url.utf8.count)
    }

    /// Favicon URLs count (finding 5): set, replaced, cleared and dropped by a navigation, each
    /// change is charged; a closed tab's entry keeps its favicon's bytes counted.
    @Test func faviconURLsAreCounted() throws {
        let s = session()
        let browser = try s.createBrowser()
        let tab = WebState()
        try tab.navigate(to: "https://a.example/", transition: .typed)
        try browser.webStateList.insert(tab)
        let base = s.browserState.budget.used
        let icon = "data:image/png;base64," + String(repeating: "A", count: 978)
        try tab.updatePageState(faviconURL: .some(icon))
        #expect(s.browserState.budget.used == base + 1_000 && s.browserState.budget.used == recount(s))
        try tab.updatePageState(faviconURL: .some("https://a.example/f.ico"))
        #expect(s.browserState.budget.used == base + 23)
        try tab.updatePageState(faviconURL: .some(nil))
        #expect(s.browserState.budget.used == base)
        try tab.updatePageState(faviconURL: .some(icon))
        try tab.navigate(to: "https://b.example/", transition: .link)  // the favicon goes with the page
        #expect(tab.faviconURL == nil && s.browserState.budget.used == recount(s))
        try tab.updatePageState(faviconURL: .some(icon))
        try tab.navigate(replacingCurrentWith: "https://c.example/", transition: .link)
        #expect(tab.faviconURL == nil && s.browserState.budget.used == recount(s))
        try tab.updatePageState(faviconURL: .some(icon))
        try browser.webStateList.close(at: 0, flags: .userAction)
        #expect(s.recentlyClosed.entries.first?.byteCount ?? 0 > 1_000 && s.browserState.budget.used == recount(s))
    }

    /// A close-all's tabs stay charged while it can be undone (finding 6): histories, pictures and
    /// favicons, incognito ones too; undoing changes nothing; confirming gives back all but what the
    /// recently-closed entries keep.
    @Test func parkedTabsStayChargedUntilConfirmed() throws {
        let s = session()
        _ = try s.createOffTheRecord()
        let regular = try s.createBrowser()
        let incognito = try s.createBrowser(incognito: true)
        for (index, browser) in [regular, regular, incognito].enumerated() {
            let tab = WebState()
            try tab.navigate(to: "https://\(index).example/", transition: .typed)
            try browser.webStateList.insert(tab)
            try tab.updatePageState(faviconURL: .some("https://\(index).example/favicon.ico"))
            try tab.setSnapshot(
                PageSnapshot(etag: "p\(index)", mediaType: "image/png", byteCount: 2_000, capturedAt: Date(), bytes: [UInt8](repeating: 0, count: 2_000)))
        }
        let budget = s.browserState.budget
        let held = budget.used
        #expect(held > 6_000)
        let closing = try s.closeTabs(in: [regular], policy: .allTabs)
        let closingIncognito = try s.closeTabs(in: [incognito], policy: .allTabs)
        #expect(regular.webStateList.count == 0 && incognito.webStateList.count == 0)
        #expect(budget.used == held, "parked tabs keep their charge")
        #expect(throws: ModelError.self) { try budget.check(adding: limit - held + 1) }
        try s.undoClosing(closing.id)
        try s.undoClosing(closingIncognito.id)
        #expect(regular.webStateList.count == 2 && budget.used == held)
        let again = try s.closeTabs(in: [regular, incognito], policy: .allTabs)
        #expect(budget.used == held)
        s.confirmClosing(again.id)
        #expect(budget.used == recount(s) && budget.used < 1_000, "the entries' histories and favicons only")
        // Forgotten (what is stored is reloaded): given back too.
        let tab = WebState()
        try tab.navigate(to: "https://forgotten.example/", transition: .typed)
        try regular.webStateList.insert(tab)
        try s.closeTabs(in: [regular], policy: .allTabs)
        #expect(budget.used > recount(s))
        s.forgetClosings()
        #expect(budget.used == recount(s))
    }

    @Test func theOffTheRecordProfileSharesItsProfilesBudget() throws {
        let s = session()
        let (otr, _) = try s.createOffTheRecord()
        #expect(otr.budget === s.browserState.budget)
        let incognito = try s.createBrowser(incognito: true)
        let tab = WebState()
        try tab.navigate(to: "https://secret.example/", transition: .typed)
        try incognito.webStateList.insert(tab)
        #expect(s.browserState.budget.used == "https://secret.example/".utf8.count)
    }
}

/// A saved session's window of one tab is bounded in bytes too, so saving one change never writes
/// more than `maxSessionBytes`, however long the tab's URLs (the one writer is everyone's).
@Suite(.computing) struct SessionWindowBytesTests {
    @Test func theWindowKeepsTheCurrentItemAndTheNearestWithinTheCap() throws {
        let tab = WebState()
        for index in 0..<10 { try tab.navigate(to: "https://a.example/" + String(repeating: "\(index)", count: 300), transition: .link) }
        try tab.go(offset: -5)  // current: item 4
        let (items, current) = try tab.history.sessionWindow(maxBytes: 1_000)
        #expect(items.count == 3)
        #expect(try items[items.startIndex + current].url == tab.history.currentItem?.url)
        #expect(items.map { $0.url.utf8.count + $0.title.utf8.count }.reduce(0, +) <= 1_000)
        let (one, index) = try tab.history.sessionWindow(maxBytes: 10)
        #expect(try one.count == 1 && index == 0 && one.first?.url == tab.history.currentItem?.url)
        let (all, _) = try tab.history.sessionWindow()
        #expect(all.count == 10)
    }
}
