public import BrowserAccess
public import HTTPServer

/// Reading a request's subject (what the placement stages ask before a handler runs).
extension RequestSubject {
    /// What `request` names without asking anything (a new WebDriver session's profile may take a
    /// lookup: see ``isNewWebDriverSession(_:basePath:)``); nil: nothing placeable.
    public init?(_ request: HTTPRequest) {
        let parameters = request.pathParameters
        if let id = parameters["profileId"] {
            self = .profile(id)
            return
        }
        // A WebDriver session lives with its profile, which its id starts with (`p….uuid`).
        if let session = parameters["sessionId"] {
            guard let dot = session.firstIndex(of: "."), dot != session.startIndex else { return nil }
            self = .profile(String(session[..<dot]))
            return
        }
        if let id = parameters["browserId"] {
            self = .window(id)
        } else if let id = parameters["tabId"] {
            self = .tab(id)
        } else if let id = parameters["groupId"] {
            self = .group(id)
        } else if Self.definesProfileQuery(request), let id = request.queryValue("profileId") {
            self = .profile(id)
        } else if request.method == .post, request.routeTemplate == "/v1/browsers",
            let id = (try? JSONParser.parse(request.body))?["profileId"]?.string
        {
            self = .profile(id)
        } else {
            return nil
        }
    }

    /// The routes whose contract defines a `profileId` query parameter (listing windows, the
    /// profile's event stream): on any other, a `profileId` in the query is not read.
    static func definesProfileQuery(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        return request.routeTemplate == "/v1/browsers" || request.routeTemplate == "/v1/events"
    }

    /// A request that makes a new WebDriver session (its profile is chosen by the facade).
    public static func isNewWebDriverSession(_ request: HTTPRequest, basePath: String?) -> Bool {
        guard request.method == .post, let basePath else { return false }
        return request.routeTemplate == basePath + "/session"
    }

    /// The profile a new WebDriver session names itself (`browserd:profileId` in its capabilities), if any.
    public static func webDriverCapabilityProfile(_ request: HTTPRequest) -> String? {
        guard let capabilities = (try? JSONParser.parse(request.body))?["capabilities"] else { return nil }
        let sets = [capabilities["alwaysMatch"]].compactMap { $0 } + (capabilities["firstMatch"]?.array ?? [])
        return sets.lazy.compactMap { $0["browserd:profileId"]?.string }.first
    }
}
