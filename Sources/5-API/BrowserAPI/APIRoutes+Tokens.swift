import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

extension APIRoutes {
    func registerTokens(in router: inout Router) {
        let service = self.service
        let tokens = self.tokens
        let saveToken = self.saveToken

        router.add(
            .post, "/v1/profiles/{profileId}/tokens",
            deferred { request in
                try Self.noParameters(request)
                let id = ProfileID(rawValue: request.parameter("profileId"))
                guard let profile = service.profile(id), !profile.incognito else { throw APIProblem.profileNotFound(id.rawValue) }
                let (record, token) = tokens.create(for: id)
                do {
                    try await saveToken?(record, nil)
                } catch {
                    tokens.revoke(record.id, of: id)
                    throw HTTPError.storageUnavailable("The token could not be saved; it was not issued.", retryAfter: 5)
                }
                return Self.json(
                    APIEncoding.bytes { json in
                        json.beginObject()
                        json.member("id", record.id)
                        json.member("profileId", id.rawValue)
                        json.member("token", token)
                        json.member("createdAt", JSONText.timestamp(record.createdAt))
                        json.endObject()
                    }, status: 201, location: "/v1/profiles/\(id)/tokens/\(record.id)")
            })

        let backup = self.backup
        router.add(
            .post, "/v1/admin/backup",
            deferred { request in
                try Self.noParameters(request)
                guard let backup else {
                    throw HTTPError(409, kind: "no-database", title: "No Database", detail: "This server keeps no database to back up.")
                }
                let (path, bytes) = try await backup()
                return Self.json(
                    APIEncoding.bytes { json in
                        json.beginObject()
                        json.member("path", path)
                        json.member("bytes", bytes)
                        json.endObject()
                    }, status: 201)
            })

        router.add(
            .delete, "/v1/profiles/{profileId}/tokens/{tokenId}",
            deferred { request in
                let id = ProfileID(rawValue: request.parameter("profileId"))
                guard service.profile(id) != nil else { throw APIProblem.profileNotFound(id.rawValue) }
                guard let revoked = tokens.record(request.parameter("tokenId")), revoked.profileID == id else {
                    throw APIProblem.notFound("token-not-found", "Token \(request.parameter("tokenId")) does not exist.")
                }
                try await saveToken?(nil, revoked)
                tokens.revoke(revoked.id, of: id)
                return .noContent
            })
    }
}
