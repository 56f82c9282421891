/// An RFC 9457 problem details object, sent as `application/problem+json`.
///
/// `type` is a stable URI reference per kind of error (`/problems/not-found`); `title` is the same for
/// every occurrence of that kind; `detail` says what to fix in this occurrence.
public struct Problem: Sendable, Equatable {
    public var type: String
    public var title: String
    public var status: Int
    public var detail: String?
    public var instance: String?
    /// Extension members with string values (RFC 9457 §3.2), e.g. `field`.
    public var extensions: [String: String]

    public init(
        type: String,
        title: String,
        status: Int,
        detail: String? = nil,
        instance: String? = nil,
        extensions: [String: String] = [:]
    ) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.extensions = extensions
    }

    /// The media type of problem answers.
    public static let mediaType = "application/problem+json"

    /// The problem encoded as one JSON object, keys in a fixed order.
    public var jsonBytes: [UInt8] {
        var out = JSONText()
        out.beginObject()
        out.member("type", type)
        out.member("title", title)
        out.member("status", status)
        if let detail { out.member("detail", detail) }
        if let instance { out.member("instance", instance) }
        for key in extensions.keys.sorted() { out.member(key, extensions[key]!) }
        out.endObject()
        return out.bytes
    }

    /// The problem as a response, with `extraHeaders` (e.g. `Allow`, `Retry-After`) added.
    public func response(headers extraHeaders: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = extraHeaders
        headers.set("Content-Type", Problem.mediaType)
        headers.set("Cache-Control", "no-store")
        return HTTPResponse(status: status, headers: headers, body: .bytes(jsonBytes))
    }
}
