public import Foundation

/// A tab closed in a regular window, kept so it can be restored (Chromium's TabRestoreService).
public struct ClosedTab: Sendable {
    public let id: ClosedTabID
    public let tabID: TabID
    public let history: NavigationHistory
    public let title: String
    public let faviconURL: String?
    public let browserID: BrowserID
    public let index: Int
    public let groupID: TabGroupID?
    public let wasActive: Bool
    public let wasPinned: Bool
    public let closedAt: Date

    public init(id: ClosedTabID = .make(), tabID: TabID, history: NavigationHistory, title: String, faviconURL: String?,
                browserID: BrowserID, index: Int, groupID: TabGroupID?, wasActive: Bool, wasPinned: Bool,
                closedAt: Date = Date()) {
        self.id = id
        self.tabID = tabID
        self.history = history
        self.title = title
        self.faviconURL = faviconURL
        self.browserID = browserID
        self.index = index
        self.groupID = groupID
        self.wasActive = wasActive
        self.wasPinned = wasPinned
        self.closedAt = closedAt
    }
}

/// The recently closed tabs of a regular profile: newest first, capped (default 25). Off-the-record
/// profiles have none. Observers are told what changed (as Chromium's `TabRestoreServiceObserver`
/// is), so session saving writes only the entries that came or went.
public final class RecentlyClosedTabs {
    public private(set) var entries: [ClosedTab] = [] {
        // At most `capacity` (25) entries: summing them again is O(capacity), whatever the profile's size.
        didSet {
            let now = entries.reduce(0) { $0 + $1.history.byteCount }
            budget?.charge(now - byteCount)
            byteCount = now
        }
    }
    public let capacity: Int
    /// The bytes of text the entries' histories hold.
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

    /// Records a closed tab as the newest entry, dropping the oldest past the cap.
    /// - Observers: `didRecord` for the new entry, then `didRemove` with the entries dropped past
    ///   the cap (oldest last), if any.
    public func record(_ tab: ClosedTab) {
        entries.insert(tab, at: 0)
        var dropped: [ClosedTab] = []
        if entries.count > capacity {
            dropped = Array(entries[capacity...])
            entries.removeLast(entries.count - capacity)
        }
        for box in observers { box.observer?.recentlyClosedTabs(self, didRecord: tab) }
        if !dropped.isEmpty { notifyRemoved(dropped.map(\.id)) }
    }

    /// Takes an entry out of the list.
    /// - Throws: `closedTabNotFound` when no entry has that id (nothing changes, no notification).
    /// - Observers: `didRemove` with the entry, after removal.
    public func take(_ id: ClosedTabID) throws -> ClosedTab {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { throw ModelError.closedTabNotFound(id) }
        let entry = entries.remove(at: index)
        notifyRemoved([id])
        return entry
    }

    /// The newest entry closed in window `browserID`.
    public func mostRecent(in browserID: BrowserID) -> ClosedTab? {
        entries.first { $0.browserID == browserID }
    }

    /// Restores entries as they were saved (newest first). Sends no notification: what was saved
    /// is already on disk.
    public func restore(_ saved: [ClosedTab]) {
        entries = Array(saved.prefix(capacity))
    }

    /// Empties the list (the profile's data is being wiped).
    /// - Observers: `didRemove` with every entry, when there were any.
    public func removeAll() {
        guard !entries.isEmpty else { return }
        let ids = entries.map(\.id)
        entries.removeAll()
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
    /// `tab` is now the newest entry.
    func recentlyClosedTabs(_ list: RecentlyClosedTabs, didRecord tab: ClosedTab)
    /// The entries with `ids` left the list (taken, dropped past the cap, or wiped).
    func recentlyClosedTabs(_ list: RecentlyClosedTabs, didRemove ids: [ClosedTabID])
}

private struct WeakRecentlyClosedTabsObserver {
    weak var observer: (any RecentlyClosedTabsObserver)?
}
