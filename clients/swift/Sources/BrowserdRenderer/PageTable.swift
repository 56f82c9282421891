/// Which tab has a live page, in which window, on which target and session: one value in place of
/// the renderer's maps kept in step by hand (a value: ``Renderer`` carries its actions out, tests
/// drive it alone). `Page` is the page's handle (``LivePage`` in the renderer).
///
/// A tab that leaves its window (closed, or moved to another window: the stream says only that it
/// left) keeps its page for ``PageTable/moveGrace``: a window that wants it within that time takes the
/// page as it is (a moved tab keeps its page, as a `WebState` moved between Chromium's windows keeps
/// its web view); after it, ``sweep(now:)`` closes it.
public struct PageTable<Page>: Sendable where Page: Sendable {
    public struct Entry: Sendable {
        public var window: String
        public var page: Page
        public var target: String?
        public var session: String?
        /// When the tab left its window (nil while it is there).
        public var leftAt: Double?
    }

    public enum Action: Sendable {
        /// Make a page for the tab in the window.
        case open(tab: String, window: String)
        /// Close the tab's page.
        case close(tab: String, page: Page)
    }

    /// How long a page of a tab that left its window waits for another window to want it (seconds).
    public static var moveGrace: Double { 3 }

    public private(set) var entries: [String: Entry] = [:]
    private var tabsByTarget: [String: String] = [:]

    public init() {}

    public var count: Int { entries.count }

    public func page(ofTab tab: String) -> Page? { entries[tab]?.page }
    public func session(ofTab tab: String) -> String? { entries[tab]?.session }
    public func target(ofTab tab: String) -> String? { entries[tab]?.target }
    public func tab(ofTarget target: String) -> String? { tabsByTarget[target] }

    /// The tabs with a page, by window (tabs that left their window are in none).
    public var liveTabs: [String: Set<String>] {
        var live: [String: Set<String>] = [:]
        for (tab, entry) in entries where entry.leftAt == nil { live[entry.window, default: []].insert(tab) }
        return live
    }

    /// The window's tabs that should have a page now (`wanted`) and those it holds at all (`present`):
    /// its pages not wanted close (a tab still there but no longer live), or wait (a tab that left);
    /// a wanted tab with a page elsewhere takes it; a wanted tab without one gets one (``added(_:page:window:)``).
    public mutating func reconcile(window: String, wanted: Set<String>, present: Set<String>, now: Double) -> [Action] {
        var actions: [Action] = []
        for (tab, entry) in entries where entry.window == window && entry.leftAt == nil && !wanted.contains(tab) {
            if present.contains(tab) {
                actions.append(.close(tab: tab, page: remove(tab)))
            } else {
                entries[tab]?.leftAt = now
            }
        }
        for tab in wanted.sorted() {
            if entries[tab] != nil {
                entries[tab]?.window = window
                entries[tab]?.leftAt = nil
            } else {
                actions.append(.open(tab: tab, window: window))
            }
        }
        return actions
    }

    /// A page made for `tab` in `window` (after ``Action/open(tab:window:)``).
    public mutating func added(_ tab: String, page: Page, window: String) {
        entries[tab] = Entry(window: window, page: page)
    }

    /// The page's target and session, once Chromium attached it.
    public mutating func attached(_ tab: String, session: String, target: String) {
        guard entries[tab] != nil else { return }
        if let old = entries[tab]?.target { tabsByTarget[old] = nil }
        entries[tab]?.session = session
        entries[tab]?.target = target
        tabsByTarget[target] = tab
    }

    /// Pages of tabs that left their window more than ``moveGrace`` ago, and of windows no longer
    /// followed (`windows`: those that are): closed.
    public mutating func sweep(now: Double, windows: Set<String>) -> [Action] {
        let gone = entries.filter { _, entry in
            entry.leftAt.map { now - $0 >= Self.moveGrace } ?? !windows.contains(entry.window)
        }
        return gone.keys.sorted().map { .close(tab: $0, page: remove($0)) }
    }

    /// Every page, the table emptied (Chromium ended).
    public mutating func removeAll() -> [Page] {
        defer {
            entries = [:]
            tabsByTarget = [:]
        }
        return entries.values.map(\.page)
    }

    private mutating func remove(_ tab: String) -> Page {
        let entry = entries.removeValue(forKey: tab)!
        if let target = entry.target { tabsByTarget[target] = nil }
        return entry.page
    }
}
