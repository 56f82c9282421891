import BrowserModel
import JSONWriter

/// The event-stream implementation of a window's consumers: each consumer call becomes one event
/// (`tabs.insert`, `toolbar.update`, …), gathered during an operation and handed to the window's
/// channel in one piece when the operation ends (``flush(_:)``).
final class WindowEventRecorder: TabCollectionConsumer, TabGroupConsumer, ToolbarConsumer, LocationBarConsumer, WindowBoundsConsumer, BroadcastConsumer,
    PresentationConsumer, ActionLogConsumer
{
    let browserID: BrowserID
    let channel: EventChannel
    private var pending: [PendingEvent] = [] {
        didSet { if oldValue.isEmpty && !pending.isEmpty { onFirstPending?() } }
    }
    /// Told when an operation records its first event (the profile then flushes this window).
    var onFirstPending: (() -> Void)?
    private var toolbar = ToolbarState(canGoBack: false, canGoForward: false, loading: false, progress: 0, tabCount: 0, incognito: false)
    private var location = LocationBarState(displayURL: "", secure: false)
    private var broadcasts: [(key: String, value: BroadcastValue)] = []
    /// The window's presentation tree now (set once its root coordinator exists).
    var tree: (() -> UINode?)?

    init(browserID: BrowserID, channel: EventChannel) {
        self.browserID = browserID
        self.channel = channel
    }

    /// Adds an event; with `supersedes`, an earlier event of this operation with the same key is
    /// replaced in place (one PATCH of a tab's title and progress is one `tabs.update`, a batch ends with one
    /// `toolbar.update`).
    private func record(_ topic: EventTopic, _ name: String, supersedes: String? = nil, _ body: (inout JSONText) -> Void) {
        let event = PendingEvent(
            topic: topic, name: name, json: EventJSON.object("browserId", browserID.rawValue, body),
            supersedes: supersedes)
        if let supersedes, let earlier = pending.lastIndex(where: { $0.supersedes == supersedes }) {
            // The state it carries is whole: the newer value takes the earlier one's place.
            pending[earlier] = event
        } else {
            pending.append(event)
        }
    }

    /// The state the window's watchers start from, given its latest snapshot.
    func snapshot(_ window: WindowSnapshot) -> WindowStreamSnapshot {
        WindowStreamSnapshot(window: window, toolbar: toolbar, location: location, broadcasts: broadcasts, tree: tree?() ?? nil)
    }

    var hasPending: Bool { !pending.isEmpty }

    func discardPending() { pending = [] }

    /// Hands the operation's events to the channel, with the state they led to.
    func flush(_ window: WindowSnapshot) {
        guard !pending.isEmpty else { return }
        let events = pending
        pending = []
        channel.append(events, snapshot: snapshot(window))
    }

    /// Ends the window's stream: what is pending, then `browser.closed`.
    func close(_ window: WindowSnapshot?) {
        if let window { flush(window) }
        channel.close(
            final: PendingEvent(
                topic: .control, name: "browser.closed",
                json: EventJSON.object("browserId", browserID.rawValue) { _ in }))
    }

    // MARK: TabCollectionConsumer

    func populate(items: [TabItem], selectedID: TabID?) {
        // The channel's snapshot is what new watchers get; nothing to send to current ones.
    }

    func insert(item: TabItem, index: Int, selectedID: TabID?) {
        record(.tabs, "tabs.insert") {
            $0.key("item")
            $0.tabItem(item)
            $0.member("index", index)
            $0.member("selectedId", selectedID?.rawValue)
        }
    }

    func remove(id: TabID, selectedID: TabID?) {
        record(.tabs, "tabs.remove") {
            $0.member("tabId", id.rawValue)
            $0.member("selectedId", selectedID?.rawValue)
        }
    }

    func move(id: TabID, index: Int) {
        record(.tabs, "tabs.move") {
            $0.member("tabId", id.rawValue)
            $0.member("index", index)
        }
    }

    func replace(oldID: TabID, item: TabItem) {
        record(.tabs, "tabs.replace") {
            $0.member("oldTabId", oldID.rawValue)
            $0.key("item")
            $0.tabItem(item)
        }
    }

    func select(id: TabID?) {
        record(.tabs, "tabs.select") { $0.member("tabId", id?.rawValue) }
    }

    func update(item: TabItem) {
        record(.tabs, "tabs.update", supersedes: "tab:\(item.id.rawValue)") {
            $0.key("item")
            $0.tabItem(item)
        }
    }

    func snapshotChanged(item: TabItem) {
        record(.tabs, "tabs.snapshot", supersedes: "snapshot:\(item.id.rawValue)") {
            $0.member("tabId", item.id.rawValue)
            $0.key("snapshot")
            $0.pageSnapshot(item.snapshot)
        }
    }

    func beginBatch() {
        record(.control, "batch.begin") { _ in }
    }

    func endBatch() {
        // An empty batch says nothing: drop its frame.
        if pending.last?.name == "batch.begin" {
            pending.removeLast()
        } else {
            record(.control, "batch.end") { _ in }
        }
    }

    // MARK: TabGroupConsumer

    func groupCreated(_ group: GroupItem) {
        record(.groups, "groups.create") {
            $0.key("group")
            $0.groupItem(group)
        }
    }

    func groupVisualDataChanged(_ group: GroupItem) {
        record(.groups, "groups.update") {
            $0.key("group")
            $0.groupItem(group)
        }
    }

    func groupMoved(_ group: GroupItem) {
        record(.groups, "groups.move") {
            $0.key("group")
            $0.groupItem(group)
        }
    }

    func groupDeleted(id: TabGroupID) {
        record(.groups, "groups.delete") { $0.member("groupId", id.rawValue) }
    }

    func membershipChanged(tabID: TabID, groupID: TabGroupID?, previousGroupID: TabGroupID?) {
        record(.groups, "groups.membership") {
            $0.member("tabId", tabID.rawValue)
            $0.member("groupId", groupID?.rawValue)
            $0.member("previousGroupId", previousGroupID?.rawValue)
        }
    }

    // MARK: Toolbar, location bar, broadcasts

    func update(toolbar state: ToolbarState) {
        toolbar = state
        record(.toolbar, "toolbar.update", supersedes: "toolbar") { $0.toolbar(state) }
    }

    func update(location state: LocationBarState) {
        location = state
        record(.location, "location.update", supersedes: "location") { $0.location(state) }
    }

    func update(bounds: WindowBounds) {
        record(.toolbar, "window.bounds", supersedes: "bounds") { json in
            json.member("x", bounds.x)
            json.member("y", bounds.y)
            json.member("width", bounds.width)
            json.member("height", bounds.height)
            json.member("state", bounds.state.rawValue)
        }
    }

    func broadcast(key: String, value: BroadcastValue) {
        if let index = broadcasts.firstIndex(where: { $0.key == key }) {
            broadcasts[index].value = value
        } else {
            broadcasts.append((key, value))
        }
        record(.broadcasts, "broadcast", supersedes: "broadcast:\(key)") {
            $0.member("key", key)
            $0.key("value")
            $0.broadcastValue(value)
        }
    }

    // MARK: Presentation and actions

    /// A node that joined the tree (`ui.presented`, `ui.pushed`).
    private func recordAdded(_ name: String, _ node: UINode, parentID: String) {
        record(.ui, name) {
            $0.member("parentId", parentID)
            $0.key("node")
            $0.uiNode(node)
        }
    }

    /// A node that left the tree (`ui.dismissed`, `ui.popped`).
    private func recordRemoved(_ name: String, nodeID: String, kind: String) {
        record(.ui, name) {
            $0.member("nodeId", nodeID)
            $0.member("kind", kind)
        }
    }

    func presented(_ node: UINode, parentID: String) { recordAdded("ui.presented", node, parentID: parentID) }
    func dismissed(nodeID: String, kind: String) { recordRemoved("ui.dismissed", nodeID: nodeID, kind: kind) }
    func pushed(_ node: UINode, parentID: String) { recordAdded("ui.pushed", node, parentID: parentID) }
    func popped(nodeID: String, kind: String) { recordRemoved("ui.popped", nodeID: nodeID, kind: kind) }

    func changed(_ node: UINode) {
        record(.ui, "ui.changed") {
            $0.key("node")
            $0.uiNode(node)
        }
    }

    func appended(_ entry: ActionEntry) {
        record(.actions, "actions.append") {
            $0.key("action")
            $0.actionEntry(entry)
        }
    }
}
