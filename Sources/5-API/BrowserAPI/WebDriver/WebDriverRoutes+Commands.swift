import BrowserAccess
import BrowserModel
import BrowserResidency
import BrowserServices
import Foundation
import HTTPServer

// The commands: each reads the session, checks its input in the spec's order, and changes the
// model through the window's dispatcher.
extension WebDriverRoutes {
    // MARK: Sessions

    func newSession(_ call: Call) async throws -> HTTPResponse {
        guard case .object(let capabilities)? = call.body["capabilities"] else {
            throw WebDriverError.invalidArgument("capabilities must be an object")
        }
        let caps = Dictionary(capabilities.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        var always: [String: JSONValue] = [:]
        if let value = caps["alwaysMatch"] {
            guard case .object(let list) = value else { throw WebDriverError.invalidArgument("alwaysMatch must be an object") }
            always = Dictionary(list.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        }
        var first: [[String: JSONValue]] = [[:]]
        if let value = caps["firstMatch"] {
            guard case .array(let list) = value, !list.isEmpty else { throw WebDriverError.invalidArgument("firstMatch must be a non-empty array") }
            first = try list.map { entry in
                guard case .object(let members) = entry else { throw WebDriverError.invalidArgument("each firstMatch entry must be an object") }
                return Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
            }
        }
        try Self.validate(always)
        var matched: [String: JSONValue]?
        for entry in first {
            try Self.validate(entry)
            if let key = entry.keys.first(where: { always[$0] != nil }) {
                throw WebDriverError.invalidArgument("capability \(key) is in both alwaysMatch and firstMatch")
            }
            let merged = always.merging(entry) { $1 }
            if Self.matches(merged) {
                matched = merged
                break
            }
        }
        guard let capabilitiesMatched = matched else {
            throw WebDriverError.sessionNotCreated("no capability set matches browserd (browserName \"browserd\", platformName \"linux\")")
        }
        let profile = try await sessionProfile(capabilitiesMatched, principal: call.principal)
        // Refused before anything is made (and checked again when it is added).
        do { try sessions.check(profile: profile) } catch { throw WebDriverError.sessionNotCreated(error.description) }
        let window: WindowSnapshot
        let tab: TabSnapshot
        do {
            window = try await api.service.createWindow(profile: profile)
            (tab, _) = try await api.service.dispatch(TabCommands.open, OpenTabRequest(url: "about:blank", activate: true), in: window.id)
        } catch let error as ServiceError {
            // Storage failing is no fault of the capabilities: retry later, as the REST API says.
            switch error {
            case .storageFailed, .storageUnreadable: throw WebDriverRoutes.translate(error)
            default: throw WebDriverError.sessionNotCreated("the session's window could not be opened: \(error)")
            }
        } catch {
            throw WebDriverError.sessionNotCreated("the session's window could not be opened: \(error)")
        }
        let id = WebDriverSessions.newID(profile: profile)
        var session = WebDriverSessions.Session(id: id, principal: call.principal, profile: profile, handles: [tab.id], current: tab.id)
        if case .object(let list)? = capabilitiesMatched["timeouts"] {
            session.timeouts = try Self.timeouts(from: Dictionary(list.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 }), over: session.timeouts)
        }
        do {
            try sessions.add(session)
        } catch {
            _ = try? await api.service.closeWindow(window.id)
            throw WebDriverError.sessionNotCreated(error.description)
        }
        let timeouts = session.timeouts
        return Self.value { json in
            json.beginObject()
            json.member("sessionId", id)
            json.key("capabilities")
            json.beginObject()
            json.member("browserName", "browserd")
            json.member("browserVersion", "1")
            json.member("platformName", "linux")
            json.member("acceptInsecureCerts", false)
            json.member("pageLoadStrategy", "normal")
            json.key("proxy")
            json.beginObject()
            json.endObject()
            json.member("setWindowRect", true)
            json.key("timeouts")
            Self.writeTimeouts(timeouts, to: &json)
            json.member("strictFileInteractability", false)
            json.member("unhandledPromptBehavior", "dismiss and notify")
            json.member("userAgent", "browserd (model only; renders no pages)")
            json.member("browserd:profileId", profile.rawValue)
            json.member("browserd:browserId", window.id.rawValue)
            json.endObject()
            json.endObject()
        }
    }

    /// Type checks of the standard capabilities; an unknown name without `:` is refused, extension
    /// capabilities (`se:remoteUrl`, `goog:chromeOptions`, …) are taken as given.
    static func validate(_ capabilities: [String: JSONValue]) throws {
        for (name, value) in capabilities {
            func require(_ ok: Bool, _ what: String) throws { if !ok { throw WebDriverError.invalidArgument("capability \(name) must be \(what)") } }
            switch name {
            case "browserName", "browserVersion", "platformName":
                if case .string = value { continue }
                try require(false, "a string")
            case "acceptInsecureCerts", "strictFileInteractability", "setWindowRect", "webSocketUrl":
                if case .bool = value { continue }
                try require(false, "a boolean")
            case "pageLoadStrategy":
                if case .string(let text) = value, ["none", "eager", "normal"].contains(text) { continue }
                try require(false, "none, eager or normal")
            case "proxy", "timeouts":
                if case .object = value { continue }
                try require(false, "an object")
            case "unhandledPromptBehavior":
                if case .string = value { continue }
                if case .object = value { continue }
                try require(false, "a string or an object")
            case "userAgent":
                if case .string = value { continue }
                try require(false, "a string")
            default:
                if name.contains(":") { continue }
                throw WebDriverError.invalidArgument("unknown capability \(name)")
            }
        }
        if case .object(let list)? = capabilities["timeouts"] {
            _ = try timeouts(from: Dictionary(list.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 }), over: WebDriverSessions.Timeouts())
        }
        if case .string(let id)? = capabilities["browserd:profileId"], id.isEmpty {
            throw WebDriverError.invalidArgument("browserd:profileId must name a profile")
        }
    }

    static func matches(_ capabilities: [String: JSONValue]) -> Bool {
        if case .string(let name)? = capabilities["browserName"], name != "browserd" { return false }
        if case .string(let platform)? = capabilities["platformName"], platform.lowercased() != "linux" { return false }
        if case .bool(true)? = capabilities["webSocketUrl"] { return false }  // no BiDi here
        return true
    }

    /// Where a session lives: `browserd:profileId`, else a profile token's own profile, else the
    /// shared regular profile named "webdriver" (made on first use).
    func sessionProfile(_ capabilities: [String: JSONValue], principal: Principal) async throws -> ProfileID {
        if case .string(let raw)? = capabilities["browserd:profileId"] {
            let id = ProfileID(rawValue: raw)
            guard api.service.profile(id) != nil, principal.reaches(api.service.rootProfile(of: id)) else {
                throw WebDriverError.sessionNotCreated("browserd:profileId names no profile of yours: \(raw)")
            }
            return id
        }
        if case .profile(let own) = principal { return own }
        if let shared = ProfileResidency.sharedWebDriverProfile(among: api.service.profiles()) {
            return shared.id
        }
        do {
            return try await api.service.createProfile(name: "webdriver").id
        } catch let error as ServiceError {
            throw WebDriverRoutes.translate(error)
        } catch {
            throw WebDriverError.sessionNotCreated("the webdriver profile could not be made: \(error)")
        }
    }

    func deleteSession(_ call: Call) async throws -> HTTPResponse {
        guard let session = sessions.remove(call.sessionValue.id) else { return Self.null }
        await end(session)
        return Self.null
    }

    /// Closes what a removed session made: its tabs close (through each window's dispatcher); a window
    /// left empty closes too.
    func end(_ session: WebDriverSessions.Session) async { await Self.end(session, service: api.service) }

    static func end(_ session: WebDriverSessions.Session, service: BrowserService) async {
        for handle in session.handles {
            guard let window = service.window(ofTab: handle) else { continue }
            _ = try? await service.dispatch(TabCommands.close, handle, in: window)
            if service.window(window)?.tabCount == 0 { _ = try? await service.closeWindow(window) }
        }
    }

    // MARK: Timeouts

    static func writeTimeouts(_ timeouts: WebDriverSessions.Timeouts, to json: inout JSONText) {
        json.beginObject()
        for (name, value) in [("script", timeouts.script), ("pageLoad", timeouts.pageLoad), ("implicit", timeouts.implicit)] {
            json.key(name)
            if let value { json.value(value) } else { json.null() }
        }
        json.endObject()
    }

    static func timeouts(_ timeouts: WebDriverSessions.Timeouts) -> HTTPResponse {
        value { writeTimeouts(timeouts, to: &$0) }
    }

    /// `over` with the given values: each `null` or an integer 0…2^53−1; unknown keys are ignored.
    static func timeouts(from members: [String: JSONValue], over current: WebDriverSessions.Timeouts) throws -> WebDriverSessions.Timeouts {
        var timeouts = current
        for (name, path) in [("script", \WebDriverSessions.Timeouts.script), ("pageLoad", \.pageLoad), ("implicit", \.implicit)] {
            guard let value = members[name] else { continue }
            switch value {
            case .null where name == "script":
                timeouts[keyPath: path] = nil
            case .number(let number, _) where number >= 0 && number <= 9_007_199_254_740_991 && number == number.rounded():
                timeouts[keyPath: path] = Int(number)
            default:
                throw WebDriverError.invalidArgument("\(name) must be an integer from 0 to 2^53 - 1")
            }
        }
        return timeouts
    }

    func setTimeouts(_ call: Call) throws -> HTTPResponse {
        let timeouts = try Self.timeouts(from: call.body, over: call.sessionValue.timeouts)
        sessions.update(call.sessionValue.id) { $0.timeouts = timeouts }
        return Self.null
    }

    // MARK: Windows (tabs)

    /// The session's tabs that are still open, in the order it made them.
    func openHandles(_ session: WebDriverSessions.Session) -> [TabID] {
        session.handles.filter { api.service.window(ofTab: $0) != nil }
    }

    static func handles(_ handles: [TabID]) -> HTTPResponse {
        value { json in
            json.beginArray()
            for handle in handles { json.value(handle.rawValue) }
            json.endArray()
        }
    }

    /// The session's current tab.
    /// - Throws: `no such window` when it was closed.
    func current(_ call: Call) throws -> TabSnapshot {
        guard let id = call.sessionValue.current, let (tab, _) = api.service.tab(id) else { throw WebDriverError.noSuchWindow() }
        return tab
    }

    func windowOf(_ tab: TabID) throws -> BrowserID {
        guard let window = api.service.window(ofTab: tab) else { throw WebDriverError.noSuchWindow() }
        return window
    }

    func closeWindow(_ call: Call) async throws -> HTTPResponse {
        let tab = try current(call)
        let window = try windowOf(tab.id)
        _ = try await api.service.dispatch(TabCommands.close, tab.id, in: window)
        if api.service.window(window)?.tabCount == 0 { _ = try? await api.service.closeWindow(window) }
        sessions.update(call.sessionValue.id) { $0.current = nil }
        let remaining = openHandles(call.sessionValue)
        // With its last window gone the session ends.
        if remaining.isEmpty { _ = sessions.remove(call.sessionValue.id) }
        return Self.handles(remaining)
    }

    func switchWindow(_ call: Call) async throws -> HTTPResponse {
        guard let value = call.body["handle"] else { throw WebDriverError.invalidArgument("handle is required") }
        guard case .string(let raw) = value else { throw WebDriverError.noSuchWindow("handle must be a window handle (a string)") }
        let handle = TabID(rawValue: raw)
        guard openHandles(call.sessionValue).contains(handle), let window = api.service.window(ofTab: handle) else {
            throw WebDriverError.noSuchWindow("No window with handle \(raw) in this session")
        }
        sessions.update(call.sessionValue.id) { $0.current = handle }
        // Switching brings the tab to the front, as a browser's driver does.
        _ = try await api.service.dispatch(TabCommands.activate, handle, in: window)
        return Self.null
    }

    func newWindow(_ call: Call) async throws -> HTTPResponse {
        var type = "tab"
        switch call.body["type"] {
        case nil, .null?: break
        case .string(let hint)?: type = hint == "window" ? "window" : "tab"
        default: throw WebDriverError.invalidArgument("type must be a string or null")
        }
        let tab = try current(call)
        let window: BrowserID
        if type == "window" {
            window = try await api.service.createWindow(profile: call.sessionValue.profile).id
        } else {
            window = try windowOf(tab.id)
        }
        // At about:blank, without opener, in the background: the current window does not change.
        let (created, _) = try await api.service.dispatch(TabCommands.open, OpenTabRequest(url: "about:blank", activate: type == "window"), in: window)
        sessions.update(call.sessionValue.id) { $0.handles.append(created.id) }
        return Self.value { json in
            json.beginObject()
            json.member("handle", created.id.rawValue)
            json.member("type", type)
            json.endObject()
        }
    }

    // MARK: Navigation

    func navigate(_ call: Call) async throws -> HTTPResponse {
        guard case .string(let raw)? = call.body["url"] else { throw WebDriverError.invalidArgument("url must be a string") }
        let tab = try current(call)
        let url: String
        do {
            url = try URLNormalizer.normalize(raw)
        } catch {
            throw WebDriverError.invalidArgument("\(raw) is not an absolute URL browserd can show: \(error)")
        }
        _ = try await api.service.dispatch(
            TabCommands.navigate, NavigateRequest(tabID: tab.id, navigation: .navigate(url: url, transition: .typed)),
            in: try windowOf(tab.id))
        return Self.null
    }

    /// Back, forward or refresh; at either end of the history, back and forward do nothing.
    func traverse(_ call: Call, _ navigation: TabNavigation) async throws -> HTTPResponse {
        let tab = try current(call)
        switch navigation {
        case .back where !tab.canGoBack, .forward where !tab.canGoForward:
            return Self.null
        default:
            _ = try await api.service.dispatch(TabCommands.navigate, NavigateRequest(tabID: tab.id, navigation: navigation), in: try windowOf(tab.id))
            return Self.null
        }
    }

    // MARK: Rect

    static func rect(_ rect: WindowBounds) -> HTTPResponse {
        value { json in
            json.beginObject()
            json.member("x", rect.x)
            json.member("y", rect.y)
            json.member("width", rect.width)
            json.member("height", rect.height)
            json.endObject()
        }
    }

    /// Changes the bounds of the current tab's window through its dispatcher (the window's stream
    /// says `window.bounds`) and answers the new rect.
    func changeBounds(_ call: Call, _ change: (inout WindowBounds) -> Void) async throws -> HTTPResponse {
        let window = try windowOf(try current(call).id)
        var bounds = api.service.window(window)?.bounds ?? WindowBounds()
        change(&bounds)
        let (result, _) = try await api.service.dispatch(TabCommands.setBounds, bounds, in: window)
        return Self.rect(result)
    }

    func setRect(_ call: Call) async throws -> HTTPResponse {
        func number(_ name: String, _ range: ClosedRange<Double>) throws -> Int? {
            switch call.body[name] {
            case nil, .null?: return nil
            case .number(let value, _)? where range.contains(value): return Int(value.rounded(.towardZero))
            default: throw WebDriverError.invalidArgument("\(name) must be a number from \(Int(range.lowerBound)) to \(Int(range.upperBound)), or null")
            }
        }
        let x = try number("x", -2_147_483_648...2_147_483_647)
        let y = try number("y", -2_147_483_648...2_147_483_647)
        let width = try number("width", 0...2_147_483_647)
        let height = try number("height", 0...2_147_483_647)
        // Setting a rect restores a maximized or minimized window first.
        return try await changeBounds(call) { bounds in
            bounds.state = .normal
            if let x { bounds.x = x }
            if let y { bounds.y = y }
            if let width { bounds.width = width }
            if let height { bounds.height = height }
        }
    }
}
