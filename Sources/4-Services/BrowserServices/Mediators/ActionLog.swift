import BrowserModel
import Foundation

/// A window's action log (Flux's "every action through one dispatcher"): it watches the window's
/// dispatcher and keeps the last ``capacity`` actions with their arguments, result and duration, in
/// the order they finished (a command sent from another's handler comes before it).
/// Incognito windows keep names and results only.
final class ActionLog: DispatchObserver {
    static let capacity = 1_000
    private unowned let browser: Browser
    private weak var consumer: (any ActionLogConsumer)?
    private let onAction: (@Sendable (_ name: String, _ ok: Bool) -> Void)?
    private(set) var entries: [ActionEntry] = []
    private var nextSeq = 1

    init(browser: Browser, consumer: (any ActionLogConsumer)?, onAction: (@Sendable (String, Bool) -> Void)?) {
        self.browser = browser
        self.consumer = consumer
        self.onAction = onAction
        browser.dispatcher.addObserver(self)
    }

    func stop() {
        browser.dispatcher.removeObserver(self)
        consumer = nil
    }

    /// Entries after `seq`, oldest first, at most `limit`.
    func entries(after seq: Int, limit: Int) -> [ActionEntry] {
        Array(entries.suffix(Self.capacity).lazy.filter { $0.seq > seq }.prefix(limit))
    }

    func dispatcher(_ dispatcher: Dispatcher, didDispatch record: DispatchRecord) {
        let result: String
        switch record.outcome {
        case .success: result = "ok"
        case .failure(let error): result = Self.kind(of: error)
        }
        let entry = ActionEntry(
            seq: nextSeq, time: Date(), name: record.name,
            arguments: browser.isIncognito ? [] : Self.arguments(record.payload), result: result,
            durationMicroseconds: Int(record.duration.components.seconds * 1_000_000 + record.duration.components.attoseconds / 1_000_000_000_000))
        nextSeq += 1
        entries.append(entry)
        // Trim in steps, not on every action.
        if entries.count >= Self.capacity + Self.capacity / 4 { entries.removeFirst(entries.count - Self.capacity) }
        onAction?(record.name, result == "ok")
        consumer?.appended(entry)
    }

    /// The error's case name: `tabNotFound`, `interceptorRejected`, … (its type's name for a case
    /// without a payload whose description is prose).
    static func kind(of error: any Error) -> String {
        if let label = Mirror(reflecting: error).children.first?.label { return label }
        let text = String(describing: error)
        return text.contains(" ") ? String(describing: type(of: error)) : String(text.prefix(64))
    }

    /// A payload as short strings sorted by name: ids by value, URLs without query or fragment, long
    /// text cut.
    static func arguments(_ payload: Any) -> [ActionArgument] {
        if let describable = payload as? any ActionDescribable { return describable.actionArguments }
        if let route = payload as? Route { return [ActionArgument("route", describe(route))] }
        if let arguments = payload as? CommandArguments {
            return arguments.sorted { $0.key < $1.key }.map { name, value in
                switch value {
                case .string(let text): ActionArgument(name, shorten(text))
                case .number(let number): ActionArgument(name, String(number))
                case .bool(let flag): ActionArgument(name, String(flag))
                case .null: ActionArgument(name, "null")
                }
            }
        }
        let mirror = Mirror(reflecting: payload)
        if mirror.children.isEmpty {
            let single = scalar(payload)
            return single.isEmpty ? [] : [ActionArgument("value", single)]
        }
        var out: [ActionArgument] = []
        for child in mirror.children.prefix(16) {
            guard let label = child.label else { continue }
            let text = scalar(child.value)
            if !text.isEmpty { out.append(ActionArgument(label, text)) }
        }
        return out.sorted { $0.name < $1.name }
    }

    private static func scalar(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return "" }
            return scalar(wrapped)
        }
        if let raw = mirror.children.first(where: { $0.label == "rawValue" })?.value, mirror.children.count == 1 {
            return shorten(String(describing: raw))
        }
        if let text = value as? String { return shorten(text) }
        return shorten(String(describing: value))
    }

    /// URLs keep scheme, host and path (no query, fragment or credentials); other text is cut at 80,
    /// and then says how long it was (a `data:` favicon is logged by its length, never whole).
    static func shorten(_ text: String) -> String {
        var short = Substring(text)
        if let scheme = short.range(of: "://") {
            let rest = short[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") {
                short = short[..<scheme.upperBound] + rest[rest.index(after: at)...]
            }
            if let cut = short.firstIndex(where: { $0 == "?" || $0 == "#" }) { short = short[..<cut] }
        }
        return short.count > 80 ? String(short.prefix(79)) + "… (\(text.utf8.count) bytes)" : String(short)
    }

    private static func describe(_ route: Route) -> String {
        switch route {
        case .tabGrid(let page): "browserd://tab-grid?page=\(page)"
        case .settings(let section): "browserd://settings" + (section.map { "/\($0)" } ?? "")
        case .history: "browserd://history"
        case .tab(let id): "browserd://tab/\(id.rawValue)"
        case .open(let url, let incognito, let background):
            "browserd://open (\(shorten(url))\(incognito ? ", incognito" : "")\(background ? ", background" : ""))"
        case .search: "browserd://search"
        }
    }
}

/// A payload that says what to log of itself (faster than reflection, and chooses what is shown),
/// sorted by name.
protocol ActionDescribable {
    var actionArguments: [ActionArgument] { get }
}

extension TabID: ActionDescribable {
    var actionArguments: [ActionArgument] { [ActionArgument("tabId", rawValue)] }
}

extension OpenTabRequest: ActionDescribable {
    var actionArguments: [ActionArgument] {
        var out = [ActionArgument("activate", String(activate))]
        if let groupID { out.append(ActionArgument("groupId", groupID.rawValue)) }
        if let index { out.append(ActionArgument("index", String(index))) }
        if let openerID { out.append(ActionArgument("openerId", openerID.rawValue)) }
        if pinned { out.append(ActionArgument("pinned", "true")) }
        out.append(ActionArgument("url", ActionLog.shorten(url)))
        return out
    }
}

// The page-state, navigation, move and pin payloads come many times a second (renderers report page
// state on every load): they describe themselves rather than going through reflection.

extension PageStateUpdate: ActionDescribable {
    var actionArguments: [ActionArgument] {
        var out: [ActionArgument] = []
        if let faviconURL { out.append(ActionArgument("faviconURL", faviconURL.map(ActionLog.shorten) ?? "null")) }
        if let loading { out.append(ActionArgument("loading", String(loading))) }
        if let openerID { out.append(ActionArgument("openerId", openerID?.rawValue ?? "null")) }
        if let progress { out.append(ActionArgument("progress", String(progress))) }
        out.append(ActionArgument("tabId", tabID.rawValue))
        if let title { out.append(ActionArgument("title", ActionLog.shorten(title))) }
        return out
    }
}

extension NavigateRequest: ActionDescribable {
    var actionArguments: [ActionArgument] {
        let navigation: String =
            switch self.navigation {
            case .navigate(let url, let transition): ActionLog.shorten(url) + " (\(transition.rawValue))"
            case .replaceCurrent(let url, let transition): ActionLog.shorten(url) + " (\(transition.rawValue), replacing)"
            case .pushWithinDocument(let url, let transition): ActionLog.shorten(url) + " (\(transition.rawValue), within the document)"
            case .back: "back"
            case .forward: "forward"
            case .reload: "reload"
            case .go(let offset): "go \(offset)"
            case .commitPending(let id, let url): "commit pending \(id)" + (url.map { " at " + ActionLog.shorten($0) } ?? "")
            case .discardPending(let id): "discard pending \(id)"
            }
        return [ActionArgument("navigation", navigation + (pends ? " (pending)" : "")), ActionArgument("tabId", tabID.rawValue)]
    }
}

extension MoveTabRequest: ActionDescribable {
    var actionArguments: [ActionArgument] {
        var out = [ActionArgument("activate", String(activate))]
        if let destination { out.append(ActionArgument("destination", destination.rawValue)) }
        if let groupID { out.append(ActionArgument("groupId", groupID.rawValue)) }
        if let index { out.append(ActionArgument("index", String(index))) }
        out.append(ActionArgument("pinned", String(pinned)))
        out.append(ActionArgument("tabId", tabID.rawValue))
        return out
    }
}

extension PinRequest: ActionDescribable {
    var actionArguments: [ActionArgument] {
        [ActionArgument("pinned", String(pinned)), ActionArgument("tabId", tabID.rawValue)]
    }
}
