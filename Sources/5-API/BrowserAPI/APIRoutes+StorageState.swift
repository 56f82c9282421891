import BrowserModel
import BrowserServices
import HTTPServer

// A profile's web state (issue 52) in Playwright's storageState form: `GET` answers the document
// `context.storage_state()` writes, `PUT` replaces it (a file saved by Playwright goes in with
// `curl -T`), `DELETE` clears it. The profile's own token or the administrator's (the guard scopes
// `{profileId}`); cookies are secrets: no event, log line or problem detail carries a value.
extension APIRoutes {
    func registerStorageState(in router: inout Router) {
        let service = self.service
        router.add(
            .get, "/v1/profiles/{profileId}/storage-state",
            deferred { request in
                try Self.noParameters(request)
                let state = try await service.storageState(profile: ProfileID(rawValue: request.parameter("profileId")))
                return Self.json(StorageStateJSON.encode(state))
            })
        router.add(
            .put, "/v1/profiles/{profileId}/storage-state",
            deferred { request in
                let id = ProfileID(rawValue: request.parameter("profileId"))
                // `curl -T file` sends no Content-Type: none is taken as JSON (a browser cannot send a
                // cross-origin PUT without asking first, so this opens no door to other sites).
                if let type = request.headers["Content-Type"], !type.isEmpty, !RequestBody.isJSON(type) {
                    throw APIProblem.unsupportedMediaType(type.lowercased())
                }
                let document: JSONValue
                do {
                    document = try JSONParser.parse(request.body)
                } catch let error as JSONParser.SyntaxError {
                    throw APIProblem.malformedJSON("\(error.message) at byte \(error.offset)")
                }
                let state = try StorageStateJSON.parse(document)
                try await service.replaceStorageState(profile: id, with: state)
                return Self.json(Self.storageStateSummary(id, state))
            })
        router.add(
            .delete, "/v1/profiles/{profileId}/storage-state",
            deferred { request in
                try Self.noParameters(request)
                try await service.replaceStorageState(profile: ProfileID(rawValue: request.parameter("profileId")), with: .empty)
                return .noContent
            })
    }

    /// What a `PUT` answers: counts, never values.
    static func storageStateSummary(_ id: ProfileID, _ state: StorageState) -> [UInt8] {
        APIEncoding.bytes { json in
            json.beginObject()
            json.member("profileId", id.rawValue)
            json.member("cookies", state.cookies.count)
            json.member("origins", state.origins.count)
            json.member("bytes", state.byteCount)
            json.endObject()
        }
    }
}
