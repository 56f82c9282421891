public import Foundation

/// The group a closed tab was in when it closed: its id and visual data, so a restore can rebuild it.
public struct ClosedTabGroup: Sendable, Equatable {
    public let id: TabGroupID
    public let visualData: TabGroupVisualData

    public init(id: TabGroupID, visualData: TabGroupVisualData) {
        self.id = id
        self.visualData = visualData
    }
}

/// A tab closed in a regular window, kept so it can be restored (Chromium's `TabRestoreService::Tab`).
public struct ClosedTab: Sendable {
    public let id: ClosedTabID
    public let tabID: TabID
    public let history: NavigationHistory
    public let title: String
    public let faviconURL: String?
    public let browserID: BrowserID
    public let index: Int
    public let group: ClosedTabGroup?
    public let wasActive: Bool
    public let wasPinned: Bool
    public let closedAt: Date

    public var groupID: TabGroupID? { group?.id }

    public init(
        id: ClosedTabID = .make(), tabID: TabID, history: NavigationHistory, title: String, faviconURL: String?,
        browserID: BrowserID, index: Int, group: ClosedTabGroup?, wasActive: Bool, wasPinned: Bool,
        closedAt: Date = Date()
    ) {
        self.id = id
        self.tabID = tabID
        self.history = history
        self.title = title
        self.faviconURL = faviconURL
        self.browserID = browserID
        self.index = index
        self.group = group
        self.wasActive = wasActive
        self.wasPinned = wasPinned
        self.closedAt = closedAt
    }
}

/// One entry of the recently-closed list (Chromium's `TabRestoreService::Entry`): a tab, a closed
/// window's tabs (`Window`), or a closed group's tabs (`Group`).
public struct ClosedEntry: Sendable {
    public enum Kind: String, Sendable {
        case tab, window, group
    }

    public let id: ClosedTabID
    public let kind: Kind
    /// In the order they had in their window; exactly one for a tab entry, whose id is the entry's.
    public let tabs: [ClosedTab]
    /// The window the entry was closed in.
    public var browserID: BrowserID { tabs[0].browserID }
    public var closedAt: Date { tabs[0].closedAt }
    /// The bytes of text the entry's histories and favicon URLs hold.
    public let byteCount: Int

    /// A tab entry.
    public init(tab: ClosedTab) {
        self.init(id: tab.id, kind: .tab, tabs: [tab])
    }

    /// - Precondition: `tabs` is not empty; a tab entry has one tab, with the entry's id.
    public init(id: ClosedTabID = .make(), kind: Kind, tabs: [ClosedTab]) {
        precondition(!tabs.isEmpty, "a recently-closed entry holds at least one tab")
        precondition(kind != .tab || (tabs.count == 1 && tabs[0].id == id), "a tab entry is its one tab")
        self.id = id
        self.kind = kind
        self.tabs = tabs.sorted { $0.index < $1.index }
        self.byteCount = tabs.reduce(0) { $0 + $1.history.byteCount + ($1.faviconURL?.utf8.count ?? 0) }
    }

    /// The tab a restore leads with: a window's active tab (else its first), a group's first tab.
    public var leadingTab: ClosedTab { kind == .window ? (tabs.first { $0.wasActive } ?? tabs[0]) : tabs[0] }
}

/// The recently closed entries of a regular profile: newest first, capped (default 25 entries, as
/// Chromium's `kMaxEntries`). Off-the-record profiles have none. Observers are told what changed (as
/// Chromium's `TabRestoreServiceObserver` is), so session saving writes only the entries that came or went.
///
/// It also holds the tabs a close-all parked (``park(_:)``): not listed, not restorable one by one,
/// saved so that a crash during the undo window still remembers them. Confirming turns them into tab
/// entries; undoing drops them.
public final class RecentlyClosedTabs {
    public private(set) var entries: [ClosedEntry] = [] {
        // At most `capacity` (25) entries: summing them again is O(capacity), whatever the profile's size.
        didSet { recount() }
    }
    /// Close-all operations awaiting confirmation or undo, by id.
    public private(set) var parked: [ClosedTabID: ClosedEntry] = [:] {
        didSet { recount() }
    }
    public let capacity: Int
    /// The bytes of text the entries' histories hold. Parked ones are not counted here: the close-all
    /// that parked them keeps its tabs charged whole (histories, pictures, favicons) until it is
    /// confirmed (they become entries, counted here) or undone (``TabsClosing``).
    public private(set) var byteCount = 0
    /// The budget of the profile the list belongs to, charged with what it holds.
    public internal(set) weak var budget: ByteBudget? {
        didSet {
            oldValue?.charge(-byteCount)
            budget?.charge(byteCount)
        }
    }
    private var observers: [WeakRecentlyClosedTabsObserver] = []

    public init(capacity: Int = ModelLimits().recentlyClosedEntries) { self.capacity = capacity }

    private func recount() {
        let now = entries.reduce(0) { $0 + $1.byteCount }
        budget?.charge(now - byteCount)
        byteCount = now
    }

    /// Records an entry as the newest, dropping the oldest past the cap.
    /// - Observers: `didRecord` for the new entry, then `didRemove` with the entries dropped past
    ///   the cap (oldest last), if any.
    public func record(_ entry: ClosedEntry) {
        entries.insert(entry, at: 0)
        var dropped: [ClosedEntry] = []
        if entries.count > capacity {
            dropped = Array(entries[capacity...])
            entries.removeLast(entries.count - capacity)
        }
        for box in observers { box.observer?.recentlyClosedTabs(self, didRecord: entry, parked: false) }
        if !dropped.isEmpty { notifyRemoved(dropped.map(\.id)) }
    }

    /// Records a closed tab as the newest entry.
    public func record(_ tab: ClosedTab) { record(ClosedEntry(tab: tab)) }

    /// Takes an entry out of the list.
    /// - Throws: `closedTabNotFound` when no entry has that id (nothing changes, no notification).
    /// - Observers: `didRemove` with the entry, after removal.
    public func take(_ id: ClosedTabID) throws -> ClosedEntry {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { throw ModelError.closedTabNotFound(id) }
        let entry = entries.remove(at: index)
        notifyRemoved([id])
        return entry
    }

    /// The newest entry closed in window `browserID` (a window entry never is: its window is gone).
    public func mostRecent(in browserID: BrowserID) -> ClosedEntry? {
        entries.first { $0.kind != .window && $0.browserID == browserID }
    }

    // MARK: Parked (close-all awaiting confirmation)

    /// Parks the tabs a close-all closed, under the entry's id.
    /// - Precondition: no parked entry has that id.
    /// - Observers: `didRecord(parked: true)`.
    public func park(_ entry: ClosedEntry) {
        precondition(parked[entry.id] == nil, "parked twice")
        parked[entry.id] = entry
        for box in observers { box.observer?.recentlyClosedTabs(self, didRecord: entry, parked: true) }
    }

    /// Drops a parked entry (its close-all was undone). Nothing happens for an unknown id.
    /// - Observers: `didRemove` with its id, when there was one.
    public func unpark(_ id: ClosedTabID) {
        guard parked.removeValue(forKey: id) != nil else { return }
        notifyRemoved([id])
    }

    /// Confirms a parked entry: its tabs become tab entries, recorded as closing them one by one from
    /// the last does (so the first tab is the newest), as Chromium records each tab a confirmed
    /// `TabsCloser` closes. Nothing happens for an unknown id.
    /// - Observers: `didRemove` for the parked entry, then `didRecord` per tab (and `didRemove` past the cap).
    public func confirm(_ id: ClosedTabID) {
        guard let entry = parked.removeValue(forKey: id) else { return }
        notifyRemoved([id])
        for tab in entry.tabs.reversed() { record(tab) }
    }

    // MARK: Loading and wiping

    /// Restores entries as they were saved (newest first), and the parked ones saved by a close-all
    /// that was never confirmed nor undone (the process ended meanwhile): those count as confirmed, in
    /// their place by when they were closed. Sends no notification: what was saved is already on disk.
    public func restore(_ saved: [ClosedEntry], parked savedParked: [ClosedEntry] = []) {
        // Parked tabs stay parked rows on disk until they leave the list, so at every load they take
        // their place by when they were closed, among entries recorded after the crash too (newest
        // first; at equal times the parked ones first, the first tab newest, as `confirm` records them).
        let confirmed = savedParked.flatMap { $0.tabs.map(ClosedEntry.init(tab:)) }
        let all = Array(
            (confirmed.map { ($0, 0) } + saved.map { ($0, 1) }).enumerated()
                .sorted { ($0.element.0.closedAt, -$0.element.1, -$0.offset) > ($1.element.0.closedAt, -$1.element.1, -$1.offset) }
                .map(\.element.0).prefix(capacity))
        parked = [:]
        entries = all
    }

    /// Empties the list (the profile's data is being wiped).
    /// - Observers: `didRemove` with every entry, when there were any.
    public func removeAll() {
        guard !entries.isEmpty || !parked.isEmpty else { return }
        let ids = entries.map(\.id) + parked.keys
        entries.removeAll()
        parked.removeAll()
        notifyRemoved(ids)
    }

    public func addObserver(_ observer: any RecentlyClosedTabsObserver) {
        observers.removeAll { $0.observer == nil || $0.observer === observer }
        observers.append(WeakRecentlyClosedTabsObserver(observer: observer))
    }

    public func removeObserver(_ observer: any RecentlyClosedTabsObserver) {
        observers.removeAll { $0.observer == nil || $0.observer === observer }
    }

    private func notifyRemoved(_ ids: [ClosedTabID]) {
        for box in observers { box.observer?.recentlyClosedTabs(self, didRemove: ids) }
    }
}

/// Watches entries come and go in a profile's recently-closed list.
public protocol RecentlyClosedTabsObserver: AnyObject {
    /// `entry` is now the newest entry, or (`parked`) a close-all's parked tabs.
    func recentlyClosedTabs(_ list: RecentlyClosedTabs, didRecord entry: ClosedEntry, parked: Bool)
    /// The entries with `ids` left the list (taken, dropped past the cap, unparked, confirmed or wiped).
    func recentlyClosedTabs(_ list: RecentlyClosedTabs, didRemove ids: [ClosedTabID])
}

private struct WeakRecentlyClosedTabsObserver {
    weak var observer: (any RecentlyClosedTabsObserver)?
}
