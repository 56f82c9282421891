import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

extension APIRoutes {
    func registerGroups(in router: inout Router) {
        let service = self.service
        let routes = self

        router.add(
            .get, "/v1/groups/{groupId}",
            immediate { request in
                let id = request.parameter("groupId")
                guard let (group, version) = service.group(TabGroupID(rawValue: id)) else { throw APIProblem.groupNotFound(id) }
                return Self.groupResponse(group, version: version)
            })

        router.add(
            .patch, "/v1/groups/{groupId}",
            deferred { request in
                let id = request.parameter("groupId")
                let window = try routes.windowOf(group: id)
                let body = try RequestBody(request, allowed: ["title", "color", "collapsed"])
                let update = UpdateGroupRequest(
                    groupID: TabGroupID(rawValue: id), title: try body.string("title", maxLength: 1024),
                    color: try Self.color(body), collapsed: try body.bool("collapsed"))
                let (group, version) = try await service.dispatch(TabCommands.updateGroup, update, in: window, ifMatch: try Self.ifMatch(request))
                return Self.groupResponse(group, version: version)
            })

        router.add(
            .delete, "/v1/groups/{groupId}",
            deferred { request in
                let id = request.parameter("groupId")
                let window = try routes.windowOf(group: id)
                let (_, version) = try await service.dispatch(
                    TabCommands.deleteGroup, TabGroupID(rawValue: id), in: window,
                    ifMatch: try Self.ifMatch(request))
                var response = HTTPResponse.noContent
                response.headers.set("ETag", "\"v\(version)\"")
                return response
            })

        router.add(
            .post, "/v1/groups/{groupId}/add-tabs",
            deferred { request in
                let id = request.parameter("groupId")
                let window = try routes.windowOf(group: id)
                let body = try RequestBody(request, allowed: ["tabIds"])
                // Tabs of the group's window, or of another window of its profile (they move over).
                let ids = try routes.tabIDs(try body.requiredStrings("tabIds"), field: "tabIds", inProfileOf: window)
                let (group, version) = try await service.dispatch(
                    TabCommands.addToGroup, GroupTabsRequest(groupID: TabGroupID(rawValue: id), tabIDs: ids), in: window,
                    ifMatch: try Self.ifMatch(request))
                return Self.groupResponse(group, version: version)
            })

        router.add(
            .post, "/v1/groups/{groupId}/move",
            deferred { request in
                let id = request.parameter("groupId")
                let window = try routes.windowOf(group: id)
                let body = try RequestBody(request, allowed: ["beforeIndex"])
                let before = try body.requiredInt("beforeIndex", range: Int.min...Int.max)
                let count = service.window(window)?.tabCount ?? 0
                guard before >= 0, before <= count else {
                    throw HTTPError(
                        422, kind: "index-out-of-range", title: "Index Out of Range",
                        detail: "beforeIndex \(before) is outside 0…\(count) for this window.")
                }
                let (group, version) = try await service.dispatch(
                    TabCommands.moveGroup, MoveGroupRequest(groupID: TabGroupID(rawValue: id), beforeIndex: before), in: window,
                    ifMatch: try Self.ifMatch(request))
                return Self.groupResponse(group, version: version)
            })

        router.add(
            .post, "/v1/groups/{groupId}/close",
            deferred { request in
                try Self.noParameters(request)
                let id = request.parameter("groupId")
                let window = try routes.windowOf(group: id)
                let (result, version) = try await service.dispatch(
                    TabCommands.closeGroup, TabGroupID(rawValue: id), in: window,
                    ifMatch: try Self.ifMatch(request))
                return Self.json(APIEncoding.closeResult(result), version: version)
            })
    }
}
