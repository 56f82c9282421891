public import BrowserModel
public import BrowserRecords
import BrowserServices
import HTTPServer

extension ProfileDocument {
    /// A profile document checked in itself: everything an import refuses before it looks at what is
    /// stored. Every id appears once (windows, tabs, closed tabs, window and group entries); a window's
    /// groups are its own and its tabs name only those; every window and the recently closed list load
    /// exactly as written (``ProfileImportCheck``); the counts and the history text are within the
    /// model's limits. The import (`POST /v1/profiles/import`) and the fuzz targets use this one check.
    public struct Validated {
        public var head: Head
        public var windows: [WindowRecord] = []
        /// Each window's tabs, in the windows' order.
        public var tabs: [(window: String, tab: TabRecord)] = []
        public var windowIDs: [String] = []
        public var tabIDs: [String] = []
        /// Closed tabs' row ids.
        public var closedIDs: [String] = []
        /// Window and group entries' ids.
        public var entryIDs: [String] = []
        /// The groups of the document's windows, and those its closed tabs remember.
        public var groupIDs = Set<String>()
        public var closedGroupIDs = Set<String>()
        /// The tab ids closed tabs remember (not restored as such, but they must name no other tab).
        public var closedTabIDs = Set<String>()
        /// History text the profile would hold (`--profile-max-bytes`).
        public var historyBytes = 0

        /// - Throws: 400 for malformed JSON, 422 naming the member that is refused, 507 past
        ///   `limits.profileBytes`.
        public init(_ body: [UInt8], limits: ModelLimits) throws {
            head = try ProfileDocument.head(of: body)
            let profileID = head.profile.id
            let check = ProfileImportCheck(profile: head.profile, limits: limits)
            var ids = Set([profileID])
            func unique(_ id: String, _ field: String) throws {
                guard ids.insert(id).inserted else { throw TransferProblem.invalid(field, "repeats the id \(id)") }
            }
            guard head.windows.count <= limits.windowsPerProfile else {
                throw TransferProblem.invalid("windows", "holds \(head.windows.count) windows; a profile holds at most \(limits.windowsPerProfile)")
            }
            for (index, span) in head.windows.enumerated() {
                let (window, tabs) = try ProfileDocument.window(body, span: span, index: index, profile: profileID)
                try unique(window.id, "windows[\(index)].id")
                windowIDs.append(window.id)
                for (position, tab) in tabs.enumerated() {
                    try unique(tab.id, "windows[\(index)].tabs[\(position)].id")
                    tabIDs.append(tab.id)
                    historyBytes += HistorySummary(tab.history, index: tab.historyIndex).byteCount
                }
                var windowGroups = Set<String>()
                for group in window.groups where !windowGroups.insert(group.id).inserted || !groupIDs.insert(group.id).inserted {
                    throw TransferProblem.invalid("windows[\(index)].groups", "repeats the group \(group.id)")
                }
                for (position, tab) in tabs.enumerated() where tab.groupID.map({ !windowGroups.contains($0) }) ?? false {
                    throw TransferProblem.invalid("windows[\(index)].tabs[\(position)].groupId", "names no group of its window")
                }
                let repairs: [String]
                do {
                    repairs = try check.repairs(of: window, tabs: Dictionary(tabs.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }))
                } catch {
                    throw TransferProblem.invalid("windows[\(index)]", "cannot be loaded: \(error)")
                }
                if let first = repairs.first { throw TransferProblem.invalid("windows[\(index)]", "does not load as written: \(first)") }
                windows.append(window)
                self.tabs += tabs.map { (window.id, $0) }
            }
            for (index, entry) in head.recentlyClosed.enumerated() {
                if entry.kind != .tab {
                    try unique(entry.id, "recentlyClosed[\(index)].id")
                    entryIDs.append(entry.id)
                }
                for tab in entry.tabs {
                    try unique(tab.id, "recentlyClosed[\(index)].tabs")
                    closedIDs.append(tab.id)
                    if let group = tab.groupID { closedGroupIDs.insert(group) }
                    closedTabIDs.insert(tab.tabID)
                    historyBytes += HistorySummary(tab.history, index: tab.historyIndex).byteCount
                }
            }
            guard head.recentlyClosed.count <= limits.recentlyClosedEntries else {
                throw TransferProblem.invalid(
                    "recentlyClosed", "holds \(head.recentlyClosed.count) entries; a profile keeps at most \(limits.recentlyClosedEntries)")
            }
            if let first = check.repairs(of: head.recentlyClosed).first {
                throw TransferProblem.invalid("recentlyClosed", "does not load as written: \(first)")
            }
            historyBytes += head.storageStateBytes
            guard historyBytes <= limits.profileBytes else {
                throw HTTPError(
                    507, kind: "profile-storage-full", title: "Insufficient Storage",
                    detail: "The document holds \(historyBytes) bytes of history text; a profile holds at most \(limits.profileBytes) (--profile-max-bytes).")
            }
        }
    }
}
