public import BrowserModel

/// A tab group as a tab strip shows it.
public struct GroupItem: Sendable, Equatable {
    public var id: TabGroupID
    public var title: String
    public var color: TabGroupColor
    public var collapsed: Bool
    public var start: Int
    public var count: Int
}

/// What shows a window's tab groups.
public protocol TabGroupConsumer: AnyObject {
    func groupCreated(_ group: GroupItem)
    /// Title, colour or collapsed state changed.
    func groupVisualDataChanged(_ group: GroupItem)
    func groupMoved(_ group: GroupItem)
    func groupDeleted(id: TabGroupID)
    /// A tab joined a group, left one, or both.
    func membershipChanged(tabID: TabID, groupID: TabGroupID?, previousGroupID: TabGroupID?)
}
