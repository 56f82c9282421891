import Foundation
import TestSupport
import Testing

@testable import BrowserModel

/// Spec §6: the navigation model.
@Suite(.computing) struct NavigationTests {
    private func item(_ url: String, _ transition: PageTransition = .link) -> NavigationItem {
        NavigationItem(url: url, transition: transition, timestamp: Date(timeIntervalSince1970: 0))
    }

    @Test func newNavigationPrunesForwardEntries() {
        var history = NavigationHistory()
        for url in ["a", "b", "c"] { history.commit(item("https://\(url).example/")) }
        history.goBack()
        history.goBack()
        #expect(history.currentIndex == 0)
        do {
            let changed = history.commit(item("https://d.example/"))
            #expect(changed)
        }
        #expect(history.items.map(\.url) == ["https://a.example/", "https://d.example/"])
        #expect(history.currentIndex == 1)
        #expect(!history.canGoForward)
    }

    @Test func sameURLAddsNoEntryUnlessAFormSubmission() {
        var history = NavigationHistory()
        history.commit(item("https://a.example/"))
        do {
            let changed = history.commit(item("https://a.example/", .typed))
            #expect(!changed)
        }
        #expect(history.count == 1)
        do {
            let changed = history.commit(item("https://a.example/", .formSubmit))
            #expect(changed)
        }
        do {
            let changed = history.commit(item("https://a.example/", .formSubmit))
            #expect(!changed)
        }
        #expect(history.count == 2)
    }

    /// A page's own push within its document (`history.pushState`) is added even to the current URL, as
    /// Chromium's `NavigationControllerImpl` adds a same-document entry that does not replace; the
    /// document stays: its title with the new entry, and no load starts.
    @Test func aPushWithinTheDocumentAddsAnEntryEvenToItsOwnURL() throws {
        var history = NavigationHistory()
        history.commit(item("https://a.example/"))
        let added = history.commit(item("https://a.example/"), sameDocument: true)
        #expect(added)
        #expect(history.count == 2 && history.currentIndex == 1)
        let tab = WebState(history: history, title: "A")
        try tab.updatePageState(isLoading: false)
        try tab.navigate(pushingWithinDocument: "https://a.example/", transition: .link)
        #expect(tab.historyCount == 3 && tab.lastCommittedIndex == 2 && tab.title == "A" && !tab.isLoading)
        #expect(try tab.history.currentItem?.title == "A")
        try tab.navigate(to: "https://a.example/", transition: .link)
        #expect(tab.historyCount == 3, "a navigation to the same URL otherwise adds none")
    }

    /// Chromium's `should_replace_current_entry` (a redirect's final URL, `location.replace`,
    /// `replaceState`): the entry at the index changes; the index, the count and the forward entries stay.
    @Test func replacingTheCurrentEntryKeepsTheIndexAndTheForwardEntries() {
        var history = NavigationHistory()
        for url in ["a", "b", "c"] { history.commit(item("https://\(url).example/")) }
        history.goBack()
        history.setCurrentTitle("B")
        let bytes = history.byteCount
        history.replaceCurrent(with: item("https://b2.example/", .autoToplevel))
        #expect(history.items.map(\.url) == ["https://a.example/", "https://b2.example/", "https://c.example/"])
        #expect(history.currentIndex == 1)
        #expect(history.currentItem?.title == "")
        #expect(history.currentItem?.transition == .autoToplevel)
        #expect(history.byteCount == bytes - "https://b.example/".utf8.count - 1 + "https://b2.example/".utf8.count)
        var empty = NavigationHistory()
        empty.replaceCurrent(with: item("https://a.example/"))
        #expect(empty.items.map(\.url) == ["https://a.example/"])
        #expect(empty.currentIndex == 0)
    }

    @Test func aTabReplacingItsEntryKeepsItsTitleOnlyForTheSameURL() throws {
        let tab = WebState()
        try tab.navigate(to: "https://a.example/", transition: .typed)
        try tab.updatePageState(title: "A", isLoading: false, progress: 1)
        try tab.navigate(replacingCurrentWith: "https://a.example/", transition: .link)
        #expect(tab.title == "A")
        #expect(tab.isLoading && tab.progress == 0)
        try tab.navigate(replacingCurrentWith: "https://a.example/#x", transition: .link)
        #expect(tab.title == "")
        #expect(tab.historyCount == 1)
        #expect(tab.visibleURL == "https://a.example/#x")
    }

    @Test func goToIsANoOpOutOfRangeAndOnTheCurrentIndex() {
        var history = NavigationHistory()
        do {
            let changed = history.goBack()
            #expect(!changed)
        }
        for url in ["a", "b"] { history.commit(item(url + ":x")) }
        do {
            let changed = history.goForward()
            #expect(!changed)
        }
        do {
            let changed = history.goTo(index: 1)
            #expect(!changed)
        }
        do {
            let changed = history.goTo(index: 5)
            #expect(!changed)
        }
        do {
            let changed = history.goTo(index: -1)
            #expect(!changed)
        }
        do {
            let changed = history.go(offset: -2)
            #expect(!changed)
        }
        do {
            let changed = history.go(offset: -1)
            #expect(changed)
        }
        #expect(history.currentIndex == 0)
        #expect(history.canGoForward && !history.canGoBack)
    }

    @Test func transitionsAndTimestampsAreRecorded() throws {
        let tab = WebState()
        let time = Date(timeIntervalSince1970: 1_000)
        try tab.navigate(to: "https://a.example/", transition: .bookmark, at: time)
        #expect(try tab.history.items[0].transition == .bookmark)
        #expect(try tab.history.items[0].timestamp == time)
        #expect(tab.isLoading)
    }

    @Test func reloadKeepsTheIndexAndStartsLoading() throws {
        let tab = tabWithHistory(["https://a.example/", "https://b.example/"])
        try tab.updatePageState(isLoading: false)
        try tab.go(offset: -1)
        try tab.updatePageState(isLoading: false)
        tab.reload()
        #expect(try tab.history.currentIndex == 0)
        #expect(try tab.history.count == 2)
        #expect(tab.isLoading)
    }

    @Test func sessionWindowKeeps75AroundTheCurrentEntry() throws {
        func history(_ n: Int, current: Int) throws -> NavigationHistory {
            try NavigationHistory(items: (0..<n).map { item("https://e.example/\($0)") }, currentIndex: current)
        }
        // n ≤ 75: everything.
        let small = try history(50, current: 10).sessionWindow()
        #expect(small.items.count == 50 && small.currentIndex == 10)
        // offset = max(0, min(lci − 37, n − 75)).
        let atEnd = try history(100, current: 99).sessionWindow()
        #expect(atEnd.items.count == 75 && atEnd.currentIndex == 74 && atEnd.items.first?.url == "https://e.example/25")
        let middle = try history(100, current: 50).sessionWindow()
        #expect(middle.currentIndex == 37 && middle.items.first?.url == "https://e.example/13")
        let early = try history(100, current: 10).sessionWindow()
        #expect(early.currentIndex == 10 && early.items.first?.url == "https://e.example/0")
        #expect(NavigationHistory().sessionWindow().currentIndex == -1)
    }

    @Test func restoringChecksTheIndex() {
        #expect(throws: ModelError.self) { try NavigationHistory(items: [item("a:b")], currentIndex: 1) }
        #expect(throws: ModelError.self) { try NavigationHistory(items: [], currentIndex: 0) }
    }

    @Test func historyCapDropsTheOldest() {
        var history = NavigationHistory()
        for i in 0..<10 { history.commit(item("https://e.example/\(i)"), maxItems: 4) }
        #expect(history.items.map(\.url).first == "https://e.example/6")
        #expect(history.currentIndex == 3)
    }

    @Test func pageStateReportsOnlyChanges() throws {
        let tab = tabWithHistory(["https://a.example/"])
        final class Spy: WebStateObserver {
            var changes: [WebStateChange] = []
            func webStateDidChange(_ webState: WebState, change: WebStateChange) { changes.append(change) }
        }
        let spy = Spy()
        tab.addObserver(spy)
        #expect(try tab.updatePageState(title: "A", progress: 0.5) == [.title, .progress])
        #expect(try tab.updatePageState(title: "A", progress: 0.5).isEmpty)
        #expect(try tab.history.currentItem?.title == "A")
        #expect(spy.changes == [.progress, .title])
    }

    /// A crashed page (Chromium's `WebState::IsCrashed`, a sad tab) is not loading, and stays crashed
    /// until a load starts: navigate, replace, go and reload each clear it.
    @Test func aCrashLastsUntilALoadStarts() throws {
        let tab = tabWithHistory(["https://a.example/", "https://b.example/"])
        try tab.updatePageState(isLoading: true, progress: 0.5)
        #expect(try tab.updatePageState(isCrashed: true) == [.crashed, .loading])
        #expect(tab.isCrashed && !tab.isLoading && tab.progress == 1)
        #expect(try tab.updatePageState(isCrashed: true).isEmpty)
        tab.reload()
        #expect(!tab.isCrashed && tab.isLoading && tab.progress == 0)
        for load in [
            { try tab.go(offset: -1) } as () throws -> Void,
            { try tab.navigate(to: "https://c.example/", transition: .link) },
            { try tab.navigate(replacingCurrentWith: "https://d.example/", transition: .link) },
        ] {
            try tab.updatePageState(isCrashed: true)
            #expect(tab.isCrashed)
            try load()
            #expect(!tab.isCrashed && tab.isLoading)
        }
        // A renderer's word that the page runs again clears it too.
        try tab.updatePageState(isCrashed: true)
        #expect(try tab.updatePageState(isCrashed: false) == [.crashed])
    }

    /// A list forwards its members' own changes to its observers (Chromium's
    /// `AllWebStateObservationForwarder`), before the tab's observers, and stops when the tab leaves.
    @Test func listForwardsItsTabsChanges() throws {
        final class Spy: WebStateListObserver, WebStateObserver {
            var told: [String] = []
            func webStateList(_ list: WebStateList, tabDidChange webState: WebState, change: WebStateChange) {
                told.append("list \(change)")
            }
            func webStateDidChange(_ webState: WebState, change: WebStateChange) { told.append("tab \(change)") }
        }
        let list = WebStateList()
        let other = WebStateList()
        let spy = Spy()
        let otherSpy = Spy()
        list.addObserver(spy)
        other.addObserver(otherSpy)
        let tab = tabWithHistory(["https://a.example/"])
        let standalone = tabWithHistory(["https://b.example/"])
        try standalone.updatePageState(title: "B")
        #expect(spy.told.isEmpty)

        try list.insert(tab)
        tab.addObserver(spy)
        try tab.updatePageState(title: "A")
        #expect(spy.told == ["list title", "tab title"])

        // Replaced: the old tab is no longer forwarded, the new one is.
        spy.told = []
        tab.removeObserver(spy)
        let replacement = tabWithHistory(["https://c.example/"])
        try list.replace(at: 0, with: replacement)
        try tab.navigate(to: "https://a.example/2", transition: .link)
        try replacement.updatePageState(title: "C")
        #expect(spy.told == ["list title"])

        // Moved to another list: only that list tells.
        spy.told = []
        let moved = try list.detach(at: 0)
        try other.insert(moved)
        try moved.updatePageState(title: "D")
        #expect(spy.told.isEmpty && otherSpy.told == ["list title"])

        // Closed: nobody.
        otherSpy.told = []
        let closed = try other.close(at: 0)
        try closed.updatePageState(title: "E")
        #expect(otherSpy.told.isEmpty)
    }
}

/// Input checks: URLs and titles.
@Suite(.computing) struct InputValidationTests {
    @Test(arguments: [
        ("HTTPS://Example.COM", "https://example.com/"),
        ("http://a.example/p?q=1#f", "http://a.example/p?q=1#f"),
        ("about:blank", "about:blank"),
        ("data:text/plain,hi", "data:text/plain,hi"),
        ("file:///tmp/x", "file:///tmp/x"),
        ("browserd://Settings/privacy", "browserd://settings/privacy"),
    ])
    func normalizes(input: String, expected: String) throws {
        #expect(try URLNormalizer.normalize(input) == expected)
    }

    @Test(arguments: [
        "", "example.com", "javascript:alert(1)", "ftp://x.example/", "http://", "https://a b.example/",
        "1http://x", "http://x.example:99999/",
    ])
    func rejects(input: String) {
        #expect(throws: ModelError.self) { try URLNormalizer.normalize(input) }
    }

    @Test func urlsOver2MiBAreRejected() {
        let long = "https://a.example/" + String(repeating: "a", count: 2 * 1024 * 1024)
        #expect(throws: ModelError.self) { try URLNormalizer.normalize(long) }
    }

    @Test func titlesAreCapped() throws {
        #expect(try InputValidation.title(String(repeating: "t", count: 1024)).count == 1024)
        #expect(throws: ModelError.titleTooLong(length: 1025, limit: 1024)) { try InputValidation.title(String(repeating: "t", count: 1025)) }
        // Counted in code points (as the contract's maxLength): 513 graphemes of 2 code points are too long.
        #expect(throws: ModelError.titleTooLong(length: 1026, limit: 1024)) { try InputValidation.title(String(repeating: "e\u{301}", count: 513)) }
        #expect(throws: ModelError.self) { try InputValidation.progress(1.5) }
        #expect(throws: ModelError.self) { try InputValidation.progress(.nan) }
    }
}
