public import BrowserModel
public import BrowserRecords
public import Foundation

// Value types the mediators hand out: consumers (the HTTP edge, event streams, persistence) see only
// these, never the model's objects.

/// A tab as consumers see it.
public struct TabSnapshot: Sendable, Equatable {
    public var id: TabID
    public var browserID: BrowserID
    public var index: Int
    public var url: String
    public var title: String
    public var pinned: Bool
    public var groupID: TabGroupID?
    public var openerID: TabID?
    public var active: Bool
    public var loading: Bool
    public var progress: Double
    public var crashed: Bool
    public var faviconURL: String?
    public var canGoBack: Bool
    public var canGoForward: Bool
    public var historyIndex: Int
    public var historyCount: Int
    public var createdAt: Date
    public var lastActiveAt: Date
    /// The picture of its page its renderer took last (with its bytes while this run holds them), if any.
    public var snapshot: PageSnapshot?
    /// The navigation its page has not committed yet (``PendingNavigation``): its `url` is the tab's
    /// when it goes to a new entry.
    public var pending: PendingNavigation? = nil
}

/// A tab group as consumers see it.
public struct GroupSnapshot: Sendable, Equatable {
    public var id: TabGroupID
    public var browserID: BrowserID
    public var title: String
    public var color: TabGroupColor
    public var collapsed: Bool
    public var start: Int
    public var count: Int
    public var tabIDs: [TabID]
}

/// A window with its tabs and groups, at one version.
public struct WindowSnapshot: Sendable, Equatable {
    public var id: BrowserID
    public var profileID: ProfileID
    public var incognito: Bool
    public var version: Int
    public var activeIndex: Int
    public var pinnedCount: Int
    /// The tabs in order (shared between versions: see ``TabSnapshotList``).
    public var tabs: TabSnapshotList
    public var groups: [GroupSnapshot]
    public var createdAt: Date
    /// Its place and size on screen (WebDriver's window rect).
    public var bounds = WindowBounds()

    public var activeTabID: TabID? { activeIndex >= 0 ? tabs[activeIndex].id : nil }
    public var tabCount: Int { tabs.count }
}

/// A profile as consumers see it.
public struct ProfileSnapshot: Sendable, Equatable {
    public var id: ProfileID
    public var name: String
    public var incognito: Bool
    /// For an off-the-record profile, its regular profile.
    public var parentID: ProfileID?
    /// For a regular profile, its off-the-record profile if it exists.
    public var offTheRecordID: ProfileID?
    public var windowCount: Int
    public var createdAt: Date

    public init(id: ProfileID, name: String, incognito: Bool, parentID: ProfileID?, offTheRecordID: ProfileID?, windowCount: Int, createdAt: Date) {
        self.id = id
        self.name = name
        self.incognito = incognito
        self.parentID = parentID
        self.offTheRecordID = offTheRecordID
        self.windowCount = windowCount
        self.createdAt = createdAt
    }
}

/// One history entry.
public struct HistoryEntrySnapshot: Sendable, Equatable {
    public var url: String
    public var title: String
    public var transition: PageTransition
    public var timestamp: Date
}

/// A tab's history.
public struct HistorySnapshot: Sendable, Equatable {
    public var currentIndex: Int
    public var entries: [HistoryEntrySnapshot]
}

/// A tab of a recently-closed entry.
public struct ClosedTabSnapshot: Sendable, Equatable {
    public var id: ClosedTabID
    public var tabID: TabID
    public var url: String
    public var title: String
    public var browserID: BrowserID
    public var index: Int
    public var groupID: TabGroupID?
    public var wasActive: Bool
    public var wasPinned: Bool
    public var closedAt: Date
}

/// A recently-closed entry: a tab, a window's tabs or a group's tabs.
public struct ClosedEntrySnapshot: Sendable, Equatable {
    public var id: ClosedTabID
    public var kind: ClosedEntry.Kind
    /// The tab a restore leads with (the window's active tab, a group's first); a tab entry's tab.
    public var leading: ClosedTabSnapshot
    /// Every tab, in window order.
    public var tabs: [ClosedTabSnapshot]
    /// A group entry's group, as it was.
    public var group: ClosedTabGroup?
}

/// A close-all that can be undone, or what became of it.
public struct TabsClosingSnapshot: Sendable, Equatable {
    public enum State: String, Sendable { case pending, undone, confirmed }

    public var id: ClosedTabID
    public var profileID: ProfileID
    public var policy: TabsClosePolicy
    public var state: State
    /// The tabs it closed (pending, confirmed) or brought back (undone), window by window.
    public var tabIDs: [TabID]
    /// The windows the tabs were closed in, or (undone) are back in.
    public var browserIDs: [BrowserID]
    /// When it is confirmed by itself, while pending.
    public var undoableUntil: Date?
}

/// A broadcast property and its value.
public struct BroadcastSnapshot: Sendable, Equatable {
    public var key: String
    public var type: BroadcastValueType
    public var value: BroadcastValue?
}

/// The outcome of a close-many.
public struct CloseTabsResult: Sendable, Equatable {
    public var closedTabIDs: [TabID]
    public var activeTabID: TabID?
}

extension WebStateList {
    /// The snapshot of the tab at `index`.
    func tabSnapshot(at index: Int, browserID: BrowserID) -> TabSnapshot {
        let tab = webState(at: index)!
        return TabSnapshot(
            id: tab.id, browserID: browserID, index: index, url: tab.visibleURL, title: tab.title,
            pinned: isPinned(at: index), groupID: group(at: index)?.id, openerID: opener(at: index)?.webState.id,
            active: index == activeIndex, loading: tab.isLoading, progress: tab.progress, crashed: tab.isCrashed, faviconURL: tab.faviconURL,
            canGoBack: tab.canGoBack, canGoForward: tab.canGoForward,
            historyIndex: tab.lastCommittedIndex, historyCount: tab.historyCount,
            createdAt: tab.createdAt, lastActiveAt: tab.lastActiveAt, snapshot: tab.snapshot, pending: tab.pendingNavigation)
    }

    func groupSnapshot(_ group: TabGroup, browserID: BrowserID) -> GroupSnapshot {
        GroupSnapshot(
            id: group.id, browserID: browserID, title: group.visualData.title, color: group.visualData.color,
            collapsed: group.visualData.collapsed, start: group.range.start, count: group.range.count,
            tabIDs: (group.range.start..<group.range.end).map { webState(at: $0)!.id })
    }
}

extension Browser {
    /// The window's snapshot built from scratch: O(tabs). (Mediators keep theirs up to date from
    /// change notifications; this is also the oracle the tests compare them with.)
    func snapshot(version: Int) -> WindowSnapshot {
        let list = webStateList
        return snapshot(version: version, tabs: TabSnapshotList(browserID: id, slots: list.webStates.map { TabSlot.make($0, in: list) }))
    }

    /// The window's snapshot with `tabs` as its tab sequence (positions filled in from the list).
    func snapshot(version: Int, tabs: TabSnapshotList) -> WindowSnapshot {
        let list = webStateList
        var tabs = tabs
        tabs.activeIndex = list.activeIndex
        tabs.pinnedCount = list.pinnedCount
        return WindowSnapshot(
            id: id, profileID: browserState.id, incognito: isIncognito, version: version, activeIndex: list.activeIndex,
            pinnedCount: list.pinnedCount, tabs: tabs,
            groups: list.groups.sorted { $0.range.start < $1.range.start }.map { list.groupSnapshot($0, browserID: id) },
            createdAt: createdAt, bounds: bounds)
    }
}

extension WebState {
    /// - Throws: ``ModelError/historiesNotLoaded(_:)`` while unrealized.
    var historySnapshot: HistorySnapshot {
        get throws(ModelError) {
            let history = try history
            return HistorySnapshot(
                currentIndex: history.currentIndex,
                entries: history.items.map {
                    HistoryEntrySnapshot(url: $0.url, title: $0.title, transition: $0.transition, timestamp: $0.timestamp)
                })
        }
    }
}

extension ClosedTabSnapshot {
    init(_ tab: ClosedTab) {
        self.init(
            id: tab.id, tabID: tab.tabID, url: tab.history.currentItem?.url ?? "", title: tab.title, browserID: tab.browserID,
            index: tab.index, groupID: tab.groupID, wasActive: tab.wasActive, wasPinned: tab.wasPinned, closedAt: tab.closedAt)
    }
}

extension ClosedEntrySnapshot {
    init(_ entry: ClosedEntry) {
        let leading = entry.leadingTab
        self.init(
            id: entry.id, kind: entry.kind, leading: ClosedTabSnapshot(leading), tabs: entry.tabs.map(ClosedTabSnapshot.init),
            group: entry.kind == .group ? entry.tabs[0].group : nil)
    }
}

extension TabsClosingSnapshot {
    init(_ closing: TabsClosing, profileID: ProfileID, state: State, undoableUntil: Date? = nil) {
        self.init(
            id: closing.id, profileID: profileID, policy: closing.policy, state: state,
            tabIDs: closing.tabs.map(\.id), browserIDs: closing.parts.map(\.browserID), undoableUntil: undoableUntil)
    }
}

extension ProfileSnapshot {
    /// A stored regular profile, as lists and the cluster's directory show it.
    public init(stored record: ProfileRecord, windowCount: Int) {
        self.init(
            id: ProfileID(rawValue: record.id), name: record.name, incognito: false, parentID: nil, offTheRecordID: nil,
            windowCount: windowCount, createdAt: record.createdAt)
    }
}

extension ProfileSnapshot {
    /// The same snapshot with strings of its own, allocated on the calling thread (a snapshot that
    /// outlives the heap its strings were made in, see ``LoadThread``).
    func copied() -> ProfileSnapshot {
        func own(_ text: String) -> String {
            String(unsafeUninitializedCapacity: text.utf8.count) { $0.initialize(fromContentsOf: text.utf8) }
        }
        return ProfileSnapshot(
            id: ProfileID(rawValue: own(id.rawValue)), name: own(name), incognito: incognito, parentID: parentID.map { ProfileID(rawValue: own($0.rawValue)) },
            offTheRecordID: offTheRecordID.map { ProfileID(rawValue: own($0.rawValue)) }, windowCount: windowCount, createdAt: createdAt)
    }
}
