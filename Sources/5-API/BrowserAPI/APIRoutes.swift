public import BrowserAccess
public import BrowserModel
public import BrowserServices
import Foundation
public import HTTPServer

/// The REST API v1: thin handlers that check input, then either dispatch a command through the target
/// window (via ``BrowserService``) or read a published snapshot, and encode JSON. They never touch the
/// model.
public struct APIRoutes: Sendable {
    /// Where another instance of a cluster sends a run of forwarded reads as one pipeline
    /// (`EnclosedPipeline`): served by the HTTP edge for peers only, outside the API's guard (each
    /// enclosed read goes through it).
    public static let clusterPipelinePath = "/v1/cluster/pipeline"

    let service: BrowserService
    let tokens: TokenStore
    let idempotency: IdempotencyStore
    let tickets: StreamTicketStore
    /// Where the WebDriver facade answers (`/webdriver`); nil: no facade.
    let webDriverBasePath: String?
    let webDriverSessions: WebDriverSessions
    /// The open streams of each profile token, ended when it is revoked.
    let revocations = TokenStreams()
    let wakeups = RendererWakeups()
    let unavailable: @Sendable () -> String?
    let backup: (@Sendable () async throws -> (path: String, bytes: Int))?
    let saveToken: (@Sendable (_ issued: TokenStore.Record?, _ revoked: TokenStore.Record?) async throws -> Void)?
    /// Every regular profile stored, whichever instance holds it (several instances on one
    /// database); nil: the profiles in memory are all there are.
    let storedProfiles: (@Sendable () async throws -> [ProfileSnapshot])?
    /// The windows other instances hold that the request's caller may see (several instances on one
    /// database); nil: the windows in memory are all there are.
    let otherWindows: (@Sendable (HTTPRequest) async throws -> [ListedWindow])?
    /// Several instances on one database: where each request is answered (nil: always here).
    let placement: PlacementSlot?
    /// Export and import of whole profiles; nil (or an empty slot): the store does not offer them.
    let transfer: ProfileTransferSlot?
    /// Which renderer holds which profile (automation clients attach through it).
    let leases: RendererLeases
    /// Calls to a profile's renderer (WebDriver's scripts and screenshots); nil: none are made.
    let rendererControl: (any RendererControl)?
    /// Which renderer renders which profile (renderers register here); nil: none are assigned (501).
    let renderers: (any RendererRegistry)?
    /// Who watches and uses each profile (its renderer told so at each renewal).
    let attention: ProfileAttention

    /// - Parameters:
    ///   - service: the browser model behind the API.
    ///   - tokens: who may call; an empty store (no admin token) lets everyone in as admin.
    ///   - unavailable: why the API cannot take requests now (e.g. restore in progress), or nil.
    ///   - backup: writes a consistent copy of the database; nil when there is none.
    ///   - saveToken: makes an issued or revoked token durable before it is answered.
    ///   - idempotency: the answers kept per `Idempotency-Key`.
    ///   - tickets: the stream tickets browsers open event streams with.
    ///   - webDriverBasePath: where the W3C WebDriver facade answers; nil turns it off.
    ///   - storedProfiles: every regular profile stored, for lists (several instances on one database).
    ///   - otherWindows: the windows other instances hold, for `GET /v1/browsers` (several instances).
    ///   - placement: places each request after authentication (several instances: served here, or
    ///     answered by the instance that holds its profile; the embedded store: its profile loaded first).
    ///   - transfer: export and import of whole profiles.
    public init(
        service: BrowserService, tokens: TokenStore = TokenStore(adminToken: nil),
        idempotency: IdempotencyStore = IdempotencyStore(), tickets: StreamTicketStore = StreamTicketStore(),
        webDriverBasePath: String? = "/webdriver",
        unavailable: @escaping @Sendable () -> String? = { nil },
        backup: (@Sendable () async throws -> (path: String, bytes: Int))? = nil,
        saveToken: (@Sendable (_ issued: TokenStore.Record?, _ revoked: TokenStore.Record?) async throws -> Void)? = nil,
        storedProfiles: (@Sendable () async throws -> [ProfileSnapshot])? = nil,
        otherWindows: (@Sendable (HTTPRequest) async throws -> [ListedWindow])? = nil,
        placement: PlacementSlot? = nil,
        transfer: ProfileTransferSlot? = nil,
        webDriverLimits: WebDriverLimits = WebDriverLimits(),
        leases: RendererLeases = RendererLeases(),
        rendererControl: (any RendererControl)? = nil,
        renderers: (any RendererRegistry)? = nil,
        attention: ProfileAttention = ProfileAttention()
    ) {
        self.renderers = renderers
        self.attention = attention
        self.leases = leases
        self.rendererControl = rendererControl
        self.placement = placement
        self.transfer = transfer
        self.storedProfiles = storedProfiles
        self.otherWindows = otherWindows
        self.service = service
        self.tokens = tokens
        self.unavailable = unavailable
        self.backup = backup
        self.saveToken = saveToken
        self.idempotency = idempotency
        self.tickets = tickets
        self.webDriverBasePath = webDriverBasePath
        self.webDriverSessions = WebDriverSessions(limits: webDriverLimits)
    }

    /// Routes only the administrator may call; a profile token gets 403 there.
    static let adminOnly: Set<String> = [
        "POST /v1/profiles", "POST /v1/profiles/import", "POST /v1/profiles/{profileId}/tokens", "DELETE /v1/profiles/{profileId}/tokens/{tokenId}",
        "POST /v1/admin/backup",
        // A renderer's lease names the gateway browserd hands to clients and calls with their scripts:
        // the operator's renderers only, never a tenant (who would name any address).
        "PUT /v1/profiles/{profileId}/renderer", "DELETE /v1/profiles/{profileId}/renderer", "POST /v1/profiles/{profileId}/devtools/redemptions",
        // Renderers are the operator's: they register, hold profiles and say where their gateways are.
        "PUT /v1/renderers/{rendererName}", "GET /v1/renderers", "GET /v1/renderers/{rendererName}", "POST /v1/renderers/{rendererName}/drain",
        "DELETE /v1/renderers/{rendererName}", "PUT /v1/profiles/{profileId}/rendering", "POST /v1/renderers/{rendererName}/token",
        "GET /v1/renderers/{rendererName}/events",
    ]

    public func register(in router: inout Router) {
        // Revoking a token (here, or on another instance) ends its streams and voids its tickets.
        tokens.onRevoked { [revocations, tickets] ids in
            tickets.revoke(tokens: Set(ids))
            revocations.end(tokens: ids)
        }
        // A renderer's token reaches the profiles its renderer holds when each request comes.
        if let renderers { tokens.holdsOfRenderer { renderers.profiles(heldBy: $0) } }
        registerTokens(in: &router)
        registerProfiles(in: &router)
        registerTransfer(in: &router)
        registerWindows(in: &router)
        registerTabs(in: &router)
        registerSnapshots(in: &router)
        registerGroups(in: &router)
        registerEvents(in: &router)
        registerPresentation(in: &router)
        registerDevTools(in: &router)
        registerRenderers(in: &router)
        registerStorageState(in: &router)
        if let webDriverBasePath {
            WebDriverRoutes(api: self, sessions: webDriverSessions, base: webDriverBasePath).register(in: &router)
        }
    }

    /// Whether the profile `id` has WebDriver sessions open (they keep it in memory).
    public func hasWebDriverSessions(profile id: ProfileID) -> Bool { webDriverSessions.any(profile: id) }

    // MARK: Shared helpers

    /// A deferred responder behind the API's guard (authentication, placement with several instances,
    /// tenant scope, idempotency); model and service errors become their problems.
    ///
    /// With several instances it is adaptive: placement decides on the server thread when what it
    /// knows suffices (served here, or relayed to the owner without a task), else in a task.
    /// - Parameter duringRestore: the handler also runs while the state is restored (it must check
    ///   ``unavailable`` itself; a route is then saved for later).
    func deferred(duringRestore: Bool = false, _ body: @escaping @Sendable (HTTPRequest) async throws -> HTTPResponse) -> Responder {
        let routes = self
        let serve: @Sendable (HTTPRequest, Principal, String?) async throws -> HTTPResponse = { request, principal, token in
            // While storage fails, changes are refused before anything is looked up: what a failed
            // commit did is being undone, and no change may build on it.
            if request.method != .get, request.method != .head, let reason = routes.service.storageUnavailableReason {
                throw APIProblem.from(ServiceError.storageFailed(reason))
            }
            return try await Principal.$tokenID.withValue(token) {
                try await Principal.$current.withValue(principal) {
                    try routes.checkScope(request, principal: principal)
                    routes.noteUse(request)
                    if request.method != .get, request.method != .head {
                        try routes.checkRendererFence(request)
                        try routes.checkWriteQuota(request)
                    }
                    return try await routes.idempotent(request, principal: principal) {
                        do { return try await body(request) } catch { throw APIProblem.from(error) }
                    }
                }
            }
        }
        if let placement {
            return .adaptive { request in
                if !duringRestore { try routes.checkAvailable() }
                let (principal, token) = try routes.identify(request)
                let here: @Sendable () async throws -> HTTPResponse = { try await serve(request, principal, token) }
                // Placement as the caller: it loads or takes over only a profile the caller may use.
                switch Principal.$current.withValue(principal, operation: { placement.current?.placeAtOnce(request) }) ?? .here {
                case .here:
                    return .later(here)
                case .answered(let answer):
                    return .answer(answer)
                case .underway(let start):
                    return .started { complete in
                        start { answer in
                            if let answer { return complete(answer) }
                            Task { complete(await Self.answering(request, here)) }
                        }
                    }
                case .continuing(let rest):
                    return .later {
                        if let answer = await Principal.$current.withValue(principal, operation: { await rest() }) { return answer }
                        return try await here()
                    }
                case .undecided:
                    return .later {
                        let placed = await Principal.$current.withValue(principal) { await placement.current?.place(request) }
                        if let answer = placed { return answer }
                        return try await here()
                    }
                }
            }
        }
        return .deferred { request in
            if !duringRestore { try routes.checkAvailable() }
            let (principal, token) = try routes.identify(request)
            return try await serve(request, principal, token)
        }
    }

    /// An immediate responder behind the API's guard (authentication, tenant scope); with several
    /// instances an adaptive one, placed after authentication (at once when what placement knows
    /// suffices: served here, or relayed to the owner without a task).
    func immediate(_ body: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) -> Responder {
        let routes = self
        let serve: @Sendable (HTTPRequest, Principal, String?) throws -> HTTPResponse = { request, principal, token in
            try Principal.$tokenID.withValue(token) {
                try Principal.$current.withValue(principal) {
                    try routes.checkScope(request, principal: principal)
                    do { return try body(request) } catch { throw APIProblem.from(error) }
                }
            }
        }
        if let placement {
            return .adaptive { request in
                try routes.checkAvailable()
                let (principal, token) = try routes.identify(request)
                // Placement as the caller: it loads or takes over only a profile the caller may use.
                switch Principal.$current.withValue(principal, operation: { placement.current?.placeAtOnce(request) }) ?? .here {
                case .here:
                    return .answer(try serve(request, principal, token))
                case .answered(let answer):
                    return .answer(answer)
                case .underway(let start):
                    return .started { complete in
                        start { answer in complete(answer ?? Self.answering(request) { try serve(request, principal, token) }) }
                    }
                case .continuing(let rest):
                    return .later {
                        if let answer = await Principal.$current.withValue(principal, operation: { await rest() }) { return answer }
                        return try serve(request, principal, token)
                    }
                case .undecided:
                    return .later {
                        let placed = await Principal.$current.withValue(principal) { await placement.current?.place(request) }
                        if let answer = placed { return answer }
                        return try serve(request, principal, token)
                    }
                }
            }
        }
        return .immediate { request in
            try routes.checkAvailable()
            let (principal, token) = try routes.identify(request)
            return try serve(request, principal, token)
        }
    }

    /// `body`'s answer, or its error's problem (as the server would answer it).
    static func answering(_ request: HTTPRequest, _ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return problem(error, request) }
    }

    static func answering(_ request: HTTPRequest, _ body: () async throws -> HTTPResponse) async -> HTTPResponse {
        do { return try await body() } catch { return problem(error, request) }
    }

    private static func problem(_ error: any Error, _ request: HTTPRequest) -> HTTPResponse {
        if let error = error as? HTTPError { return error.response(instance: request.path) }
        return HTTPError.internalError("The server could not answer this request.").response(instance: request.path)
    }

    /// 503 with Retry-After while the API cannot take requests (restore in progress).
    func checkAvailable() throws {
        if let reason = unavailable() { throw HTTPError.unavailable("The service is not ready: \(reason).", retryAfter: 1) }
    }

    static func json(_ bytes: [UInt8], status: Int = 200, version: Int? = nil, location: String? = nil) -> HTTPResponse {
        var headers: HTTPHeaders = ["Cache-Control": "no-store"]
        if let version { headers.set("ETag", "\"v\(version)\"") }
        if let location { headers.set("Location", location) }
        return .json(bytes, status: status, headers: headers)
    }

    static func tabResponse(_ tab: TabSnapshot, version: Int, status: Int = 200) -> HTTPResponse {
        json(
            APIEncoding.bytes { APIEncoding.write(tab, to: &$0) }, status: status, version: version,
            location: status == 201 ? "/v1/tabs/\(tab.id)" : nil)
    }

    static func groupResponse(_ group: GroupSnapshot, version: Int, status: Int = 200) -> HTTPResponse {
        json(
            APIEncoding.bytes { APIEncoding.write(group, to: &$0) }, status: status, version: version,
            location: status == 201 ? "/v1/groups/\(group.id)" : nil)
    }

    /// The window version `If-Match` asks for: nil when absent or `*`; a version no window has when no
    /// tag of the list is one of ours (weak tags never match under strong comparison).
    /// - Throws: 400 when the header is not `*` or a list of entity tags.
    static func ifMatch(_ request: HTTPRequest) throws -> Int? {
        guard let header = request.headers["If-Match"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if header == "*" { return nil }
        var versions: [Int] = []
        var rest = Substring(header)
        repeat {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "," }
            let weak = rest.hasPrefix("W/")
            if weak { rest = rest.dropFirst(2) }
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else {
                throw HTTPError(
                    400, kind: "invalid-header", title: "Invalid Header",
                    detail: "If-Match must be * or a list of entity tags such as \"v12\".", extensions: ["header": "If-Match"])
            }
            let tag = rest[rest.index(after: rest.startIndex)..<close]
            if !weak, tag.hasPrefix("v"), let version = Int(tag.dropFirst()) { versions.append(version) }
            rest = rest[rest.index(after: close)...].drop { $0 == " " || $0 == "\t" }
            guard rest.isEmpty || rest.first == "," else {
                throw HTTPError(
                    400, kind: "invalid-header", title: "Invalid Header",
                    detail: "If-Match must be * or a list of entity tags such as \"v12\".", extensions: ["header": "If-Match"])
            }
        } while !rest.isEmpty
        return versions.first ?? -1
    }

    /// A list page: `limit` (1…1000, default 100) and `cursor` (the id the previous page ended with).
    static func page<T>(_ items: [T], id: (T) -> String, request: HTTPRequest) throws -> (items: ArraySlice<T>, next: String?) {
        var limit = 100
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...1000).contains(value) else {
                throw APIProblem.invalidQuery("limit", "must be an integer from 1 to 1000")
            }
            limit = value
        }
        var start = 0
        if let cursor = request.queryValue("cursor") {
            guard let index = items.firstIndex(where: { id($0) == cursor }) else {
                throw APIProblem.invalidQuery("cursor", "is not a cursor this list gave out (lists may have changed; start again)")
            }
            start = index + 1
        }
        let end = min(items.count, start + limit)
        let slice = items[start..<end]
        return (slice, end < items.count ? slice.last.map(id) : nil)
    }

    /// Requires an empty body or `{}` for actions without parameters.
    static func noParameters(_ request: HTTPRequest) throws {
        _ = try RequestBody(request, allowed: [])
    }

    func windowOf(tab id: String) throws -> BrowserID {
        guard let window = service.window(ofTab: TabID(rawValue: id)) else { throw APIProblem.tabNotFound(id) }
        return window
    }

    func windowOf(group id: String) throws -> BrowserID {
        guard let window = service.window(ofGroup: TabGroupID(rawValue: id)) else { throw APIProblem.groupNotFound(id) }
        return window
    }

    func existingWindow(_ id: String) throws -> BrowserID {
        let browserID = BrowserID(rawValue: id)
        guard service.window(browserID) != nil else { throw APIProblem.windowNotFound(id) }
        return browserID
    }

    /// Tab ids in a body must name tabs of `window`.
    /// The tabs `ids` names, each in a window of the same regular profile as `window` (incognito ones
    /// included: the model refuses a move between incognito and regular windows itself).
    func tabIDs(_ ids: [String], field: String, inProfileOf window: BrowserID) throws -> [TabID] {
        let root = service.rootProfile(ofWindow: window)
        return try ids.map { id in
            guard root != nil, service.rootProfile(ofTab: TabID(rawValue: id)) == root else {
                throw APIProblem.invalidField(field, "names tab \(APIProblem.echo(id)), which is in no window of this group's profile")
            }
            return TabID(rawValue: id)
        }
    }

    func tabIDs(_ ids: [String], field: String, in window: BrowserID) throws -> [TabID] {
        try ids.map { id in
            guard service.window(ofTab: TabID(rawValue: id)) == window else {
                throw APIProblem.invalidField(field, "names tab \(id), which is not in window \(window)")
            }
            return TabID(rawValue: id)
        }
    }
}
