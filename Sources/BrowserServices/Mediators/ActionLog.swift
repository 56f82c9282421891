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
            arguments: browser.isIncognito ? [:] : Self.arguments(record.payload), result: result,
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

    /// A payload as short strings: ids by value, URLs without query or fragment, long text cut.
    static func arguments(_ payload: Any) -> [String: String] {
        if let describable = payload as? any ActionDescribable { return describable.actionArguments }
        if let route = payload as? Route { return ["route": describe(route)] }
        if let arguments = payload as? CommandArguments {
            return arguments.mapValues { value in
                switch value {
                case .string(let text): shorten(text)
                case .number(let number): String(number)
                case .bool(let flag): String(flag)
                case .null: "null"
                }
            }
        }
        var out: [String: String] = [:]
        let mirror = Mirror(reflecting: payload)
        if mirror.children.isEmpty {
            let single = scalar(payload)
            if !single.isEmpty { out["value"] = single }
            return out
        }
        for child in mirror.children.prefix(16) {
            guard let label = child.label else { continue }
            let text = scalar(child.value)
            if !text.isEmpty { out[label] = text }
        }
        return out
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

    /// URLs keep scheme, host and path (no query, fragment or credentials); other text is cut at 80.
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
        return short.count > 80 ? String(short.prefix(79)) + "…" : String(short)
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

/// A payload that says what to log of itself (faster than reflection, and chooses what is shown).
protocol ActionDescribable {
    var actionArguments: [String: String] { get }
}

extension TabID: ActionDescribable {
    var actionArguments: [String: String] { ["tabId": rawValue] }
}

extension OpenTabRequest: ActionDescribable {
    var actionArguments: [String: String] {
        var out = ["url": ActionLog.shorten(url), "activate": String(activate)]
        if let index { out["index"] = String(index) }
        if pinned { out["pinned"] = "true" }
        if let groupID { out["groupId"] = groupID.rawValue }
        if let openerID { out["openerId"] = openerID.rawValue }
        return out
    }
}
