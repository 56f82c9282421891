import BrowserModel
import Foundation
import Synchronization

@testable import BrowserServices

/// A window's event stream as a client folds it: it takes `tabs.populate`, then applies every
/// `tabs.*`, `groups.membership` and `groups.move` event to its list, so a test can check that the stream alone
/// brings a client to the window's state.
///
/// `@unchecked Sendable`: the pump writes from its thread through the `Mutex`-guarded buffer; the
/// folded state (`items`, `selectedID`, `eventCount`) is read and changed only by the test's task,
/// in `catchUp()` and `difference(from:)`.
final class StreamMirror: EventSink, @unchecked Sendable {
    private let buffer = Mutex<(bytes: [UInt8], finished: Bool)>(([], false))
    /// The tabs as the client sees them, in order, each as its event JSON.
    private(set) var items: [[String: Any]] = []
    private(set) var selectedID: String?
    private(set) var eventCount = 0
    /// The last events applied (name and data), for failure messages.
    private(set) var recent: [String] = []

    func write(_ bytes: [UInt8], evenIfFull: Bool) -> EventSinkWrite {
        buffer.withLock { state in
            guard !state.finished else { return .closed }
            state.bytes += bytes
            return .written
        }
    }

    var bufferedByteCount: Int { 0 }
    var isClosed: Bool { buffer.withLock { $0.finished } }
    func finish() { buffer.withLock { $0.finished = true } }

    /// Reads every event delivered so far and applies it.
    /// - Returns: a problem, if an event could not be applied.
    func catchUp() -> String? {
        let bytes = buffer.withLock { state -> [UInt8] in
            defer { state.bytes = [] }
            return state.bytes
        }
        for block in String(decoding: bytes, as: UTF8.self).components(separatedBy: "\n\n") where !block.isEmpty {
            var name = ""
            var data = ""
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            guard let json = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else {
                return "event \(name) has no JSON object"
            }
            eventCount += 1
            recent.append("\(name) \(data)")
            if recent.count > 12 { recent.removeFirst() }
            if let problem = apply(name, json) { return "\(name): \(problem)" }
        }
        return nil
    }

    private func index(of id: Any?) -> Int? {
        guard let id = id as? String else { return nil }
        return items.firstIndex { $0["id"] as? String == id }
    }

    private func apply(_ name: String, _ json: [String: Any]) -> String? {
        switch name {
        case "tabs.populate":
            items = json["items"] as? [[String: Any]] ?? []
            selectedID = json["selectedId"] as? String
        case "tabs.insert":
            guard let item = json["item"] as? [String: Any], let at = json["index"] as? Int, at >= 0, at <= items.count else {
                return "bad insert \(json)"
            }
            items.insert(item, at: at)
            selectedID = json["selectedId"] as? String
        case "tabs.remove":
            guard let at = index(of: json["tabId"]) else { return "removes an unknown tab \(json)" }
            items.remove(at: at)
            selectedID = json["selectedId"] as? String
        case "tabs.move":
            guard let from = index(of: json["tabId"]), let to = json["index"] as? Int, to >= 0, to < items.count else {
                return "bad move \(json)"
            }
            items.insert(items.remove(at: from), at: to)
        case "tabs.replace":
            guard let at = index(of: json["oldTabId"]), let item = json["item"] as? [String: Any] else { return "bad replace \(json)" }
            if selectedID == items[at]["id"] as? String { selectedID = item["id"] as? String }
            items[at] = item
        case "tabs.select":
            selectedID = json["tabId"] as? String
        case "tabs.update":
            guard let item = json["item"] as? [String: Any], let at = index(of: item["id"]) else { return "updates an unknown tab \(json)" }
            items[at] = item
        case "groups.membership":
            // A grouped tab that left the window is told to have left its group after its
            // `tabs.remove` (for clients that count a group's members): nothing to change here.
            guard let at = index(of: json["tabId"]) else { break }
            items[at]["groupId"] = json["groupId"] ?? NSNull()
        case "groups.move":
            // The group's tabs move as one block to the group's new start.
            guard let group = json["group"] as? [String: Any], let id = group["id"] as? String, let start = group["start"] as? Int else {
                return "bad group move \(json)"
            }
            let members = items.filter { $0["groupId"] as? String == id }
            items.removeAll { $0["groupId"] as? String == id }
            guard start >= 0, start <= items.count, members.count == group["count"] as? Int else { return "group move out of range \(json)" }
            items.insert(contentsOf: members, at: start)
        case "reset":
            return "reset (\(json["reason"] ?? "?")): the mirror never falls behind"
        default:
            break
        }
        return nil
    }

    /// What differs between the folded stream and `window`, or nil.
    func difference(from window: WindowSnapshot) -> String? {
        let ids = items.map { $0["id"] as? String ?? "?" }
        let expected = window.tabs.map(\.id.rawValue)
        if ids != expected {
            return
                "tab order: stream has \(ids.count) tabs, window \(expected.count); first difference at \(zip(ids, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(ids.count, expected.count))"
        }
        if selectedID != window.activeTabID?.rawValue { return "selected: stream \(selectedID ?? "none"), window \(window.activeTabID?.rawValue ?? "none")" }
        for (item, tab) in zip(items, window.tabs) {
            func same(_ key: String, _ value: Any?) -> Bool {
                switch (item[key], value) {
                case (nil, _): false
                case (is NSNull, nil): true
                case (let a as String, let b as String): a == b
                case (let a as NSNumber, let b as Bool): a.boolValue == b
                case (let a as NSNumber, let b as Double): abs(a.doubleValue - b) < 1e-9
                default: false
                }
            }
            let fields: [(String, Any?)] = [
                ("url", tab.url), ("title", tab.title), ("pinned", tab.pinned), ("loading", tab.loading), ("progress", tab.progress),
                ("groupId", tab.groupID?.rawValue), ("openerTabId", tab.openerID?.rawValue), ("faviconUrl", tab.faviconURL),
            ]
            for (key, value) in fields where !same(key, value) {
                return "tab \(tab.id) \(key): stream \(item[key] ?? "absent"), window \(value ?? "null")"
            }
        }
        return nil
    }
}
