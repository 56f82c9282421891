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

    /// Closes a window: its tabs are closed as a user action in one batch (so a regular window's tabs
    /// are remembered as recently closed) and it leaves the browser list.
    public func closeBrowser(_ browser: Browser) throws {
        guard browserList.browser(withID: browser.id) === browser else { throw ModelError.browserNotFound(browser.id) }
        try browser.webStateList.closeAll(flags: .userAction)
        browserList.remove(browser)
        browser.webStateList.removeObserver(tracker)
        owners[ObjectIdentifier(browser.webStateList)] = nil
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
    /// - Returns: the tab's new index.
    /// - Throws: when the tab or window is unknown, the modes differ, or the index is out of range
    ///   (`0…count` of the destination, or `0…count−1` within one window).
    @discardableResult
    public func moveTab(_ id: TabID, to destination: Browser, index: Int?, activate: Bool = false, pinned: Bool = false) throws -> Int {
        guard let (source, from) = locate(id) else { throw ModelError.tabNotFound(id) }
        guard browserList.browser(withID: destination.id) === destination else { throw ModelError.browserNotFound(destination.id) }
        if source === destination {
            let to = index ?? destination.webStateList.count - 1
            try destination.webStateList.move(from: from, to: to)
            let now = destination.webStateList.index(ofTabWithID: id)
            if activate { try destination.webStateList.activate(at: now) }
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
        return try list.insert(tab, InsertionParams(index: index, activate: activate || list.isEmpty, pinned: pinned))
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

    /// Restores a closed tab: at its old index in its old window when that window still exists
    /// (clamped to the list, back in its group if the group still exists), else in a new regular window
    /// (Chromium's `TabRestoreServiceHelper::RestoreEntryById`). Activated unless `activate` is false, whether or not it was
    /// active when closed (Chromium: `TabRestoreTest.MiddleTab`; iOS `AddRestoredTab` inserts with `Activate()`).
    /// - Throws: when the entry is unknown, or the profile has its most windows.
    @discardableResult
    public func restoreClosedTab(_ entryID: ClosedTabID, activate: Bool = true) throws -> (browser: Browser, tab: WebState, index: Int) {
        guard let entry = recentlyClosed.entries.first(where: { $0.id == entryID }) else {
            throw ModelError.closedTabNotFound(entryID)
        }
        return try restore(entry, activate: activate)
    }

    /// Restores the most recent tab closed in `browser` (activated unless `activate` is false).
    @discardableResult
    public func restoreMostRecentClosedTab(in browser: Browser, activate: Bool = true) throws -> (browser: Browser, tab: WebState, index: Int) {
        guard let entry = recentlyClosed.mostRecent(in: browser.id) else {
            throw ModelError.invalidArgument("window \(browser.id) has no recently closed tab")
        }
        return try restore(entry, activate: activate)
    }

    private func restore(_ entry: ClosedTab, activate: Bool) throws -> (browser: Browser, tab: WebState, index: Int) {
        let tab = WebState(history: entry.history, title: entry.title, faviconURL: entry.faviconURL)
        var params = InsertionParams(activate: activate)
        let target: Browser
        if let original = browserList.browser(withID: entry.browserID), !original.isIncognito {
            target = original
            let list = original.webStateList
            params.index = min(entry.index, list.count)
            if let groupID = entry.groupID, let group = list.group(withID: groupID) {
                params.group = group
            } else if entry.wasPinned {
                params.pinned = true
            }
        } else {
            // Its window is gone: a new window, as Chromium's tab restore service makes one
            // (`TabRestoreServiceHelper::RestoreEntryById`: no live context with the tab's browser id).
            target = try createBrowser()
        }
        let index = try target.webStateList.insert(tab, params)
        _ = try recentlyClosed.take(entry.id)
        return (target, tab, index)
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
        guard !tab.history.isEmpty, !tab.history.isNewTabPageOnly else { return }
        session.recentlyClosed.record(ClosedTab(
            tabID: tab.id, history: tab.history.restoreWindow(), title: tab.title, faviconURL: tab.faviconURL, browserID: browser.id,
            index: detach.fromIndex, groupID: detach.group?.id, wasActive: status.oldActive === tab,
            wasPinned: list.isPinned(at: detach.fromIndex)))
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
