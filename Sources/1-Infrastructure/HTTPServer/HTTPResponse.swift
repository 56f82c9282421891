/// An answer: status, header fields and a body that is either bytes or a stream.
public struct HTTPResponse: Sendable {
    /// What follows the head.
    public enum Body: Sendable {
        /// A complete body, sent with a `Content-Length`.
        case bytes([UInt8])
        /// A long-lived body of unknown length (chunked), fed through a ``StreamWriter``.
        case stream(StreamBody)
        /// A whole answer built once and shared; its own status and headers are used.
        case shared(SharedResponse)
    }

    public var status: Int
    public var headers: HTTPHeaders
    public var body: Body

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a byte body and a content type.
    public init(status: Int, contentType: String, body: [UInt8], headers: HTTPHeaders = HTTPHeaders()) {
        var headers = headers
        headers.set("Content-Type", contentType)
        self.init(status: status, headers: headers, body: .bytes(body))
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    /// An `application/json` response from bytes that are already JSON.
    public static func json(_ bytes: [UInt8], status: Int = 200, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: bytes, headers: headers)
    }

    /// A shared, prebuilt answer.
    public static func shared(_ response: SharedResponse) -> HTTPResponse {
        HTTPResponse(status: response.status, headers: response.headers, body: .shared(response))
    }

    /// 204 No Content.
    public static let noContent = HTTPResponse(status: 204)
}

/// How a streaming response starts: the server calls `open` with the stream's writer once the
/// head is queued; the application keeps the writer and feeds it from any thread.
public struct StreamBody: Sendable {
    /// Bytes written when the stream has been idle for the server's heartbeat interval (they keep
    /// proxies from timing the stream out; a client that hangs up is noticed at once anyway).
    public var heartbeat: [UInt8]?
    /// The most bytes the writer buffers for a slow client before `write` reports an overflow.
    public var maxBufferedBytes: Int
    /// Bytes written at once, before `open` is called (e.g. an SSE comment so clients see bytes).
    public var preamble: [UInt8]
    /// Called once with the stream's writer, on the server thread that queued the response.
    public var open: @Sendable (StreamWriter) -> Void

    public init(
        heartbeat: [UInt8]? = nil,
        maxBufferedBytes: Int = 1 << 20,
        preamble: [UInt8] = [],
        open: @escaping @Sendable (StreamWriter) -> Void
    ) {
        self.heartbeat = heartbeat
        self.maxBufferedBytes = maxBufferedBytes
        self.preamble = preamble
        self.open = open
    }
}
