public import Foundation

/// Everything of one regular profile and its off-the-record profile: the unit of consistency.
///
/// All windows of both profiles change through one `ProfileSession`, which a single serial executor
/// (``ProfileExecutor``) owns, so a cross-window move is atomic and every change has one place in one
/// order. It keeps the window list, finds tabs by id, records closed tabs of regular windows, and
/// implements the operations that span windows: cross-window moves (spec §1), window close, the
/// off-the-record profile's life (spec §7) and restoring closed tabs.
public final class ProfileSession {
    public let browserState: BrowserState
    public let browserList = BrowserList()
    public let recentlyClosed: RecentlyClosedTabs
    /// Per-profile attachments (mediators, services).
    public let userData = UserData()
    public let limits: ModelLimits
    private var tabLocations: [TabID: Browser] = [:]
    private var owners: [ObjectIdentifier: Browser] = [:]
    private var tracker: SessionTracker!
    /// While a window or a whole group closes: the window's list and the tabs recorded so far, which
    /// become one entry (Chromium's `TabRestoreServiceHelper::BrowserClosing` / group close).
    fileprivate var collecting: (list: ObjectIdentifier, tabs: [ClosedTab])?
    /// Close-alls that can still be undone, by id (``closeTabs(in:policy:)``).
    public internal(set) var closings: [ClosedTabID: TabsClosing] = [:]

    /// Creates the session of a regular profile.
    public init(browserState: BrowserState, limits: ModelLimits = ModelLimits()) {
        precondition(!browserState.isOffTheRecord, "a session belongs to a regular profile")
        self.browserState = browserState
        self.limits = limits
        self.recentlyClosed = RecentlyClosedTabs(capacity: limits.recentlyClosedEntries)
        self.recentlyClosed.budget = browserState.budget
        self.tracker = SessionTracker(session: self)
    }

    /// The off-the-record profile, if it exists.
    public var offTheRecord: BrowserState? { browserState.offTheRecord }

    /// The profile with `id`: the regular one or its off-the-record one.
    public func profile(withID id: ProfileID) -> BrowserState? {
        if browserState.id == id { return browserState }
        if let otr = browserState.offTheRecord, otr.id == id { return otr }
        return nil
    }

    // MARK: Windows

    /// Opens a window with no tabs in the regular or the off-the-record profile.
    /// - Throws: when the profile's window cap is reached or there is no off-the-record profile.
    @discardableResult
    public func createBrowser(incognito: Bool = false, id: BrowserID = .make(), createdAt: Date = Date()) throws -> Browser {
        guard browserList.count < limits.windowsPerProfile else {
            throw ModelError.limitReached(what: "windows per profile", limit: limits.windowsPerProfile)
        }
        let state: BrowserState
        if incognito {
            guard let otr = browserState.offTheRecord else {
                throw ModelError.incognitoMismatch("the profile has no off-the-record profile; create it first")
            }
            state = otr
        } else {
            state = browserState
        }
        let browser = Browser(id: id, browserState: state, maxTabs: limits.tabsPerWindow, createdAt: createdAt)
        browser.webStateList.addObserver(tracker)
        owners[ObjectIdentifier(browser.webStateList)] = browser
        try browserList.add(browser)
        return browser
    }

    public func browser(withID id: BrowserID) -> Browser? { browserList.browser(withID: id) }

    /// Closes a window: its tabs are closed as a user action in one batch and it leaves the browser
    /// list. A regular window is remembered as one window entry (`TabRestoreServiceHelper::BrowserClosing`),
    /// or as a tab entry when one remembered tab was left (its short-circuit for a single tab).
    /// - Parameter remembering: false closes its tabs as a cleanup (`.tabsCleanup`): nothing is
    ///   remembered, and no history is needed (a profile deleted, a change rolled back).
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` when remembering unrealized tabs (nothing changes then).
    public func closeBrowser(_ browser: Browser, remembering: Bool = true) throws {
        guard browserList.browser(withID: browser.id) === browser else { throw ModelError.browserNotFound(browser.id) }
        if remembering {
            _ = try collectingClosedTabs(of: browser, as: .window) { try browser.webStateList.closeAll(flags: .userAction) }
        } else {
            _ = try browser.webStateList.closeAll(flags: .tabsCleanup)
        }
        browserList.remove(browser)
        browser.webStateList.removeObserver(tracker)
        owners[ObjectIdentifier(browser.webStateList)] = nil
    }

    /// Closes every tab of `group` as a user action in one batch; in a regular window they are
    /// remembered as one group entry, which restores the group whole.
    /// - Returns: the closed tabs, highest index first.
    @discardableResult
    public func closeGroup(_ group: TabGroup, in browser: Browser) throws -> [WebState] {
        try collectingClosedTabs(of: browser, as: .group) { try browser.webStateList.closeAll(in: group, flags: .userAction) }
    }

    /// Runs `body` with the tabs it closes in `browser` collected into one entry of `kind`.
    private func collectingClosedTabs<R>(of browser: Browser, as kind: ClosedEntry.Kind, _ body: () throws -> R) rethrows -> R {
        precondition(collecting == nil, "closing one window or group at a time")
        collecting = (ObjectIdentifier(browser.webStateList), [])
        defer {
            let tabs = collecting?.tabs ?? []
            collecting = nil
            if tabs.count == 1, kind == .window {
                recentlyClosed.record(tabs[0])
            } else if !tabs.isEmpty {
                recentlyClosed.record(ClosedEntry(kind: kind, tabs: tabs))
            }
        }
        return try body()
    }

    /// The regular window whose tab was activated most recently (or that was created most recently).
    public var mostRecentlyActiveRegularBrowser: Browser? {
        browserList.browsers(.regular).max { $0.lastActiveAt < $1.lastActiveAt }
    }

    // MARK: Tabs

    /// Where the tab with `id` is: its window and index.
    public func locate(_ id: TabID) -> (browser: Browser, index: Int)? {
        guard let browser = tabLocations[id] else { return nil }
        let index = browser.webStateList.index(ofTabWithID: id)
        return index >= 0 ? (browser, index) : nil
    }

    /// Every tab id of every window.
    public var tabCount: Int { tabLocations.count }

    /// Moves a tab to `index` of another window of the same profile (spec §1 cross-window move): a plain
    /// move when it is the same window; otherwise detached and inserted with the params, activated when
    /// the destination was empty. Never between incognito and regular windows.
    ///
    /// With `group` (a group of `destination`) the tab joins it: within one window as `MoveToGroup` does
    /// (appended to the group's end, then moved to `index` when that lies inside the group); from another
    /// window as an insert `InGroup` (`InsertionParams::InGroup`: an index outside the group's range goes
    /// to the range's end).
    /// - Returns: the tab's new index.
    /// - Throws: when the tab, window or group is unknown, the modes differ, `pinned` is asked with a
    ///   group, or the index is out of range (`0…count` of the destination, or `0…count−1` within one window).
    @discardableResult
    public func moveTab(
        _ id: TabID, to destination: Browser, index: Int?, activate: Bool = false, pinned: Bool = false,
        group: TabGroup? = nil
    ) throws -> Int {
        guard let (source, from) = locate(id) else { throw ModelError.tabNotFound(id) }
        guard browserList.browser(withID: destination.id) === destination else { throw ModelError.browserNotFound(destination.id) }
        if let group {
            guard destination.webStateList.containsGroup(group) else { throw ModelError.groupNotFound(group.id) }
            if pinned { throw ModelError.groupInvariant("a tab cannot be moved both pinned and into a group") }
        }
        if source === destination {
            let list = destination.webStateList
            if let group {
                if let index, !list.containsIndex(index) {
                    throw ModelError.indexOutOfRange(index: index, validRange: 0...(list.count - 1))
                }
                try list.moveToGroup(indices: [from], group: group)
                if let index, group.range.start <= index, index < group.range.end {
                    try list.move(from: list.index(ofTabWithID: id), to: index)
                }
            } else {
                try list.move(from: from, to: index ?? list.count - 1)
            }
            let now = list.index(ofTabWithID: id)
            if activate { try list.activate(at: now) }
            return now
        }
        guard source.isIncognito == destination.isIncognito else {
            throw ModelError.incognitoMismatch("tabs cannot move between incognito and regular windows")
        }
        let list = destination.webStateList
        if let index, index < 0 || index > list.count {
            throw ModelError.indexOutOfRange(index: index, validRange: 0...list.count)
        }
        guard list.count < list.maxCount else { throw ModelError.limitReached(what: "tabs per window", limit: list.maxCount) }
        // As Chromium's MoveTabFromBrowserToBrowser: detached, then inserted at the index only; the pinned
        // flag does not travel (only `pinned` asks for it). As every insert, an index outside the
        // section the tab joins sends it to that section's end (`DetermineInsertionIndex`;
        // `InsertWebState_InsertionInPinnedRange`): a regular tab asked into the pinned range goes last.
        let tab = try source.webStateList.detach(at: from)
        return try list.insert(tab, InsertionParams(index: index, activate: activate || list.isEmpty, pinned: pinned, group: group))
    }

    // MARK: Off-the-record

    /// The off-the-record profile, created when missing.
    @discardableResult
    public func createOffTheRecord(id: ProfileID = .make()) throws -> (profile: BrowserState, created: Bool) {
        try browserState.offTheRecordCreatingIfNeeded(id: id)
    }

    /// Destroys the off-the-record profile and every incognito window (their tabs are forgotten).
    /// - Returns: the windows that were closed.
    @discardableResult
    public func destroyOffTheRecord() throws -> [Browser] {
        let windows = browserList.browsers(.incognito)
        for browser in windows { try closeBrowser(browser) }
        browserState.destroyOffTheRecord()
        return windows
    }

    // MARK: Recently closed

    /// What a restore brought back: the window, the tab it leads with (the one to show) and its index.
    public typealias Restored = (browser: Browser, tab: WebState, index: Int)

    /// Restores an entry (Chromium's `TabRestoreServiceHelper::RestoreEntryById`), activated unless
    /// `activate` is false, whether or not it was active when closed (`TabRestoreTest.MiddleTab`; iOS
    /// `AddRestoredTab` inserts with `Activate()`):
    /// - a tab: at its old index in its old window when that window still exists (clamped to the list;
    ///   back in its group, rebuilt with its visual data when gone; pinned if it was), else in a new
    ///   regular window;
    /// - a window: a new window with its tabs in order, pinned ones pinned, its groups rebuilt and its
    ///   active tab active;
    /// - a group: the group rebuilt at the end of its old window, or of a new one when that is gone.
    ///
    /// A new window is `newWindow` when given (an empty window made for the restore), else created.
    /// A group keeps its id unless a group of the profile has it now.
    /// - Returns: the window, and the tab it leads with (the window's active tab, a group's first).
    /// - Throws: when the entry is unknown, or the profile has its most windows or that window its most tabs.
    @discardableResult
    public func restoreClosedTab(_ entryID: ClosedTabID, activate: Bool = true, newWindow: Browser? = nil) throws -> Restored {
        guard let entry = recentlyClosed.entries.first(where: { $0.id == entryID }) else {
            throw ModelError.closedTabNotFound(entryID)
        }
        return try restore(entry, activate: activate, newWindow: newWindow)
    }

    /// Restores the most recent tab or group closed in `browser` (activated unless `activate` is false).
    @discardableResult
    public func restoreMostRecentClosedTab(in browser: Browser, activate: Bool = true) throws -> Restored {
        guard let entry = recentlyClosed.mostRecent(in: browser.id) else {
            throw ModelError.invalidArgument("window \(browser.id) has no recently closed tab")
        }
        return try restore(entry, activate: activate, newWindow: nil)
    }

    private func restore(_ entry: ClosedEntry, activate: Bool, newWindow: Browser?) throws -> Restored {
        let original = browserList.browser(withID: entry.browserID).flatMap { $0.isIncognito ? nil : $0 }
        let target: Browser
        if entry.kind != .window, let original {
            target = original
        } else if let newWindow, browserList.browser(withID: newWindow.id) === newWindow, !newWindow.isIncognito {
            target = newWindow
        } else {
            // Its window is gone: a new window, as Chromium's tab restore service makes one
            // (`TabRestoreServiceHelper::RestoreEntryById`: no live context with the entry's browser id).
            target = try createBrowser()
        }
        let list = target.webStateList
        guard list.count + entry.tabs.count <= list.maxCount else {
            throw ModelError.limitReached(what: "tabs per window", limit: list.maxCount)
        }
        let restored: Restored
        switch entry.kind {
        case .tab:
            let closed = entry.tabs[0]
            let tab = WebState(history: closed.history, title: closed.title, faviconURL: closed.faviconURL)
            var params = InsertionParams(activate: activate || list.isEmpty)
            var rebuild: ClosedTabGroup?
            if target === original {
                params.index = min(closed.index, list.count)
                if let saved = closed.group {
                    if let group = list.group(withID: saved.id) { params.group = group } else { rebuild = saved }
                } else if closed.wasPinned {
                    params.pinned = true
                }
            } else {
                rebuild = closed.group
            }
            var index = try list.insert(tab, params)
            if let rebuild, list.group(at: index) == nil {
                try list.createGroup(indices: [index], visualData: rebuild.visualData, id: freeGroupID(rebuild.id))
                index = list.index(of: tab)
            }
            restored = (target, tab, index)
        case .window, .group:
            let tabs = entry.tabs.map { (closed: $0, tab: WebState(history: $0.history, title: $0.title, faviconURL: $0.faviconURL)) }
            for (closed, tab) in tabs {
                try list.insert(tab, InsertionParams(pinned: entry.kind == .window && closed.wasPinned && closed.group == nil))
            }
            // Groups rebuilt in order of their first tab, with their visual data.
            var seen: Set<TabGroupID> = []
            for (closed, _) in tabs {
                guard let group = closed.group, seen.insert(group.id).inserted else { continue }
                let members = tabs.filter { $0.closed.group?.id == group.id }.map { list.index(of: $0.tab) }
                try list.createGroup(indices: Set(members), visualData: group.visualData, id: freeGroupID(group.id))
            }
            let leading = entry.kind == .window ? (tabs.first { $0.closed.wasActive } ?? tabs[0]).tab : tabs[0].tab
            if activate || entry.kind == .window || list.activeIndex < 0 { try list.activate(at: list.index(of: leading)) }
            restored = (target, leading, list.index(of: leading))
        }
        _ = try recentlyClosed.take(entry.id)
        return restored
    }

    /// `id` when no group of the profile has it, else a fresh one.
    func freeGroupID(_ id: TabGroupID) -> TabGroupID {
        browserList.browsers(.all).contains { $0.webStateList.group(withID: id) != nil } ? .make() : id
    }

    /// Makes room in the session's tab index for `count` more tabs (a profile restored from storage):
    /// no rehash of it on the way. Changes nothing else.
    public func reserveTabCapacity(forMore count: Int) {
        tabLocations.reserveCapacity(tabLocations.count + count)
    }

    // MARK: Bookkeeping (called by the tracker)

    fileprivate func tabsInserted(_ tab: WebState, in browser: Browser) {
        tabLocations[tab.id] = browser
        tab.budget = browserState.budget
    }

    fileprivate func tabRemoved(_ tab: WebState) {
        tabLocations[tab.id] = nil
        tab.budget = nil
    }

    fileprivate func browserOwning(_ list: WebStateList) -> Browser? {
        owners[ObjectIdentifier(list)]
    }
}

/// Keeps the session's tab index and recently-closed list in step with every window's changes.
private final class SessionTracker: WebStateListObserver {
    unowned let session: ProfileSession

    init(session: ProfileSession) { self.session = session }

    func webStateListWillChange(_ list: WebStateList, detach: DetachChange, status: WebStateListStatus) {
        guard detach.isClosing, !detach.isTabsCleanup, let browser = session.browserOwning(list), !browser.isIncognito else {
            return
        }
        let tab = detach.tab
        // A tab that only ever showed the new-tab page is not remembered; one that is, is remembered
        // with a window of its history around the current entry.
        let remembered: ClosedTab?
        do {
            remembered = try ClosedTab(
                closing: tab, at: detach.fromIndex, in: list, of: browser, group: detach.group, wasActive: status.oldActive === tab)
        } catch {
            // `WebStateList.close` refuses an unrealized tab before it detaches anything (unless the
            // close is a cleanup, which is not remembered): a closing tab here always has its history.
            preconditionFailure("a remembered close reached an unrealized tab: \(error)")
        }
        guard let closed = remembered else { return }
        if let collecting = session.collecting, collecting.list == ObjectIdentifier(list) {
            session.collecting?.tabs.append(closed)
        } else {
            session.recentlyClosed.record(closed)
        }
    }

    func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus) {
        switch change {
        case .insert(let tab, _, _):
            if let browser = session.browserOwning(list) { session.tabsInserted(tab, in: browser) }
        case .detach(let detach):
            session.tabRemoved(detach.tab)
        case .replace(let replaced, let inserted, _):
            session.tabRemoved(replaced)
            if let browser = session.browserOwning(list) { session.tabsInserted(inserted, in: browser) }
        default:
            break
        }
        if status.activeChanged, status.newActive != nil, let browser = session.browserOwning(list) {
            browser.lastActiveAt = Date()
        }
    }
}

extension ClosedTab {
    /// What is remembered of `tab`, closing at `index` of `list`: nil for a tab that only ever showed
    /// the new-tab page (`RecordHistoryForWebStateAtIndex`, `IsTabInteresting`); else a window of its
    /// history around the current entry (`PopulateTab`: ``NavigationHistory/restoreWindow(maxPersist:)``),
    /// its group's visual data and its pinned state.
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` for an unrealized tab (never forgotten for it:
    ///   every close that remembers checks its tabs are realized before it changes anything,
    ///   `WebStateList.close`, `requireClosable`).
    init?(
        closing tab: WebState, at index: Int, in list: WebStateList, of browser: Browser, group: TabGroup?, wasActive: Bool,
        closedAt: Date = Date()
    ) throws(ModelError) {
        // `PopulateTab` first, then `IsTabInteresting` on what it kept (`CreateHistoricalTab` drops a
        // tab whose window is empty: every entry had an empty or reader-mode URL).
        let window = try tab.history.restoreWindow()
        guard !window.isEmpty, !window.isNewTabPageOnly else { return nil }
        self.init(
            tabID: tab.id, history: window, title: tab.title, faviconURL: tab.faviconURL,
            browserID: browser.id, index: index, group: group.map { ClosedTabGroup(id: $0.id, visualData: $0.visualData) },
            wasActive: wasActive, wasPinned: list.isPinned(at: index), closedAt: closedAt)
    }
}
