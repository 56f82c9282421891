import BrowserModel
public import BrowserServices
import Foundation
public import JSONWriter

/// Reads a Firefox session (`sessionstore.jsonlz4`, `recovery.jsonlz4`, or their JSON) into an
/// ``ImportedSession``: `windows[].tabs[].entries[]` (url, title) with `index` (1-based) as the
/// current entry, `pinned`, `groupId` → `windows[].groups[]` (`id`, `name`, `color`, `collapsed`),
/// `windows[].selected` (1-based), `windows[]._closedTabs[]` (`state`, `pos`, `closedAt`), the
/// top-level `_closedWindows[]` and `selectedWindow` (1-based). Everything else Firefox keeps (form
/// data, scroll positions, cookies, frames) is not read.
///
/// Firefox's own choices, each named in a warning where met:
/// - a hidden tab (`hidden`, an extension's) is imported as an ordinary tab at its place;
/// - a container tab (`userContextId` > 0) is imported into the profile as an ordinary tab (a
///   profile has no containers);
/// - `about:newtab`, `about:home` and `about:privatebrowsing` entries become the new tab page,
///   `about:blank` stays, and other `about:` pages (Firefox's own: preferences, reader, …) are left
///   out of their history;
/// - `savedGroups` (groups saved away from every window) and a window's `closedGroups` are left out.
public enum FirefoxSessionReader {
    /// The deepest JSON nesting read (frames nest in entries; a session is rarely deeper than 20).
    public static let maxDepth = 100

    /// Reads a file as sent: mozLz4-framed, or (`isJSON`) its decoded JSON.
    public static func read(_ body: [UInt8], isJSON: Bool, maxDecodedBytes: Int) throws(FirefoxSessionError) -> ImportedSession {
        let text: [UInt8]
        if isJSON {
            guard body.count <= maxDecodedBytes else { throw .tooLarge(claimed: body.count, limit: maxDecodedBytes) }
            text = body
        } else {
            text = try MozLz4.decode(body, limit: maxDecodedBytes)
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(text, maxDepth: maxDepth)
        } catch let error as JSONParser.SyntaxError {
            throw .json(error.message, offset: error.offset)
        } catch {
            throw .json("\(error)", offset: 0)
        }
        return try session(value)
    }

    /// The session a decoded document describes.
    public static func session(_ document: JSONValue) throws(FirefoxSessionError) -> ImportedSession {
        guard case .object = document else { throw .shape(at: "the document", "is \(document.typeName), not a session object") }
        guard let windowValues = document["windows"] else {
            throw .shape(at: "the document", "has no \"windows\": not a Firefox session file")
        }
        var context = Context()
        let windows = try context.array(windowValues, at: "windows")
        var session = ImportedSession(windows: [])
        for (index, value) in windows.enumerated() {
            let at = "windows[\(index)]"
            session.windows.append(try context.window(value, at: at))
            for (position, closed) in try context.array(value["_closedTabs"] ?? .array([]), at: at + "._closedTabs").enumerated() {
                if let tab = try context.closedTab(closed, window: index, at: "\(at)._closedTabs[\(position)]", groups: value) {
                    session.closedTabs.append(tab)
                }
            }
            if let groups = value["closedGroups"]?.array, !groups.isEmpty {
                context.warn(at + ".closedGroups", "\(groups.count) closed groups are left out (a profile keeps closed tabs and windows)")
            }
        }
        for (index, value) in try context.array(document["_closedWindows"] ?? .array([]), at: "_closedWindows").enumerated() {
            let at = "_closedWindows[\(index)]"
            var window = try context.window(value, at: at)
            window.closedAt = try context.date(value["closedAt"], at: at + ".closedAt")
            session.closedWindows.append(window)
        }
        if let selected = document["selectedWindow"] {
            guard let number = selected.int else { throw .shape(at: "selectedWindow", "is \(selected.typeName), not an integer") }
            session.selectedWindow = number - 1
        }
        if let saved = document["savedGroups"]?.array, !saved.isEmpty {
            let names = saved.compactMap { $0["name"]?.string }.map(\.debugDescription).prefix(10).joined(separator: ", ")
            context.warn("savedGroups", "\(saved.count) saved groups (\(names)) are left out: they are in no window")
        }
        session.warnings = context.warnings
        return session
    }

    /// What reading collects as it goes.
    struct Context {
        var warnings: [ImportWarning] = []

        mutating func warn(_ at: String, _ detail: String) { warnings.append(ImportWarning(at: at, detail)) }

        func array(_ value: JSONValue, at: String) throws(FirefoxSessionError) -> [JSONValue] {
            guard let items = value.array else { throw .shape(at: at, "is \(value.typeName), not an array") }
            return items
        }

        func object(_ value: JSONValue, at: String) throws(FirefoxSessionError) {
            guard case .object = value else { throw .shape(at: at, "is \(value.typeName), not an object") }
        }

        func bool(_ value: JSONValue?, at: String) throws(FirefoxSessionError) -> Bool {
            guard let value else { return false }
            guard let flag = value.bool else { throw .shape(at: at, "is \(value.typeName), not a boolean") }
            return flag
        }

        func int(_ value: JSONValue?, at: String) throws(FirefoxSessionError) -> Int? {
            guard let value, value != .null else { return nil }
            guard let number = value.int else { throw .shape(at: at, "is \(value.typeName), not an integer") }
            return number
        }

        func string(_ value: JSONValue?, at: String) throws(FirefoxSessionError) -> String? {
            guard let value, value != .null else { return nil }
            guard let text = value.string else { throw .shape(at: at, "is \(value.typeName), not a string") }
            return text
        }

        /// A time in milliseconds since 1970, as Firefox writes them.
        func date(_ value: JSONValue?, at: String) throws(FirefoxSessionError) -> Date? {
            guard let value, value != .null else { return nil }
            guard let milliseconds = value.double, milliseconds.isFinite else { throw .shape(at: at, "is \(value.typeName), not a time") }
            return Date(timeIntervalSince1970: milliseconds / 1000)
        }

        mutating func window(_ value: JSONValue, at: String) throws(FirefoxSessionError) -> ImportedSession.Window {
            try object(value, at: at)
            var groups: [ImportedSession.Group] = []
            for (index, group) in try array(value["groups"] ?? .array([]), at: at + ".groups").enumerated() {
                let groupAt = "\(at).groups[\(index)]"
                try object(group, at: groupAt)
                guard let key = try string(group["id"], at: groupAt + ".id") else { throw .shape(at: groupAt + ".id", "is missing") }
                groups.append(
                    ImportedSession.Group(
                        key: key, title: try string(group["name"], at: groupAt + ".name") ?? "",
                        color: try string(group["color"], at: groupAt + ".color") ?? "grey",
                        collapsed: try bool(group["collapsed"], at: groupAt + ".collapsed"), at: groupAt))
            }
            var tabs: [ImportedSession.Tab] = []
            for (index, tab) in try array(value["tabs"] ?? .array([]), at: at + ".tabs").enumerated() {
                tabs.append(try self.tab(tab, at: "\(at).tabs[\(index)]"))
            }
            let selected = try int(value["selected"], at: at + ".selected").map { $0 - 1 }
            return ImportedSession.Window(tabs: tabs, groups: groups, selected: selected, at: at)
        }

        mutating func tab(_ value: JSONValue, at: String) throws(FirefoxSessionError) -> ImportedSession.Tab {
            try object(value, at: at)
            let listed = try array(value["entries"] ?? .array([]), at: at + ".entries")
            // Firefox's index is 1-based; without one, the last entry is current.
            let index = try int(value["index"], at: at + ".index") ?? listed.count
            var kept: [(position: Int, entry: ImportedSession.Entry)] = []
            for (position, entry) in listed.enumerated() {
                let entryAt = "\(at).entries[\(position)]"
                try object(entry, at: entryAt)
                guard var url = try string(entry["url"], at: entryAt + ".url") else {
                    warn(entryAt, "has no url; left out")
                    continue
                }
                if url.lowercased().hasPrefix("about:") {
                    switch url.lowercased() {
                    case "about:blank": break
                    case "about:newtab", "about:home", "about:privatebrowsing": url = NavigationItem.newTabPageURL
                    default:
                        warn(entryAt, "is Firefox's own page \(url.debugDescription); left out of the history")
                        continue
                    }
                }
                kept.append((position, ImportedSession.Entry(url: url, title: try string(entry["title"], at: entryAt + ".title") ?? "")))
            }
            var current = index - 1
            if !listed.isEmpty, !listed.indices.contains(current) {
                warn(at + ".index", "selects entry \(index) of \(listed.count); the last one is selected")
                current = listed.count - 1
            }
            // The current entry, or (left out) the nearest kept one before it, else the first.
            let keptCurrent = kept.lastIndex { $0.position <= current } ?? 0
            let entries = kept.map(\.entry)
            if try bool(value["hidden"], at: at + ".hidden") {
                warn(at, "is hidden in Firefox (by an extension); imported as an ordinary tab")
            }
            if let container = try int(value["userContextId"], at: at + ".userContextId"), container > 0 {
                warn(at, "is in container \(container); imported as an ordinary tab of the profile (a profile has no containers)")
            }
            return ImportedSession.Tab(
                entries: entries, index: keptCurrent, pinned: try bool(value["pinned"], at: at + ".pinned"),
                groupKey: try string(value["groupId"], at: at + ".groupId"), lastAccessed: try date(value["lastAccessed"], at: at + ".lastAccessed"),
                at: at)
        }

        mutating func closedTab(_ value: JSONValue, window: Int, at: String, groups: JSONValue) throws(FirefoxSessionError) -> ImportedSession.ClosedTab? {
            try object(value, at: at)
            guard let state = value["state"] else { throw .shape(at: at + ".state", "is missing") }
            let tab = try self.tab(state, at: at + ".state")
            let position = try int(value["pos"], at: at + ".pos") ?? 0
            let closedAt = try date(value["closedAt"], at: at + ".closedAt") ?? Date(timeIntervalSince1970: 0)
            // A tab closed from a group remembers it by id; the group is looked up among the window's.
            var group: ImportedSession.Group?
            if let key = tab.groupKey,
                let found = groups["groups"]?.array?.first(where: { $0["id"]?.string == key })
            {
                group = ImportedSession.Group(
                    key: key, title: found["name"]?.string ?? "", color: found["color"]?.string ?? "grey",
                    collapsed: found["collapsed"]?.bool ?? false, at: at)
            }
            return ImportedSession.ClosedTab(tab: tab, window: window, position: max(0, position), group: group, closedAt: closedAt)
        }
    }
}
