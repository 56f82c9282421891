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

    public init(status: Int, headers: HTTPHeaders, body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The libmicrohttpd response, made on first use; nil if it could not be made.
    func mhdResponse() -> OpaquePointer? {
        handle.withLock { handle in
            if let handle { return handle.raw }
            let made = body.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(
                    buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress),
                    .RESPMEM_MUST_COPY)
            }
            guard let made else { return nil }
            for field in headers { _ = MHD_add_response_header(made, field.name, field.value) }
            handle = ResponseHandle(raw: made)
            return made
        }
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
}
