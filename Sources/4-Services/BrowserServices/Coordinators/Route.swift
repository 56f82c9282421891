public import BrowserModel
import Foundation

/// A deep link into a window, parsed (Firefox for iOS's `Route`): where to take the window.
public enum Route: Sendable, Equatable {
    case tabGrid(page: String)
    case settings(section: String?)
    case history
    case tab(TabID)
    case open(url: String, incognito: Bool, background: Bool)
    case search(query: String)

    /// Whether following it shows incognito content from a window of kind `incognito`.
    func showsIncognitoContent(fromIncognitoWindow incognito: Bool) -> Bool {
        if incognito { return true }
        switch self {
        case .tabGrid(let page): return page == "incognito"
        case .open(_, let toIncognito, _): return toIncognito
        default: return false
        }
    }
}

/// Parses `browserd://` URLs into routes; anything it does not know is refused, never guessed.
public enum RouteBuilder {
    /// - Throws: ``RoutingError/invalidRoute(_:)`` naming what is wrong.
    public static func route(from text: String) throws -> Route {
        guard text.utf8.count <= 4096, let components = URLComponents(string: text) else {
            throw RoutingError.invalidRoute("'\(text.prefix(100))' is not a URL")
        }
        guard components.scheme?.lowercased() == "browserd" else {
            throw RoutingError.invalidRoute("only browserd:// URLs are routes, not '\(components.scheme ?? "")'")
        }
        let host = components.host?.lowercased() ?? ""
        let path = components.path.split(separator: "/").map(String.init)
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard query[item.name] == nil else { throw RoutingError.invalidRoute("parameter '\(item.name)' is given twice") }
            query[item.name] = item.value ?? ""
        }
        func allow(_ names: Set<String>) throws {
            if let unknown = query.keys.sorted().first(where: { !names.contains($0) }) {
                throw RoutingError.invalidRoute("browserd://\(host) takes no parameter '\(unknown)'")
            }
        }
        func noPath() throws {
            guard path.isEmpty else { throw RoutingError.invalidRoute("browserd://\(host) takes no path, got '/\(path.joined(separator: "/"))'") }
        }
        func flag(_ name: String) throws -> Bool {
            switch query[name] {
            case nil, "0", "false": return false
            case "1", "true", "": return true
            case let other?: throw RoutingError.invalidRoute("'\(name)' must be 1 or 0, got '\(other)'")
            }
        }
        switch host {
        case "tab-grid":
            try noPath()
            try allow(["page"])
            let page = query["page"] ?? "regular"
            guard TabGridCoordinator.Page(rawValue: page) != nil else {
                throw RoutingError.invalidRoute("page must be regular, incognito or recent, got '\(page)'")
            }
            return .tabGrid(page: page)
        case "settings":
            try allow([])
            guard path.count <= 1 else { throw RoutingError.invalidRoute("settings takes one section at most") }
            if let section = path.first, SettingsCoordinator.Section(rawValue: section) == nil {
                throw RoutingError.invalidRoute("unknown settings section '\(section)' (privacy, search-engine, clear-browsing-data, appearance)")
            }
            return .settings(section: path.first)
        case "history":
            try noPath()
            try allow([])
            return .history
        case "tab":
            try allow([])
            guard path.count == 1, !path[0].isEmpty else { throw RoutingError.invalidRoute("browserd://tab/{tabId} needs a tab id") }
            return .tab(TabID(rawValue: path[0]))
        case "open":
            try noPath()
            try allow(["url", "incognito", "background"])
            guard let url = query["url"], !url.isEmpty else { throw RoutingError.invalidRoute("browserd://open needs url=") }
            return .open(url: url, incognito: try flag("incognito"), background: try flag("background"))
        case "search":
            try noPath()
            try allow(["q"])
            guard let q = query["q"], !q.trimmingCharacters(in: .whitespaces).isEmpty, q.count <= 2048 else {
                throw RoutingError.invalidRoute("browserd://search needs q= (1 to 2048 characters)")
            }
            return .search(query: q)
        default:
            throw RoutingError.invalidRoute("unknown route host '\(host)' (tab-grid, settings, history, tab, open, search)")
        }
    }
}
