public import BrowserModel
public import JSONWriter

// The JSON of every event's `data` line. Every payload names the window (or profile) it is about,
// and every tab event carries the tab's id (in its `item` or as `tabId`).

extension JSONText {
    mutating func tabItem(_ item: TabItem) {
        beginObject()
        member("id", item.id.rawValue)
        member("url", item.url)
        member("title", item.title)
        member("loading", item.loading)
        member("progress", item.progress)
        member("crashed", item.crashed)
        member("faviconUrl", item.faviconURL)
        member("pinned", item.pinned)
        member("groupId", item.groupID?.rawValue)
        member("openerTabId", item.openerID?.rawValue)
        member("historyIndex", item.historyIndex)
        member("historyCount", item.historyCount)
        key("snapshot")
        pageSnapshot(item.snapshot)
        pendingNavigation(item.pending)
        endObject()
    }

    /// A tab's pending navigation as the API shows it: a `pending` member only while there is one.
    public mutating func pendingNavigation(_ pending: PendingNavigation?) {
        guard let pending else { return }
        key("pending")
        beginObject()
        member("id", pending.id)
        member("url", pending.url)
        key("historyIndex")
        if let index = pending.index { value(index) } else { null() }
        member("transition", pending.transition.rawValue)
        member("startedAt", JSONText.timestamp(pending.startedAt))
        endObject()
    }

    /// A tab's page picture as the API shows it (where to fetch it: `GET /v1/tabs/{id}/snapshot`), or null.
    public mutating func pageSnapshot(_ snapshot: PageSnapshot?) {
        guard let snapshot else {
            null()
            return
        }
        beginObject()
        member("etag", snapshot.etag)
        member("mediaType", snapshot.mediaType)
        member("bytes", snapshot.byteCount)
        member("capturedAt", JSONText.timestamp(snapshot.capturedAt))
        endObject()
    }

    mutating func groupItem(_ group: GroupItem) {
        beginObject()
        member("id", group.id.rawValue)
        member("title", group.title)
        member("color", group.color.rawValue)
        member("collapsed", group.collapsed)
        member("start", group.start)
        member("count", group.count)
        endObject()
    }

    mutating func toolbar(_ state: ToolbarState) {
        member("canGoBack", state.canGoBack)
        member("canGoForward", state.canGoForward)
        member("loading", state.loading)
        member("progress", state.progress)
        member("tabCount", state.tabCount)
        member("incognito", state.incognito)
    }

    mutating func location(_ state: LocationBarState) {
        member("displayUrl", state.displayURL)
        member("secure", state.secure)
    }

    mutating func broadcastValue(_ value: BroadcastValue) {
        switch value {
        case .number(let number): self.value(number)
        case .boolean(let flag): self.value(flag)
        }
    }

    mutating func browserItem(_ item: BrowserItem) {
        beginObject()
        member("id", item.id.rawValue)
        member("profileId", item.profileID.rawValue)
        member("incognito", item.incognito)
        member("createdAt", JSONText.timestamp(item.createdAt))
        endObject()
    }
}

extension JSONText {
    /// A presentation node and its subtree.
    public mutating func uiNode(_ node: UINode) {
        beginObject()
        member("id", node.id)
        member("kind", node.kind)
        key("params")
        beginObject()
        for (name, value) in node.params.sorted(by: { $0.key < $1.key }) { member(name, value) }
        endObject()
        key("children")
        beginArray()
        for child in node.children { uiNode(child) }
        endArray()
        key("navigator")
        beginArray()
        for command in node.navigator { value(command) }
        endArray()
        endObject()
    }

    /// A profile, as the API and the profile directory stream show it.
    public mutating func profileItem(_ profile: ProfileSnapshot) {
        beginObject()
        member("id", profile.id.rawValue)
        member("name", profile.name)
        member("incognito", profile.incognito)
        member("parentId", profile.parentID?.rawValue)
        member("incognitoProfileId", profile.offTheRecordID?.rawValue)
        member("windowCount", profile.windowCount)
        member("createdAt", JSONText.timestamp(profile.createdAt))
        endObject()
    }

    /// One action log entry.
    public mutating func actionEntry(_ entry: ActionEntry) {
        beginObject()
        member("seq", entry.seq)
        member("time", JSONText.timestamp(entry.time))
        member("name", entry.name)
        key("arguments")
        beginObject()
        for argument in entry.arguments { member(argument.name, argument.value) }
        endObject()
        member("result", entry.result)
        member("durationMicroseconds", entry.durationMicroseconds)
        endObject()
    }
}

/// Builds one payload: an object that starts with the member naming its source.
enum EventJSON {
    /// A JSON object with only what `body` writes.
    static func object(_ body: (inout JSONText) -> Void) -> [UInt8] {
        var json = JSONText(capacity: 192)
        json.beginObject()
        body(&json)
        json.endObject()
        return json.bytes
    }

    static func object(_ sourceKey: String, _ sourceID: String, _ body: (inout JSONText) -> Void) -> [UInt8] {
        var json = JSONText(capacity: 192)
        json.beginObject()
        json.member(sourceKey, sourceID)
        body(&json)
        json.endObject()
        return json.bytes
    }
}
