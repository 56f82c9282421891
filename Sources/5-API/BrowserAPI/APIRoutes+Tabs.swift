import BrowserAccess
import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

extension APIRoutes {
    func registerTabs(in router: inout Router) {
        let service = self.service
        let routes = self

        router.add(.get, "/v1/tabs/{tabId}", immediate(getTab))
        router.add(.patch, "/v1/tabs/{tabId}", deferred(updateTab))
        router.add(.delete, "/v1/tabs/{tabId}", deferred(closeTab))

        /// An action on one tab whose body is empty or `{}`.
        func action(_ path: String, _ make: @escaping @Sendable (TabID, BrowserService, BrowserID, Int?) async throws -> (TabSnapshot, Int)) {
            router.add(
                .post, "/v1/tabs/{tabId}/\(path)",
                deferred { request in
                    try Self.noParameters(request)
                    let id = request.parameter("tabId")
                    let window = try routes.windowOf(tab: id)
                    let (tab, version) = try await make(TabID(rawValue: id), service, window, try Self.ifMatch(request))
                    return Self.tabResponse(tab, version: version)
                })
        }
        action("activate") { try await $1.dispatch(TabCommands.activate, $0, in: $2, ifMatch: $3) }
        action("pin") { try await $1.dispatch(TabCommands.pin, PinRequest(tabID: $0, pinned: true), in: $2, ifMatch: $3) }
        action("unpin") { try await $1.dispatch(TabCommands.pin, PinRequest(tabID: $0, pinned: false), in: $2, ifMatch: $3) }
        for (path, navigation) in [("back", TabNavigation.back), ("forward", .forward), ("reload", .reload)] {
            action(path) {
                let pends = routes.pageShows(tab: $0, in: $2)
                return try await $1.dispatch(TabCommands.navigate, NavigateRequest(tabID: $0, navigation: navigation, pends: pends), in: $2, ifMatch: $3)
            }
        }

        router.add(.post, "/v1/tabs/{tabId}/duplicate", deferred(duplicateTab))
        router.add(.post, "/v1/tabs/{tabId}/move", deferred(moveTab))
        router.add(.post, "/v1/tabs/{tabId}/replace", deferred(replaceTab))
        router.add(.post, "/v1/tabs/{tabId}/navigate", deferred(navigateTab))
        router.add(.post, "/v1/tabs/{tabId}/go", deferred(goTab))
        router.add(.post, "/v1/tabs/{tabId}/pending/commit", deferred(commitPendingNavigation))
        router.add(.post, "/v1/tabs/{tabId}/pending/discard", deferred(discardPendingNavigation))
        router.add(.get, "/v1/tabs/{tabId}/history", deferred(getTabHistory))
    }
}

// The handlers, one per operation of the contract (named by its operationId).
extension APIRoutes {
    /// `GET /v1/tabs/{tabId}`.
    func getTab(_ request: HTTPRequest) throws -> HTTPResponse {
        let id = request.parameter("tabId")
        guard let (tab, version) = service.tab(TabID(rawValue: id)) else { throw APIProblem.tabNotFound(id) }
        // The target of its live page, while a renderer holds its profile (automation clients).
        guard let profile = service.window(tab.browserID)?.profileID, let target = leases.lease(of: profile)?.target(of: tab.id) else {
            return Self.tabResponse(tab, version: version)
        }
        let bytes = Self.appending("targetId", APIEncoding.bytes { $0.value(target) }, to: APIEncoding.bytes { APIEncoding.write(tab, to: &$0) })
        return Self.json(bytes, version: version)
    }

    /// `PATCH /v1/tabs/{tabId}`.
    func updateTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let body = try RequestBody(request, allowed: ["title", "loading", "progress", "faviconUrl", "openerTabId", "crashed"])
        var update = PageStateUpdate(tabID: TabID(rawValue: id))
        // A title longer than the model's limit is truncated by the model, never refused (the body's
        // own limit bounds it).
        update.title = try body.string("title", maxLength: .max)
        update.loading = try body.bool("loading")
        update.progress = try body.double("progress", range: 0...1)
        update.crashed = try body.bool("crashed")
        if body.isNull("faviconUrl") {
            update.faviconURL = .some(nil)
        } else if body.has("faviconUrl") {
            let favicon = try body.string("faviconUrl", maxLength: .max) ?? ""
            let limit = service.limits.faviconURLBytes
            guard favicon.utf8.count <= limit else {
                // Named by its length and the limit, never repeated.
                throw APIProblem.invalidField(
                    "faviconUrl", "has \(favicon.utf8.count) bytes; the limit is \(limit) bytes (\(limit / 1024) KiB), data: URLs included")
            }
            update.faviconURL = .some(favicon)
        }
        if body.has("openerTabId") {
            if body.isNull("openerTabId") {
                update.openerID = .some(nil)
            } else {
                let opener = try tabIDs([try body.string("openerTabId", maxLength: 64)!], field: "openerTabId", in: window)[0]
                guard opener.rawValue != id else { throw APIProblem.invalidField("openerTabId", "cannot be the tab itself") }
                update.openerID = .some(opener)
            }
        }
        let (tab, version) = try await service.dispatch(TabCommands.updatePageState, update, in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version)
    }

    /// `DELETE /v1/tabs/{tabId}`.
    func closeTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let (_, version) = try await service.dispatch(TabCommands.close, TabID(rawValue: id), in: window, ifMatch: try Self.ifMatch(request))
        var response = HTTPResponse.noContent
        response.headers.set("ETag", "\"v\(version)\"")
        return response
    }

    /// `POST /v1/tabs/{tabId}/duplicate`.
    func duplicateTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let activate = try RequestBody(request, allowed: ["activate"]).bool("activate") ?? true
        let (tab, version) = try await service.dispatch(
            TabCommands.duplicate, DuplicateRequest(tabID: TabID(rawValue: id), activate: activate),
            in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version, status: 201)
    }

    /// `POST /v1/tabs/{tabId}/move`.
    func moveTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let body = try RequestBody(request, allowed: ["index", "browserId", "activate", "pinned", "groupId"])
        let groupID = try body.string("groupId", maxLength: 64)
        let index = try body.int("index", range: Int.min...Int.max, required: groupID == nil)
        var destination: BrowserID?
        if let target = try body.string("browserId", maxLength: 64), target != window.rawValue {
            let targetID = BrowserID(rawValue: target)
            guard service.window(targetID) != nil, Principal.current.reaches(service.rootProfile(ofWindow: targetID)) else {
                throw APIProblem.invalidField("browserId", "names window \(target), which does not exist")
            }
            destination = targetID
        }
        if let groupID {
            // The group names its window: the tab goes there (`MoveToGroup`, or an insert `InGroup`).
            guard let groupWindow = service.window(ofGroup: TabGroupID(rawValue: groupID)),
                Principal.current.reaches(service.rootProfile(ofWindow: groupWindow))
            else {
                throw APIProblem.invalidField("groupId", "names group \(groupID), which does not exist")
            }
            if let destination, destination != groupWindow {
                throw APIProblem.invalidField("groupId", "names group \(groupID), which is not in window \(destination.rawValue)")
            }
            destination = groupWindow == window ? nil : groupWindow
        }
        if let destination {
            guard service.rootProfile(ofWindow: destination) == service.rootProfile(ofWindow: window) else {
                throw HTTPError(
                    409, kind: "cross-profile", title: "Cross-Profile Operation",
                    detail: "Tabs move only between windows of one profile.")
            }
        }
        if let index {
            let count = service.window(destination ?? window)?.tabCount ?? 0
            let limit = destination == nil ? count - 1 : count
            guard index >= 0, index <= limit else {
                throw HTTPError(
                    422, kind: "index-out-of-range", title: "Index Out of Range",
                    detail: "index \(index) is outside 0…\(limit) for \(destination == nil ? "this" : "that") window.")
            }
        }
        let pinned = try body.bool("pinned")
        if pinned != nil, destination == nil {
            throw APIProblem.invalidField("pinned", "applies only to a move to another window; use /pin or /unpin in the same window")
        }
        if pinned == true, groupID != nil { throw APIProblem.invalidField("pinned", "cannot be true with groupId: a pinned tab is never grouped") }
        let move = MoveTabRequest(
            tabID: TabID(rawValue: id), index: index, destination: destination,
            activate: try body.bool("activate") ?? false, pinned: pinned ?? false,
            groupID: groupID.map(TabGroupID.init(rawValue:)))
        let (tab, _) = try await service.dispatch(TabCommands.move, move, in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: service.version(of: tab.browserID) ?? 0)
    }

    /// `POST /v1/tabs/{tabId}/replace`.
    func replaceTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let body = try RequestBody(request, allowed: ["url"])
        let url = try body.requiredString("url", maxLength: 2 * 1024 * 1024)
        let (tab, version) = try await service.dispatch(
            TabCommands.replace, ReplaceRequest(tabID: TabID(rawValue: id), url: url),
            in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version)
    }

    /// `POST /v1/tabs/{tabId}/navigate`.
    func navigateTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let body = try RequestBody(request, allowed: ["url", "transition", "replace", "sameDocument", "committed"])
        let url = try body.requiredString("url", maxLength: 2 * 1024 * 1024)
        let replacesCurrent = try body.bool("replace") ?? false
        let sameDocument = try body.bool("sameDocument") ?? false
        // A page's own navigation, already committed (a renderer's report), never waits for the page.
        let committed = try body.bool("committed") ?? false
        var transition = PageTransition.link
        if let name = try body.string("transition", maxLength: 32) {
            guard let value = PageTransition(rawValue: name) else {
                throw APIProblem.invalidField("transition", "must be one of \(PageTransition.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            transition = value
        }
        let (tab, version) = try await service.dispatch(
            TabCommands.navigate,
            NavigateRequest(
                tabID: TabID(rawValue: id),
                navigation: replacesCurrent
                    ? .replaceCurrent(url: url, transition: transition)
                    : sameDocument ? .pushWithinDocument(url: url, transition: transition) : .navigate(url: url, transition: transition),
                pends: !committed && pageShows(tab: TabID(rawValue: id), in: window)),
            in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version)
    }

    /// `POST /v1/tabs/{tabId}/go`.
    func goTab(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let body = try RequestBody(request, allowed: ["offset", "committed"])
        let offset = try body.requiredInt("offset", range: -100_000...100_000)
        let committed = try body.bool("committed") ?? false
        let (tab, version) = try await service.dispatch(
            TabCommands.navigate,
            NavigateRequest(
                tabID: TabID(rawValue: id), navigation: .go(offset: offset), pends: !committed && pageShows(tab: TabID(rawValue: id), in: window)),
            in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version)
    }

    /// Whether a renderer's live page shows `tab` (its profile's lease names the page's target): a
    /// client's navigation then waits for that page to commit it (``PendingNavigation``); with none,
    /// it commits at once.
    func pageShows(tab: TabID, in window: BrowserID) -> Bool {
        guard let profile = service.window(window)?.profileID else { return false }
        return leases.lease(of: profile)?.target(of: tab) != nil
    }

    /// `POST /v1/tabs/{tabId}/pending/commit`: the tab's page committed its pending navigation.
    func commitPendingNavigation(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let body = try RequestBody(request, allowed: ["id", "url"])
        let pending = try body.requiredInt("id", range: 1...PendingNavigation.maxID)
        let url = try body.string("url", maxLength: 2 * 1024 * 1024)
        let (tab, version) = try await service.dispatch(
            TabCommands.navigate, NavigateRequest(tabID: TabID(rawValue: id), navigation: .commitPending(id: pending, url: url)),
            in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version)
    }

    /// `POST /v1/tabs/{tabId}/pending/discard`: the tab's page ended its pending navigation without a commit.
    func discardPendingNavigation(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let body = try RequestBody(request, allowed: ["id"])
        let pending = try body.requiredInt("id", range: 1...PendingNavigation.maxID)
        let (tab, version) = try await service.dispatch(
            TabCommands.navigate, NavigateRequest(tabID: TabID(rawValue: id), navigation: .discardPending(id: pending)),
            in: window, ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version)
    }

    /// `GET /v1/tabs/{tabId}/history`.
    func getTabHistory(_ request: HTTPRequest) async throws -> HTTPResponse {
        let history = try await service.history(of: TabID(rawValue: request.parameter("tabId")))
        return Self.json(APIEncoding.history(history))
    }
}
