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
/// profiles have none.
public final class RecentlyClosedTabs {
    public private(set) var entries: [ClosedTab] = []
    public let capacity: Int

    public init(capacity: Int = ModelLimits().recentlyClosedEntries) { self.capacity = capacity }

    /// Records a closed tab as the newest entry, dropping the oldest past the cap.
    public func record(_ tab: ClosedTab) {
        entries.insert(tab, at: 0)
        if entries.count > capacity { entries.removeLast(entries.count - capacity) }
    }

    /// Takes an entry out of the list.
    public func take(_ id: ClosedTabID) throws -> ClosedTab {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { throw ModelError.closedTabNotFound(id) }
        return entries.remove(at: index)
    }

    /// The newest entry closed in window `browserID`.
    public func mostRecent(in browserID: BrowserID) -> ClosedTab? {
        entries.first { $0.browserID == browserID }
    }

    /// Restores entries as they were saved (newest first).
    public func restore(_ saved: [ClosedTab]) {
        entries = Array(saved.prefix(capacity))
    }

    public func removeAll() { entries.removeAll() }
}
