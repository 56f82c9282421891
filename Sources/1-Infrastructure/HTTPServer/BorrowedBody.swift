import CMicroHTTPD

/// A byte body that libmicrohttpd sends from the answer's own array, without the copy
/// `MHD_RESPMEM_MUST_COPY` makes (a `malloc` and a `memcpy` of the whole body per answer, on the
/// worker thread): the array's storage is kept alive by this box until libmicrohttpd frees the
/// response and its free callback releases the box.
///
/// `@unchecked Sendable`: `bytes` is a `let` never mutated after `init`; libmicrohttpd only reads the
/// buffer, from whichever worker sends it, and releases the box once, after its last read.
final class BorrowedBody: @unchecked Sendable {
    private let bytes: [UInt8]
    /// The first byte of `bytes`' storage. A native Swift array (there are no bridged ones on Linux)
    /// keeps its elements in one heap object at a fixed place: stable for as long as the array is
    /// alive and unchanged, which the box guarantees.
    private let base: UnsafeMutableRawPointer

    private init?(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, let base = bytes.withUnsafeBytes({ $0.baseAddress }) else { return nil }
        self.bytes = bytes
        self.base = UnsafeMutableRawPointer(mutating: base)
    }

    /// A libmicrohttpd response whose body is `bytes` itself (nil if libmicrohttpd could not make one).
    static func response(_ bytes: [UInt8]) -> OpaquePointer? {
        guard let body = BorrowedBody(bytes) else {
            return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
        }
        let retained = Unmanaged.passRetained(body)
        let made = MHD_create_response_from_buffer_with_free_callback_cls(
            body.bytes.count, body.base, { context in context.map { Unmanaged<BorrowedBody>.fromOpaque($0).release() } },
            retained.toOpaque())
        if made == nil { retained.release() }
        return made
    }
}
