/// An error a handler throws to answer with a problem; the server turns it into the response.
public struct HTTPError: Error, Sendable {
    public var problem: Problem
    /// Header fields the answer carries besides the problem (e.g. `Allow`, `WWW-Authenticate`).
    public var headers: HTTPHeaders

    /// An error of a stable kind.
    /// - Parameters:
    ///   - status: the HTTP status.
    ///   - kind: the slug of the problem type; the type URI is `/problems/<kind>`.
    ///   - title: the short summary shared by every occurrence of this kind.
    ///   - detail: what went wrong this time and how to fix it.
    public init(
        _ status: Int, kind: String, title: String, detail: String? = nil, headers: HTTPHeaders = HTTPHeaders(),
        extensions: [String: String] = [:]
    ) {
        self.problem = Problem(type: "/problems/\(kind)", title: title, status: status, detail: detail, extensions: extensions)
        self.headers = headers
    }

    /// The answer this error stands for, `instance` set to the request path.
    public func response(instance: String?) -> HTTPResponse {
        var problem = problem
        if problem.instance == nil { problem.instance = instance }
        return problem.response(headers: headers)
    }

    // The server's own kinds; applications add theirs with the initialiser.

    /// No route has this path.
    public static func notFound(_ detail: String? = nil) -> HTTPError {
        HTTPError(404, kind: "not-found", title: "Not Found", detail: detail)
    }

    /// The path exists but not with this method; `allow` lists the methods it has.
    public static func methodNotAllowed(_ method: HTTPMethod, allow: [HTTPMethod]) -> HTTPError {
        let list = allow.map(\.rawValue).joined(separator: ", ")
        return HTTPError(
            405, kind: "method-not-allowed", title: "Method Not Allowed",
            detail: "\(method.rawValue) is not allowed here; allowed: \(list).",
            headers: ["Allow": list])
    }

    /// The body is larger than the configured limit.
    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(
            413, kind: "payload-too-large", title: "Payload Too Large",
            detail: "The request body exceeds the limit of \(limit) bytes.")
    }

    /// The handler failed in a way the client cannot fix.
    public static func internalError(_ detail: String? = nil) -> HTTPError {
        HTTPError(500, kind: "internal-error", title: "Internal Server Error", detail: detail)
    }

    /// The server is stopping or not ready.
    public static func unavailable(_ detail: String, retryAfter: Int? = nil) -> HTTPError {
        var headers = HTTPHeaders()
        if let retryAfter { headers.set("Retry-After", String(retryAfter)) }
        return HTTPError(503, kind: "unavailable", title: "Service Unavailable", detail: detail, headers: headers)
    }
}
