import BrowserModel
import BrowserServices
import HTTPServer

// The presentation edge: the coordinators' tree, deep-link routes, the incognito lock and the
// action log. Handlers parse and check, then ask the service; the coordinators decide.
extension APIRoutes {
    func registerPresentation(in router: inout Router) {
        let routes = self

        router.add(
            .get, "/v1/browsers/{browserId}/ui",
            deferred { request in
                let tree = try await service.presentation(of: routes.existingWindow(request.parameter("browserId")))
                return Self.json(APIEncoding.bytes { $0.uiNode(tree) })
            })

        router.add(
            .post, "/v1/browsers/{browserId}/route",
            deferred(duringRestore: true) { request in
                let body = try RequestBody(request, allowed: ["url"])
                let url = try body.requiredString("url", maxLength: 4096)
                let id = BrowserID(rawValue: request.parameter("browserId"))
                if routes.unavailable() != nil {
                    // The window may not be restored yet: keep the route and follow it once it is.
                    let saved = try service.saveRoute(url, for: id)
                    return Self.json(
                        APIEncoding.bytes { json in
                            json.beginObject()
                            json.member("savedRouteId", saved.id)
                            json.member("url", saved.url)
                            json.endObject()
                        }, status: 202)
                }
                _ = try routes.existingWindow(id.rawValue)
                let (result, version) = try await service.route(url, in: id)
                return Self.json(APIEncoding.bytes { APIEncoding.write(result, to: &$0) }, version: version)
            })

        for (action, locked) in [("lock", true), ("unlock", false)] {
            router.add(
                .post, "/v1/profiles/{profileId}/incognito/\(action)",
                deferred { request in
                    _ = try RequestBody(request, allowed: [])
                    let id = ProfileID(rawValue: request.parameter("profileId"))
                    try await service.setIncognitoLock(profile: id, locked: locked)
                    return Self.json(
                        APIEncoding.bytes { json in
                            json.beginObject()
                            json.member("profileId", id.rawValue)
                            json.member("incognitoLocked", locked)
                            json.endObject()
                        })
                })
        }

        router.add(
            .get, "/v1/browsers/{browserId}/actions",
            deferred { request in
                let window = try routes.existingWindow(request.parameter("browserId"))
                var after = 0
                if let text = request.queryValue("after") {
                    guard let value = Int(text), value >= 0 else { throw APIProblem.invalidQuery("after", "must be a non-negative integer") }
                    after = value
                }
                var limit = 100
                if let text = request.queryValue("limit") {
                    guard let value = Int(text), (1...1000).contains(value) else {
                        throw APIProblem.invalidQuery("limit", "must be an integer from 1 to 1000")
                    }
                    limit = value
                }
                let entries = try await service.actions(of: window, after: after, limit: limit)
                return Self.json(
                    APIEncoding.bytes { json in
                        json.beginObject()
                        json.key("items")
                        json.beginArray()
                        for entry in entries { json.actionEntry(entry) }
                        json.endArray()
                        if entries.count == limit, let last = entries.last {
                            json.member("nextAfter", last.seq)
                        } else {
                            json.key("nextAfter")
                            json.null()
                        }
                        json.endObject()
                    })
            })
    }
}
