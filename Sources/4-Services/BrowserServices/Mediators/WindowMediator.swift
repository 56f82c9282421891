import BrowserModel
import BrowserRecords

/// One window's tab mediator: handles the window's tab and group commands, watches its list and tabs,
/// keeps its version, and publishes a value snapshot of it after every change.
///
/// It registers its commands on the window's dispatcher when it starts and unregisters them when it
/// stops. It holds no HTTP or SQLite types: what leaves it is snapshots.
final class WindowMediator: WebStateListObserver {
    unowned let browser: Browser
    unowned let session: ProfileSession
    let snapshots: SnapshotIndex
    /// The profile's touched windows: this one joins at its first change of an operation.
    let touches: TouchedWindows
    /// Bumped by every change of the window or its tabs; a no-op changes nothing and so keeps it.
    var version: Int
    private var dirty = true
    /// What must still be written to disk.
    var persistence = WindowPersistenceState.fresh
    /// The window's tabs as the next snapshot shows them, kept from change notifications: a change
    /// edits one slot (or one chunk), so publishing costs O(what changed), not O(tabs).
    private var slots: TabSnapshotList
    /// Tabs whose slot must be made again before the next publish (their values changed).
    private var staleSlots: [ObjectIdentifier: WebState] = [:]
    /// Each tab's place in the window as written to disk (``TabRecord/position``): a tab that joins or
    /// moves gets one between its neighbours', so only its row is written; the window is renumbered
    /// (every row written) only when no room is left between two neighbours.
    private var positions: [ObjectIdentifier: Double] = [:]
    /// Set when a change moved a run of tabs (a group move) or a restore set values silently: the
    /// next publish makes every slot again.
    private var slotsNeedRebuild = false
    /// Tabs that joined (true) and left (false) since the last publish, in order: the snapshots's tab
    /// index is updated from these instead of comparing whole tab lists. Nil until the first publish,
    /// which indexes every tab.
    private var tabMoves: [(TabID, joined: Bool)]?

    /// The URL a new tab shows when none is given.
    static let newTabURL = NavigationItem.newTabPageURL

    init(browser: Browser, session: ProfileSession, snapshots: SnapshotIndex, touches: TouchedWindows, version: Int = 1) {
        self.browser = browser
        self.session = session
        self.snapshots = snapshots
        self.touches = touches
        self.slots = TabSnapshotList(browserID: browser.id, slots: browser.webStateList.webStates.map { TabSlot.make($0, in: browser.webStateList) })
        for (index, tab) in browser.webStateList.webStates.enumerated() { positions[ObjectIdentifier(tab)] = Double(index) * Self.positionStep }
        self.version = version
        // The list forwards its tabs' own changes (no observer registration per tab).
        browser.webStateList.addObserver(self)
        registerCommands()
    }

    func stop() {
        browser.dispatcher.unregisterAll(owner: self)
        browser.webStateList.removeObserver(self)
    }

    /// Publishes the window's snapshot if it changed since the last one.
    func publish() {
        guard dirty else { return }
        dirty = false
        let list = self.list
        if slotsNeedRebuild {
            slots = TabSnapshotList(browserID: browser.id, slots: list.webStates.map { TabSlot.make($0, in: list) })
            slotsNeedRebuild = false
        } else {
            for tab in staleSlots.values {
                let index = list.index(of: tab)
                if index >= 0 { slots.replace(at: index, with: TabSlot.make(tab, in: list)) }
            }
        }
        staleSlots.removeAll(keepingCapacity: true)
        snapshots.putWindow(browser.snapshot(version: version, tabs: slots), rootID: session.browserState.id, tabMoves: tabMoves)
        tabMoves = []
    }

    private func stale(_ tab: WebState) { staleSlots[ObjectIdentifier(tab)] = tab }

    static let positionStep = TabRecord.positionStep

    /// The written position of `tab`.
    func position(of tab: WebState) -> Double { positions[ObjectIdentifier(tab)] ?? 0 }

    /// Sets positions read from disk (a restore), so later tabs go between them as they are there.
    func setPositions(_ stored: [(WebState, Double)]) {
        positions.reserveCapacity(positions.count + stored.count)
        for (tab, position) in stored { positions[ObjectIdentifier(tab)] = position }
    }

    /// Set while a new window is filled from its records (``BrowserService/restoreWindow``): its inserts
    /// are not handled one by one — its snapshot is built once after (``markDirtyForPublish()``), its
    /// positions are the stored ones (``setPositions(_:)``), nothing of it is to be written, and no
    /// consumer watches it yet.
    var restoring = false

    /// Gives the tabs in `range` (just inserted or moved there, in order) positions evenly between
    /// the neighbours of the run, and marks their rows; renumbers the window when there is no room.
    private func place(_ range: Range<Int>) {
        let list = self.list
        let before = range.lowerBound > 0 ? list.webState(at: range.lowerBound - 1).map(position(of:)) : nil
        let after = range.upperBound < list.count ? list.webState(at: range.upperBound).map(position(of:)) : nil
        let low = before ?? ((after ?? Self.positionStep * Double(range.count)) - Self.positionStep * Double(range.count + 1))
        let high = after ?? (low + Self.positionStep * Double(range.count + 1))
        let step = (high - low) / Double(range.count + 1)
        guard step > Swift.max(1e-9, Swift.abs(high) * 1e-12) else { return renumber() }
        for (offset, index) in range.enumerated() {
            let tab = list.webState(at: index)!
            positions[ObjectIdentifier(tab)] = low + step * Double(offset + 1)
            persistence.mark(tab)
        }
    }

    /// Every tab gets a fresh position, and every row is written (rare: room ran out between two tabs).
    private func renumber() {
        for (index, tab) in list.webStates.enumerated() {
            positions[ObjectIdentifier(tab)] = Double(index) * Self.positionStep
            persistence.mark(tab)
        }
    }

    /// Makes the next publish send a snapshot (after the version was set from storage) and index
    /// every tab again.
    func markDirtyForPublish() {
        dirty = true
        tabMoves = nil
        slotsNeedRebuild = true
        touches.touch(browser)
    }

    /// The window moved or was resized: its next snapshot says so (no new version: the window's
    /// REST representation does not show its bounds).
    func boundsChanged() {
        touches.touch(browser)
        dirty = true
    }

    private func changed() {
        version += 1
        touches.touch(browser)
        dirty = true
    }

    // MARK: Observation

    func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus) {
        if restoring, case .insert = change { return }
        changed()
        noteChange(change, status: status)
        switch change {
        case .insert(let tab, let index, _):
            tabMoves?.append((tab.id, true))
            if !slotsNeedRebuild { slots.insert(TabSlot.make(tab, in: list), at: index) }
            place(index..<(index + 1))
        case .detach(let detach):
            tabMoves?.append((detach.tab.id, false))
            staleSlots[ObjectIdentifier(detach.tab)] = nil
            positions[ObjectIdentifier(detach.tab)] = nil
            if !slotsNeedRebuild { slots.remove(at: detach.fromIndex) }
        case .replace(let replaced, let inserted, let index):
            tabMoves?.append((replaced.id, false))
            tabMoves?.append((inserted.id, true))
            staleSlots[ObjectIdentifier(replaced)] = nil
            positions[ObjectIdentifier(inserted)] = positions.removeValue(forKey: ObjectIdentifier(replaced))
            if !slotsNeedRebuild { slots.replace(at: index, with: TabSlot.make(inserted, in: list)) }
        case .move(let tab, let from, let to, _, let oldGroup, let newGroup):
            if !slotsNeedRebuild { slots.insert(slots.remove(at: from), at: to) }
            if oldGroup !== newGroup { stale(tab) }
            place(to..<(to + 1))
        case .statusOnly(let tab, _, _, let oldGroup, let newGroup):
            if let tab, oldGroup !== newGroup { stale(tab) }
        case .openerChange(let tab, _):
            stale(tab)
        case .groupMove(_, _, let toRange):
            slotsNeedRebuild = true
            place(toRange.start..<toRange.end)
        case .groupCreate, .groupVisualDataUpdate, .groupDelete:
            break
        }
        // The newly active tab's last-active time.
        if status.activeChanged, let active = status.newActive { stale(active) }
    }

    func webStateList(_ list: WebStateList, tabDidChange webState: WebState, change: WebStateChange) {
        changed()
        switch change {
        case .crashed: break  // the live page's state, never stored
        case .snapshot: persistence.markSnapshot(webState)  // its own row, beside the tab's
        default: persistence.mark(webState)
        }
        stale(webState)
    }

    // MARK: Helpers for handlers

    var list: WebStateList { browser.webStateList }
    var limits: ModelLimits { session.limits }

    func index(of id: TabID) throws -> Int {
        let index = list.index(ofTabWithID: id)
        guard index >= 0 else { throw ModelError.tabNotFound(id) }
        return index
    }

    func tab(_ id: TabID) throws -> WebState { list.webState(at: try index(of: id))! }

    func group(_ id: TabGroupID) throws -> TabGroup {
        guard let group = list.group(withID: id) else { throw ModelError.groupNotFound(id) }
        return group
    }

    func snapshot(of id: TabID) throws -> TabSnapshot {
        list.tabSnapshot(at: try index(of: id), browserID: browser.id)
    }

    func snapshot(of group: TabGroup) -> GroupSnapshot { list.groupSnapshot(group, browserID: browser.id) }

    func url(_ string: String) throws -> String { try URLNormalizer.normalize(string, maxBytes: limits.urlBytes) }

    /// A new tab showing `url`.
    /// - Throws: ``ModelError/profileFull(used:adding:limit:)`` when the profile has no room for its URL.
    func newTab(url: String, transition: PageTransition) throws -> WebState {
        try browser.browserState.budget.check(adding: url.utf8.count)
        let tab = WebState()
        try tab.navigate(to: url, transition: transition, maxItems: limits.historyEntries)
        return tab
    }
}
