import BrowserdClient
import Foundation

/// A profile's web state as the renderer keeps it in step with browserd (issue 52): a value, the
/// decisions apart from the DevTools calls that carry them out (``Renderer`` reads cookies and the
/// live pages' localStorage, and loads what browserd holds into Chromium).
///
/// Nothing is saved before browserd's state was loaded into Chromium (``loaded(_:)``): a Chromium that
/// started logged out must not overwrite the login browserd holds. A reading (``read(cookies:pages:)``)
/// says what to save, or nil when nothing changed since the last load or save: all of Chromium's
/// cookies, and each origin's localStorage as last read from a page of that origin (an origin with no
/// live page keeps what was last known of it). States are compared in a canonical order (cookies by
/// domain, path, name; origins by name), which is also the order the renderer saves.
public struct WebStateTracker: Sendable, Equatable {
    public typealias State = Components.Schemas.StorageState
    public typealias Cookie = Components.Schemas.StorageCookie
    public typealias Item = Components.Schemas.StorageOrigin.LocalStoragePayloadPayload

    /// What browserd holds (as last loaded or saved), canonical; nil until it was loaded into Chromium.
    public private(set) var stored: State?
    /// Each origin's localStorage as last known.
    private var origins: [String: [Item]] = [:]
    /// A state browserd refused (past a limit, too large a body): not sent again until it changes.
    private var refused: State?

    public init() {}

    /// `state` (browserd's) was loaded into Chromium: it is what browserd holds, and the origins' storage.
    public mutating func loaded(_ state: State) {
        let canonical = Self.canonical(state)
        stored = canonical
        origins = Dictionary(canonical.origins.map { ($0.origin, $0.localStorage) }, uniquingKeysWith: { _, last in last })
    }

    /// A reading of Chromium: every cookie, and the localStorage of the origins that have a live page now.
    /// - Returns: the state to save (it differs from what browserd holds), or nil.
    public mutating func read(cookies: [Cookie], pages: [String: [Item]]) -> State? {
        guard let stored else { return nil }
        for (origin, items) in pages { origins[origin] = items }
        let now = Self.canonical(
            State(cookies: cookies, origins: origins.map { Components.Schemas.StorageOrigin(origin: $0.key, localStorage: $0.value) }))
        return now == stored || now == refused ? nil : now
    }

    /// browserd refused `state` for good (a 4xx other than a fence's): it is not sent again as it is.
    public mutating func refused(_ state: State) { refused = Self.canonical(state) }

    /// `state` was saved (browserd answered it).
    public mutating func saved(_ state: State) { stored = Self.canonical(state) }

    /// Whether `state` (browserd's now) is what the renderer last loaded or saved: its own write coming
    /// back, nothing to load.
    public func isCurrent(_ state: State) -> Bool { stored == Self.canonical(state) }

    /// Cookies by domain, path, name (then partition); origins by name, those with no items left out
    /// (Playwright writes only origins that hold something).
    public static func canonical(_ state: State) -> State {
        State(
            cookies: state.cookies.sorted {
                ($0.domain, $0.path, $0.name, $0.partitionKey ?? "") < ($1.domain, $1.path, $1.name, $1.partitionKey ?? "")
            },
            origins: state.origins.filter { !$0.localStorage.isEmpty }.sorted { $0.origin < $1.origin })
    }

    // MARK: Chromium's forms

    /// A cookie of `Storage.getCookies`, in Playwright's form (as its `storageState` writes it).
    public static func cookie(fromDevTools value: JSONValue) -> Cookie? {
        guard let name = value["name"]?.string, let text = value["value"]?.string, let domain = value["domain"]?.string,
            let path = value["path"]?.string
        else { return nil }
        let session = value["session"]?.bool ?? false
        let sameSite = value["sameSite"]?.string.flatMap(Cookie.SameSitePayload.init(rawValue:)) ?? .lax
        let partition = value["partitionKey"]
        return Cookie(
            name: name, value: text, domain: domain, path: path, expires: session ? -1 : (value["expires"]?.double ?? -1),
            httpOnly: value["httpOnly"]?.bool ?? false, secure: value["secure"]?.bool ?? false, sameSite: sameSite,
            partitionKey: partition?["topLevelSite"]?.string, _crHasCrossSiteAncestor: partition?["hasCrossSiteAncestor"]?.bool)
    }

    /// `cookie` as `Storage.setCookies` takes it (a session cookie has no expiry).
    public static func devToolsParameter(_ cookie: Cookie) -> JSONValue {
        var parameter: [String: JSONValue] = [
            "name": .string(cookie.name), "value": .string(cookie.value), "domain": .string(cookie.domain), "path": .string(cookie.path),
            "secure": .bool(cookie.secure), "httpOnly": .bool(cookie.httpOnly), "sameSite": .string(cookie.sameSite.rawValue),
        ]
        if cookie.expires > 0 { parameter["expires"] = .number(cookie.expires) }
        if let site = cookie.partitionKey {
            parameter["partitionKey"] = ["topLevelSite": .string(site), "hasCrossSiteAncestor": .bool(cookie._crHasCrossSiteAncestor ?? true)]
        }
        return .object(parameter)
    }

    /// The origin whose localStorage a page at `url` holds (http and https only; nil for any other page).
    public static func origin(of url: String) -> String? {
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = parsed.host, !host.isEmpty
        else { return nil }
        let defaultPort = scheme == "http" ? 80 : 443
        let port = parsed.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        let shown = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(shown.lowercased())\(port)"
    }
}
