import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

/// The JSON form of every snapshot, written with the fast writer (a window is encoded once per version).
enum APIEncoding {
    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-21T22:19:31.123Z`.
    /// `{tree, changes: [{op, nodeId, kind}]}`.
    static func write(_ presentation: PresentationResult, to json: inout JSONText) {
        json.beginObject()
        json.key("tree")
        json.uiNode(presentation.tree)
        json.key("changes")
        json.beginArray()
        for change in presentation.changes {
            json.beginObject()
            json.member("op", change.op.rawValue)
            json.member("nodeId", change.nodeID)
            json.member("kind", change.kind)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    static func write(_ tab: TabSnapshot, to json: inout JSONText) {
        json.beginObject()
        json.member("id", tab.id.rawValue)
        json.member("browserId", tab.browserID.rawValue)
        json.member("index", tab.index)
        json.member("url", tab.url)
        json.member("title", tab.title)
        json.member("pinned", tab.pinned)
        json.member("groupId", tab.groupID?.rawValue)
        json.member("openerTabId", tab.openerID?.rawValue)
        json.member("active", tab.active)
        json.member("loading", tab.loading)
        json.member("progress", tab.progress)
        json.member("crashed", tab.crashed)
        json.member("faviconUrl", tab.faviconURL)
        json.member("canGoBack", tab.canGoBack)
        json.member("canGoForward", tab.canGoForward)
        json.member("historyIndex", tab.historyIndex)
        json.member("historyCount", tab.historyCount)
        json.member("createdAt", JSONText.timestamp(tab.createdAt))
        json.member("lastActiveAt", JSONText.timestamp(tab.lastActiveAt))
        json.key("snapshot")
        json.pageSnapshot(tab.snapshot)
        json.pendingNavigation(tab.pending)
        json.endObject()
    }

    static func write(_ group: GroupSnapshot, to json: inout JSONText) {
        json.beginObject()
        json.member("id", group.id.rawValue)
        json.member("browserId", group.browserID.rawValue)
        json.member("title", group.title)
        json.member("color", group.color.rawValue)
        json.member("collapsed", group.collapsed)
        json.member("start", group.start)
        json.member("count", group.count)
        json.key("tabIds")
        json.beginArray()
        for id in group.tabIDs { json.value(id.rawValue) }
        json.endArray()
        json.endObject()
    }

    static func write(_ window: WindowSnapshot, to json: inout JSONText) {
        json.beginObject()
        json.member("id", window.id.rawValue)
        json.member("profileId", window.profileID.rawValue)
        json.member("incognito", window.incognito)
        json.member("version", window.version)
        json.member("activeTabId", window.activeTabID?.rawValue)
        json.member("activeIndex", window.activeIndex)
        json.member("pinnedCount", window.pinnedCount)
        json.member("tabCount", window.tabCount)
        json.key("tabs")
        json.beginArray()
        for tab in window.tabs { write(tab, to: &json) }
        json.endArray()
        json.key("groups")
        json.beginArray()
        for group in window.groups { write(group, to: &json) }
        json.endArray()
        json.member("createdAt", JSONText.timestamp(window.createdAt))
        json.endObject()
    }

    static func write(_ profile: ProfileSnapshot, to json: inout JSONText) {
        json.profileItem(profile)
    }

    static func bytes(_ body: (inout JSONText) -> Void) -> [UInt8] {
        var json = JSONText(capacity: 1024)
        body(&json)
        return json.bytes
    }

    /// `{"items": [...]}`, with `nextCursor` when the list is paged (`paged` true; nil cursor = last page).
    static func list<S: Sequence>(
        _ items: S, paged: Bool = false, nextCursor: String? = nil,
        write: (S.Element, inout JSONText) -> Void
    ) -> [UInt8] {
        bytes { json in
            json.beginObject()
            json.key("items")
            json.beginArray()
            for item in items { write(item, &json) }
            json.endArray()
            if paged { json.member("nextCursor", nextCursor) }
            json.endObject()
        }
    }

    static func windowBytes(_ window: WindowSnapshot) -> [UInt8] {
        var json = JSONText(capacity: 512 + window.tabs.count * 420)
        write(window, to: &json)
        return json.bytes
    }

    static func tabList(_ window: WindowSnapshot) -> [UInt8] {
        bytes { json in
            json.beginObject()
            json.key("items")
            json.beginArray()
            for tab in window.tabs { write(tab, to: &json) }
            json.endArray()
            json.member("activeIndex", window.activeIndex)
            json.member("pinnedCount", window.pinnedCount)
            json.member("version", window.version)
            json.endObject()
        }
    }

    static func history(_ history: HistorySnapshot) -> [UInt8] {
        bytes { json in
            json.beginObject()
            json.member("currentIndex", history.currentIndex)
            json.key("entries")
            json.beginArray()
            for entry in history.entries {
                json.beginObject()
                json.member("url", entry.url)
                json.member("title", entry.title)
                json.member("transition", entry.transition.rawValue)
                json.member("timestamp", JSONText.timestamp(entry.timestamp))
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
    }

    /// A recently-closed entry: its leading tab's fields (a tab entry's tab), its kind, and for a
    /// window or group entry every tab and (group) the group.
    static func closedEntry(_ entry: ClosedEntrySnapshot, to json: inout JSONText) {
        json.beginObject()
        json.member("id", entry.id.rawValue)
        json.member("kind", entry.kind.rawValue)
        closedTabFields(entry.leading, to: &json)
        json.member("browserId", entry.leading.browserID.rawValue)
        json.member("closedAt", JSONText.timestamp(entry.leading.closedAt))
        json.member("tabCount", entry.tabs.count)
        if entry.kind != .tab {
            json.key("tabs")
            json.beginArray()
            for tab in entry.tabs {
                json.beginObject()
                json.member("id", tab.id.rawValue)
                closedTabFields(tab, to: &json)
                json.endObject()
            }
            json.endArray()
        }
        if let group = entry.group {
            json.key("group")
            json.beginObject()
            json.member("id", group.id.rawValue)
            json.member("title", group.visualData.title)
            json.member("color", group.visualData.color.rawValue)
            json.member("collapsed", group.visualData.collapsed)
            json.endObject()
        }
        json.endObject()
    }

    private static func closedTabFields(_ tab: ClosedTabSnapshot, to json: inout JSONText) {
        json.member("tabId", tab.tabID.rawValue)
        json.member("url", tab.url)
        json.member("title", tab.title)
        json.member("index", tab.index)
        json.member("groupId", tab.groupID?.rawValue)
        json.member("wasActive", tab.wasActive)
        json.member("wasPinned", tab.wasPinned)
    }

    static func closing(_ closing: TabsClosingSnapshot) -> [UInt8] {
        bytes { json in
            json.beginObject()
            json.member("id", closing.id.rawValue)
            json.member("profileId", closing.profileID.rawValue)
            json.member("policy", closing.policy.rawValue)
            json.member("state", closing.state.rawValue)
            json.key("tabIds")
            json.beginArray()
            for id in closing.tabIDs { json.value(id.rawValue) }
            json.endArray()
            json.key("browserIds")
            json.beginArray()
            for id in closing.browserIDs { json.value(id.rawValue) }
            json.endArray()
            json.member("undoableUntil", closing.undoableUntil.map(JSONText.timestamp))
            json.endObject()
        }
    }

    static func broadcast(_ item: BroadcastSnapshot, to json: inout JSONText) {
        json.beginObject()
        json.member("key", item.key)
        json.member("type", item.type.rawValue)
        json.key("value")
        switch item.value {
        case .number(let value)?: json.value(value)
        case .boolean(let value)?: json.value(value)
        case nil: json.null()
        }
        json.endObject()
    }

    static func closeResult(_ result: CloseTabsResult) -> [UInt8] {
        bytes { json in
            json.beginObject()
            json.key("closedTabIds")
            json.beginArray()
            for id in result.closedTabIDs { json.value(id.rawValue) }
            json.endArray()
            json.member("activeTabId", result.activeTabID?.rawValue)
            json.endObject()
        }
    }
}
