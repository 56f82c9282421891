import Foundation
import HTTPTypes
public import OpenAPIRuntime

/// An RFC 9457 problem the server answered with (any 4xx or 5xx with `application/problem+json`):
/// its stable `type` (e.g. `/problems/not-found`), title, status and detail.
public struct BrowserdProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String?
    /// Extension members (e.g. `field`), as strings.
    public var extensions: [String: String]
    /// `Retry-After`, in seconds, when the answer had it (429, 503).
    public var retryAfter: Int?

    public var description: String { "\(status) \(type): \(detail ?? title)" }

    /// The problem an operation threw, if it was one (a `ClientError` around a ``BrowserdProblem``).
    public static func from(_ error: any Error) -> BrowserdProblem? {
        if let problem = error as? BrowserdProblem { return problem }
        if let error = error as? ClientError { return error.underlyingError as? BrowserdProblem }
        return nil
    }

    init?(status: Int, json: Data, retryAfter: Int?) {
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
            let type = object["type"] as? String
        else { return nil }
        self.type = type
        title = object["title"] as? String ?? ""
        self.status = object["status"] as? Int ?? status
        detail = object["detail"] as? String
        extensions = object.filter { !["type", "title", "status", "detail"].contains($0.key) }
            .compactMapValues { $0 as? String }
        self.retryAfter = retryAfter
    }
}

/// Turns every problem answer into a thrown ``BrowserdProblem``, so callers handle one error type
/// instead of each operation's undocumented cases.
struct ProblemMiddleware: ClientMiddleware {
    /// Problem bodies are small; a larger one is not read whole.
    static let limit = 64 * 1024

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status.code >= 400,
            response.headerFields[.contentType]?.hasPrefix("application/problem+json") == true,
            let responseBody
        else { return (response, responseBody) }
        let bytes = try await Data(collecting: responseBody, upTo: Self.limit)
        let retryAfter = response.headerFields[.retryAfter].flatMap { Int($0) }
        guard let problem = BrowserdProblem(status: response.status.code, json: bytes, retryAfter: retryAfter) else {
            return (response, HTTPBody(bytes))
        }
        throw problem
    }
}
