public import BrowserModel

// The payloads of the window's tab and group commands (TabCommands): plain values the HTTP edge builds.

/// Opens a tab (REST `POST …/tabs`).
public struct OpenTabRequest: Sendable {
    public var url: String
    public var index: Int?
    public var activate: Bool
    public var openerID: TabID?
    public var inheritOpener: Bool
    public var pinned: Bool
    public var groupID: TabGroupID?
    public var transition: PageTransition

    public init(
        url: String, index: Int? = nil, activate: Bool = true, openerID: TabID? = nil, inheritOpener: Bool = false,
        pinned: Bool = false, groupID: TabGroupID? = nil, transition: PageTransition = .typed
    ) {
        self.url = url
        self.index = index
        self.activate = activate
        self.openerID = openerID
        self.inheritOpener = inheritOpener
        self.pinned = pinned
        self.groupID = groupID
        self.transition = transition
    }
}

/// A move within a window or into another window of the same profile.
public struct MoveTabRequest: Sendable {
    public var tabID: TabID
    /// Where to; nil (only with a group) is the group's end.
    public var index: Int?
    public var destination: BrowserID?
    public var activate: Bool
    /// For a move to another window: arrive pinned (the pinned state never travels by itself).
    public var pinned: Bool
    /// Join this group of the destination window (`MoveToGroup`, or an insert `InGroup` across windows).
    public var groupID: TabGroupID?

    public init(
        tabID: TabID, index: Int?, destination: BrowserID? = nil, activate: Bool = false, pinned: Bool = false,
        groupID: TabGroupID? = nil
    ) {
        self.tabID = tabID
        self.index = index
        self.destination = destination
        self.activate = activate
        self.pinned = pinned
        self.groupID = groupID
    }
}

/// The picture of a tab's page its renderer took, with its bytes (the edge checked them: an image of
/// a known type within its size limit, named by a digest).
public struct SnapshotUpdate: Sendable {
    public var tabID: TabID
    public var snapshot: PageSnapshot

    public init(tabID: TabID, snapshot: PageSnapshot) {
        self.tabID = tabID
        self.snapshot = snapshot
    }
}

/// Page state a renderer reports, and the opener (`.some(nil)` clears it).
public struct PageStateUpdate: Sendable {
    public var tabID: TabID
    public var title: String?
    public var loading: Bool?
    public var progress: Double?
    public var faviconURL: String??
    public var openerID: TabID??
    /// The page's renderer crashed (true), or runs again (false).
    public var crashed: Bool?

    public init(
        tabID: TabID, title: String? = nil, loading: Bool? = nil, progress: Double? = nil,
        faviconURL: String?? = nil, openerID: TabID?? = nil, crashed: Bool? = nil
    ) {
        self.tabID = tabID
        self.crashed = crashed
        self.title = title
        self.loading = loading
        self.progress = progress
        self.faviconURL = faviconURL
        self.openerID = openerID
    }
}

/// A history move or a new navigation.
public enum TabNavigation: Sendable {
    case navigate(url: String, transition: PageTransition)
    /// The current entry replaced (a renderer's redirect, `location.replace`, `replaceState`).
    case replaceCurrent(url: String, transition: PageTransition)
    /// A new entry the page pushed within its document (`history.pushState`): added even to its own URL.
    case pushWithinDocument(url: String, transition: PageTransition)
    case back, forward, reload
    case go(offset: Int)
    /// The tab's page committed its pending navigation `id` (at `url` when it ended elsewhere: a redirect).
    case commitPending(id: Int, url: String?)
    /// The tab's page ended its pending navigation `id` without a commit (a 204, a download, a cancel).
    case discardPending(id: Int)
}

public struct NavigateRequest: Sendable {
    public var tabID: TabID
    public var navigation: TabNavigation
    /// Whether a client's navigation (navigate, back, forward, go, reload) waits for the tab's page to
    /// commit it (``PendingNavigation``): so while a renderer's live page shows the tab. Otherwise it
    /// commits at once (no page will, or the page already did: a renderer's report).
    public var pends: Bool
    public init(tabID: TabID, navigation: TabNavigation, pends: Bool = false) {
        self.tabID = tabID
        self.navigation = navigation
        self.pends = pends
    }
}

public struct PinRequest: Sendable {
    public var tabID: TabID
    public var pinned: Bool
    public init(tabID: TabID, pinned: Bool) {
        self.tabID = tabID
        self.pinned = pinned
    }
}

/// Duplicate a tab (`chrome::DuplicateTabAt`): the copy goes right after it and, unless `activate` is
/// false, becomes active with the original as its opener, the other tabs' openers forgotten.
public struct DuplicateRequest: Sendable {
    public var tabID: TabID
    public var activate: Bool
    public init(tabID: TabID, activate: Bool = true) {
        self.tabID = tabID
        self.activate = activate
    }
}

public struct ReplaceRequest: Sendable {
    public var tabID: TabID
    public var url: String
    public init(tabID: TabID, url: String) {
        self.tabID = tabID
        self.url = url
    }
}

/// Which tabs a close-many closes.
public enum CloseTabsSelector: Sendable {
    case tabs([TabID])
    case all
    case allNonPinned
    case allExcept(TabID)
    case group(TabGroupID)
}

public struct CreateGroupRequest: Sendable {
    public var tabIDs: [TabID]
    public var title: String?
    public var color: TabGroupColor?
    public init(tabIDs: [TabID], title: String? = nil, color: TabGroupColor? = nil) {
        self.tabIDs = tabIDs
        self.title = title
        self.color = color
    }
}

public struct UpdateGroupRequest: Sendable {
    public var groupID: TabGroupID
    public var title: String?
    public var color: TabGroupColor?
    public var collapsed: Bool?
    public init(groupID: TabGroupID, title: String? = nil, color: TabGroupColor? = nil, collapsed: Bool? = nil) {
        self.groupID = groupID
        self.title = title
        self.color = color
        self.collapsed = collapsed
    }
}

public struct GroupTabsRequest: Sendable {
    public var groupID: TabGroupID?
    public var tabIDs: [TabID]
    public init(groupID: TabGroupID? = nil, tabIDs: [TabID]) {
        self.groupID = groupID
        self.tabIDs = tabIDs
    }
}

public struct MoveGroupRequest: Sendable {
    public var groupID: TabGroupID
    public var beforeIndex: Int
    public init(groupID: TabGroupID, beforeIndex: Int) {
        self.groupID = groupID
        self.beforeIndex = beforeIndex
    }
}

public struct BroadcastUpdate: Sendable {
    public var key: String
    public var value: BroadcastValue
    public init(key: String, value: BroadcastValue) {
        self.key = key
        self.value = value
    }
}

/// Which recently closed tab to restore (nil: the window's most recent) and whether it becomes the
/// active tab (Chromium activates a restored tab; `activate: false` restores it in the background).
public struct RestoreClosedTabRequest: Sendable {
    public var entry: ClosedTabID?
    public var activate: Bool
    /// An empty window made for the restore, used when the entry needs a new window.
    public var newWindow: BrowserID?

    public init(entry: ClosedTabID? = nil, activate: Bool = true, newWindow: BrowserID? = nil) {
        self.entry = entry
        self.activate = activate
        self.newWindow = newWindow
    }
}

/// A close-all (Chromium iOS `TabsCloser::CloseTabs`) over one or more windows of a profile.
public struct CloseAllTabsRequest: Sendable {
    /// The windows whose tabs close (of one profile and one mode).
    public var windows: [BrowserID]
    public var policy: TabsClosePolicy
    /// A pending close-all past this many is confirmed, oldest first.
    public var maxPending: Int

    public init(windows: [BrowserID], policy: TabsClosePolicy = .allTabs, maxPending: Int = 16) {
        self.windows = windows
        self.policy = policy
        self.maxPending = maxPending
    }
}
