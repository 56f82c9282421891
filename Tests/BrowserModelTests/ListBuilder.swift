import Foundation

@testable import BrowserModel

/// Builds a `WebStateList` from Chromium's scenario notation and describes it back:
/// tabs are names, left of `|` is the pinned section, `*` marks the active tab and `[N x y]` is group N
/// holding x and y. Example: `"a b | c* [1 d e] f"`.
final class ListBuilder {
    let list: WebStateList
    private(set) var tabs: [String: WebState] = [:]
    private(set) var groups: [String: TabGroup] = [:]
    private var names: [ObjectIdentifier: String] = [:]

    init(_ description: String = "|", maxCount: Int = 10_000) throws {
        list = WebStateList(maxCount: maxCount)
        var pinned = true
        var active: String?
        var openGroup: (name: String, indices: [Int])?
        var pendingGroups: [(String, [Int])] = []
        for raw in description.split(separator: " ") {
            var token = String(raw)
            if token == "|" {
                pinned = false
                continue
            }
            if token.hasPrefix("[") {
                openGroup = (String(token.dropFirst()), [])
                continue
            }
            var closes = false
            if token.hasSuffix("]") {
                closes = true
                token.removeLast()
            }
            if token.hasSuffix("*") {
                token.removeLast()
                active = token
            }
            if !token.isEmpty {
                let tab = self.tab(token)
                let index = try list.insert(tab, .automatic().pinned(pinned))
                if openGroup != nil { openGroup!.indices.append(index) }
            }
            if closes, let group = openGroup {
                pendingGroups.append(group)
                openGroup = nil
            }
        }
        for (name, indices) in pendingGroups {
            let group = try list.createGroup(indices: Set(indices), visualData: TabGroupVisualData(title: name))
            groups[name] = group
            names[ObjectIdentifier(group)] = name
        }
        if let active { try list.activate(at: list.index(of: tabs[active]!)) }
    }

    /// The tab named `name`, made on first use (not inserted).
    func tab(_ name: String) -> WebState {
        if let tab = tabs[name] { return tab }
        let tab = WebState()
        tabs[name] = tab
        names[ObjectIdentifier(tab)] = name
        return tab
    }

    subscript(name: String) -> WebState { tab(name) }

    func index(_ name: String) -> Int { list.index(of: tab(name)) }

    /// Names a group made by a test.
    func name(_ group: TabGroup, _ name: String) {
        groups[name] = group
        names[ObjectIdentifier(group)] = name
    }

    func name(of tab: WebState?) -> String {
        guard let tab else { return "-" }
        return names[ObjectIdentifier(tab)] ?? "?"
    }

    func name(of group: TabGroup?) -> String {
        guard let group else { return "-" }
        return names[ObjectIdentifier(group)] ?? (group.visualData.title.isEmpty ? "?" : group.visualData.title)
    }

    /// The list in scenario notation.
    func describe() -> String {
        var tokens: [String] = []
        var currentGroup: TabGroup?
        for index in 0..<list.count {
            if index == list.pinnedCount { tokens.append("|") }
            let group = list.group(at: index)
            if group !== currentGroup {
                if currentGroup != nil { tokens[tokens.count - 1] += "]" }
                if let group { tokens.append("[\(name(of: group))") }
                currentGroup = group
            }
            tokens.append(name(of: list.webState(at: index)) + (index == list.activeIndex ? "*" : ""))
        }
        if currentGroup != nil { tokens[tokens.count - 1] += "]" }
        if list.pinnedCount == list.count { tokens.append("|") }
        return tokens.joined(separator: " ")
    }
}

/// Records every notification of a list as a compact line.
final class ChangeRecorder: WebStateListObserver {
    let builder: ListBuilder
    var lines: [String] = []

    init(_ builder: ListBuilder) {
        self.builder = builder
        builder.list.addObserver(self)
    }

    func take() -> [String] {
        defer { lines = [] }
        return lines
    }

    private func status(_ status: WebStateListStatus) -> String {
        status.activeChanged ? " active:\(builder.name(of: status.oldActive))->\(builder.name(of: status.newActive))" : ""
    }

    func webStateListWillChange(_ list: WebStateList, detach: DetachChange, status: WebStateListStatus) {
        lines.append("willDetach(\(builder.name(of: detach.tab)),\(detach.fromIndex))" + self.status(status))
    }

    func webStateListDidChange(_ list: WebStateList, change: WebStateListChange, status: WebStateListStatus) {
        let b = builder
        let text: String
        switch change {
        case .statusOnly(let tab, let index, let pinned, let old, let new):
            text = "status(\(b.name(of: tab)),\(index)\(pinned ? ",pinned" : "")\(old !== new ? ",\(b.name(of: old))->\(b.name(of: new))" : ""))"
        case .detach(let d):
            var flags = d.isClosing ? ",closing" : ""
            if d.isUserAction { flags += ",user" }
            if d.isTabsCleanup { flags += ",cleanup" }
            text = "detach(\(b.name(of: d.tab)),\(d.fromIndex)\(flags)\(d.group != nil ? ",\(b.name(of: d.group))" : ""))"
        case .move(let tab, let from, let to, let pinned, let old, let new):
            text = "move(\(b.name(of: tab)),\(from)->\(to)\(pinned ? ",pinned" : "")\(old !== new ? ",\(b.name(of: old))->\(b.name(of: new))" : ""))"
        case .replace(let replaced, let inserted, let index):
            text = "replace(\(b.name(of: replaced))->\(b.name(of: inserted)),\(index))"
        case .insert(let tab, let index, let group):
            text = "insert(\(b.name(of: tab)),\(index)\(group != nil ? ",\(b.name(of: group))" : ""))"
        case .groupCreate(let group):
            text = "groupCreate(\(b.name(of: group)))"
        case .groupVisualDataUpdate(let group, let old):
            text = "groupVisual(\(b.name(of: group)),old:\(old.title)/\(old.color.rawValue)/\(old.collapsed))"
        case .groupMove(let group, let from, let to):
            text = "groupMove(\(b.name(of: group)),\(from)->\(to))"
        case .groupDelete(let group):
            text = "groupDelete(\(b.name(of: group)))"
        case .openerChange(let tab, let index):
            text = "opener(\(b.name(of: tab)),\(index))"
        }
        lines.append(text + self.status(status))
    }

    func webStateListWillBeginBatch(_ list: WebStateList) { lines.append("batchBegin") }
    func webStateListBatchEnded(_ list: WebStateList) { lines.append("batchEnd") }
}

/// A tab whose history holds `urls` (the last is current).
func tabWithHistory(_ urls: [String]) -> WebState {
    let tab = WebState()
    for url in urls { try! tab.navigate(to: url, transition: .link) }  // a new tab is realized: it cannot throw
    return tab
}
