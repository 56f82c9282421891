import BrowserModel
import JSONWriter

/// A window as a new watcher first sees it: its tabs and groups, toolbar, location bar and broadcasts.
struct WindowStreamSnapshot: StreamSnapshot {
    var window: WindowSnapshot
    var toolbar: ToolbarState
    var location: LocationBarState
    var broadcasts: [(key: String, value: BroadcastValue)]
    var tree: UINode?

    private var items: [TabItem] {
        window.tabs.map {
            TabItem(
                id: $0.id, url: $0.url, title: $0.title, loading: $0.loading, progress: $0.progress, crashed: $0.crashed,
                faviconURL: $0.faviconURL, pinned: $0.pinned, groupID: $0.groupID, openerID: $0.openerID,
                historyIndex: $0.historyIndex, historyCount: $0.historyCount, snapshot: $0.snapshot, pending: $0.pending)
        }
    }

    private var groups: [GroupItem] {
        window.groups.map { GroupItem(id: $0.id, title: $0.title, color: $0.color, collapsed: $0.collapsed, start: $0.start, count: $0.count) }
    }

    private var browserID: String { window.id.rawValue }

    private func tabsMembers(_ json: inout JSONText) {
        json.key("items")
        json.beginArray()
        for item in items { json.tabItem(item) }
        json.endArray()
        json.member("selectedId", window.activeTabID?.rawValue)
    }

    private func groupsArray(_ json: inout JSONText) {
        json.key("groups")
        json.beginArray()
        for group in groups { json.groupItem(group) }
        json.endArray()
    }

    func initialEvents(filter: TopicFilter) -> [StreamEvent] {
        var events: [StreamEvent] = []
        func add(_ topic: EventTopic, _ name: String, _ body: (inout JSONText) -> Void) {
            guard filter.admits(topic) else { return }
            events.append(StreamEvent(name: name, json: EventJSON.object("browserId", browserID, body)))
        }
        add(.tabs, "tabs.populate") { tabsMembers(&$0) }
        add(.groups, "groups.populate") { groupsArray(&$0) }
        add(.toolbar, "toolbar.update") { $0.toolbar(toolbar) }
        add(.location, "location.update") { $0.location(location) }
        if let tree {
            add(.ui, "ui.tree") {
                $0.key("tree")
                $0.uiNode(tree)
            }
        }
        for (key, value) in broadcasts {
            add(.broadcasts, "broadcast") {
                $0.member("key", key)
                $0.key("value")
                $0.broadcastValue(value)
            }
        }
        return events
    }

    func resetEvent(reason: String) -> StreamEvent {
        StreamEvent(
            name: "reset",
            json: EventJSON.object("browserId", browserID) { json in
                json.member("reason", reason)
                json.key("tabs")
                json.beginObject()
                tabsMembers(&json)
                json.endObject()
                groupsArray(&json)
                json.key("toolbar")
                json.beginObject()
                json.toolbar(toolbar)
                json.endObject()
                json.key("location")
                json.beginObject()
                json.location(location)
                json.endObject()
                if let tree {
                    json.key("ui")
                    json.uiNode(tree)
                }
                json.key("broadcasts")
                json.beginArray()
                for (key, value) in broadcasts {
                    json.beginObject()
                    json.member("key", key)
                    json.key("value")
                    json.broadcastValue(value)
                    json.endObject()
                }
                json.endArray()
            })
    }
}

/// A profile's windows as a new watcher of the profile first sees them.
struct ProfileStreamSnapshot: StreamSnapshot {
    var profileID: ProfileID
    var browsers: [BrowserItem]
    /// A regular profile's: its off-the-record profile, while it exists (`.some(nil)`: none now);
    /// nil for an off-the-record profile's stream, which has no such member.
    var incognitoProfileID: ProfileID??

    private func browsersArray(_ json: inout JSONText) {
        if let incognitoProfileID { json.member("incognitoProfileId", incognitoProfileID?.rawValue) }
        json.key("browsers")
        json.beginArray()
        for browser in browsers { json.browserItem(browser) }
        json.endArray()
    }

    func initialEvents(filter: TopicFilter) -> [StreamEvent] {
        [StreamEvent(name: "browsers.populate", json: EventJSON.object("profileId", profileID.rawValue) { browsersArray(&$0) })]
    }

    func resetEvent(reason: String) -> StreamEvent {
        StreamEvent(
            name: "reset",
            json: EventJSON.object("profileId", profileID.rawValue) { json in
                json.member("reason", reason)
                browsersArray(&json)
            })
    }
}
