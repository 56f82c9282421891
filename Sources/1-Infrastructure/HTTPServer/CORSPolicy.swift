/// Which web origins may call the server from a browser (the Fetch standard's CORS protocol), and
/// what such callers may send and read.
///
/// For a request whose `Origin` is allowed, the server answers a preflight (`OPTIONS` with
/// `Access-Control-Request-Method`) on any routed path with 204 and the path's methods, and adds
/// `Access-Control-Allow-Origin`, `Vary: Origin` and `Access-Control-Expose-Headers` to every
/// other answer (streams included). A request from an origin not on the list gets no CORS header,
/// so the browser keeps the answer from the page; a preflight of a path nothing serves is 404.
public struct CORSPolicy: Sendable, Equatable {
    /// The allowed origins, each exactly `scheme://host[:port]` as browsers send it.
    public let origins: Set<String>
    /// Whether any origin is allowed (`*`): the answer then names the caller's origin all the same.
    public let allowsAnyOrigin: Bool
    /// Request headers a page may send beyond the CORS-safelisted ones.
    public var allowedHeaders: [String]
    /// Response headers a page may read beyond the CORS-safelisted ones.
    public var exposedHeaders: [String]
    /// How long a browser may cache a preflight answer, in seconds.
    public var maxAgeSeconds: Int

    public init(origins: [String], allowedHeaders: [String] = [], exposedHeaders: [String] = [], maxAgeSeconds: Int = 600) {
        self.allowsAnyOrigin = origins.contains("*")
        self.origins = Set(origins.filter { $0 != "*" })
        self.allowedHeaders = allowedHeaders
        self.exposedHeaders = exposedHeaders
        self.maxAgeSeconds = maxAgeSeconds
    }

    /// Whether pages served from `origin` may call.
    public func allows(_ origin: String) -> Bool {
        allowsAnyOrigin || origins.contains(origin)
    }

    /// Checks one entry of an allow-list: `*`, or `http(s)://host[:port]` with nothing after it.
    /// - Returns: why it is not an origin, or nil when it is one.
    public static func problem(with origin: String) -> String? {
        if origin == "*" { return nil }
        let schemes = ["http://", "https://"]
        guard let scheme = schemes.first(where: { origin.hasPrefix($0) }) else {
            return "\(origin) is not an origin: it must start with http:// or https://"
        }
        let authority = origin.dropFirst(scheme.count)
        guard !authority.isEmpty, !authority.contains("/"), !authority.contains("?"), !authority.contains("#"),
            !authority.contains("@"), !authority.contains(" ")
        else {
            return "\(origin) is not an origin: it must be scheme://host[:port], with no path, query or user"
        }
        if origin != origin.lowercased() { return "\(origin) is not an origin as browsers send it: use lower case" }
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            guard let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port) else {
                return "\(origin) has an invalid port"
            }
        }
        return nil
    }

    /// The headers of a preflight answer for `origin` on a path serving `methods`.
    func preflightHeaders(origin: String, methods: [HTTPMethod]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.set("Access-Control-Allow-Origin", origin)
        headers.set("Access-Control-Allow-Methods", methods.map(\.rawValue).joined(separator: ", "))
        if !allowedHeaders.isEmpty { headers.set("Access-Control-Allow-Headers", allowedHeaders.joined(separator: ", ")) }
        headers.set("Access-Control-Max-Age", String(maxAgeSeconds))
        headers.set("Vary", "Origin")
        return headers
    }

    /// `response` with the headers an allowed origin's actual request gets.
    func decorate(_ response: HTTPResponse, origin: String) -> HTTPResponse {
        var response = response
        if case .shared(let shared) = response.body {
            // A prebuilt answer carries its own head: send a copy of its bytes with the extra fields.
            response = HTTPResponse(status: shared.status, headers: shared.headers, body: .bytes(shared.body))
        }
        response.headers.set("Access-Control-Allow-Origin", origin)
        if !exposedHeaders.isEmpty { response.headers.set("Access-Control-Expose-Headers", exposedHeaders.joined(separator: ", ")) }
        let vary = response.headers["Vary"]
        response.headers.set("Vary", vary.map { $0.lowercased().contains("origin") ? $0 : "\($0), Origin" } ?? "Origin")
        return response
    }
}
