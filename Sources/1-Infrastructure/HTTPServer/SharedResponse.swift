import CMicroHTTPD
import Synchronization

/// A complete answer built once and sent many times without copying: the libmicrohttpd response is
/// made on first use and queued on every connection that asks (libmicrohttpd reference-counts it).
/// For answers that repeat byte for byte, such as a window's JSON at one version.
public final class SharedResponse: Sendable {
    public let status: Int
    public let headers: HTTPHeaders
    public let body: [UInt8]
    private let handle = Mutex<ResponseHandle?>(nil)

    /// - Parameter body: kept for as long as the answer is; its spare capacity (an encoder's growth) is
    ///   given back first, one copy now against up to as much again held for the answer's life.
    public init(status: Int, headers: HTTPHeaders, body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body =
            body.capacity - body.count > 4096
            ? Array(unsafeUninitializedCapacity: body.count) { buffer, count in
                count = buffer.initialize(fromContentsOf: body)
            } : body
    }

    /// The libmicrohttpd response, made on first use with `extra` (the server's own response headers)
    /// added where the answer has none of that name; nil if it could not be made, or if it was made
    /// with other extra headers (another server's: that one sends a copy).
    func mhdResponse(adding extra: HTTPHeaders = [:]) -> OpaquePointer? {
        handle.withLock { handle in
            if let handle { return Self.same(handle.extra, extra) ? handle.raw : nil }
            // Sent from `body` itself (no second copy held beside it for as long as the answer is cached).
            guard let made = BorrowedBody.response(body) else { return nil }
            for field in headers { _ = MHD_add_response_header(made, field.name, field.value) }
            for field in extra where headers[field.name] == nil { _ = MHD_add_response_header(made, field.name, field.value) }
            handle = ResponseHandle(raw: made, extra: extra)
            return made
        }
    }

    /// What the answer holds: its body and headers (what a cache of answers counts).
    public var byteCount: Int { body.count + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count } + 64 }

    private static func same(_ left: HTTPHeaders, _ right: HTTPHeaders) -> Bool {
        left.fields.count == right.fields.count && zip(left.fields, right.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    deinit {
        handle.withLock { handle in
            if let handle { MHD_destroy_response(handle.raw) }
        }
    }
}

/// A libmicrohttpd response pointer.
///
/// `@unchecked Sendable`: libmicrohttpd responses are reference-counted under their own mutex and may
/// be queued on connections of any worker thread; the pointer is created and destroyed under the
/// owning `SharedResponse`'s lock, and headers are never changed after creation.
struct ResponseHandle: @unchecked Sendable {
    let raw: OpaquePointer
    /// The server's own headers it was made with.
    let extra: HTTPHeaders
}
