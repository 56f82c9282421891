public import BrowserModel
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
    /// - Parameter limits: the model's limits: a file holding more windows, tabs in a window or groups
    ///   in a window than a profile can is refused while it is read; entries past a tab's limit and
    ///   closed items past the recently-closed list's are left out as they are met (said once).
    public static func read(
        _ body: [UInt8], isJSON: Bool, maxDecodedBytes: Int, limits: ModelLimits = ModelLimits()
    ) throws(FirefoxSessionError) -> ImportedSession {
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
        return try session(value, limits: limits)
    }

    /// The session a decoded document describes.
    public static func session(_ document: JSONValue, limits: ModelLimits = ModelLimits()) throws(FirefoxSessionError) -> ImportedSession {
        guard case .object = document else { throw .shape(at: "the document", "is \(document.typeName), not a session object") }
        guard let windowValues = document["windows"] else {
            throw .shape(at: "the document", "has no \"windows\": not a Firefox session file")
        }
        var context = Context(limits: limits)
        let windows = try context.array(windowValues, at: "windows", atMost: limits.windowsPerProfile, of: "windows in a profile")
        var session = ImportedSession(windows: [])
        for (index, value) in windows.enumerated() {
            session.windows.append(try context.window(value, at: "windows[\(index)]"))
        }
        // Closed tabs and windows: the profile keeps the newest `recentlyClosedEntries`, so only those
        // are read (by the order the builder records them in: their time, then the file's order).
        var candidates: [Candidate] = []
        for (index, value) in windows.enumerated() {
            let at = "windows[\(index)]"
            for (position, closed) in try context.array(value["_closedTabs"] ?? .array([]), at: at + "._closedTabs").enumerated() {
                let closedAt = "\(at)._closedTabs[\(position)]"
                try context.object(closed, at: closedAt)
                let time = try context.date(closed["closedAt"], at: closedAt + ".closedAt") ?? Date(timeIntervalSince1970: 0)
                candidates.append(Candidate(closedAt: time, order: candidates.count, value: closed, at: closedAt, window: index))
            }
            if let groups = value["closedGroups"]?.array, !groups.isEmpty {
                context.warn(at + ".closedGroups", "\(groups.count) closed groups are left out (a profile keeps closed tabs and windows)")
            }
        }
        let now = Date()
        for (index, value) in try context.array(document["_closedWindows"] ?? .array([]), at: "_closedWindows").enumerated() {
            let at = "_closedWindows[\(index)]"
            try context.object(value, at: at)
            let time = try context.date(value["closedAt"], at: at + ".closedAt")
            candidates.append(Candidate(closedAt: time ?? now, order: candidates.count, value: value, at: at, window: nil, stated: time))
        }
        let kept = Set(
            candidates.sorted { ($0.closedAt, -$0.order) < ($1.closedAt, -$1.order) }.suffix(limits.recentlyClosedEntries).map(\.order))
        if candidates.count > kept.count {
            context.warn(
                "closed",
                "\(candidates.count - kept.count) closed tabs or windows older than the \(limits.recentlyClosedEntries) Chromium keeps were left out")
        }
        for candidate in candidates where kept.contains(candidate.order) {
            if let window = candidate.window {
                let groups = context.groupIndex(of: windows[window], window: window)
                session.closedTabs.append(try context.closedTab(candidate, window: window, groups: groups))
            } else {
                var window = try context.window(candidate.value, at: candidate.at)
                window.closedAt = candidate.stated
                session.closedWindows.append(window)
            }
        }
        if let selected = document["selectedWindow"] {
            session.selectedWindow = try context.oneBased(selected, at: "selectedWindow")
        }
        if let saved = document["savedGroups"]?.array, !saved.isEmpty {
            let names = saved.prefix(10).compactMap { $0["name"]?.string }.map { String($0.prefix(100)).debugDescription }.joined(separator: ", ")
            context.warn("savedGroups", "\(saved.count) saved groups (\(names)) are left out: they are in no window")
        }
        session.warnings = context.warnings
        session.omittedWarnings = context.omittedWarnings
        return session
    }

    /// A closed tab or window not read yet: what orders it among the others.
    struct Candidate {
        var closedAt: Date
        var order: Int
        var value: JSONValue
        var at: String
        /// The open window a closed tab belongs to; nil for a closed window.
        var window: Int?
        /// A closed window's own time, if it states one.
        var stated: Date? = nil
    }

    /// What reading collects as it goes.
    struct Context {
        let limits: ModelLimits
        var warnings: [ImportWarning] = []
        var omittedWarnings = 0
        /// Each open window's groups by id, made once per window (a closed tab names its group by id).
        var groupIndexes: [Int: [String: JSONValue]] = [:]

        init(limits: ModelLimits) { self.limits = limits }

        mutating func warn(_ at: @autoclosure () -> String, _ detail: @autoclosure () -> String) {
            ImportWarning.add(ImportWarning(at: at(), detail()), to: &warnings, omitted: &omittedWarnings)
        }

        func array(_ value: JSONValue, at: String) throws(FirefoxSessionError) -> [JSONValue] {
            guard let items = value.array else { throw .shape(at: at, "is \(value.typeName), not an array") }
            return items
        }

        /// An array of at most `limit` items: more is refused, naming what the model holds at most.
        func array(_ value: JSONValue, at: String, atMost limit: Int, of what: String) throws(FirefoxSessionError) -> [JSONValue] {
            let items = try array(value, at: at)
            guard items.count <= limit else { throw .shape(at: at, "holds \(items.count) items; at most \(limit) \(what) can be held") }
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

        /// An integer within ±2³¹ (every count and position of a session is far smaller: anything
        /// outside is refused before arithmetic on it could overflow).
        func int(_ value: JSONValue?, at: String) throws(FirefoxSessionError) -> Int? {
            guard let value, value != .null else { return nil }
            guard let number = value.int else {
                if value.double != nil { throw .shape(at: at, "is not an integer within ±2147483647") }
                throw .shape(at: at, "is \(value.typeName), not an integer")
            }
            guard number >= -Int(Int32.max), number <= Int(Int32.max) else { throw .shape(at: at, "is \(number), outside ±2147483647") }
            return number
        }

        /// A 1-based position (Firefox's `index`, `selected`, `selectedWindow`) as a 0-based one.
        func oneBased(_ value: JSONValue?, at: String) throws(FirefoxSessionError) -> Int? {
            try int(value, at: at).map { $0 - 1 }
        }

        func string(_ value: JSONValue?, at: String) throws(FirefoxSessionError) -> String? {
            guard let value, value != .null else { return nil }
            guard let text = value.string else { throw .shape(at: at, "is \(value.typeName), not a string") }
            // The REST API refuses U+0000 too: no stored text holds it (every encoder and store can
            // then hold what is imported, and an export imports again).
            guard !text.utf8.contains(0) else { throw .shape(at: at, "holds U+0000") }
            return text
        }

        /// A time in milliseconds since 1970, as Firefox writes them, within years 1…9999 (what every
        /// store and encoder holds).
        func date(_ value: JSONValue?, at: String) throws(FirefoxSessionError) -> Date? {
            guard let value, value != .null else { return nil }
            guard let milliseconds = value.double, milliseconds.isFinite else { throw .shape(at: at, "is \(value.typeName), not a time") }
            guard milliseconds >= Double(JSONText.earliestMilliseconds), milliseconds <= Double(JSONText.latestMilliseconds) else {
                throw .shape(at: at, "is \(milliseconds), not a time within years 1…9999 (milliseconds since 1970)")
            }
            return Date(timeIntervalSince1970: milliseconds / 1000)
        }

        /// The groups of open window `window` by id (made once per window: linear in the file).
        mutating func groupIndex(of value: JSONValue, window: Int) -> [String: JSONValue] {
            if let made = groupIndexes[window] { return made }
            var index: [String: JSONValue] = [:]
            for group in value["groups"]?.array ?? [] {
                if let key = group["id"]?.string, index[key] == nil { index[key] = group }
            }
            groupIndexes[window] = index
            return index
        }

        mutating func window(_ value: JSONValue, at: String) throws(FirefoxSessionError) -> ImportedSession.Window {
            try object(value, at: at)
            var groups: [ImportedSession.Group] = []
            let groupValues = try array(value["groups"] ?? .array([]), at: at + ".groups", atMost: limits.tabsPerWindow, of: "groups in a window")
            for (index, group) in groupValues.enumerated() {
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
            for (index, tab) in try array(value["tabs"] ?? .array([]), at: at + ".tabs", atMost: limits.tabsPerWindow, of: "tabs in a window").enumerated() {
                tabs.append(try self.tab(tab, at: "\(at).tabs[\(index)]"))
            }
            let selected = try oneBased(value["selected"], at: at + ".selected")
            return ImportedSession.Window(tabs: tabs, groups: groups, selected: selected, at: at)
        }

        mutating func tab(_ value: JSONValue, at: String) throws(FirefoxSessionError) -> ImportedSession.Tab {
            try object(value, at: at)
            let listed = try array(value["entries"] ?? .array([]), at: at + ".entries")
            // Firefox's index is 1-based; without one, the last entry is current.
            let index = try int(value["index"], at: at + ".index") ?? listed.count
            // A tab keeps at most `historyEntries`: the newest, the current one among them (as the
            // builder trims), so no more are read.
            var first = 0
            let keeps = limits.historyEntries
            if listed.count > keeps {
                let current = listed.indices.contains(index - 1) ? index - 1 : listed.count - 1
                first = min(listed.count - keeps, current)
                warn(at, "has \(listed.count) entries; the model keeps \(keeps): the oldest were left out")
            }
            let last = min(listed.count, first + keeps)
            var kept: [(position: Int, entry: ImportedSession.Entry)] = []
            for (position, entry) in zip(first..<last, listed[first..<last]) {
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
            var current = index - 1  // within ±2³¹: cannot overflow
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

        mutating func closedTab(_ candidate: Candidate, window: Int, groups: [String: JSONValue]) throws(FirefoxSessionError) -> ImportedSession.ClosedTab {
            let (value, at) = (candidate.value, candidate.at)
            guard let state = value["state"] else { throw .shape(at: at + ".state", "is missing") }
            let tab = try self.tab(state, at: at + ".state")
            let position = try int(value["pos"], at: at + ".pos") ?? 0
            // A tab closed from a group remembers it by id; the group is looked up among the window's.
            var group: ImportedSession.Group?
            if let key = tab.groupKey, let found = groups[key] {
                // The window's groups are checked where they are read; a bad one is refused here too,
                // never taken for an empty name.
                let groupAt = at + ".state.groupId"
                group = ImportedSession.Group(
                    key: key, title: try string(found["name"], at: groupAt + " (its group's name)") ?? "",
                    color: try string(found["color"], at: groupAt + " (its group's color)") ?? "grey",
                    collapsed: found["collapsed"]?.bool ?? false, at: at)
            }
            return ImportedSession.ClosedTab(tab: tab, window: window, position: max(0, position), group: group, closedAt: candidate.closedAt)
        }
    }
}
