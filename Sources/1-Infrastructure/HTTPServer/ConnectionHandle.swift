import CMicroHTTPD

/// A libmicrohttpd connection pointer that may cross threads.
///
/// `@unchecked Sendable`: the pointer is only an address; every use goes through libmicrohttpd calls
/// whose thread rules the owners keep (resume from any thread while suspended and before
/// completion, under the owner's lock; everything else on the connection's own worker thread).
struct ConnectionHandle: @unchecked Sendable {
    let raw: OpaquePointer

    func suspend() { MHD_suspend_connection(raw) }
    func resume() { MHD_resume_connection(raw) }
}
