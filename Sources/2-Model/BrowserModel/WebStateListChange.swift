/// One change of a `WebStateList`, with its payload (spec §4, Chromium's `WebStateListChange`).
public enum WebStateListChange {
    /// Activation, pin/unpin in place, or a group change in place.
    case statusOnly(tab: WebState?, index: Int, pinnedStateChanged: Bool, oldGroup: TabGroup?, newGroup: TabGroup?)
    case detach(DetachChange)
    case move(tab: WebState, from: Int, to: Int, pinnedStateChanged: Bool, oldGroup: TabGroup?, newGroup: TabGroup?)
    case replace(replaced: WebState, inserted: WebState, index: Int)
    case insert(tab: WebState, index: Int, group: TabGroup?)
    /// A group was created, empty; its members arrive through the following moves and status changes.
    case groupCreate(group: TabGroup)
    case groupVisualDataUpdate(group: TabGroup, oldVisualData: TabGroupVisualData)
    case groupMove(group: TabGroup, fromRange: TabGroupRange, toRange: TabGroupRange)
    /// A group was emptied by earlier changes and is gone; it must not be used afterwards.
    case groupDelete(group: TabGroup)
    /// The opener of the tab at `index` changed: set or cleared on purpose, or cleared as a side
    /// effect of the change told just before (its opener left the list, an inherit-opener insert,
    /// the active tab moving on from an inherited opener). Told after that change, once per tab.
    case openerChange(tab: WebState, index: Int)
}

/// The payload of a detach (also sent, before the change, to `webStateListWillChange`).
public struct DetachChange {
    public let tab: WebState
    public let fromIndex: Int
    public let isClosing: Bool
    public let isUserAction: Bool
    public let isTabsCleanup: Bool
    public let group: TabGroup?
}

/// The active tab before and after a change.
public struct WebStateListStatus {
    public let oldActive: WebState?
    public let newActive: WebState?

    /// Whether the active tab changed.
    public var activeChanged: Bool { oldActive !== newActive }
}

/// Watches a `WebStateList`. Every callback is made synchronously inside the mutation; mutating the
/// list from a callback is a programming error.
public protocol WebStateListObserver: AnyObject {
    /// Before a detach or close; `status.newActive` is the predicted new active tab.
    func webStateListWillChange(_ list: WebStateList, detach: DetachChange, status: WebStateListStatus)
    func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus)
    func webStateListWillBeginBatch(_ list: WebStateList)
    func webStateListBatchEnded(_ list: WebStateList)
    func webStateListDestroyed(_ list: WebStateList)
    /// A tab of the list changed its own state (navigation or page state), before the tab's own
    /// observers are told: how a mediator watches every tab without observing each one.
    func webStateList(_ list: WebStateList, tabDidChange webState: WebState, change: WebStateChange)
}

extension WebStateListObserver {
    public func webStateListWillChange(_ list: WebStateList, detach: DetachChange, status: WebStateListStatus) {}
    public func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus) {}
    public func webStateListWillBeginBatch(_ list: WebStateList) {}
    public func webStateListBatchEnded(_ list: WebStateList) {}
    public func webStateListDestroyed(_ list: WebStateList) {}
    public func webStateList(_ list: WebStateList, tabDidChange webState: WebState, change: WebStateChange) {}
}

/// Flags of a close (Chromium's `CLOSE_USER_ACTION`, `CLOSE_TABS_CLEANUP`).
public struct CloseFlags: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let userAction = CloseFlags(rawValue: 1)
    public static let tabsCleanup = CloseFlags(rawValue: 2)
}

/// Where and how to insert a tab (Chromium's `WebStateList::InsertionParams`).
public struct InsertionParams {
    /// An explicit index, or nil for automatic placement by the order controller.
    public var index: Int?
    public var opener: WebState?
    /// Use the active tab as opener, after clearing every tab's opener.
    public var inheritOpener: Bool
    /// Clear every other tab's opener first (`TabStripModel::ForgetAllOpeners`, as an active insert
    /// with inherit-opener does), keeping `opener` as given (a duplicate's opener is its original).
    public var forgetsOtherOpeners = false
    public var activate: Bool
    public var pinned: Bool
    public var group: TabGroup?

    public init(
        index: Int? = nil, opener: WebState? = nil, inheritOpener: Bool = false, activate: Bool = false,
        pinned: Bool = false, group: TabGroup? = nil
    ) {
        self.index = index
        self.opener = opener
        self.inheritOpener = inheritOpener
        self.activate = activate
        self.pinned = pinned
        self.group = group
    }

    public static func automatic() -> InsertionParams { InsertionParams() }
    public static func atIndex(_ index: Int) -> InsertionParams { InsertionParams(index: index) }
    public func withOpener(_ opener: WebState?) -> InsertionParams {
        var p = self
        p.opener = opener
        return p
    }
    public func inheritingOpener() -> InsertionParams {
        var p = self
        p.inheritOpener = true
        return p
    }
    public func activating(_ activate: Bool = true) -> InsertionParams {
        var p = self
        p.activate = activate
        return p
    }
    public func pinned(_ pinned: Bool = true) -> InsertionParams {
        var p = self
        p.pinned = pinned
        return p
    }
    public func inGroup(_ group: TabGroup?) -> InsertionParams {
        var p = self
        p.group = group
        return p
    }
}
