import BrowserAccess
import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

extension APIRoutes {
    func registerWindows(in router: inout Router) {
        let service = self.service
        let routes = self

        router.add(.post, "/v1/browsers", deferred(createWindow))

        if let otherWindows = routes.otherWindows {
            // Several instances: with a profile, its owner answers (the request is forwarded there);
            // without, the windows held here and those every other instance holds, merged in one order.
            router.add(
                .get, "/v1/browsers",
                deferred { request in
                    guard request.queryValue("profileId") == nil else { return try Self.listWindows(service, request) }
                    let caller = Principal.current
                    let here = service.windows().filter { caller.reaches(service.rootProfile(ofWindow: $0.id)) }.map { window in
                        ListedWindow(
                            id: window.id.rawValue, createdAtMilliseconds: ListedWindow.milliseconds(window.createdAt),
                            json: APIRoutes.encodeWindow(service, window))
                    }
                    let all = (here + (try await otherWindows(request)))
                        .sorted { ($0.createdAtMilliseconds, $0.id) < ($1.createdAtMilliseconds, $1.id) }
                    let (items, next) = try Self.page(all, id: \.id, request: request)
                    return Self.json(APIEncoding.list(items, paged: true, nextCursor: next) { $1.raw($0.json) })
                })
        } else {
            router.add(.get, "/v1/browsers", immediate { request in try Self.listWindows(service, request) })
        }

        router.add(.get, "/v1/browsers/{browserId}", immediate(getWindow))
        router.add(.delete, "/v1/browsers/{browserId}", deferred(closeWindow))
        router.add(.get, "/v1/browsers/{browserId}/tabs", immediate(listTabs))
        router.add(.post, "/v1/browsers/{browserId}/tabs", deferred(openTab))
        router.add(.post, "/v1/browsers/{browserId}/close-all", deferred(closeAllTabs))
        router.add(.post, "/v1/browsers/{browserId}/close-tabs", deferred(closeTabs))
        router.add(.post, "/v1/browsers/{browserId}/restore-closed-tab", deferred(restoreClosedTab))
        router.add(.post, "/v1/browsers/{browserId}/groups", deferred(createGroup))
        router.add(.post, "/v1/browsers/{browserId}/ungroup-tabs", deferred(ungroupTabs))
        router.add(.get, "/v1/browsers/{browserId}/commands", deferred(listCommands))
        router.add(.post, "/v1/browsers/{browserId}/commands/{name}", deferred(dispatchCommand))
        router.add(.get, "/v1/browsers/{browserId}/broadcasts", deferred(listBroadcasts))
        router.add(.put, "/v1/browsers/{browserId}/broadcasts/{key}", deferred(putBroadcast))
    }

    /// The windows held here (of `profileId` only, when given) that the caller may see, paged.
    static func listWindows(_ service: BrowserService, _ request: HTTPRequest) throws -> HTTPResponse {
        var profile: ProfileID?
        let caller = Principal.current
        if let id = request.queryValue("profileId") {
            guard service.profile(ProfileID(rawValue: id)) != nil, caller.reaches(service.rootProfile(of: ProfileID(rawValue: id))) else {
                throw APIProblem.profileNotFound(id)
            }
            profile = ProfileID(rawValue: id)
        }
        let visible = service.windows(profile: profile).filter { caller.reaches(service.rootProfile(ofWindow: $0.id)) }
        let (items, next) = try Self.page(visible, id: \.id.rawValue, request: request)
        return Self.json(APIEncoding.list(items, paged: true, nextCursor: next) { $1.raw(APIRoutes.encodeWindow(service, $0)) })
    }

    static func encodeWindow(_ service: BrowserService, _ window: WindowSnapshot) -> [UInt8] {
        service.cachedWindow(window.id, bytes: \.byteCount, make: windowAnswer)?.1.body ?? APIEncoding.windowBytes(window)
    }

    /// A window's answer, built once per version and sent without copying.
    @Sendable static func windowAnswer(_ window: WindowSnapshot) -> SharedResponse {
        SharedResponse(
            status: 200,
            headers: [
                "Content-Type": "application/json", "Cache-Control": "no-store", "ETag": "\"v\(window.version)\"",
            ], body: APIEncoding.windowBytes(window))
    }

    static func color(_ body: RequestBody) throws -> TabGroupColor? {
        guard let name = try body.string("color", maxLength: 16) else { return nil }
        guard let color = TabGroupColor(rawValue: name) else {
            throw APIProblem.invalidField("color", "must be one of \(TabGroupColor.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return color
    }
}

// The handlers, one per operation of the contract (named by its operationId).
extension APIRoutes {
    /// `POST /v1/browsers`.
    func createWindow(_ request: HTTPRequest) async throws -> HTTPResponse {
        let body = try RequestBody(request, allowed: ["profileId"])
        let profile = try body.requiredString("profileId", maxLength: 64)
        guard service.profile(ProfileID(rawValue: profile)) != nil,
            Principal.current.reaches(service.rootProfile(of: ProfileID(rawValue: profile)))
        else {
            throw APIProblem.invalidField("profileId", "names profile \(profile), which does not exist")
        }
        let window = try await service.createWindow(profile: ProfileID(rawValue: profile))
        return Self.json(
            APIRoutes.encodeWindow(service, window), status: 201, version: window.version,
            location: "/v1/browsers/\(window.id)")
    }

    /// `GET /v1/browsers/{browserId}`.
    func getWindow(_ request: HTTPRequest) throws -> HTTPResponse {
        let id = request.parameter("browserId")
        guard let (_, answer) = service.cachedWindow(BrowserID(rawValue: id), bytes: \.byteCount, make: Self.windowAnswer) else {
            throw APIProblem.windowNotFound(id)
        }
        return .shared(answer)
    }

    /// `DELETE /v1/browsers/{browserId}`.
    func closeWindow(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await service.closeWindow(self.existingWindow(request.parameter("browserId")), ifMatch: try Self.ifMatch(request))
        return .noContent
    }

    /// `GET /v1/browsers/{browserId}/tabs`.
    func listTabs(_ request: HTTPRequest) throws -> HTTPResponse {
        let id = request.parameter("browserId")
        guard let window = service.window(BrowserID(rawValue: id)) else { throw APIProblem.windowNotFound(id) }
        return Self.json(APIEncoding.tabList(window), version: window.version)
    }

    /// `POST /v1/browsers/{browserId}/tabs`.
    func openTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let window = try existingWindow(request.parameter("browserId"))
        let body = try RequestBody(request, allowed: ["url", "index", "activate", "openerTabId", "inheritOpener", "pinned", "groupId", "transition"])
        var open = OpenTabRequest(url: try body.requiredString("url", maxLength: 2 * 1024 * 1024))
        open.index = try body.int("index", range: Int.min...Int.max)
        if let index = open.index, let count = service.window(window)?.tabCount, index < 0 || index > count {
            throw HTTPError(
                422, kind: "index-out-of-range", title: "Index Out of Range",
                detail: "index \(index) is outside 0…\(count) for this window.")
        }
        open.activate = try body.bool("activate") ?? true
        open.inheritOpener = try body.bool("inheritOpener") ?? false
        open.pinned = try body.bool("pinned") ?? false
        if let opener = try body.string("openerTabId", maxLength: 64) {
            if open.inheritOpener { throw APIProblem.invalidField("openerTabId", "cannot be given together with inheritOpener") }
            open.openerID = try tabIDs([opener], field: "openerTabId", in: window)[0]
        }
        if let group = try body.string("groupId", maxLength: 64) {
            guard service.window(ofGroup: TabGroupID(rawValue: group)) == window else {
                throw APIProblem.invalidField("groupId", "names group \(group), which is not in this window")
            }
            if open.pinned { throw APIProblem.invalidField("groupId", "cannot be given for a pinned tab") }
            open.groupID = TabGroupID(rawValue: group)
        }
        if let transition = try body.string("transition", maxLength: 32) {
            guard let value = PageTransition(rawValue: transition) else {
                throw APIProblem.invalidField("transition", "must be one of \(PageTransition.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            open.transition = value
        }
        let (tab, version) = try await service.dispatch(TabCommands.open, open, in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version, status: 201)
    }

    /// `POST /v1/browsers/{browserId}/close-all`.
    func closeAllTabs(_ request: HTTPRequest) async throws -> HTTPResponse {
        let window = try existingWindow(request.parameter("browserId"))
        let (policy, undoSeconds) = try Self.closeAllOptions(request)
        guard let profile = service.window(window)?.profileID else { throw APIProblem.windowNotFound(window.rawValue) }
        let closing = try await service.closeAllTabs(profile: profile, window: window, policy: policy, undoSeconds: undoSeconds)
        return Self.json(APIEncoding.closing(closing))
    }

    /// `POST /v1/browsers/{browserId}/close-tabs`.
    func closeTabs(_ request: HTTPRequest) async throws -> HTTPResponse {
        let window = try existingWindow(request.parameter("browserId"))
        let body = try RequestBody(request, allowed: ["tabIds", "all", "allNonPinned", "allExcept", "groupId"])
        let given = ["tabIds", "all", "allNonPinned", "allExcept", "groupId"].filter { body.has($0) }
        guard given.count == 1 else {
            throw APIProblem.invalidField(given.first ?? "tabIds", "exactly one of tabIds, all, allNonPinned, allExcept, groupId must be given")
        }
        let selector: CloseTabsSelector
        switch given[0] {
        case "tabIds": selector = .tabs(try tabIDs(try body.strings("tabIds")!, field: "tabIds", in: window))
        case "all":
            guard try body.bool("all") == true else { throw APIProblem.invalidField("all", "must be true") }
            selector = .all
        case "allNonPinned":
            guard try body.bool("allNonPinned") == true else { throw APIProblem.invalidField("allNonPinned", "must be true") }
            selector = .allNonPinned
        case "allExcept":
            selector = .allExcept(try tabIDs([try body.string("allExcept", maxLength: 64)!], field: "allExcept", in: window)[0])
        default:
            let group = try body.string("groupId", maxLength: 64)!
            guard service.window(ofGroup: TabGroupID(rawValue: group)) == window else {
                throw APIProblem.invalidField("groupId", "names group \(group), which is not in this window")
            }
            selector = .group(TabGroupID(rawValue: group))
        }
        let (result, version) = try await service.dispatch(TabCommands.closeMany, selector, in: window, ifMatch: try Self.ifMatch(request))
        return Self.json(APIEncoding.closeResult(result), version: version)
    }

    /// `POST /v1/browsers/{browserId}/restore-closed-tab`.
    func restoreClosedTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let activate = try RequestBody(request, allowed: ["activate"]).bool("activate") ?? true
        let window = try existingWindow(request.parameter("browserId"))
        let (tab, version) = try await service.dispatch(
            TabCommands.restoreClosed, RestoreClosedTabRequest(activate: activate), in: window,
            ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version, status: 201)
    }

    /// `POST /v1/browsers/{browserId}/groups`.
    func createGroup(_ request: HTTPRequest) async throws -> HTTPResponse {
        let window = try existingWindow(request.parameter("browserId"))
        let body = try RequestBody(request, allowed: ["tabIds", "title", "color"])
        let ids = try tabIDs(try body.requiredStrings("tabIds"), field: "tabIds", in: window)
        guard !ids.isEmpty else { throw APIProblem.invalidField("tabIds", "must name at least one tab") }
        let create = CreateGroupRequest(
            tabIDs: ids, title: try body.string("title", maxLength: 1024),
            color: try Self.color(body))
        let (group, version) = try await service.dispatch(TabCommands.createGroup, create, in: window, ifMatch: try Self.ifMatch(request))
        return Self.groupResponse(group, version: version, status: 201)
    }

    /// `POST /v1/browsers/{browserId}/ungroup-tabs`.
    func ungroupTabs(_ request: HTTPRequest) async throws -> HTTPResponse {
        let window = try existingWindow(request.parameter("browserId"))
        let body = try RequestBody(request, allowed: ["tabIds"])
        let ids = try tabIDs(try body.requiredStrings("tabIds"), field: "tabIds", in: window)
        let (tabs, version) = try await service.dispatch(
            TabCommands.ungroup, GroupTabsRequest(tabIDs: ids), in: window,
            ifMatch: try Self.ifMatch(request))
        return Self.json(APIEncoding.list(tabs) { APIEncoding.write($0, to: &$1) }, version: version)
    }

    /// `GET /v1/browsers/{browserId}/commands`.
    func listCommands(_ request: HTTPRequest) async throws -> HTTPResponse {
        let commands = try await service.commands(of: self.existingWindow(request.parameter("browserId")))
        return Self.json(
            APIEncoding.list(commands) { command, json in
                json.beginObject()
                json.member("name", command.name)
                json.member("handler", command.handler)
                json.endObject()
            })
    }

    /// `POST /v1/browsers/{browserId}/commands/{name}`.
    func dispatchCommand(_ request: HTTPRequest) async throws -> HTTPResponse {
        let window = try existingWindow(request.parameter("browserId"))
        let body = try RequestBody(request, allowed: ["args", "from"])
        var from: String?
        switch body.value("from") {
        case nil, .null?: break
        case .string(let node)?: from = node
        case let other?: throw APIProblem.invalidField("from", "must be a node id string, not \(other.typeName)")
        }
        var arguments = CommandArguments()
        switch body.value("args") {
        case nil: break
        case .object(let members)?:
            for (key, value) in members {
                switch value {
                case .string(let text): arguments[key] = .string(text)
                case .bool(let flag): arguments[key] = .bool(flag)
                case .number(let number, _): arguments[key] = .number(number)
                case .null: arguments[key] = .null
                default: throw APIProblem.invalidField("args", "member '\(key)' must be a string, number, boolean or null")
                }
            }
        case let other?: throw APIProblem.invalidField("args", "must be an object, not \(other.typeName)")
        }
        let (result, version) = try await service.dispatch(
            name: request.parameter("name"), arguments: arguments, in: window,
            from: from)
        return Self.json(
            APIEncoding.bytes { json in
                json.beginObject()
                json.member("command", request.parameter("name"))
                // A command with nothing to say has no `result` member.
                switch result {
                case .tab(let tab):
                    json.key("result")
                    APIEncoding.write(tab, to: &json)
                case .tabID(let id):
                    json.key("result")
                    json.beginObject()
                    json.member("tabId", id.rawValue)
                    json.endObject()
                case .presentation(let presentation):
                    json.key("result")
                    APIEncoding.write(presentation, to: &json)
                case .none: break
                }
                json.member("version", version)
                json.endObject()
            }, version: version)
    }

    /// `GET /v1/browsers/{browserId}/broadcasts`.
    func listBroadcasts(_ request: HTTPRequest) async throws -> HTTPResponse {
        let items = try await service.broadcasts(of: self.existingWindow(request.parameter("browserId")))
        return Self.json(APIEncoding.list(items) { APIEncoding.broadcast($0, to: &$1) })
    }

    /// `PUT /v1/browsers/{browserId}/broadcasts/{key}`.
    func putBroadcast(_ request: HTTPRequest) async throws -> HTTPResponse {
        let window = try existingWindow(request.parameter("browserId"))
        let key = request.parameter("key")
        guard let declared = BroadcastKey.declared.first(where: { $0.name == key }) else {
            throw APIProblem.notFound("broadcast-key-not-found", "'\(key)' is not a declared broadcast key.")
        }
        let body = try RequestBody(request, allowed: ["value"])
        let value: BroadcastValue
        switch (declared.type, body.value("value")) {
        case (.number, .number(let number, _)?):
            guard number.magnitude <= 1e9 else { throw APIProblem.invalidField("value", "must be within ±1e9") }
            value = .number(number)
        case (.boolean, .bool(let flag)?): value = .boolean(flag)
        case (_, nil): throw APIProblem.invalidField("value", "is required")
        case (let type, let other?):
            throw HTTPError(
                422, kind: "broadcast-type-mismatch", title: "Broadcast Type Mismatch",
                detail: "'\(key)' takes a \(type.rawValue), not \(other.typeName).")
        }
        let (item, version) = try await service.dispatch(TabCommands.broadcast, BroadcastUpdate(key: key, value: value), in: window)
        return Self.json(APIEncoding.bytes { APIEncoding.broadcast(item, to: &$0) }, version: version)
    }
}
