import BrowserAccess
import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

/// The W3C WebDriver (classic) facade: the window/tab/navigation subset, under a base path
/// (`/webdriver`). A window handle is a tab id; WebDriver's OS window (rect, maximize) is a browserd
/// window; a session lives in a profile and owns the tabs it created. Every change goes through the
/// window's dispatcher like a REST call (saved, logged in the action log, streamed).
///
/// Requests are processed in the spec's order: an unknown path is `unknown command` (404), a known
/// path with another method `unknown method` (405), an unknown session `invalid session id` (404),
/// a POST body that is not a JSON object `invalid argument` (400); then the command runs.
struct WebDriverRoutes {
    let api: APIRoutes
    let sessions: WebDriverSessions
    let base: String

    /// What a command handler gets: the caller, its session (for `/session/{sessionId}/…`), and the
    /// POST body's members.
    struct Call {
        let request: HTTPRequest
        let principal: Principal
        let session: WebDriverSessions.Session?
        let body: [String: JSONValue]

        var sessionValue: WebDriverSessions.Session { session! }
    }

    // MARK: Answers

    static func answer(_ bytes: [UInt8], status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status, contentType: "application/json; charset=utf-8", body: bytes,
            headers: ["Cache-Control": "no-cache"])
    }

    /// `{"value": …}`.
    static func value(_ write: (inout JSONText) -> Void) -> HTTPResponse {
        var json = JSONText(capacity: 256)
        json.beginObject()
        json.key("value")
        write(&json)
        json.endObject()
        return answer(json.bytes)
    }

    static var null: HTTPResponse { value { $0.null() } }

    // MARK: Registration

    /// Ends sessions left unused past the session timeout, as Delete Session would (their tabs close),
    /// checking every quarter of the timeout (at most every 30 s). It holds the sessions and the service
    /// weakly, so it stops once the application that made them is gone.
    func startExpiry() {
        let interval = min(sessions.limits.sessionTimeout / 4, .seconds(30))
        Task.detached { [weak sessions, weak service = api.service] in
            while true {
                try? await Task.sleep(for: max(interval, .milliseconds(50)))
                guard let sessions, let service else { return }
                for session in sessions.removeExpired() { await Self.end(session, service: service) }
            }
        }
    }

    func register(in router: inout Router) {
        startExpiry()
        var table: [(HTTPMethod, String, Responder)] = []
        func add(
            _ method: HTTPMethod, _ path: String, session needsSession: Bool = true,
            _ body: @escaping @Sendable (Call) async throws -> HTTPResponse
        ) {
            table.append((method, base + path, responder(method, needsSession: needsSession, body)))
        }
        defer { for (method, path, responder) in table { router.add(method, path, responder) } }
        router.onFailure(under: base) { request, allow in
            (allow == nil ? WebDriverError.unknownCommand(request.path) : WebDriverError.unknownMethod(request.method.rawValue, request.path)).response
        }
        add(.get, "/status", session: false) { _ in
            let open = sessions.count
            let limit = sessions.limits.total
            return Self.value { json in
                json.beginObject()
                json.member("ready", open < limit)
                json.member("message", open < limit ? "browserd accepts new sessions" : "the session limit is reached")
                json.member("sessions", open)
                json.endObject()
            }
        }
        add(.post, "/session", session: false) { try await newSession($0) }
        add(.delete, "/session/{sessionId}") { try await deleteSession($0) }
        add(.get, "/session/{sessionId}/timeouts") { call in Self.timeouts(call.sessionValue.timeouts) }
        add(.post, "/session/{sessionId}/timeouts") { try setTimeouts($0) }
        add(.post, "/session/{sessionId}/url") { try await navigate($0) }
        add(.get, "/session/{sessionId}/url") { call in
            let tab = try current(call)
            return Self.value { $0.value(tab.url) }
        }
        add(.post, "/session/{sessionId}/back") { try await traverse($0, .back) }
        add(.post, "/session/{sessionId}/forward") { try await traverse($0, .forward) }
        add(.post, "/session/{sessionId}/refresh") { try await traverse($0, .reload) }
        add(.get, "/session/{sessionId}/title") { call in
            let tab = try current(call)
            return Self.value { $0.value(tab.title) }
        }
        add(.get, "/session/{sessionId}/window") { call in
            let tab = try current(call)
            return Self.value { $0.value(tab.id.rawValue) }
        }
        add(.delete, "/session/{sessionId}/window") { try await closeWindow($0) }
        add(.post, "/session/{sessionId}/window") { try await switchWindow($0) }
        add(.get, "/session/{sessionId}/window/handles") { call in Self.handles(openHandles(call.sessionValue)) }
        add(.post, "/session/{sessionId}/window/new") { try await newWindow($0) }
        add(.get, "/session/{sessionId}/window/rect") { call in
            let window = try windowOf(try current(call).id)
            return Self.rect(api.service.window(window)?.bounds ?? WindowBounds())
        }
        add(.post, "/session/{sessionId}/window/rect") { try await setRect($0) }
        add(.post, "/session/{sessionId}/window/maximize") { call in
            try await changeBounds(call) { $0 = .maximized }
        }
        add(.post, "/session/{sessionId}/window/minimize") { call in
            try await changeBounds(call) { $0.state = .minimized }
        }
        add(.post, "/session/{sessionId}/execute/sync") { try await execute($0, isAsync: false) }
        add(.post, "/session/{sessionId}/execute/async") { try await execute($0, isAsync: true) }
        add(.get, "/session/{sessionId}/screenshot") { try await screenshot($0) }
    }

    /// The lease and tab of the session's current tab, when a renderer holds its profile and gave
    /// the tab a live page; nil otherwise.
    private func renderedTab(_ call: Call) throws -> (tab: TabSnapshot, lease: RendererLeases.Lease)? {
        let tab = try current(call)
        guard let profile = api.service.window(tab.browserID)?.profileID, let lease = api.leases.lease(of: profile),
            lease.target(of: tab.id) != nil
        else { return nil }
        return (tab, lease)
    }

    /// Execute Script (W3C §13.2): on the tab's real page while a renderer holds it.
    private func execute(_ call: Call, isAsync: Bool) async throws -> HTTPResponse {
        guard case .string(let script)? = call.body["script"] else { throw WebDriverError.invalidArgument("script must be a string") }
        guard case .array(let args)? = call.body["args"] else { throw WebDriverError.invalidArgument("args must be an array") }
        guard let (tab, lease) = try renderedTab(call), let control = api.rendererControl else {
            // selenium asks this of every window when a switch fails (to look windows up by name):
            // browserd's tabs have no names.
            guard !isAsync, script.trimmingCharacters(in: .whitespacesAndNewlines) == "return window.name" else {
                throw WebDriverError.unsupportedOperation(
                    "no renderer holds this tab's page now: scripts run on real pages only (start browserd-renderer for the profile)")
            }
            return Self.value { $0.value("") }
        }
        let timeout = call.sessionValue.timeouts.script ?? 600_000
        let outcome: RendererScriptOutcome
        do {
            outcome = try await control.execute(
                RendererScript(script: script, args: args, isAsync: isAsync, timeoutMilliseconds: timeout), tab: tab.id, lease: lease)
        } catch {
            throw WebDriverError.unknownError("the renderer did not run the script: \(error)")
        }
        switch outcome {
        case .value(let value): return Self.value { $0.value(value) }
        case .error(let name, let message):
            throw WebDriverError(code: name == "script timeout" ? "script timeout" : "javascript error", status: 500, message: message)
        case .noPage: throw WebDriverError.unsupportedOperation("the tab has no live page now (activate it first)")
        }
    }

    /// Take Screenshot (W3C §17.1): the tab's real page, a base64 PNG.
    private func screenshot(_ call: Call) async throws -> HTTPResponse {
        guard let (tab, lease) = try renderedTab(call), let control = api.rendererControl else {
            throw WebDriverError.unsupportedOperation("no renderer holds this tab's page now: screenshots are of real pages only")
        }
        let data: String?
        do {
            data = try await control.screenshot(tab: tab.id, lease: lease)
        } catch {
            throw WebDriverError.unknownError("the renderer took no screenshot: \(error)")
        }
        guard let data else { throw WebDriverError.unsupportedOperation("the tab has no live page now (activate it first)") }
        return Self.value { $0.value(data) }
    }

    /// A command behind the facade's guard: authentication, the session, the body.
    private func responder(
        _ method: HTTPMethod, needsSession: Bool,
        _ body: @escaping @Sendable (Call) async throws -> HTTPResponse
    ) -> Responder {
        let routes = self
        return .deferred { request in
            do {
                let principal = try routes.api.authenticate(request)
                // Placement as the caller: it loads only a profile the caller may use.
                if let answer = await Principal.$current.withValue(principal, operation: { await routes.api.placement?.current?.place(request) }) {
                    return answer
                }
                let session = needsSession ? try routes.sessions.session(request.parameter("sessionId"), for: principal) : nil
                // A profile over its write quota: the session's changes wait like a REST client's.
                if method == .post, let session, let quota = routes.api.service.writeQuota,
                    let seconds = quota.retryAfter(profile: session.profile.rawValue)
                {
                    throw WebDriverError.unknownError("the profile wrote more than its quota lately; retry in \(seconds) s")
                }
                var members: [String: JSONValue] = [:]
                if method == .post {
                    guard let value = try? JSONParser.parse(request.body), case .object(let list) = value else {
                        throw WebDriverError.invalidArgument("the body must be a JSON object")
                    }
                    if let path = RequestBody.unstorableText(in: value, path: "") {
                        throw WebDriverError.invalidArgument("'\(APIProblem.echo(path))' contains U+0000 (NUL), which browserd does not store")
                    }
                    for (key, value) in list { members[key] = value }
                }
                return try await Principal.$current.withValue(principal) {
                    try await body(Call(request: request, principal: principal, session: session, body: members))
                }
            } catch let error as WebDriverError {
                return error.response
            } catch let error as HTTPError where error.problem.status == 401 {
                throw error
            } catch {
                return Self.translate(error).response
            }
        }
    }

    /// A service or model error in WebDriver's words.
    static func translate(_ error: any Error) -> WebDriverError {
        if let error = error as? ServiceError {
            switch error {
            case .storageFailed, .storageUnreadable: return .storageUnavailable("Storage is unavailable (\(error)); nothing changed. Retry later.")
            default: return .unknownError("\(error)")
            }
        }
        if let error = error as? ModelError {
            switch error {
            case .invalidURL, .invalidArgument: return .invalidArgument("\(error)")
            case .tabNotFound, .browserNotFound: return .noSuchWindow("\(error)")
            case .historiesNotLoaded, .snapshotsNotLoaded: return .storageUnavailable("Storage could not be read; nothing changed. Retry later.")
            default: return .unknownError("\(error)")
            }
        }
        if let error = error as? HTTPError {
            return WebDriverError(code: "unknown error", status: error.problem.status == 503 ? 503 : 500, message: error.problem.detail ?? error.problem.title)
        }
        return .unknownError("\(error)")
    }
}
