/// One node of a window's presentation tree, as UIs see it.
public struct UINode: Sendable, Equatable {
    public var id: String
    /// `browser`, `content`, `ntp`, `toolbar`, `locationBar`, `tabGrid`, `settings`, `settings.page`,
    /// `history` or `share`.
    public var kind: String
    public var params: [String: String]
    public var children: [UINode]
    /// The commands this screen may send.
    public var navigator: [String]
}

/// One change of the presentation tree.
public struct UIChange: Sendable, Equatable {
    public enum Operation: String, Sendable {
        case presented, dismissed, pushed, popped, changed
    }

    public var op: Operation
    public var nodeID: String
    public var kind: String
}

/// What shows a window's presentation tree: told every node presented, dismissed, pushed, popped or
/// changed, in order.
public protocol PresentationConsumer: AnyObject {
    func presented(_ node: UINode, parentID: String)
    func dismissed(nodeID: String, kind: String)
    func pushed(_ node: UINode, parentID: String)
    func popped(nodeID: String, kind: String)
    func changed(_ node: UINode)
}
