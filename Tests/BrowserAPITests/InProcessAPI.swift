import BrowserAccess
import BrowserServices
import Foundation
import HTTPServer

@testable import BrowserAPI

/// The REST API in process: the router and its responders, called without sockets, as the server
/// would call them (path parameters and template set, thrown problems turned into answers).
struct InProcessAPI {
    let router: Router
    let routes: APIRoutes

    init(
        tokens: TokenStore = TokenStore(adminToken: nil), tickets: StreamTicketStore = StreamTicketStore(), leases: RendererLeases = RendererLeases(),
        sink: (any DurableSink)? = nil
    ) {
        var router = Router()
        routes = APIRoutes(
            service: BrowserService(sink: sink, storedTabs: NothingStored(), framing: SSEFraming()), tokens: tokens, tickets: tickets, leases: leases)
        routes.register(in: &router)
        self.router = router
    }

    struct Answer {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]

        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        var problemType: String? { json["type"] as? String }
        var id: String { json["id"] as? String ?? "" }
        func header(_ name: String) -> String? { headers[name] }
    }

    func send(
        _ method: HTTPMethod, _ target: String, body: String? = nil, headers: [(String, String)] = [],
        contentType: String = "application/json"
    ) async -> Answer {
        let parts = target.split(separator: "?", maxSplits: 1)
        let path = String(parts[0])
        let query: [(name: String, value: String)] =
            parts.count < 2
            ? []
            : parts[1].split(separator: "&").map { pair in
                let kv = pair.split(separator: "=", maxSplits: 1)
                return (String(kv[0]), kv.count > 1 ? (String(kv[1]).removingPercentEncoding ?? "") : "")
            }
        var fields = headers
        if body != nil { fields.append(("Content-Type", contentType)) }
        var request = HTTPRequest(method: method, path: path, query: query, headers: HTTPHeaders(fields), body: Array((body ?? "").utf8))
        let response: HTTPResponse
        switch router.resolve(method: method, path: path) {
        case .notFound:
            response = HTTPError.notFound().response(instance: path)
        case .methodNotAllowed(let allow, _):
            response = HTTPError.methodNotAllowed(method, allow: allow).response(instance: path)
        case .matched(let responder, let parameters, let template):
            request.pathParameters = parameters
            request.routeTemplate = template
            do {
                switch responder {
                case .immediate(let handler): response = try handler(request)
                case .deferred(let handler): response = try await handler(request)
                case .adaptive(let handler):
                    switch try handler(request) {
                    case .answer(let answer): response = answer
                    case .later(let body): response = try await body()
                    case .started(let start):
                        response = await withCheckedContinuation { continuation in start { continuation.resume(returning: $0) } }
                    }
                case .enclosing:
                    // Pipelines are the HTTP edge's (HTTPServer's tests run them on a live server).
                    response = HTTPResponse(status: 501)
                }
            } catch let error as HTTPError {
                response = error.response(instance: path)
            } catch {
                response = HTTPResponse(status: 500)
            }
        }
        switch response.body {
        case .bytes(let bytes): return Answer(status: response.status, headers: response.headers, body: bytes)
        case .shared(let shared): return Answer(status: shared.status, headers: shared.headers, body: shared.body)
        case .stream: return Answer(status: response.status, headers: response.headers, body: [])
        }
    }

    func profile() async -> String { await send(.post, "/v1/profiles", body: #"{"name":"p"}"#).id }
    func window(_ profile: String) async -> String { await send(.post, "/v1/browsers", body: #"{"profileId":"\#(profile)"}"#).id }
    func tab(_ window: String, _ url: String = "https://a.example/") async -> String {
        await send(.post, "/v1/browsers/\(window)/tabs", body: #"{"url":"\#(url)"}"#).id
    }
}
