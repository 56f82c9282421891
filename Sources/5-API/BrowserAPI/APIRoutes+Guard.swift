public import BrowserAccess
import BrowserModel
import BrowserServices
import Foundation
public import HTTPServer

// The API's guard: who is calling, whether they may reach what the path names, and idempotent
// retries. A profile token that names another profile's resource gets the same 404 as an id that
// never existed, so it cannot learn that the resource exists.
extension APIRoutes {
    /// The caller of `request`.
    /// - Throws: 401 with `WWW-Authenticate: Bearer` when authentication is on and the token is missing or unknown.
    func authenticate(_ request: HTTPRequest) throws -> Principal { try identify(request).principal }

    /// The caller of `request` and the id of the profile token it came with (nil: the administrator).
    /// - Throws: as ``authenticate(_:)``.
    func identify(_ request: HTTPRequest) throws -> (principal: Principal, tokenID: String?) {
        guard tokens.isEnabled else { return (.admin, nil) }
        if request.headers["Authorization"] == nil, let ticket = request.queryValue("ticket"), let target = Self.streamTarget(of: request) {
            // A ticket of a token revoked since it was issued opens nothing (its tickets were voided
            // then; this also covers a revocation that raced the redemption).
            guard let principal = tickets.redeem(ticket, target: target),
                principal.tokenID.map({ tokens.record($0) != nil }) ?? true
            else {
                throw HTTPError(
                    401, kind: "unauthorized", title: "Unauthorized",
                    detail: "The stream ticket is not valid: unknown, already used, expired, or issued for another stream.",
                    headers: ["WWW-Authenticate": "Bearer realm=\"browserd\", error=\"invalid_token\""])
            }
            return principal
        }
        guard let header = request.headers["Authorization"], header.lowercased().hasPrefix("bearer ") else {
            throw HTTPError(
                401, kind: "unauthorized", title: "Unauthorized", detail: "Send Authorization: Bearer <token>.",
                headers: ["WWW-Authenticate": "Bearer realm=\"browserd\""])
        }
        let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        guard let principal = tokens.identify(token) else {
            throw HTTPError(
                401, kind: "unauthorized", title: "Unauthorized", detail: "The token is not valid.",
                headers: ["WWW-Authenticate": "Bearer realm=\"browserd\", error=\"invalid_token\""])
        }
        return principal
    }

    /// Whether `request` carries a credential that would pass ``authenticate(_:)`` (a known token, or a
    /// ticket outstanding for its stream), checked without using a ticket up; true when authentication
    /// is off. What runs before the guard (several instances' placement) asks this first, so a request
    /// with an invalid token never moves a lease, probes another instance or reads the database.
    public static func carriesValidCredentials(_ request: HTTPRequest, tokens: TokenStore, tickets: StreamTicketStore) -> Bool {
        guard tokens.isEnabled else { return true }
        if let header = request.headers["Authorization"] {
            guard header.lowercased().hasPrefix("bearer ") else { return false }
            return tokens.identify(String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)) != nil
        }
        guard let ticket = request.queryValue("ticket"), let target = streamTarget(of: request) else { return false }
        return tickets.isOutstanding(ticket, target: target)
    }

    /// The stream a request opens, as tickets name it (`/v1/browsers/{id}/events`,
    /// `/v1/events?profileId={id}`); nil for any other request.
    static func streamTarget(of request: HTTPRequest) -> String? {
        guard request.method == .get || request.method == .head else { return nil }
        switch request.routeTemplate {
        case "/v1/browsers/{browserId}/events": return "/v1/browsers/\(request.parameter("browserId"))/events"
        case "/v1/events": return request.queryValue("profileId").map { "/v1/events?profileId=\($0)" } ?? "/v1/events"
        default: return nil
        }
    }

    /// Refuses admin-only routes to profile tokens (403) and resources of other profiles (404).
    func checkScope(_ request: HTTPRequest, principal: Principal) throws {
        guard principal != .admin else { return }
        if let template = request.routeTemplate, Self.adminOnly.contains("\(request.method.rawValue) \(template)"),
            !Self.rendererMay(request, template: template, principal: principal)
        {
            throw HTTPError(403, kind: "forbidden", title: "Forbidden", detail: "Only the administrator may do this.")
        }
        let parameters = request.pathParameters
        if let id = parameters["profileId"], !principal.reaches(service.rootProfile(of: ProfileID(rawValue: id))) {
            throw APIProblem.profileNotFound(id)
        }
        if let id = parameters["browserId"], !principal.reaches(service.rootProfile(ofWindow: BrowserID(rawValue: id))) {
            throw APIProblem.windowNotFound(id)
        }
        if let id = parameters["tabId"], let window = service.window(ofTab: TabID(rawValue: id)),
            !principal.reaches(service.rootProfile(ofWindow: window))
        {
            throw APIProblem.tabNotFound(id)
        }
        if let id = parameters["groupId"], let window = service.window(ofGroup: TabGroupID(rawValue: id)),
            !principal.reaches(service.rootProfile(ofWindow: window))
        {
            throw APIProblem.groupNotFound(id)
        }
    }

    /// The admin-only routes a renderer's token may call: its own registration (register, renew, read,
    /// drain, leave), and the lease and ticket redemptions of a profile it holds (checked below as any
    /// profile-scoped request is).
    static func rendererMay(_ request: HTTPRequest, template: String, principal: Principal) -> Bool {
        guard case .renderer(let name, _) = principal else { return false }
        switch "\(request.method.rawValue) \(template)" {
        case "PUT /v1/renderers/{rendererName}", "GET /v1/renderers/{rendererName}", "POST /v1/renderers/{rendererName}/drain",
            "DELETE /v1/renderers/{rendererName}", "GET /v1/renderers/{rendererName}/events":
            return request.parameter("rendererName") == name
        case "PUT /v1/profiles/{profileId}/renderer", "DELETE /v1/profiles/{profileId}/renderer", "POST /v1/profiles/{profileId}/devtools/redemptions":
            return true
        default:
            return false
        }
    }

    /// The regular profile whose state `request` changes, by its path's ids.
    func rootProfile(of request: HTTPRequest) -> ProfileID? {
        let parameters = request.pathParameters
        if let id = parameters["profileId"] { return service.rootProfile(of: ProfileID(rawValue: id)) }
        if let id = parameters["browserId"] { return service.rootProfile(ofWindow: BrowserID(rawValue: id)) }
        if let id = parameters["tabId"] { return service.rootProfile(ofTab: TabID(rawValue: id)) }
        if let id = parameters["groupId"] { return service.rootProfile(ofGroup: TabGroupID(rawValue: id)) }
        return nil
    }

    /// Refuses a change to a profile that has written more than its quota lately (429 with the seconds
    /// until it may write again); other profiles are not affected.
    func checkWriteQuota(_ request: HTTPRequest) throws {
        guard let quota = service.writeQuota, let profile = rootProfile(of: request) else { return }
        try Self.checkWriteQuota(quota, profile: profile)
    }

    static func checkWriteQuota(_ quota: WriteQuota, profile: ProfileID) throws {
        if let seconds = quota.retryAfter(profile: profile.rawValue) {
            throw HTTPError(
                429, kind: "write-rate-exceeded", title: "Write Rate Exceeded",
                detail: "This profile wrote more than \(quota.bytesPerSecond) bytes a second lately (--profile-write-bytes-per-second); retry in \(seconds) s.",
                headers: ["Retry-After": "\(seconds)"])
        }
    }

    /// Runs a POST, PATCH or PUT at most once per `Idempotency-Key`: a retry gets the stored answer.
    func idempotent(
        _ request: HTTPRequest, principal: Principal,
        _ body: () async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        guard request.method == .post || request.method == .patch || request.method == .put, let header = request.headers["Idempotency-Key"] else {
            return try await body()
        }
        guard let key = IdempotencyStore.parse(header) else {
            throw HTTPError(
                400, kind: "invalid-header", title: "Invalid Header",
                detail: "Idempotency-Key must be a string of 1 to 255 visible ASCII characters, e.g. \"8e03978e\".",
                extensions: ["header": "Idempotency-Key"])
        }
        let scoped = principal.scope + "\n" + key
        switch idempotency.begin(key: scoped, fingerprint: IdempotencyStore.fingerprint(request)) {
        case .replay(var response):
            response.headers.set("Idempotent-Replayed", "true")
            return response
        case .mismatch:
            throw HTTPError(
                422, kind: "idempotency-key-reused", title: "Idempotency Key Reused",
                detail: "This Idempotency-Key was used with another request; use a new key.")
        case .inFlight:
            throw HTTPError(
                409, kind: "idempotency-key-in-flight", title: "Request In Progress",
                detail: "A request with this Idempotency-Key is still running; retry later.",
                headers: ["Retry-After": "1"])
        case .proceed:
            // The change the request makes and its answer are committed together (IdempotentRequest).
            let durable = IdempotentRequest()
            let fingerprint = IdempotencyStore.fingerprint(request)
            let response: HTTPResponse
            var failure: HTTPError?
            do {
                response = try await IdempotentRequest.$current.withValue(durable) { try await body() }
            } catch let error as HTTPError {
                failure = error
                response = error.response(instance: request.path)
            } catch {
                try? await durable.finish(nil)
                idempotency.abandon(key: scoped)
                throw error
            }
            do {
                try await durable.finish(IdempotencyStore.record(key: scoped, fingerprint: fingerprint, response: response))
            } catch {
                idempotency.abandon(key: scoped)
                throw APIProblem.from(error)
            }
            idempotency.finish(key: scoped, response: response)
            if let failure { throw failure }
            return response
        }
    }
}
