public import BrowserdClient

/// What the terminal tab strip shows of one window, kept from its event stream: the tabs in order
/// (pinned first), their groups and the active tab. A value type: ``apply(_:)`` takes one typed
/// event, ``lines(width:)`` draws it; both are tested without a terminal.
public struct TabStrip: Sendable, Equatable {
    public struct Tab: Sendable, Equatable {
        public var id: String
        public var title: String
        public var url: String
        public var pinned: Bool
        public var groupID: String?
        public var loading: Bool
    }

    public struct Group: Sendable, Equatable {
        public var id: String
        public var title: String
        public var color: String
        public var collapsed: Bool
    }

    public let windowID: String
    public private(set) var tabs: [Tab] = []
    public private(set) var groups: [String: Group] = [:]
    public private(set) var activeID: String?
    /// The tab the keys act on (an index into ``tabs``).
    public var cursor = 0
    /// The window was closed: nothing more will come.
    public private(set) var closed = false
    /// A line about the connection or the last failed key (e.g. a problem's detail).
    public var status = "connecting"

    public init(windowID: String) { self.windowID = windowID }

    public var activeIndex: Int? { activeID.flatMap { id in tabs.firstIndex { $0.id == id } } }
    public var cursorTab: Tab? { tabs.indices.contains(cursor) ? tabs[cursor] : nil }

    /// Takes one event of the window's stream. The cursor follows the active tab when another tab
    /// becomes active, and the tab it is on when that one moves.
    public mutating func apply(_ event: WindowStreamEvent) {
        let wasActive = activeID
        switch event {
        case .tabsPopulate(let populate):
            tabs = populate.items.map(Self.tab)
            activeID = populate.selectedId
            cursor = activeIndex ?? 0
            status = "live"
        case .groupsPopulate(let populate):
            groups = Dictionary(uniqueKeysWithValues: populate.groups.map { ($0.id, Self.group($0)) })
        case .reset(let reset):
            tabs = reset.tabs.items.map(Self.tab)
            activeID = reset.tabs.selectedId
            groups = Dictionary(uniqueKeysWithValues: reset.groups.map { ($0.id, Self.group($0)) })
            cursor = activeIndex ?? 0
            status = "live (resynchronised: \(reset.reason.rawValue))"
        case .tabsInsert(let insert):
            tabs.insert(Self.tab(insert.item), at: min(max(insert.index, 0), tabs.count))
            activeID = insert.selectedId
        case .tabsRemove(let remove):
            tabs.removeAll { $0.id == remove.tabId }
            activeID = remove.selectedId
        case .tabsMove(let move):
            guard let from = tabs.firstIndex(where: { $0.id == move.tabId }) else { break }
            let tab = tabs.remove(at: from)
            tabs.insert(tab, at: min(max(move.index, 0), tabs.count))
            if cursor == from { cursor = min(max(move.index, 0), tabs.count - 1) }
        case .tabsReplace(let replace):
            if let index = tabs.firstIndex(where: { $0.id == replace.oldTabId }) { tabs[index] = Self.tab(replace.item) }
            if activeID == replace.oldTabId { activeID = replace.item.id }
        case .tabsSelect(let select):
            activeID = select.tabId
        case .tabsUpdate(let update):
            if let index = tabs.firstIndex(where: { $0.id == update.item.id }) { tabs[index] = Self.tab(update.item) }
        case .groupsCreate(let event): groups[event.group.id] = Self.group(event.group)
        case .groupsUpdate(let event): groups[event.group.id] = Self.group(event.group)
        case .groupsMove(let event): groups[event.group.id] = Self.group(event.group)
        case .groupsDelete(let event): groups[event.groupId] = nil
        case .groupsMembership(let event):
            if let index = tabs.firstIndex(where: { $0.id == event.tabId }) { tabs[index].groupID = event.groupId }
        case .browserClosed:
            closed = true
            status = "the window was closed"
        default:
            break
        }
        if activeID != wasActive, let index = activeIndex { cursor = index }
        cursor = tabs.isEmpty ? 0 : min(max(cursor, 0), tabs.count - 1)
    }

    /// The strip as lines of at most `width` visible characters, with ANSI styles when `styled`:
    /// a header, the pinned section, each group's heading before its tabs, the active tab marked `*`
    /// and the cursor `>`, then the keys.
    public func lines(width: Int, styled: Bool = true) -> [String] {
        let width = max(width, 20)
        func style(_ text: String, _ code: String) -> String { styled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
        var out = [style(Self.fit("browserd-tabs  window \(windowID)  \(tabs.count) tab\(tabs.count == 1 ? "" : "s")  [\(status)]", width), "1")]
        var section: String? = "none"
        for (index, tab) in tabs.enumerated() {
            let heading = tab.pinned ? "pinned" : tab.groupID.map { "group:\($0)" }
            if heading != section {
                if tab.pinned {
                    out.append(style(Self.fit(" pinned", width), "2"))
                } else if let id = tab.groupID, let group = groups[id] {
                    let title = group.title.isEmpty ? "(untitled)" : group.title
                    let text = Self.fit(" group \(title) (\(group.color)\(group.collapsed ? ", collapsed" : ""))", width)
                    out.append(style(text, Self.ansiColor(group.color)))
                } else if section != "none" {
                    out.append(style(Self.fit(" tabs", width), "2"))
                }
                section = heading
            }
            if let id = tab.groupID, groups[id]?.collapsed == true, tab.id != activeID, index != cursor { continue }
            let marker = (index == cursor ? ">" : " ") + (tab.id == activeID ? "*" : " ")
            let name = tab.title.isEmpty ? tab.url : "\(tab.title) — \(tab.url)"
            let line = Self.fit("\(marker) \(index + 1). \(name)\(tab.loading ? " (loading)" : "")", width)
            out.append(tab.id == activeID ? style(line, "7") : line)
        }
        if tabs.isEmpty { out.append("  (no tabs)") }
        out.append(style(Self.fit("keys: j/k or arrows move  enter activate  n new  x close  [ ] reorder  p pin  q quit", width), "2"))
        return out
    }

    static func fit(_ text: String, _ width: Int) -> String {
        text.count <= width ? text : String(text.prefix(width - 1)) + "…"
    }

    static func ansiColor(_ color: String) -> String {
        switch color {
        case "red": "31"
        case "green": "32"
        case "yellow", "orange": "33"
        case "blue": "34"
        case "pink", "purple": "35"
        case "cyan": "36"
        default: "37"
        }
    }

    static func tab(_ item: Components.Schemas.TabItem) -> Tab {
        Tab(id: item.id, title: item.title, url: item.url, pinned: item.pinned, groupID: item.groupId, loading: item.loading)
    }

    static func group(_ item: Components.Schemas.GroupItem) -> Group {
        Group(id: item.id, title: item.title, color: item.color.rawValue, collapsed: item.collapsed)
    }
}
