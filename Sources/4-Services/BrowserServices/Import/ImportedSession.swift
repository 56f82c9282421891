public import Foundation

/// A browser session read from another browser's file, before it is a profile: windows with their
/// tabs in order, each tab's history, pins, groups, the selected tab, and what was closed. Plain
/// values in the other browser's terms (its group colours, its indexes, possibly out of range);
/// ``SessionImportBuilder`` makes a profile of it by the model's rules.
public struct ImportedSession: Sendable {
    /// One history entry.
    public struct Entry: Sendable, Equatable {
        public var url: String
        public var title: String
        public init(url: String, title: String) {
            self.url = url
            self.title = title
        }
    }

    public struct Tab: Sendable {
        public var entries: [Entry]
        /// The current entry, 0-based (out of range: the builder takes the last one and says so).
        public var index: Int
        public var pinned: Bool
        /// The ``Group/key`` of the tab's group in its window.
        public var groupKey: String?
        public var lastAccessed: Date?
        /// Where the tab is in the file (`windows[0].tabs[3]`), for warnings.
        public var at: String
        public init(entries: [Entry], index: Int, pinned: Bool, groupKey: String?, lastAccessed: Date?, at: String) {
            self.entries = entries
            self.index = index
            self.pinned = pinned
            self.groupKey = groupKey
            self.lastAccessed = lastAccessed
            self.at = at
        }
    }

    public struct Group: Sendable {
        public var key: String
        public var title: String
        /// The other browser's colour name; ``SessionImportBuilder`` maps it to the model's palette.
        public var color: String
        public var collapsed: Bool
        public var at: String
        public init(key: String, title: String, color: String, collapsed: Bool, at: String) {
            self.key = key
            self.title = title
            self.color = color
            self.collapsed = collapsed
            self.at = at
        }
    }

    public struct Window: Sendable {
        public var tabs: [Tab]
        public var groups: [Group]
        /// The selected tab, 0-based (nil or out of range: the builder picks one and says so).
        public var selected: Int?
        /// When it was closed (a closed window).
        public var closedAt: Date?
        public var at: String
        public init(tabs: [Tab], groups: [Group], selected: Int?, closedAt: Date? = nil, at: String) {
            self.tabs = tabs
            self.groups = groups
            self.selected = selected
            self.closedAt = closedAt
            self.at = at
        }
    }

    /// A tab closed in one of the session's open windows.
    public struct ClosedTab: Sendable {
        public var tab: Tab
        /// The index of ``windows`` it was closed in.
        public var window: Int
        /// Where it stood in its window.
        public var position: Int
        public var group: Group?
        public var closedAt: Date
        public init(tab: Tab, window: Int, position: Int, group: Group?, closedAt: Date) {
            self.tab = tab
            self.window = window
            self.position = position
            self.group = group
            self.closedAt = closedAt
        }
    }

    public var windows: [Window]
    /// Closed in the windows above, in any order (the builder orders every closed item by its time).
    public var closedTabs: [ClosedTab]
    public var closedWindows: [Window]
    /// The window the session had in front (0-based), if any.
    public var selectedWindow: Int?
    /// What reading the file already adjusted or left out (the builder adds its own): the first
    /// ``ImportWarning/listed``, then only a count (``omittedWarnings``).
    public var warnings: [ImportWarning]
    /// The warnings past ``ImportWarning/listed`` that were counted, not kept.
    public var omittedWarnings = 0

    public init(
        windows: [Window], closedTabs: [ClosedTab] = [], closedWindows: [Window] = [], selectedWindow: Int? = nil,
        warnings: [ImportWarning] = []
    ) {
        self.windows = windows
        self.closedTabs = closedTabs
        self.closedWindows = closedWindows
        self.selectedWindow = selectedWindow
        self.warnings = warnings
    }
}

/// Something an import adjusted or left out, and where in the file it was.
public struct ImportWarning: Sendable, Equatable, CustomStringConvertible {
    /// The most warnings one import lists; past it they are counted (a file of a million odd
    /// entries must not make a million warnings).
    public static let listed = 100

    /// Adds `warning` to `list` while it holds fewer than ``listed``; counts it in `omitted` otherwise.
    public static func add(_ warning: @autoclosure () -> ImportWarning, to list: inout [ImportWarning], omitted: inout Int) {
        if list.count < listed { list.append(warning()) } else { omitted += 1 }
    }

    /// The warning that says how many were left out (nil when none was).
    public static func omission(_ omitted: Int) -> ImportWarning? {
        omitted > 0 ? ImportWarning(at: "warnings", "\(omitted) more warnings were left out (the first \(listed) are listed)") : nil
    }

    /// Where, in the file's own terms (`windows[0].tabs[3]`).
    public var at: String
    public var detail: String
    public init(at: String, _ detail: String) {
        self.at = at
        self.detail = detail
    }
    public var description: String { "\(at): \(detail)" }
}
