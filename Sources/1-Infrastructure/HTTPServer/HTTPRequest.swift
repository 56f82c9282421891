/// A complete HTTP request as the application sees it: head, decoded query and collected body.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The percent-decoded path, without the query.
    public var path: String
    /// The decoded query parameters in the order given (`?a` alone has the value "").
    public var query: [(name: String, value: String)]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Values of the path template's `{name}` segments, once the router matched.
    public var pathParameters: [String: String]
    /// The template of the matched route (e.g. `/v1/tabs/{tabId}`), for logs and metrics.
    public var routeTemplate: String?
    /// The request target as the client sent it (path and query, still percent-encoded): what a proxy
    /// passes on, so that `%3F` or `%23` in a path never turn into a query or a fragment. Nil when
    /// the request did not come over the wire.
    public var rawTarget: String?

    public init(
        method: HTTPMethod,
        path: String,
        query: [(name: String, value: String)] = [],
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        pathParameters: [String: String] = [:],
        routeTemplate: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = pathParameters
        self.routeTemplate = routeTemplate
    }

    /// The first value of query parameter `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// The value of path parameter `name`; routes guarantee their parameters are present.
    public func parameter(_ name: String) -> String {
        pathParameters[name] ?? ""
    }
}
