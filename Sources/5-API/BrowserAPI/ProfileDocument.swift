import BrowserModel
public import BrowserRecords
import BrowserServices
import Foundation
import HTTPServer

/// browserd's own document for one profile (`GET /v1/profiles/{id}/export`, `POST /v1/profiles/import`):
/// everything the profile holds — its windows in order with their groups, each tab with its whole
/// saved history, openers, and recently closed entries — as its stored records say, ids included.
///
/// ```json
/// {"format":"browserd-profile","version":1,
///  "profile":{"id":"p…","name":"Work","createdAt":"2026-…Z"},
///  "recentlyClosed":[{"id":"c…","kind":"tab","tabs":[{…closed tab…}]}],
///  "windows":[{"id":"w…","version":3,"createdAt":"…","lastActiveAt":"…","activeIndex":0,"pinnedCount":0,
///              "groups":[{"id":"g…","title":"","color":"blue","collapsed":false}],
///              "tabs":[{"id":"t…","title":"","loading":false,"progress":1,"faviconUrl":null,
///                       "createdAt":"…","lastActiveAt":"…","groupId":null,"openerId":null,
///                       "openerNavigationIndex":null,"historyIndex":0,
///                       "history":[{"url":"https://…","title":"","transition":"typed","timestamp":"…"}]}]}]}
/// ```
/// Written a window at a time (the windows come last, so an export streams as it is read); read back
/// a window at a time from the byte ranges of `windows`' elements, so an import never holds the
/// document as one tree. Dates are RFC 3339 UTC with milliseconds, as everywhere in the API.
public enum ProfileDocument {
    public static let format = "browserd-profile"
    public static let version = 1

    // MARK: Writing

    /// Everything before the first window: the profile and its recently closed entries.
    public static func head(_ profile: ProfileRecord, recentlyClosed: [ClosedEntryRecord]) -> [UInt8] {
        var json = JSONText()
        json.beginObject()
        json.member("format", format)
        json.member("version", version)
        json.key("profile")
        json.beginObject()
        json.member("id", profile.id)
        json.member("name", profile.name)
        json.member("createdAt", JSONText.timestamp(profile.createdAt))
        json.endObject()
        json.key("recentlyClosed")
        json.beginArray()
        for entry in recentlyClosed {
            json.beginObject()
            json.member("id", entry.id)
            json.member("kind", entry.kind.rawValue)
            json.key("tabs")
            json.beginArray()
            for tab in entry.tabs { write(tab, to: &json) }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        // Its web state (issue 52), as stored: Playwright's storageState document.
        if let webState = profile.webState {
            json.key("storageState")
            json.raw(webState)
        }
        json.key("windows")
        var bytes = json.bytes
        bytes.append(UInt8(ascii: "["))
        return bytes
    }

    /// One window with its tabs in order (`tabs` by id), as an element of `windows`.
    public static func window(_ record: WindowRecord, tabs: [String: TabRecord], first: Bool) -> [UInt8] {
        var json = JSONText()
        json.beginObject()
        json.member("id", record.id)
        json.member("version", record.version)
        json.member("createdAt", JSONText.timestamp(record.createdAt))
        json.member("lastActiveAt", JSONText.timestamp(record.lastActiveAt))
        json.member("activeIndex", record.activeIndex)
        json.member("pinnedCount", record.pinnedCount)
        json.key("groups")
        json.beginArray()
        for group in record.groups {
            json.beginObject()
            json.member("id", group.id)
            json.member("title", group.title)
            json.member("color", group.color)
            json.member("collapsed", group.collapsed)
            json.endObject()
        }
        json.endArray()
        json.key("tabs")
        json.beginArray()
        for id in record.tabOrder {
            guard let tab = tabs[id] else { continue }
            json.beginObject()
            json.member("id", tab.id)
            json.member("title", tab.title)
            json.member("loading", tab.loading)
            json.member("progress", tab.progress)
            json.member("faviconUrl", tab.faviconURL)
            json.member("createdAt", JSONText.timestamp(tab.createdAt))
            json.member("lastActiveAt", JSONText.timestamp(tab.lastActiveAt))
            json.member("groupId", tab.groupID)
            json.member("openerId", tab.openerID)
            json.key("openerNavigationIndex")
            if let index = tab.openerNavigationIndex { json.value(index) } else { json.null() }
            write(history: tab.history, index: tab.historyIndex, to: &json)
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return (first ? [] : [UInt8(ascii: ",")]) + json.bytes
    }

    /// What ends the document.
    public static let tail: [UInt8] = Array("]}".utf8)

    private static func write(_ tab: ClosedTabRecord, to json: inout JSONText) {
        json.beginObject()
        json.member("id", tab.id)
        json.member("tabId", tab.tabID)
        json.member("windowId", tab.windowID)
        json.member("index", tab.index)
        json.member("groupId", tab.groupID)
        json.key("group")
        if let group = tab.group {
            json.beginObject()
            json.member("title", group.title)
            json.member("color", group.color)
            json.member("collapsed", group.collapsed)
            json.endObject()
        } else {
            json.null()
        }
        json.member("wasActive", tab.wasActive)
        json.member("wasPinned", tab.wasPinned)
        json.member("title", tab.title)
        json.member("faviconUrl", tab.faviconURL)
        json.member("closedAt", JSONText.timestamp(tab.closedAt))
        write(history: tab.history, index: tab.historyIndex, to: &json)
        json.endObject()
    }

    private static func write(history: [HistoryEntryRecord], index: Int, to json: inout JSONText) {
        json.member("historyIndex", index)
        json.key("history")
        json.beginArray()
        for entry in history {
            json.beginObject()
            json.member("url", entry.url)
            json.member("title", entry.title)
            json.member("transition", entry.transition)
            json.member("timestamp", JSONText.timestamp(entry.timestamp))
            json.endObject()
        }
        json.endArray()
    }

    // MARK: Reading

    /// What a document's profile part says.
    public struct Head: Sendable {
        public var profile: ProfileRecord
        public var recentlyClosed: [ClosedEntryRecord]
        /// What its web state counts in the profile's byte budget (0: none).
        public var storageStateBytes = 0
        /// Where each window is written in the body (read one at a time with ``window(_:in:at:)``).
        public var windows: [Range<Int>]
    }

    /// Reads a document's profile and recently closed entries, checks the whole document's syntax, and
    /// finds its windows without reading them into memory.
    /// - Throws: a 400 problem for bad JSON (with its offset), a 422 naming the member for anything else.
    public static func head(of body: [UInt8]) throws -> Head {
        let parsed: (value: JSONValue, spans: [Range<Int>])
        do {
            parsed = try JSONParser.parse(body, maxDepth: 16, spanning: "windows", keepingSpanned: false)
        } catch let error as JSONParser.SyntaxError {
            throw APIProblem.malformedJSON("\(error.message) at byte \(error.offset)")
        }
        let reader = Reader(parsed.value, path: "")
        try reader.allowOnly(["format", "version", "profile", "recentlyClosed", "storageState", "windows"])
        guard try reader.string("format") == format else {
            throw APIProblem.invalidField("format", "must be \"\(format)\" (a document written by GET /v1/profiles/{id}/export)")
        }
        guard try reader.int("version") == version else { throw APIProblem.invalidField("version", "must be \(version)") }
        guard parsed.value["windows"]?.array != nil else { throw APIProblem.invalidField("windows", "must be an array") }
        let profile = try reader.object("profile")
        try profile.allowOnly(["id", "name", "createdAt"])
        var record = ProfileRecord(
            id: try profile.id("id", kind: "p"), name: try profile.string("name", maxLength: 200),
            createdAt: try profile.date("createdAt"))
        var storageStateBytes = 0
        if let document = parsed.value["storageState"] {
            do {
                let state = try StorageStateJSON.parse(document)
                try state.check()
                record.webState = StorageStateJSON.encode(state)
                storageStateBytes = state.byteCount
            } catch ModelError.invalidStorageState(let member, let reason) {
                throw APIProblem.invalidField("storageState.\(member)", reason)
            }
        }
        var closed: [ClosedEntryRecord] = []
        for entry in try reader.array("recentlyClosed") {
            try entry.allowOnly(["id", "kind", "tabs"])
            guard let kind = ClosedEntryRecord.Kind(rawValue: try entry.string("kind")), kind != .closing else {
                throw APIProblem.invalidField(entry.path + "kind", "must be tab, window or group")
            }
            let tabs = try entry.array("tabs").map(closedTab)
            guard !tabs.isEmpty, kind != .tab || tabs.count == 1 else {
                throw APIProblem.invalidField(entry.path + "tabs", "must hold one tab for a tab entry, at least one otherwise")
            }
            let id = kind == .tab ? tabs[0].id : try entry.id("id", kind: "c")
            closed.append(ClosedEntryRecord(id: id, kind: kind, tabs: tabs))
        }
        return Head(profile: record, recentlyClosed: closed, storageStateBytes: storageStateBytes, windows: parsed.spans)
    }

    /// Reads the window written at `span` of `body` (the `index`th): its record (for `profile`) and tabs.
    public static func window(_ body: [UInt8], span: Range<Int>, index: Int, profile: String) throws -> (WindowRecord, [TabRecord]) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(Array(body[span]), maxDepth: 16)
        } catch let error as JSONParser.SyntaxError {
            throw APIProblem.malformedJSON("\(error.message) at byte \(span.lowerBound + error.offset)")
        }
        let window = Reader(value, path: "windows[\(index)].")
        try window.allowOnly(["id", "version", "createdAt", "lastActiveAt", "activeIndex", "pinnedCount", "groups", "tabs"])
        var groups: [GroupRecord] = []
        for group in try window.array("groups") {
            try group.allowOnly(["id", "title", "color", "collapsed"])
            groups.append(
                GroupRecord(
                    id: try group.id("id", kind: "g"), title: try group.string("title", maxLength: 1024),
                    color: try group.string("color", maxLength: 16), collapsed: try group.bool("collapsed")))
        }
        var tabs: [TabRecord] = []
        for tab in try window.array("tabs") {
            try tab.allowOnly([
                "id", "title", "loading", "progress", "faviconUrl", "createdAt", "lastActiveAt", "groupId", "openerId",
                "openerNavigationIndex", "historyIndex", "history",
            ])
            let (history, historyIndex) = try tab.history()
            tabs.append(
                TabRecord(
                    id: try tab.id("id", kind: "t"), groupID: try tab.optionalID("groupId", kind: "g"),
                    openerID: try tab.optionalID("openerId", kind: "t"), openerNavigationIndex: try tab.optionalInt("openerNavigationIndex"),
                    title: try tab.string("title", maxLength: 1024), loading: try tab.bool("loading"),
                    progress: try tab.double("progress", in: 0...1), faviconURL: try tab.optionalString("faviconUrl", maxLength: 2 << 20),
                    createdAt: try tab.date("createdAt"), lastActiveAt: try tab.date("lastActiveAt"), historyIndex: historyIndex,
                    history: history, position: Double(tabs.count) * TabRecord.positionStep))
        }
        let record = WindowRecord(
            id: try window.id("id", kind: "w"), profileID: profile, version: try window.int("version", in: 1...Int(Int32.max)),
            tabOrder: tabs.map(\.id), activeIndex: try window.int("activeIndex", in: -1...max(tabs.count - 1, -1)),
            pinnedCount: try window.int("pinnedCount", in: 0...tabs.count), groups: groups,
            createdAt: try window.date("createdAt"), lastActiveAt: try window.date("lastActiveAt"))
        return (record, tabs)
    }

    private static func closedTab(_ value: Reader) throws -> ClosedTabRecord {
        let tab = value
        try tab.allowOnly([
            "id", "tabId", "windowId", "index", "groupId", "group", "wasActive", "wasPinned", "title", "faviconUrl", "closedAt",
            "historyIndex", "history",
        ])
        var group: ClosedGroupRecord?
        if tab.value["group"] != nil, tab.value["group"] != .null {
            let reader = try tab.object("group")
            try reader.allowOnly(["title", "color", "collapsed"])
            group = ClosedGroupRecord(
                title: try reader.string("title", maxLength: 1024), color: try reader.string("color", maxLength: 16),
                collapsed: try reader.bool("collapsed"))
        }
        let (history, historyIndex) = try tab.history()
        return ClosedTabRecord(
            id: try tab.id("id", kind: "c"), tabID: try tab.id("tabId", kind: "t"), windowID: try tab.id("windowId", kind: "w"),
            index: try tab.int("index", in: 0...Int(Int32.max)), groupID: try tab.optionalID("groupId", kind: "g"), group: group,
            wasActive: try tab.bool("wasActive"), wasPinned: try tab.bool("wasPinned"), title: try tab.string("title", maxLength: 1024),
            faviconURL: try tab.optionalString("faviconUrl", maxLength: 2 << 20), closedAt: try tab.date("closedAt"),
            historyIndex: historyIndex, history: history)
    }

    /// Typed, checked reads of one object of the document; every problem names its member's path
    /// (`windows[2].tabs[5].history[0].url`).
    struct Reader {
        let value: JSONValue
        let path: String

        init(_ value: JSONValue, path: String) {
            self.value = value
            self.path = path
        }

        func allowOnly(_ names: Set<String>) throws {
            guard case .object(let members) = value else { throw APIProblem.invalidField(String(path.dropLast()), "must be an object") }
            if let unknown = members.first(where: { !names.contains($0.key) }) {
                throw APIProblem.invalidField(path + unknown.key, "is not a member of this object")
            }
        }

        private func member(_ name: String) throws -> JSONValue {
            guard let found = value[name] else { throw APIProblem.invalidField(path + name, "is required") }
            return found
        }

        func string(_ name: String, maxLength: Int = 1 << 20) throws -> String {
            guard let text = try member(name).string else { throw APIProblem.invalidField(path + name, "must be a string") }
            guard text.utf8.count <= maxLength else { throw APIProblem.invalidField(path + name, "is longer than \(maxLength) bytes") }
            guard !text.unicodeScalars.contains("\u{0}") else { throw APIProblem.invalidField(path + name, "must not hold U+0000") }
            return text
        }

        func optionalString(_ name: String, maxLength: Int) throws -> String? {
            if value[name] == nil || value[name] == .null { return nil }
            return try string(name, maxLength: maxLength)
        }

        func id(_ name: String, kind: Character) throws -> String {
            let text = try string(name, maxLength: 17)
            guard text.count == 17, text.first == kind, text.dropFirst().allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
                throw APIProblem.invalidField(path + name, "must be an id: '\(kind)' and 16 lowercase hex digits")
            }
            return text
        }

        func optionalID(_ name: String, kind: Character) throws -> String? {
            if value[name] == nil || value[name] == .null { return nil }
            return try id(name, kind: kind)
        }

        func int(_ name: String, in range: ClosedRange<Int> = Int(Int32.min)...Int(Int32.max)) throws -> Int {
            guard let number = try member(name).int else { throw APIProblem.invalidField(path + name, "must be an integer") }
            guard range.contains(number) else { throw APIProblem.invalidField(path + name, "must be \(range.lowerBound)…\(range.upperBound)") }
            return number
        }

        func optionalInt(_ name: String) throws -> Int? {
            if value[name] == nil || value[name] == .null { return nil }
            return try int(name, in: 0...Int(Int32.max))
        }

        func double(_ name: String, in range: ClosedRange<Double>) throws -> Double {
            guard let number = try member(name).double, range.contains(number) else {
                throw APIProblem.invalidField(path + name, "must be a number \(range.lowerBound)…\(range.upperBound)")
            }
            return number
        }

        func bool(_ name: String) throws -> Bool {
            guard let flag = try member(name).bool else { throw APIProblem.invalidField(path + name, "must be true or false") }
            return flag
        }

        func date(_ name: String) throws -> Date {
            guard let date = JSONText.date(fromTimestamp: try string(name, maxLength: 64)) else {
                throw APIProblem.invalidField(path + name, "must be an RFC 3339 UTC timestamp such as 2026-11-25T10:00:00.000Z")
            }
            return date
        }

        func object(_ name: String) throws -> Reader {
            let found = try member(name)
            guard case .object = found else { throw APIProblem.invalidField(path + name, "must be an object") }
            return Reader(found, path: path + name + ".")
        }

        func array(_ name: String) throws -> [Reader] {
            guard let items = try member(name).array else { throw APIProblem.invalidField(path + name, "must be an array") }
            return items.enumerated().map { Reader($1, path: path + "\(name)[\($0)].") }
        }

        /// `historyIndex` and `history`: at most 75 entries, the index inside them (or -1 when empty).
        func history() throws -> ([HistoryEntryRecord], Int) {
            var entries: [HistoryEntryRecord] = []
            let items = try array("history")
            guard items.count <= 75 else { throw APIProblem.invalidField(path + "history", "holds at most 75 entries (the saved window)") }
            for entry in items {
                try entry.allowOnly(["url", "title", "transition", "timestamp"])
                entries.append(
                    HistoryEntryRecord(
                        url: try entry.string("url", maxLength: 2 << 20), title: try entry.string("title", maxLength: 1024),
                        transition: try entry.string("transition", maxLength: 32), timestamp: try entry.date("timestamp")))
            }
            let index = try int("historyIndex", in: (entries.isEmpty ? -1 : 0)...(entries.count - 1))
            return (entries, index)
        }
    }
}
