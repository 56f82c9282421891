import Foundation

/// One automation client's part of the renderer's Chromium (a Playwright or Puppeteer attached
/// through ``DevToolsGateway``), decided as a value: which sessions are its own, which targets it may
/// see, which commands go to Chromium as they are, which the model carries out instead, and which are
/// refused. ``AutomationClient`` carries its decisions out; tests drive it alone.
///
/// The client talks to a browser session of its own over the renderer's pipe
/// (`Target.attachToBrowserTarget`: its own message ids and sessions, beside the renderer's and every
/// other client's). Its commands are decoded, checked and encoded again; Chromium's messages reach it
/// byte for byte (its root session's id taken off), a page's never decoded.
///
/// - Its sessions: its root browser session, any browser session it attaches, and the sessions
///   Chromium attaches under them (announced by `Target.attachedToTarget` on the parent session).
///   A command naming another session is refused as Chromium refuses an unknown one.
/// - Its targets: pages and their frames and workers in its profile's browser context (``Scope``).
///   Others (an incognito profile's pages for the regular profile's client, Chromium's own
///   `browser_ui` targets) are never announced to it; one it is attached to regardless is detached.
/// - The model decides (``Interception``): making a target opens a tab, closing a tab's page closes
///   the tab, activating one activates the tab. `Browser.close` ends only this client's connection.
/// - Refused: browser contexts (a context of its own would be a browser outside the model, with a
///   proxy of its choosing), downloads to the renderer's disk, the renderer's files (`file:` and
///   `chrome:` pages, `DOM.setFileInputFiles`), and every browser-wide method not listed
///   (``browserMethods``): Chromium's tethering, tracing, histograms, command line, its process.
public struct AutomationFilter: Sendable {
    /// The browser contexts a client may see.
    public enum Scope: Sendable, Equatable {
        /// The renderer's profile: Chromium's default context (every context but the incognito ones).
        case regular(incognito: Set<String>)
        /// An incognito profile: its context only (nil while it has none yet: nothing).
        case incognito(String?)

        public func allows(context: String?) -> Bool {
            switch self {
            case .regular(let incognito): context.map { !incognito.contains($0) } ?? true
            case .incognito(let own): own != nil && context == own
            }
        }
    }

    /// What the model does for a client (``AutomationClient`` asks the renderer, then answers).
    public enum Interception: Sendable, Equatable {
        /// `Target.createTarget`: a tab opens in the profile's last active window (a new window when
        /// it has none, or when asked for one), activated unless `background`; the answer names its page.
        case createTarget(url: String, background: Bool, newWindow: Bool)
        /// `Target.closeTarget` of a tab's page: the tab closes (recently closed keeps it).
        case closeTarget(targetID: String)
        /// `Target.activateTarget`, `Page.bringToFront`: the tab becomes its window's active tab.
        case activateTarget(targetID: String)
    }

    /// A decision on one of the client's messages.
    public enum FromClient: Sendable, Equatable {
        /// To Chromium, as it is (encoded again, its session named).
        case forward([UInt8])
        /// To the client at once (an answer or a refusal); nothing goes to Chromium.
        case answer([UInt8])
        /// The model carries it out (``Interception``); then ``answer(id:session:result:)`` or
        /// ``refusal(id:session:code:message:)`` goes to the client.
        case intercept(Interception, id: Int, session: String?)
        /// The answer, then the client's connection ends (its pages and tabs stay).
        case answerAndEnd([UInt8])
    }

    /// A decision on one of Chromium's messages for the client's sessions.
    public struct FromChromium: Sendable, Equatable {
        /// The message for the client (nil: it never sees it).
        public var deliver: [UInt8]?
        /// Commands of the filter's own for Chromium (their answers never reach the client).
        public var send: [[UInt8]] = []
        /// Sessions that are the client's from now on, and those that are no more (routed, unrouted).
        public var added: [String] = []
        public var removed: [String] = []
        /// Sessions of targets waiting for this client's debugger: released after a while
        /// (``release(_:)``) if the client does not, so that a client cannot hold the profile's new
        /// pages (the model's) paused.
        public var waiting: [String] = []
    }

    /// The command that lets a target waiting for the client's debugger run (nil: the session is
    /// no longer the client's). Its answer is the filter's.
    public mutating func release(_ session: String) -> [UInt8]? {
        guard case .target? = sessions[session] else { return nil }
        return own("Runtime.runIfWaitingForDebugger", [:], session: session)
    }

    enum SessionKind: Sendable, Equatable {
        case browser
        /// A target's session (a page, a frame, a worker).
        case target(String)
    }

    struct TargetRecord: Sendable, Equatable {
        var type: String
        var context: String?
    }

    enum Tracked: Sendable, Equatable {
        case getTargets
        case getBrowserContexts
        /// A command of the filter's own: its answer is dropped.
        case own
    }

    struct Key: Hashable, Sendable {
        var session: String
        var id: Int
    }

    /// Ids at and above this are the filter's own (a client's are refused there: Chromium's ids are
    /// 32-bit, and a client's must never answer for the filter's).
    public static let ownIDs = 2_000_000_000
    /// The most commands a client may have waiting for Chromium's answer at once.
    public let maximumPending: Int
    /// The client's root browser session (its messages carry no session id to the client).
    public let root: String
    private(set) var sessions: [String: SessionKind]
    /// The session each session was attached under (the root has none).
    private var parents: [String: String] = [:]
    private var targets: [String: TargetRecord] = [:]
    private var tracked: [Key: Tracked] = [:]
    private var pending: Set<Key> = []
    private var nextOwnID = AutomationFilter.ownIDs

    /// Browser-wide methods a client may use (others are refused). Those marked `context` are scoped to
    /// its browser context (named for it when it is an incognito profile's).
    static let browserMethods: Set<String> = [
        "Browser.getVersion", "Browser.getWindowForTarget", "Schema.getDomains", "Target.setAutoAttach", "Target.setDiscoverTargets",
        "Target.getTargets", "Target.getTargetInfo", "Target.attachToTarget", "Target.attachToBrowserTarget", "Target.detachFromTarget",
        "Target.autoAttachRelated", "Target.getBrowserContexts",
    ]
    static let contextMethods: Set<String> = [
        "Browser.grantPermissions", "Browser.resetPermissions", "Browser.setPermission", "Storage.getCookies", "Storage.setCookies",
        "Storage.clearCookies",
    ]
    /// A target's session may use every method but these (browser-wide ones, and the renderer's files).
    static let targetRefusals: [String: String] = [
        "DOM.setFileInputFiles": "files of the renderer's machine are not given to pages",
        "Target.createBrowserContext": "a profile is one browser context",
        "Target.disposeBrowserContext": "a profile is one browser context",
        "Target.attachToBrowserTarget": "attach to the browser from the browser session",
        "Target.exposeDevToolsProtocol": "not served to automation clients",
        "Target.sendMessageToTarget": "only flat sessions are served (flatten: true)",
        "Target.attachToTarget": "attach from the browser session",
        "Target.createTarget": "open pages from the browser session",
        "Target.closeTarget": "close pages from the browser session",
        "Target.activateTarget": "activate pages from the browser session",
        "Target.setRemoteLocations": "not served to automation clients",
        // A page's Target handler sees every target of the browser: the other profile's too.
        "Target.getTargets": "list targets from the browser session",
        "Target.setDiscoverTargets": "discover targets from the browser session",
        "Target.getTargetInfo": "ask for targets from the browser session",
        "Target.autoAttachRelated": "attach from the browser session",
        "Target.getBrowserContexts": "ask for contexts from the browser session",
        // Browser-wide in effect, whichever session asks: every profile's pages.
        "Security.setIgnoreCertificateErrors": "certificate errors are every profile's",
        "Memory.getBrowserSamplingProfile": "not served to automation clients",
        "Memory.getAllTimeSamplingProfile": "not served to automation clients",
    ]
    /// Domains a page's session may not use: browser-wide (a trace holds every profile's pages) or the
    /// renderer's own.
    static let refusedDomains = ["Browser.", "Tethering.", "SystemInfo.", "Tracing.", "PWA.", "BackgroundService.", "Extensions.", "Cast."]
    /// The most browser sessions a client may hold (its root included), and sessions in all: past it,
    /// Chromium's new ones for it are detached unseen.
    static let maximumBrowserSessions = 16
    static let maximumSessions = 1024

    /// Target types a client may see and attach to.
    static let visibleTypes: Set<String> = ["page", "iframe", "worker", "shared_worker", "service_worker"]
    /// URL schemes a client's navigation may use (`Page.navigate`): the renderer's files and
    /// Chromium's own pages are not a page's, so not a client's.
    static let navigableSchemes: Set<String> = ["http", "https", "about", "data", "blob", "javascript"]

    public init(root: String, maximumPending: Int = 1024) {
        self.root = root
        self.maximumPending = maximumPending
        sessions = [root: .browser]
    }

    /// The sessions routed to the client now.
    public var ownSessions: Set<String> { Set(sessions.keys) }

    /// How many of the client's commands wait for Chromium's answer.
    public var pendingCount: Int { pending.count }

    // MARK: The client's messages

    /// Decides one message the client sent (a WebSocket text frame's bytes).
    public mutating func fromClient(_ bytes: [UInt8], scope: Scope) -> FromClient {
        guard let message = try? JSONValue.parse(bytes), case .object(var members) = message else {
            return .answer(Self.encode(["error": ["code": -32700, "message": "Message must be a valid JSON object"]]))
        }
        guard let id = members["id"]?.int, id >= 0, id < Self.ownIDs else {
            return .answer(Self.encode(["error": ["code": -32600, "message": .string("Message must have integer 'id' below \(Self.ownIDs)")]]))
        }
        let named = members["sessionId"]?.string
        guard members["sessionId"] == nil || named != nil, let method = members["method"]?.string else {
            return refusal(id: id, session: named, code: -32600, message: "Message must have string 'method' and string or no 'sessionId'")
        }
        let session = named ?? root
        guard let kind = sessions[session] else {
            return refusal(id: id, session: named, code: -32001, message: "Session with given id not found.")
        }
        var params = members["params"] ?? [:]
        guard case .object = params else { return refusal(id: id, session: named, code: -32602, message: "Invalid parameters: params must be an object") }
        guard !pending.contains(Key(session: session, id: id)) else {
            return refusal(id: id, session: named, code: -32600, message: "browserd: id \(id) is already waiting for its answer on this session")
        }
        guard pending.count < maximumPending else {
            return refusal(id: id, session: named, code: -32000, message: "browserd: \(maximumPending) commands already wait for their answer")
        }
        if let context = params["browserContextId"], !(context.string.map { scope.allows(context: $0) } ?? false) {
            return refusal(id: id, session: named, code: -32602, message: "Failed to find browser context with id \(context.string ?? "?")")
        }
        let decision: Decision
        switch kind {
        case .browser: decision = browserCommand(method, &params, scope: scope)
        case .target(let target): decision = targetCommand(method, &params, target: target)
        }
        switch decision {
        case .forward(let tracking):
            members["params"] = params
            members["sessionId"] = .string(session)
            pending.insert(Key(session: session, id: id))
            if let tracking { tracked[Key(session: session, id: id)] = tracking }
            return .forward(Self.encode(.object(members)))
        case .answer(let result): return .answer(answer(id: id, session: named, result: result))
        case .refuse(let code, let message): return refusal(id: id, session: named, code: code, message: message)
        case .intercept(let interception): return .intercept(interception, id: id, session: named)
        case .end: return .answerAndEnd(answer(id: id, session: named, result: [:]))
        }
    }

    enum Decision {
        case forward(Tracked?)
        case answer(JSONValue)
        case refuse(Int, String)
        case intercept(Interception)
        case end
    }

    private func browserCommand(_ method: String, _ params: inout JSONValue, scope: Scope) -> Decision {
        switch method {
        case "Browser.close": return .end
        case "Browser.crash", "Browser.crashGpuProcess": return .refuse(-32000, "browserd: the renderer's Chromium is not the client's to stop")
        case "Browser.setDownloadBehavior": return .answer([:])
        case "Target.createTarget":
            guard let url = params["url"]?.string else { return .refuse(-32602, "Invalid parameters: url: string value expected") }
            return .intercept(.createTarget(url: url, background: params["background"]?.bool ?? false, newWindow: params["newWindow"]?.bool ?? false))
        case "Target.closeTarget", "Target.activateTarget":
            guard let target = params["targetId"]?.string, visible(target, scope) else { return .refuse(-32602, "No target with given id found") }
            return .intercept(method == "Target.closeTarget" ? .closeTarget(targetID: target) : .activateTarget(targetID: target))
        case "Target.createBrowserContext", "Target.disposeBrowserContext":
            return .refuse(-32000, "browserd: a profile is one browser context (make another profile for another)")
        case "Target.getBrowserContexts": return .forward(.getBrowserContexts)
        case "Target.attachToBrowserTarget":
            guard sessions.values.filter({ $0 == .browser }).count < Self.maximumBrowserSessions else {
                return .refuse(-32000, "browserd: a client has at most \(Self.maximumBrowserSessions) browser sessions")
            }
            return .forward(nil)
        case "Target.getTargets": return .forward(.getTargets)
        case "Target.attachToTarget":
            guard params["flatten"]?.bool == true else { return .refuse(-32000, "browserd: only flat sessions are served (flatten: true)") }
            fallthrough
        case "Target.getTargetInfo", "Target.autoAttachRelated", "Browser.getWindowForTarget":
            if let target = params["targetId"]?.string, !visible(target, scope) { return .refuse(-32602, "No target with given id found") }
            if params["targetId"] == nil, method != "Target.getTargetInfo", method != "Browser.getWindowForTarget" {
                return .refuse(-32602, "Invalid parameters: targetId: string value expected")
            }
            return .forward(nil)
        case "Target.detachFromTarget":
            if let session = params["sessionId"]?.string, session == root || sessions[session] == nil {
                return .refuse(-32602, "No session with given id")
            }
            if let target = params["targetId"]?.string, !visible(target, scope) { return .refuse(-32602, "No target with given id found") }
            return .forward(nil)
        case _ where Self.contextMethods.contains(method):
            // The incognito profile's client works in its context whether it names it or not.
            if case .incognito(let own) = scope, params["browserContextId"] == nil {
                guard let own else { return .refuse(-32000, "browserd: the incognito profile has no pages yet") }
                if case .object(var members) = params {
                    members["browserContextId"] = .string(own)
                    params = .object(members)
                }
            }
            return .forward(nil)
        case _ where Self.browserMethods.contains(method): return .forward(nil)
        default: return .refuse(-32601, "browserd: '\(method)' is not served to automation clients")
        }
    }

    private func targetCommand(_ method: String, _ params: inout JSONValue, target: String) -> Decision {
        if let reason = Self.targetRefusals[method] { return .refuse(-32000, "browserd: \(reason)") }
        // The renderer's own world (its navigation steps' binding lives there) is not a client's to make
        // or to script in.
        if params["worldName"]?.string == navigationWorld || params["executionContextName"]?.string == navigationWorld {
            return .refuse(-32000, "browserd: the world '\(navigationWorld)' is the renderer's")
        }
        switch method {
        case "Page.setDownloadBehavior": return .answer([:])
        case "Page.bringToFront": return .intercept(.activateTarget(targetID: target))
        case "Page.navigate":
            guard let url = params["url"]?.string else { return .refuse(-32602, "Invalid parameters: url: string value expected") }
            let scheme = url.prefix(while: { $0 != ":" }).lowercased()
            guard url.contains(":"), Self.navigableSchemes.contains(scheme) else {
                return .refuse(-32000, "browserd: \(scheme.isEmpty ? "this" : scheme + ":") URL is not opened by automation clients (http, https, about, data, blob)")
            }
            return .forward(nil)
        case "Target.detachFromTarget":
            if let session = params["sessionId"]?.string, session == root || sessions[session] == nil {
                return .refuse(-32602, "No session with given id")
            }
            return .forward(nil)
        case "Input.dispatchDragEvent":
            // Files dragged in are read from the renderer's machine, as DOM.setFileInputFiles's.
            if let files = params["data"]?["files"], files != .array([]) {
                return .refuse(-32000, "browserd: files of the renderer's machine are not given to pages")
            }
            return .forward(nil)
        default:
            if Self.refusedDomains.contains(where: { method.hasPrefix($0) }) {
                return .refuse(-32601, "browserd: '\(method)' is not served to automation clients")
            }
            return .forward(nil)
        }
    }

    /// Whether the client saw `target` and may see it (its type, its browser context).
    private func visible(_ target: String, _ scope: Scope) -> Bool {
        targets[target].map { Self.visibleTypes.contains($0.type) && scope.allows(context: $0.context) } ?? false
    }

    // MARK: Chromium's messages

    /// Decides one message Chromium sent on one of the client's sessions (as routed by its trailing
    /// session id, never decoded unless it must be: only a browser session's, and a target session's
    /// attach and detach events).
    public mutating func fromChromium(_ bytes: [UInt8], session: String, scope: Scope) -> FromChromium {
        guard let kind = sessions[session] else { return FromChromium(deliver: nil) }
        if let id = DevToolsMessage.leadingID(bytes) {
            let key = Key(session: session, id: id)
            pending.remove(key)
            switch tracked.removeValue(forKey: key) {
            case .own: return FromChromium(deliver: nil)
            case .getTargets: return FromChromium(deliver: filteredTargets(bytes, session: session, scope: scope))
            case .getBrowserContexts: return FromChromium(deliver: filteredContexts(bytes, session: session, scope: scope))
            case nil:
                if case .browser = kind, let message = try? JSONValue.parse(bytes),
                    let info = message["result"]?["targetInfo"]
                {
                    record(info)
                }
                return FromChromium(deliver: forClient(bytes, session: session))
            }
        }
        if case .target = kind, !DevToolsMessage.isEvent(bytes, "Target.attachedToTarget"), !DevToolsMessage.isEvent(bytes, "Target.detachedFromTarget") {
            return FromChromium(deliver: bytes)
        }
        guard let message = try? JSONValue.parse(bytes), let method = message["method"]?.string else {
            return FromChromium(deliver: forClient(bytes, session: session))
        }
        let params = message["params"] ?? [:]
        switch method {
        case "Target.attachedToTarget":
            guard let child = params["sessionId"]?.string, let info = params["targetInfo"], let target = info["targetId"]?.string else {
                return FromChromium(deliver: nil)
            }
            record(info)
            parents[child] = session
            if info["type"]?.string == "browser" {
                sessions[child] = .browser
                return FromChromium(deliver: forClient(bytes, session: session), added: [child])
            }
            // Not its profile's (auto-attach is browser-wide; a page's frames and workers are checked
            // all the same), or past its sessions: it goes again, unseen (and a target waiting for this
            // session's debugger runs on).
            guard sessions.count < Self.maximumSessions, allowed(info, scope: scope) else {
                parents[child] = nil
                return FromChromium(deliver: nil, send: [own("Target.detachFromTarget", ["sessionId": .string(child)], session: session)])
            }
            sessions[child] = .target(target)
            let waiting = params["waitingForDebugger"]?.bool == true ? [child] : []
            return FromChromium(deliver: kind == .browser ? forClient(bytes, session: session) : bytes, added: [child], waiting: waiting)
        case "Target.detachedFromTarget":
            guard let child = params["sessionId"]?.string, sessions[child] != nil, child != root else { return FromChromium(deliver: nil) }
            let removed = descendants(of: child)
            for gone in removed {
                sessions[gone] = nil
                parents[gone] = nil
            }
            pending = pending.filter { !removed.contains($0.session) }
            return FromChromium(deliver: forClient(bytes, session: session), removed: removed)
        case "Target.targetCreated", "Target.targetInfoChanged":
            guard let info = params["targetInfo"] else { return FromChromium(deliver: nil) }
            record(info)
            return FromChromium(deliver: allowed(info, scope: scope) ? forClient(bytes, session: session) : nil)
        case "Target.targetDestroyed", "Target.targetCrashed":
            guard let target = params["targetId"]?.string, let known = targets[target] else { return FromChromium(deliver: nil) }
            if method == "Target.targetDestroyed" { targets[target] = nil }
            let seen = Self.visibleTypes.contains(known.type) && scope.allows(context: known.context)
            return FromChromium(deliver: seen ? forClient(bytes, session: session) : nil)
        case "Target.receivedMessageFromTarget", "Browser.downloadWillBegin", "Browser.downloadProgress":
            return FromChromium(deliver: nil)
        default:
            return FromChromium(deliver: forClient(bytes, session: session))
        }
    }

    /// The sessions to detach when the client goes: its root (Chromium detaches everything under it).
    public var rootDetach: JSONValue { ["sessionId": .string(root)] }

    private func allowed(_ info: JSONValue, scope: Scope) -> Bool {
        Self.visibleTypes.contains(info["type"]?.string ?? "") && scope.allows(context: info["browserContextId"]?.string)
    }

    /// The most targets remembered (past it, those without a session of the client's are forgotten).
    static let maximumTargets = 4096

    private mutating func record(_ info: JSONValue) {
        guard let target = info["targetId"]?.string else { return }
        targets[target] = TargetRecord(type: info["type"]?.string ?? "other", context: info["browserContextId"]?.string)
        if targets.count > Self.maximumTargets {
            let attached = Set(sessions.values.compactMap { kind -> String? in if case .target(let id) = kind { id } else { nil } })
            targets = targets.filter { attached.contains($0.key) || $0.key == target }
        }
    }

    /// The session and every session attached under it (a page's frames and workers go with it).
    private func descendants(of session: String) -> [String] {
        var found = [session]
        var index = 0
        while index < found.count {
            let parent = found[index]
            found += parents.filter { $0.value == parent }.map(\.key).sorted()
            index += 1
        }
        return found
    }

    private mutating func own(_ method: String, _ params: JSONValue, session: String) -> [UInt8] {
        let id = nextOwnID
        nextOwnID = nextOwnID == Int(Int32.max) ? Self.ownIDs : nextOwnID + 1
        tracked[Key(session: session, id: id)] = .own
        return Self.encode(["id": .number(Double(id)), "method": .string(method), "params": params, "sessionId": .string(session)])
    }

    private func forClient(_ bytes: [UInt8], session: String) -> [UInt8] {
        session == root ? DevToolsMessage.removingTrailingSessionID(bytes) : bytes
    }

    private mutating func filteredTargets(_ bytes: [UInt8], session: String, scope: Scope) -> [UInt8] {
        guard var message = try? JSONValue.parse(bytes), case .object(var members) = message,
            let infos = members["result"]?["targetInfos"]?.array
        else { return forClient(bytes, session: session) }
        for info in infos { record(info) }
        members["result"] = ["targetInfos": .array(infos.filter { allowed($0, scope: scope) })]
        if session == root { members["sessionId"] = nil }
        message = .object(members)
        return Self.encode(message)
    }

    private func filteredContexts(_ bytes: [UInt8], session: String, scope: Scope) -> [UInt8] {
        guard let message = try? JSONValue.parse(bytes), case .object(var members) = message,
            let result = members["result"]
        else { return forClient(bytes, session: session) }
        var contexts: [String: JSONValue] = ["browserContextIds": []]
        switch scope {
        case .regular: contexts["defaultBrowserContextId"] = result["defaultBrowserContextId"]
        case .incognito(let own): contexts["defaultBrowserContextId"] = own.map { .string($0) }
        }
        members["result"] = .object(contexts)
        if session == root { members["sessionId"] = nil }
        return Self.encode(.object(members))
    }

    // MARK: Answers

    /// The answer to the client's command `id` (on `session`, nil: its root).
    public func answer(id: Int, session: String?, result: JSONValue) -> [UInt8] {
        var message: [String: JSONValue] = ["id": .number(Double(id)), "result": result]
        if let session { message["sessionId"] = .string(session) }
        return Self.encode(.object(message))
    }

    /// An error answer, as Chromium's (`{"id":…,"error":{"code":…,"message":…}}`).
    public func refusal(id: Int, session: String?, code: Int, message: String) -> [UInt8] {
        var members: [String: JSONValue] = ["id": .number(Double(id)), "error": ["code": .number(Double(code)), "message": .string(message)]]
        if let session { members["sessionId"] = .string(session) }
        return Self.encode(.object(members))
    }

    private func refusal(id: Int, session: String?, code: Int, message: String) -> FromClient {
        .answer(refusal(id: id, session: session, code: code, message: message))
    }

    /// JSON text of `value`, its members in order (the same message is the same bytes).
    static func encode(_ value: JSONValue) -> [UInt8] { value.serialized }
}
