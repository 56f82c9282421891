public import BrowserModel
public import BrowserRecords
public import Foundation

/// A profile made from an ``ImportedSession`` by the model's own operations, as records to store in
/// one commit.
public struct ImportedProfile: Sendable {
    public var profile: ProfileRecord
    public var windows: [WindowRecord]
    public var tabs: [(window: String, tab: TabRecord)]
    /// The recently closed entries, oldest first (the order they are recorded in).
    public var closed: [ClosedEntryRecord]
    /// Every adjustment made, in the order met.
    public var warnings: [ImportWarning]
    /// The history text the profile holds (what its byte budget counts).
    public var byteCount: Int
    public var tabCount: Int { tabs.count }
}

/// Builds a profile from another browser's session in a session of its own, through the model's
/// operations (a window is created, each tab inserted with its history, pinned, grouped and
/// activated as the model does it), then reads the records back from what the model built: so the
/// profile reads back exactly as the model would hold it. Where the session holds what Chromium's
/// rules do not allow, the rule wins and a warning names the adjustment:
///
/// - a pinned tab in a group stays pinned and leaves the group (Chromium groups no pinned tab);
/// - a pinned tab after unpinned ones joins the pinned section's end;
/// - a group split by other tabs is made whole by the model's `createGroup` (its tabs moved next to
///   its first one); a group of no tab is left out, as is a group colour outside the palette (grey);
/// - a selected index (tab or entry) out of range takes the first tab, the last entry;
/// - an entry whose URL the model refuses is left out (a tab left with none is left out);
/// - a title past the model's limit is cut; a history past it keeps its newest entries;
/// - a closed window of one tab is remembered as a tab (Chromium's `BrowserClosing` does so); closed
///   items past the 25 Chromium keeps are left out (the oldest).
///
/// Nothing of it is stored or published: the caller commits the records.
public final class SessionImportBuilder {
    let limits: ModelLimits
    private var warnings: [ImportWarning] = []
    private var omittedWarnings = 0

    public init(limits: ModelLimits) {
        self.limits = limits
    }

    /// The profile `session` makes, named `name`.
    /// - Throws: ``ModelError`` when the model cannot hold it at all (more windows or tabs than its
    ///   limits).
    public func build(_ session: ImportedSession, name: String, now: Date = Date()) throws -> ImportedProfile {
        warnings = session.warnings
        omittedWarnings = session.omittedWarnings
        var limits = self.limits
        limits.profileBytes = Int.max  // the caller checks the profile's bytes on the records
        let state = BrowserState(id: .make(), name: name, createdAt: now, budget: ByteBudget(limit: Int.max))
        let profile = ProfileSession(browserState: state, limits: limits)
        guard session.windows.count <= limits.windowsPerProfile else {
            throw ModelError.limitReached(what: "windows in a profile", limit: limits.windowsPerProfile)
        }
        var browsers: [Browser] = []
        for (index, window) in session.windows.enumerated() {
            // A millisecond apart, so every listing (ordered by creation) keeps the session's order.
            browsers.append(try build(window, in: profile, now: now, createdAt: now.addingTimeInterval(Double(index) / 1000)))
        }
        if let front = session.selectedWindow, browsers.indices.contains(front) {
            // The window in front was the last one active.
            browsers[front].lastActiveAt = now.addingTimeInterval(Double(browsers.count) / 1000)
        }
        let closed = closedEntries(session, browsers: browsers, now: now)
        let dropped = closed.count - limits.recentlyClosedEntries
        for entry in closed { profile.recentlyClosed.record(entry) }
        if dropped > 0 {
            warn(
                "closed", "\(dropped) closed tabs or windows older than the \(limits.recentlyClosedEntries) Chromium keeps were left out")
        }

        var result = ImportedProfile(
            profile: ProfileRecord(id: state.id.rawValue, name: name, createdAt: now), windows: [], tabs: [], closed: [],
            warnings: [], byteCount: 0)
        for browser in browsers {
            let list = browser.webStateList
            result.windows.append(
                WindowRecord(
                    id: browser.id.rawValue, profileID: state.id.rawValue, version: 1, tabOrder: list.webStates.map(\.id.rawValue),
                    activeIndex: list.activeIndex, pinnedCount: list.pinnedCount,
                    groups: list.groups.sorted { $0.range.start < $1.range.start }.map {
                        GroupRecord(
                            id: $0.id.rawValue, title: $0.visualData.title, color: $0.visualData.color.rawValue,
                            collapsed: $0.visualData.collapsed)
                    },
                    createdAt: browser.createdAt, lastActiveAt: browser.lastActiveAt))
            for (index, tab) in list.webStates.enumerated() {
                let (items, current) = try tab.history.sessionWindow()
                let record = TabRecord(
                    id: tab.id.rawValue, groupID: list.group(of: tab)?.id.rawValue, openerID: nil, openerNavigationIndex: nil,
                    title: tab.title, loading: false, progress: 0, faviconURL: nil, createdAt: tab.createdAt,
                    lastActiveAt: tab.lastActiveAt, historyIndex: current,
                    history: items.map { HistoryEntryRecord(url: $0.url, title: $0.title, transition: $0.transition.rawValue, timestamp: $0.timestamp) },
                    position: Double(index) * TabRecord.positionStep)
                result.byteCount += HistorySummary(record.history, index: current).byteCount
                result.tabs.append((browser.id.rawValue, record))
            }
        }
        // Oldest first: the list holds them newest first.
        result.closed = profile.recentlyClosed.entries.reversed().map { ProfileMediator.record($0, parked: false) }
        for entry in result.closed {
            for tab in entry.tabs { result.byteCount += HistorySummary(tab.history, index: tab.historyIndex).byteCount }
        }
        result.warnings = warnings + [ImportWarning.omission(omittedWarnings)].compactMap { $0 }
        return result
    }

    private func warn(_ at: @autoclosure () -> String, _ detail: @autoclosure () -> String) {
        ImportWarning.add(ImportWarning(at: at(), detail()), to: &warnings, omitted: &omittedWarnings)
    }

    // MARK: Windows

    private func build(_ window: ImportedSession.Window, in profile: ProfileSession, now: Date, createdAt: Date) throws -> Browser {
        let browser = try profile.createBrowser(createdAt: createdAt)
        browser.lastActiveAt = now
        let list = browser.webStateList
        var made: [Int: WebState] = [:]
        var sawUnpinned = false
        for (position, tab) in window.tabs.enumerated() {
            guard let webState = webState(tab, now: now) else { continue }
            if tab.pinned, tab.groupKey != nil {
                warn(tab.at, "is pinned and in a group; Chromium groups no pinned tab: it stays pinned, out of the group")
            }
            if tab.pinned, sawUnpinned {
                warn(tab.at, "is pinned after unpinned tabs; it joins the end of the pinned tabs")
            }
            sawUnpinned = sawUnpinned || !tab.pinned
            guard list.count < limits.tabsPerWindow else {
                throw ModelError.limitReached(what: "tabs in a window", limit: limits.tabsPerWindow)
            }
            try list.insert(webState, InsertionParams(index: list.count, pinned: tab.pinned))
            made[position] = webState
        }
        // Each group's tabs, found in one pass over the tabs (linear in the file, however many groups).
        var byGroup: [String: [Int]] = [:]
        for (position, tab) in window.tabs.enumerated() where !tab.pinned {
            if let key = tab.groupKey { byGroup[key, default: []].append(position) }
        }
        var declared = Set<String>()
        for group in window.groups {
            // A key declared twice: its tabs went to the first group of that key.
            guard declared.insert(group.key).inserted else {
                warn(group.at, "repeats the group id \(group.key.debugDescription); left out")
                continue
            }
            let members = (byGroup[group.key] ?? []).compactMap { made[$0] }.map { list.index(of: $0) }.sorted()
            guard let first = members.first, let last = members.last else {
                warn(group.at, "holds no tab; left out")
                continue
            }
            if last - first + 1 != members.count {
                warn(
                    group.at,
                    "is split by other tabs; Chromium keeps a group's tabs together: they were moved next to its first tab")
            }
            if Self.color(group.color) == nil {
                warn(group.at, "has the colour \(group.color.debugDescription), not in Chromium's palette; grey")
            }
            let title = cut(group.title, at: group.at + ".name")
            try list.createGroup(
                indices: Set(members), visualData: TabGroupVisualData(title: title, color: Self.color(group.color) ?? .grey, collapsed: group.collapsed))
        }
        for tab in window.tabs {
            guard let key = tab.groupKey, !declared.contains(key), !tab.pinned else { continue }
            warn(tab.at, "names the group \(key.debugDescription), which its window does not hold; left ungrouped")
        }
        if list.count > 0 {
            let selected = window.selected.flatMap { made[$0] }.map { list.index(of: $0) }
            if selected == nil {
                let what =
                    window.selected.map { window.tabs.indices.contains($0) ? "its selected tab was left out" : "its selected tab \($0 + 1) is not one of its tabs" }
                    ?? "it selects no tab"
                warn(window.at, "\(what); its first tab is selected")
            }
            try list.activate(at: selected ?? 0)
            if let active = list.activeWebState, let position = made.first(where: { $0.value === active })?.key {
                active.markActive(at: window.tabs[position].lastAccessed ?? now)
            }
        }
        return browser
    }

    /// A tab of `tab`'s history (nil: none of its entries can be held, said).
    private func webState(_ tab: ImportedSession.Tab, now: Date) -> WebState? {
        guard let (history, title) = history(tab, now: now) else { return nil }
        return WebState(history: history, title: title, createdAt: now, lastActiveAt: tab.lastAccessed ?? now)
    }

    private func history(_ tab: ImportedSession.Tab, now: Date) -> (NavigationHistory, String)? {
        var items: [NavigationItem] = []
        var current = tab.index
        if !tab.entries.indices.contains(current) {
            if !tab.entries.isEmpty { warn(tab.at, "selects entry \(current + 1) of \(tab.entries.count); the last one is selected") }
            current = tab.entries.count - 1
        }
        var newCurrent = -1
        for (index, entry) in tab.entries.enumerated() {
            let url: String
            do {
                url = try URLNormalizer.normalize(entry.url, maxBytes: limits.urlBytes)
            } catch {
                warn("\(tab.at).entries[\(index)]", "cannot be held (\(error)); left out")
                continue
            }
            if index <= current || newCurrent < 0 { newCurrent = items.count }
            items.append(NavigationItem(url: url, title: cut(entry.title, at: "\(tab.at).entries[\(index)].title"), transition: .link, timestamp: now))
        }
        guard !items.isEmpty else {
            warn(tab.at, "has no entry that can be held; left out")
            return nil
        }
        if items.count > limits.historyEntries {
            let drop = min(items.count - limits.historyEntries, newCurrent)
            warn(tab.at, "has \(items.count) entries; the model keeps \(limits.historyEntries): the oldest were left out")
            items.removeFirst(drop)
            newCurrent -= drop
            if items.count > limits.historyEntries { items.removeLast(items.count - limits.historyEntries) }
        }
        guard let history = try? NavigationHistory(items: items, currentIndex: newCurrent) else { return nil }
        return (history, items[newCurrent].title)
    }

    private func cut(_ title: String, at: String) -> String {
        guard title.unicodeScalars.count > limits.titleCharacters else { return title }
        warn(at, "is longer than \(limits.titleCharacters) characters; cut")
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: title.unicodeScalars.prefix(limits.titleCharacters))
        return String(scalars)
    }

    // MARK: Closed tabs and windows

    /// Every closed tab and window as the model's entries, oldest first (by their closing time; ties
    /// keep the file's order, which lists the newest first).
    private func closedEntries(_ session: ImportedSession, browsers: [Browser], now: Date) -> [ClosedEntry] {
        var timed: [(closedAt: Date, order: Int, entry: ClosedEntry)] = []
        for (order, closed) in session.closedTabs.enumerated() {
            guard browsers.indices.contains(closed.window), let (history, title) = history(closed.tab, now: now) else { continue }
            guard !history.items.allSatisfy({ $0.url == NavigationItem.newTabPageURL }) else {
                warn(closed.tab.at, "shows only the new tab page; Chromium does not remember such a tab")
                continue
            }
            let group = closed.group.map { ClosedTabGroup(id: .make(), visualData: visualData($0)) }
            let tab = ClosedTab(
                tabID: .make(), history: history, title: title, faviconURL: nil, browserID: browsers[closed.window].id,
                index: closed.position, group: group, wasActive: false, wasPinned: closed.tab.pinned, closedAt: closed.closedAt)
            timed.append((closed.closedAt, order, ClosedEntry(tab: tab)))
        }
        for (order, window) in session.closedWindows.enumerated() {
            let browserID = BrowserID.make()
            let closedAt = window.closedAt ?? now
            let groups = Dictionary(window.groups.map { ($0.key, ClosedTabGroup(id: .make(), visualData: visualData($0))) }, uniquingKeysWith: { a, _ in a })
            var tabs: [ClosedTab] = []
            for (position, tab) in window.tabs.enumerated() {
                guard let (history, title) = history(tab, now: now) else { continue }
                tabs.append(
                    ClosedTab(
                        tabID: .make(), history: history, title: title, faviconURL: nil, browserID: browserID, index: tabs.count,
                        group: tab.pinned ? nil : tab.groupKey.flatMap { groups[$0] }, wasActive: window.selected == position,
                        wasPinned: tab.pinned, closedAt: closedAt))
            }
            guard !tabs.isEmpty else {
                warn(window.at, "has no tab that can be held; left out")
                continue
            }
            // One tab left: Chromium records a tab entry, not a window (`BrowserClosing`).
            let entry = tabs.count == 1 ? ClosedEntry(tab: tabs[0]) : ClosedEntry(kind: .window, tabs: tabs)
            timed.append((closedAt, session.closedTabs.count + order, entry))
        }
        // The file lists each list newest first: among equal times, a later position is older.
        return timed.sorted { ($0.closedAt, -$0.order) < ($1.closedAt, -$1.order) }.map(\.entry)
    }

    private func visualData(_ group: ImportedSession.Group) -> TabGroupVisualData {
        TabGroupVisualData(
            title: String(group.title.unicodeScalars.prefix(limits.titleCharacters)), color: Self.color(group.color) ?? .grey,
            collapsed: group.collapsed)
    }

    /// The palette's colour of that name (Firefox's and Chromium's share their names but grey's).
    static func color(_ name: String) -> TabGroupColor? { TabGroupColor(rawValue: name == "gray" ? "grey" : name) }
}
