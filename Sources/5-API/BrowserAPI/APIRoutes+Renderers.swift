import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

// Renderers at scale (issue 55): renderers register, renew and learn the profiles browserd gives
// them (each under a fence), drain and leave; `GET /v1/renderers` shows who holds what. A report a
// renderer makes carries `Browserd-Renderer: <name>; fence=<n>`: one whose fence is no longer the
// profile's current one is refused (409), so a renderer that lost a profile stops rendering it.
extension APIRoutes {
    /// The header a renderer's reports carry.
    public static let rendererHeader = "Browserd-Renderer"

    func registerRenderers(in router: inout Router) {
        let registry = self.renderers
        let service = self.service
        let attention = self.attention
        let wakeups = self.wakeups
        registry?.onHoldingsChange { wakeups.wake($0) }

        @Sendable func required() throws -> any RendererRegistry {
            guard let registry else {
                throw HTTPError(501, kind: "no-renderer-registry", title: "Not Implemented", detail: "This server assigns no renderers.")
            }
            return registry
        }

        router.add(
            .put, "/v1/renderers/{rendererName}",
            deferred { request in
                let name = try Self.rendererName(request)
                let body = try RequestBody(request, allowed: ["capacity", "devtoolsUrl"])
                let capacity = try body.int("capacity", range: 1...10_000, required: true) ?? 1
                let url = try body.string("devtoolsUrl", maxLength: 2048)
                if let url { try Self.checkDevToolsURL(url) }
                do {
                    let status = try await required().register(RendererRegistration(name: name, capacity: capacity, devtoolsURL: url))
                    return Self.json(Self.rendererBytes(status, attention: attention))
                } catch RendererRegistryError.tooMany(let limit) {
                    throw HTTPError(
                        429, kind: "too-many-renderers", title: "Too Many Renderers",
                        detail: "\(limit) renderers are registered, as many as this server takes; one must leave or lapse first.",
                        headers: ["Retry-After": "15"])
                }
            })
        router.add(
            .post, "/v1/renderers/{rendererName}/token",
            deferred { [tokens] request in
                try Self.noParameters(request)
                let name = try Self.rendererName(request)
                guard let token = tokens.rendererToken(for: name) else {
                    throw HTTPError(
                        409, kind: "authentication-off", title: "Authentication Off",
                        detail: "This server runs without an admin token: renderers need no token of their own.")
                }
                return Self.json(
                    APIEncoding.bytes { json in
                        json.beginObject()
                        json.member("name", name)
                        json.member("token", token)
                        json.endObject()
                    }, status: 201)
            })
        router.add(
            .get, "/v1/renderers",
            immediate { request in
                try Self.noParameters(request)
                let all = try required().renderers()
                return Self.json(
                    APIEncoding.bytes { json in
                        json.beginObject()
                        json.key("items")
                        json.beginArray()
                        for status in all { json.raw(Self.rendererBytes(status, attention: attention)) }
                        json.endArray()
                        json.endObject()
                    })
            })
        router.add(
            .get, "/v1/renderers/{rendererName}",
            immediate { request in
                try Self.noParameters(request)
                let name = try Self.rendererName(request)
                guard let status = try required().renderers().first(where: { $0.name == name }) else { throw Self.rendererNotFound(name) }
                return Self.json(Self.rendererBytes(status, attention: attention))
            })
        router.add(
            .get, "/v1/renderers/{rendererName}/events",
            immediate { request in
                try Self.noParameters(request)
                let name = try Self.rendererName(request)
                guard try required().renderers().contains(where: { $0.name == name }) else { throw Self.rendererNotFound(name) }
                guard wakeups.openCount(name) < RendererWakeups.perRenderer else {
                    throw HTTPError(
                        429, kind: "too-many-renderer-streams", title: "Too Many Renderer Streams",
                        detail: "Renderer \(name) has \(RendererWakeups.perRenderer) event streams open, as many as one renderer may.",
                        headers: ["Retry-After": "5"])
                }
                let reservation = try service.events.reserveStream(root: ProfileID(rawValue: "renderer:" + name))
                return stream(reservation) { sink in wakeups.add(sink, for: name) }
            })
        router.add(
            .post, "/v1/renderers/{rendererName}/drain",
            deferred { request in
                try Self.noParameters(request)
                let name = try Self.rendererName(request)
                guard let status = try await required().drain(name) else { throw Self.rendererNotFound(name) }
                return Self.json(Self.rendererBytes(status, attention: attention))
            })
        router.add(
            .delete, "/v1/renderers/{rendererName}",
            deferred { request in
                try Self.noParameters(request)
                let name = try Self.rendererName(request)
                guard try await required().unregister(name) else { throw Self.rendererNotFound(name) }
                return .noContent
            })
        router.add(
            .get, "/v1/profiles/{profileId}/rendering",
            immediate { request in
                try Self.noParameters(request)
                let id = ProfileID(rawValue: request.parameter("profileId"))
                guard let profile = service.profile(id), !profile.incognito else { throw APIProblem.profileNotFound(id.rawValue) }
                return Self.json(Self.renderingBytes(try required(), id))
            })
        router.add(
            .put, "/v1/profiles/{profileId}/rendering",
            deferred { request in
                let id = ProfileID(rawValue: request.parameter("profileId"))
                guard let profile = service.profile(id), !profile.incognito else { throw APIProblem.profileNotFound(id.rawValue) }
                let body = try RequestBody(request, allowed: ["pin", "excluded"])
                let pin = try body.string("pin", maxLength: 64)
                if let pin { try Self.checkRendererName(pin, field: "pin") }
                let excluded = try body.bool("excluded") ?? false
                let registry = try required()
                try await registry.setRendering(of: id, pin: pin, excluded: excluded)
                return Self.json(Self.renderingBytes(registry, id))
            })
    }

    /// A request that is not a renderer's uses its profile (``ProfileAttention``).
    func noteUse(_ request: HTTPRequest) {
        guard renderers != nil, request.headers[Self.rendererHeader] == nil, let root = rootProfile(of: request) else { return }
        attention.used(root)
    }

    /// Refuses (409) a report whose `Browserd-Renderer` fence is not its profile's current one.
    func checkRendererFence(_ request: HTTPRequest) throws {
        guard let registry = renderers, let header = request.headers[Self.rendererHeader] else { return }
        guard let (name, fence) = Self.parseRendererHeader(header) else {
            throw HTTPError(
                400, kind: "invalid-renderer-header", title: "Bad Request",
                detail: "\(Self.rendererHeader) must be `<name>; fence=<number>`.")
        }
        guard let profile = rootProfile(of: request) else { return }
        let holder = registry.holder(of: profile)
        guard let holder, holder.renderer == name, holder.fence == fence else {
            throw HTTPError(
                409, kind: "renderer-fenced", title: "Renderer Fenced",
                detail:
                    "Renderer \(APIProblem.echo(name)) with fence \(fence) no longer holds profile \(profile): \(holder.map { "renderer \($0.renderer) holds it now" } ?? "no renderer holds it now"). Stop rendering it."
            )
        }
    }

    static func parseRendererHeader(_ header: String) -> (name: String, fence: UInt64)? {
        let parts = header.split(separator: ";", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, parts[1].hasPrefix("fence="), let fence = UInt64(parts[1].dropFirst(6)),
            (try? checkRendererName(parts[0], field: "name")) != nil
        else { return nil }
        return (parts[0], fence)
    }

    static func rendererName(_ request: HTTPRequest) throws -> String {
        let name = request.parameter("rendererName")
        try checkRendererName(name, field: "rendererName")
        return name
    }

    /// A renderer's name: 1 to 64 characters of A-Z, a-z, 0-9, `.`, `_` and `-`.
    static func checkRendererName(_ name: String, field: String) throws {
        guard (1...64).contains(name.utf8.count),
            name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-_".unicodeScalars.contains($0)) })
        else {
            throw APIProblem.invalidField(field, "must be 1 to 64 characters of A-Z, a-z, 0-9, ., _ and -")
        }
    }

    /// `ws://` or `wss://` and at least one more character, all printable ASCII but `?` and `#`, not
    /// ending in `/` (the contract's pattern).
    static func checkDevToolsURL(_ url: String) throws {
        let rest = url.hasPrefix("wss://") ? url.utf8.dropFirst(6) : url.hasPrefix("ws://") ? url.utf8.dropFirst(5) : nil
        guard let rest, let last = rest.last, last != UInt8(ascii: "/"),
            rest.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") })
        else {
            throw APIProblem.invalidField("devtoolsUrl", "must be a ws:// or wss:// URL of printable ASCII without a query, a fragment or a trailing slash")
        }
    }

    static func rendererNotFound(_ name: String) -> HTTPError {
        APIProblem.notFound("renderer-not-found", "No renderer named \(APIProblem.echo(name)) is registered (it never was, left, or its lease lapsed).")
    }

    static func rendererBytes(_ status: RendererStatus, attention: ProfileAttention) -> [UInt8] {
        let now = ContinuousClock.now
        return APIEncoding.bytes { json in
            json.beginObject()
            json.member("name", status.name)
            json.member("capacity", status.capacity)
            if let url = status.devtoolsURL { json.member("devtoolsUrl", url) }
            json.member("draining", status.draining)
            json.member("expiresAt", JSONText.timestamp(status.expiresAt))
            json.member("leaseSeconds", status.leaseSeconds)
            json.key("profiles")
            json.beginArray()
            for (profile, fence) in status.profiles {
                json.beginObject()
                json.member("profileId", profile)
                json.member("fence", Int(clamping: fence))
                // Whether anyone but its renderer watches or used it lately (a renderer at its limit
                // closes a profile nobody does, and starts one again that somebody does).
                let seen = attention.seen(ProfileID(rawValue: profile), now: now)
                json.member("watched", seen.watched)
                if let idle = seen.idleSeconds { json.member("idleSeconds", (idle * 1000).rounded() / 1000) }
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
    }

    static func renderingBytes(_ registry: any RendererRegistry, _ profile: ProfileID) -> [UInt8] {
        let holder = registry.holder(of: profile)
        let (pin, excluded) = registry.rendering(of: profile)
        return APIEncoding.bytes { json in
            json.beginObject()
            json.member("profileId", profile.rawValue)
            json.key("pin")
            if let pin { json.value(pin) } else { json.null() }
            json.member("excluded", excluded)
            json.key("renderer")
            if let holder {
                json.beginObject()
                json.member("name", holder.renderer)
                json.member("fence", Int(clamping: holder.fence))
                json.endObject()
            } else {
                json.null()
            }
            json.endObject()
        }
    }
}
