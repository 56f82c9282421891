import BrowserModel
import BrowserServices
import Crypto
import Foundation
import HTTPServer

// The picture of a tab's page (Chrome's tab grid; iOS's `SnapshotTabHelper`): its renderer puts one
// after the page loads and before it leaves the foreground; a tab switcher gets it by its entity tag.
extension APIRoutes {
    func registerSnapshots(in router: inout Router) {
        router.add(.put, "/v1/tabs/{tabId}/snapshot", deferred(putTabSnapshot))
        router.add(.get, "/v1/tabs/{tabId}/snapshot", deferred(getTabSnapshot))
    }

    /// The image types a picture may be, each known by the bytes it starts with.
    static let snapshotTypes: [(mediaType: String, matches: @Sendable ([UInt8]) -> Bool)] = [
        ("image/jpeg", { $0.starts(with: [0xFF, 0xD8, 0xFF]) }),
        ("image/png", { $0.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) }),
        ("image/webp", { $0.count >= 12 && $0.starts(with: Array("RIFF".utf8)) && Array($0[8..<12]) == Array("WEBP".utf8) }),
    ]

    /// `PUT /v1/tabs/{tabId}/snapshot`: the body is the picture (`image/jpeg`, `image/png` or
    /// `image/webp`, at most ``ModelLimits/snapshotBytes``), checked to be what its type says.
    func putTabSnapshot(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        let window = try windowOf(tab: id)
        let given = (request.headers["Content-Type"] ?? "").split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard let given, let type = Self.snapshotTypes.first(where: { $0.mediaType == given }) else {
            throw HTTPError(
                415, kind: "unsupported-media-type", title: "Unsupported Media Type",
                detail: "A tab's picture is image/jpeg, image/png or image/webp; this one is \(given.map { $0.isEmpty ? "none" : APIProblem.echo($0) } ?? "none").",
                headers: ["Accept-Put": "image/jpeg, image/png, image/webp"])
        }
        let limit = service.limits.snapshotBytes
        guard request.body.count <= limit else {
            throw HTTPError(
                413, kind: "payload-too-large", title: "Payload Too Large",
                detail: "A tab's picture is at most \(limit) bytes; this one has \(request.body.count).", extensions: ["limit": "\(limit)"])
        }
        guard type.matches(request.body) else {
            throw HTTPError(
                400, kind: "invalid-image", title: "Invalid Image",
                detail: "The body is not a \(type.mediaType) image (its first bytes say otherwise).")
        }
        let digest = SHA256.hash(data: request.body).prefix(16).map { String(format: "%02x", $0) }.joined()
        let picture = PageSnapshot(
            etag: digest, mediaType: type.mediaType, byteCount: request.body.count, capturedAt: Date(), bytes: request.body)
        let (tab, version) = try await service.dispatch(
            TabCommands.setSnapshot, SnapshotUpdate(tabID: TabID(rawValue: id), snapshot: picture), in: window,
            ifMatch: try Self.ifMatch(request))
        return Self.tabResponse(tab, version: version)
    }

    /// `GET /v1/tabs/{tabId}/snapshot`: the picture, with its entity tag (`If-None-Match` → 304).
    func getTabSnapshot(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameter("tabId")
        _ = try windowOf(tab: id)
        guard let picture = try await service.pageSnapshot(ofTab: TabID(rawValue: id)), let bytes = picture.bytes else {
            throw APIProblem.notFound("snapshot-not-found", "Tab \(APIProblem.echo(id)) has no snapshot yet.")
        }
        let tag = "\"\(picture.etag)\""
        var headers = HTTPHeaders()
        headers.set("ETag", tag)
        // Each use asks again (a new picture replaces it at any time); an unchanged one costs a 304.
        headers.set("Cache-Control", "private, no-cache")
        // The bytes are a tenant's: never sniffed as anything but the image type checked at PUT, and
        // nothing they might hold runs or loads if they are opened as a document.
        headers.set("X-Content-Type-Options", "nosniff")
        headers.set("Content-Security-Policy", "default-src 'none'")
        let held = request.headers["If-None-Match"]?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? []
        if held.contains(where: { $0 == tag || $0 == "W/" + tag || $0 == "*" }) {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, contentType: picture.mediaType, body: bytes, headers: headers)
    }
}
