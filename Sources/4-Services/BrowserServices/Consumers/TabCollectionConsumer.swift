public import BrowserModel

/// A tab as a tab strip or grid shows it.
public struct TabItem: Sendable, Equatable {
    public var id: TabID
    public var url: String
    public var title: String
    public var loading: Bool
    public var progress: Double
    /// Its page's renderer crashed (a sad tab) until a load starts again.
    public var crashed: Bool
    public var faviconURL: String?
    public var pinned: Bool
    public var groupID: TabGroupID?
    /// The tab that opened this one, if any (cleared when it leaves).
    public var openerID: TabID?
    /// Where the tab stands in its history, and how long that is: a renderer tells a move within the
    /// history (back, forward, go) from a new entry by these.
    public var historyIndex: Int
    public var historyCount: Int
    /// The picture of its page its renderer took last, if any (events and lists never carry its bytes).
    public var snapshot: PageSnapshot?
    /// The navigation its page has not committed yet, if any (``PendingNavigation``).
    public var pending: PendingNavigation? = nil
}

/// What shows a window's tabs (Chromium's `TabCollectionConsumer`): told every change of the list
/// and of its tabs' page state, in order. Changes of one model batch arrive between ``beginBatch()``
/// and ``endBatch()``.
public protocol TabCollectionConsumer: AnyObject {
    /// Replaces everything shown.
    func populate(items: [TabItem], selectedID: TabID?)
    func insert(item: TabItem, index: Int, selectedID: TabID?)
    func remove(id: TabID, selectedID: TabID?)
    func move(id: TabID, index: Int)
    func replace(oldID: TabID, item: TabItem)
    func select(id: TabID?)
    /// A tab's title, URL, loading state, progress, favicon, pinned state or group changed.
    func update(item: TabItem)
    /// A tab's page picture changed (``TabItem/snapshot``).
    func snapshotChanged(item: TabItem)
    func beginBatch()
    func endBatch()
}

extension TabCollectionConsumer {
    /// A consumer that shows no pictures hears of a new one as of any other change of the tab.
    public func snapshotChanged(item: TabItem) { update(item: item) }
}
