import CMicroHTTPD
import Logging
import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The access-handler protocol of libmicrohttpd 0.9.75, in one place.
//
// Call 1 (head parsed, `*con_cls == NULL`): create the request context; refuse an over-long
// declared body with an early 413 (which closes the connection: the body is not wanted). Nothing
// else is answered here, because a response queued in call 1 costs the connection its keep-alive.
// Calls 2..n (body pieces): collect up to the limit. Last call (no data): route and answer; a
// deferred handler suspends the connection and is resumed with its answer, and that next call queues it.
extension HTTPServer {
    func handle(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>,
        method: UnsafePointer<CChar>,
        version: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?,
        uploadDataSize: UnsafeMutablePointer<Int>,
        context slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = slot.pointee else {
            let watched = Self.watched(connection)
            watched?.enter(.body)
            // A method outside the closed set is answered before anything is kept under its name.
            let known = HTTPMethod.known(method)
            let context = RequestContext(method: known ?? HTTPMethod("OTHER"), path: String(cString: url))
            context.http10 = version.map { strcmp($0, "HTTP/1.0") == 0 } ?? false
            context.bodyLimit = configuration.maxBodyBytes
            context.rawTarget = watched?.requestTarget
            slot.pointee = Unmanaged.passRetained(context).toOpaque()
            inFlight.wrappingAdd(1, ordering: .relaxed)
            if let refusal = refuseEarly(context, known: known != nil, on: connection) {
                watched?.enter(.handling)
                return queue(refusal, for: context, on: connection)
            }
            return .YES
        }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()

        let size = uploadDataSize.pointee
        if size > 0 {
            Self.watched(connection)?.received(size)
            if context.phase == .receiving, let uploadData {
                if context.body.count + size > context.bodyLimit {
                    context.phase = .discarding
                    context.body = []
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: size) { bytes in
                        context.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: size))
                    }
                }
            }
            uploadDataSize.pointee = 0
            return .YES
        }

        if context.phase == .receiving || context.phase == .discarding { Self.watched(connection)?.enter(.handling) }
        switch context.phase {
        case .receiving:
            return dispatch(context, on: connection)
        case .discarding:
            return queue(
                HTTPError.payloadTooLarge(limit: context.bodyLimit).response(instance: context.path),
                for: context, on: connection)
        case .waiting:
            guard let response = context.takeReadyResponse() else { return .YES }
            return queue(response, for: context, on: connection)
        case .answered:
            return .YES
        }
    }

    /// The connection's deadline record (see ``ConnectionWatch``).
    static func watched(_ connection: OpaquePointer) -> WatchedConnection? {
        CMicroHTTPD_socket_context(connection).map { Unmanaged<WatchedConnection>.fromOpaque($0).takeUnretainedValue() }
    }

    /// What a request's head alone says must be refused before its body is read (the answer then closes
    /// the connection: the body is not wanted): an unknown method (501), a `Host` this server does not
    /// answer for (421), both `Content-Length` and `Transfer-Encoding` (400, RFC 9112 §6.1: a request
    /// another hop may frame differently), and a declared body over the limit (413).
    private func refuseEarly(_ context: RequestContext, known: Bool, on connection: OpaquePointer) -> HTTPResponse? {
        func header(_ name: String) -> String? {
            MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
        }
        guard known else {
            return HTTPError(
                501, kind: "method-not-implemented", title: "Not Implemented",
                detail: "The method is not one this server knows (those of RFC 9110, PATCH and QUERY).",
                headers: ["Connection": "close"]
            ).response(instance: nil)
        }
        if let allowed = configuration.allowedHosts, let host = header("Host"), !Self.host(host, isIn: allowed) {
            return HTTPError(
                421, kind: "misdirected-request", title: "Misdirected Request",
                detail: "This server does not answer for the host this request names (see --allowed-hosts).",
                headers: ["Connection": "close"]
            ).response(instance: nil)
        }
        if header("Transfer-Encoding") != nil, header("Content-Length") != nil {
            return HTTPError(
                400, kind: "ambiguous-framing", title: "Ambiguous Framing",
                detail: "A request may carry Content-Length or Transfer-Encoding, not both (RFC 9112 section 6.1).",
                headers: ["Connection": "close"]
            ).response(instance: context.path)
        }
        if let large = configuration.largeBodies, context.method == .post, large.paths.contains(context.path) {
            // Who sends it first, from the head alone: a sender that may not upload holds nothing.
            var principal = "anyone"
            switch large.admit?(context.path, header) ?? .admit(principal: principal) {
            case .refuse(var error):
                error.headers.set("Connection", "close")
                return error.response(instance: context.path)
            case .admit(let who):
                principal = who
            }
            // Then a slot, so the bodies held at once stay bounded; without one, nothing is read.
            guard largeBodySlots.take(for: principal, large) else {
                return HTTPError.unavailable(
                    "Other uploads to this server are under way (at most \(large.concurrent), \(large.perPrincipal) per sender); retry.", retryAfter: 1
                )
                .response(instance: context.path)
            }
            context.largeBodyPrincipal = principal
            context.bodyLimit = large.maxBytes
            // The whole body within the deadline, whatever its rate.
            Self.watched(connection)?.setBodyDeadline(after: large.deadline)
        }
        if let declared = header("Content-Length"), let length = Int(declared), length > context.bodyLimit {
            return HTTPError.payloadTooLarge(limit: context.bodyLimit).response(instance: context.path)
        }
        return nil
    }

    /// Whether a `Host` value (a name or address, maybe with a port) names one of `allowed` (names
    /// compared without case); any IPv4 loopback address counts as `127.0.0.1`.
    static func host(_ value: String, isIn allowed: [String]) -> Bool {
        var value = value
        // Over the bytes: this runs for every request when --allowed-hosts is set.
        let named: (name: String, loopback: Bool)? = value.withUTF8 { bytes in
            var end = bytes.count
            if bytes.first == UInt8(ascii: "[") {
                guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
                end = close + 1
            } else if let colon = bytes.lastIndex(of: UInt8(ascii: ":")) {
                end = colon
            }
            let name = UnsafeBufferPointer(rebasing: bytes[..<end])
            return (String(decoding: name, as: UTF8.self), isIPv4Loopback(name))
        }
        guard let named else { return false }
        // Any IPv4 loopback address counts as 127.0.0.1.
        return allowed.contains { HTTPHeaders.equalsIgnoringCase($0, named.name) || (named.loopback && $0 == "127.0.0.1") }
    }

    /// `127.a.b.c` in dotted decimal: four parts, digits only.
    private static func isIPv4Loopback(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard name.count >= 7, name[0] == 49, name[1] == 50, name[2] == 55, name[3] == 46 else { return false }
        var parts = 0
        var inPart = false
        for byte in name {
            if byte == 46 {
                inPart = false
            } else if (48...57).contains(byte) {
                if !inPart { parts += 1 }
                inPart = true
            } else {
                return false
            }
        }
        return parts == 4
    }

    /// Routes a complete request and answers it, at once or through a suspended deferred handler.
    private func dispatch(_ context: RequestContext, on connection: OpaquePointer) -> MHD_Result {
        var request = HTTPRequest(
            method: context.method, path: context.path,
            query: Self.values(of: connection, kind: .GET_ARGUMENT_KIND),
            headers: HTTPHeaders(Self.values(of: connection, kind: .HEADER_KIND)),
            body: context.body)
        request.rawTarget = context.rawTarget
        context.morePipelined = Self.holdsRun(of: request, configuration)
        context.body = []
        // A state-changing request a browser sent from another origin (CSRF): refused before routing.
        if let protection = configuration.crossOriginProtection,
            case .refused(let why) = protection.judge(
                method: context.method, secFetchSite: request.headers["Sec-Fetch-Site"], origin: request.headers["Origin"],
                host: request.headers["Host"])
        {
            return queue(
                HTTPError(
                    403, kind: "cross-origin-request", title: "Cross-Origin Request Refused",
                    detail: why + " Pages on other origins may not change state; a client that is not a browser sends neither header."
                ).response(instance: context.path),
                for: context, on: connection)
        }
        if let cors = configuration.cors, let origin = request.headers["Origin"], cors.allows(origin) {
            context.corsOrigin = origin
            if context.method == .options, request.headers["Access-Control-Request-Method"] != nil {
                return preflight(context, origin: origin, policy: cors, on: connection)
            }
        }
        let routed = route(&request)
        context.routeTemplate = request.routeTemplate
        switch routed {
        case .outcome(.answer(let response)):
            return queue(response, for: context, on: connection)
        case .outcome(.later(let body)):
            return later(body, request: request, context: context, on: connection)
        case .outcome(.started(let start)):
            suspend(context, on: connection)
            start { response in
                self.waiting.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(context)) }
                context.deliver(response)
            }
            return .YES
        case .enclosing(let policy):
            return answerPipeline(request, policy: policy, context: context, on: connection)
        }
    }

    /// What routing made of a request.
    enum Routed {
        case outcome(Responder.Outcome)
        /// A pipeline of reads to answer (``EnclosedPipeline``).
        case enclosing(EnclosedPipeline.Policy)
    }

    /// Looks `request` up and runs what answers it as far as it goes without waiting: a route's
    /// handler (its error answered as a problem), or a routing failure's answer. Sets the request's
    /// route template and path parameters. The one routing path of requests on the wire and of those
    /// enclosed in a pipeline.
    func route(_ request: inout HTTPRequest) -> Routed {
        switch router.resolve(method: request.method, path: request.path) {
        case .notFound:
            if let respond = router.failureResponder(for: request.path) { return .outcome(.answer(respond(request, nil))) }
            return .outcome(.answer(HTTPError.notFound("There is no resource at \(request.path).").response(instance: request.path)))
        case .methodNotAllowed(let allow, let template):
            request.routeTemplate = template
            if let respond = router.failureResponder(for: request.path) { return .outcome(.answer(respond(request, allow))) }
            return .outcome(.answer(HTTPError.methodNotAllowed(request.method, allow: allow).response(instance: request.path)))
        case .matched(let responder, let parameters, let template):
            request.pathParameters = parameters
            request.routeTemplate = template
            switch responder {
            case .immediate(let handler):
                do {
                    return .outcome(.answer(try handler(request)))
                } catch {
                    return .outcome(.answer(errorResponse(error, request: request)))
                }
            case .deferred(let handler):
                let matched = request
                return .outcome(.later { try await handler(matched) })
            case .adaptive(let handler):
                do {
                    return .outcome(try handler(request))
                } catch {
                    return .outcome(.answer(errorResponse(error, request: request)))
                }
            case .enclosing(let policy):
                return .enclosing(policy)
            }
        }
    }

    /// Suspends the connection until ``RequestContext/deliver(_:)`` brings its answer (or shutdown
    /// answers it).
    func suspend(_ context: RequestContext, on connection: OpaquePointer) {
        sendHeldAnswers(on: connection)
        let handle = ConnectionHandle(raw: connection)
        context.phase = .waiting
        context.handoff.withLock { $0 = .waiting(handle) }
        waiting.withLock { $0[ObjectIdentifier(context)] = context }
        handle.suspend()
    }

    /// Suspends the connection and awaits `body` in a task; its answer (or its error's) resumes it.
    private func later(
        _ body: @escaping @Sendable () async throws -> HTTPResponse, request: HTTPRequest, context: RequestContext,
        on connection: OpaquePointer
    ) -> MHD_Result {
        suspend(context, on: connection)
        Task {
            let response: HTTPResponse
            do {
                response = try await body()
            } catch {
                response = self.errorResponse(error, request: request)
            }
            self.waiting.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(context)) }
            context.deliver(response)
        }
        return .YES
    }

    /// Answers a CORS preflight from an allowed origin: 204 with the path's methods, or 404.
    private func preflight(_ context: RequestContext, origin: String, policy: CORSPolicy, on connection: OpaquePointer) -> MHD_Result {
        let methods: [HTTPMethod]
        switch router.resolve(method: .options, path: context.path) {
        case .notFound:
            return queue(
                HTTPError.notFound("There is no resource at \(context.path).").response(instance: context.path),
                for: context, on: connection)
        case .methodNotAllowed(let allow, let template):
            context.routeTemplate = template
            methods = allow
        case .matched(_, _, let template):
            context.routeTemplate = template
            methods = [.options]
        }
        context.corsOrigin = nil  // the preflight's own headers say it all
        return queue(
            HTTPResponse(status: 204, headers: policy.preflightHeaders(origin: origin, methods: methods)),
            for: context, on: connection)
    }

    /// The answer for an error a handler threw: its problem, or a logged 500.
    func errorResponse(_ error: any Error, request: HTTPRequest) -> HTTPResponse {
        if let error = error as? HTTPError { return error.response(instance: request.path) }
        logger.error(
            "handler failed",
            metadata: [
                "method": "\(request.method)", "route": "\(request.routeTemplate ?? "-")", "error": "\(error)",
            ])
        return HTTPError.internalError("The server could not answer this request.").response(instance: request.path)
    }

    /// Hands a response to libmicrohttpd; a stream response is handed over to a stream loop.
    func queue(_ response: HTTPResponse, for context: RequestContext, on connection: OpaquePointer) -> MHD_Result {
        var response = response
        if let origin = context.corsOrigin, let cors = configuration.cors { response = cors.decorate(response, origin: origin) }
        // The body was read and handled: its slot frees now, before the client can read this answer and
        // send its next upload (at completion, after the answer went, a sequential sender raced it).
        if let principal = context.largeBodyPrincipal {
            context.largeBodyPrincipal = nil
            largeBodySlots.release(for: principal)
        }
        context.phase = .answered
        context.status = response.status
        if case .stream = response.body {
            sendHeldAnswers(on: connection)
        } else {
            holdAnswers(for: context, on: connection)
        }
        if case .shared(let shared) = response.body {
            // Built once with its own headers and the server's, owned by the SharedResponse: queued,
            // not destroyed here. One built for another server's headers is sent as a copy.
            if let prebuilt = shared.mhdResponse(adding: configuration.responseHeaders) {
                return MHD_queue_response(connection, UInt32(shared.status), prebuilt)
            }
            response = HTTPResponse(status: shared.status, headers: shared.headers, body: .bytes(shared.body))
        }
        for field in configuration.responseHeaders where response.headers[field.name] == nil {
            response.headers.set(field.name, field.value)
        }
        let mhdResponse: OpaquePointer?
        switch response.body {
        case .shared:
            preconditionFailure("a shared answer was queued or copied above")
        case .bytes(let bytes):
            mhdResponse = BorrowedBody.response(bytes)
        case .stream(let body):
            return handOver(response, body: body, for: context, on: connection)
        }
        guard let mhdResponse else {
            logger.error("libmicrohttpd could not create a response", metadata: ["status": "\(response.status)"])
            return .NO
        }
        for field in response.headers {
            _ = MHD_add_response_header(mhdResponse, field.name, field.value)
        }
        let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        MHD_destroy_response(mhdResponse)
        return result
    }

    /// Answers with a stream on a socket of its own: the server takes the connection's socket over
    /// (a duplicate of it), writes the head and then the stream itself on a ``StreamLoop``, and tells
    /// libmicrohttpd to let the connection go (`MHD_NO`; with `MHD_USE_TURBO` it closes only its
    /// descriptor, no `shutdown`), which frees its memory pool: a stream costs what its writer holds.
    private func handOver(_ response: HTTPResponse, body: StreamBody, for context: RequestContext, on connection: OpaquePointer) -> MHD_Result {
        let socket = CMicroHTTPD_connection_fd(connection)
        let loops = streamLoops.withLock { $0 }
        let id = nextStreamID.wrappingAdd(1, ordering: .relaxed).oldValue
        guard socket >= 0, !loops.isEmpty else {
            logger.error("a stream could not take its connection over", metadata: ["path": "\(context.path)"])
            return .NO
        }
        let own = dup(socket)
        guard own >= 0 else {
            logger.error("a stream could not take its connection over", metadata: ["path": "\(context.path)", "errno": "\(errno)"])
            return .NO
        }
        var on: Int32 = 1
        var off: Int32 = 0
        _ = setsockopt(own, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(own, Int32(IPPROTO_TCP), TCP_CORK, &off, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(own, F_SETFL, fcntl(own, F_GETFL) | O_NONBLOCK)
        _ = fcntl(own, F_SETFD, FD_CLOEXEC)
        var headers = response.headers
        headers.remove("Content-Length")
        // HTTP/1.1: chunked, and the connection goes on after a clean end; HTTP/1.0 knows no chunks:
        // the body ends when the connection closes.
        if context.http10 {
            headers.set("Connection", "close")
        } else {
            headers.set("Transfer-Encoding", "chunked")
        }
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        head += Self.dateHeader() + "\r\n"
        let writer = StreamWriter(
            id: id, socket: Socket(adopting: own), loop: loops[id % loops.count], head: Array(head.utf8), chunked: !context.http10,
            body: body)
        streams.withLock { $0[writer.id] = writer }
        observer?.streamCountChanged(by: 1)
        context.isStream = true
        body.open(writer)
        writer.start()
        if stopping.load(ordering: .relaxed) { writer.finish() }
        return .NO
    }

    /// A stream has ended on its loop: forget it, and give a cleanly ended stream's socket back to
    /// libmicrohttpd as a new connection (the client's keep-alive goes on). Returns whether it did.
    func streamEnded(_ writer: StreamWriter, clean: Bool) -> Bool {
        streams.withLock { _ = $0.removeValue(forKey: writer.id) }
        observer?.streamCountChanged(by: -1)
        guard clean, !stopping.load(ordering: .relaxed), let daemon = daemonHandle else { return false }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = try? writer.socket.withDescriptor { fd in
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
        }
        guard named == 0 else { return false }
        let handed = writer.socket.release()
        let added = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { MHD_add_connection(daemon.raw, handed, $0, length) }
        }
        if added != .YES { logger.debug("a finished stream's connection could not be kept", metadata: ["errno": "\(errno)"]) }
        return true  // libmicrohttpd owns the socket now, and closed it if it could not take it
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 206: "Partial Content"
        default: "Status"
        }
    }

    /// `Date: …` as libmicrohttpd writes it for its own answers.
    static func dateHeader() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// libmicrohttpd is done with a request: count it, log it, and close its stream.
    func completed(_ context: RequestContext, on connection: OpaquePointer?, termination: MHD_RequestTerminationCode) {
        inFlight.wrappingSubtract(1, ordering: .relaxed)
        // A request that ended unanswered (the client left mid-body) frees its slot here.
        if let principal = context.largeBodyPrincipal {
            context.largeBodyPrincipal = nil
            largeBodySlots.release(for: principal)
        }
        let watched = connection.flatMap(Self.watched)
        // The run's last answer went (or this one ended otherwise, 0 being
        // MHD_REQUEST_TERMINATED_COMPLETED_OK): what is held leaves with it.
        if !context.morePipelined || termination.rawValue != 0 { Self.sendHeldAnswers(of: watched) }
        // Kept alive for the next request (which has the idle timeout and then its head's deadline).
        if !context.isStream { watched?.enter(.idle) }
        let duration = ContinuousClock.now - context.start
        observer?.requestCompleted(
            method: context.method, route: context.routeTemplate, status: context.status,
            duration: duration, isStream: context.isStream)
        if logger.logLevel <= .debug {
            logger.debug(
                "request",
                metadata: [
                    "method": "\(context.method)", "path": "\(LogText.escaped(context.path))", "route": "\(context.routeTemplate ?? "-")",
                    "status": "\(context.status)", "ms": "\(Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000)",
                    "end": "\(termination.rawValue)",
                ])
        }
    }

    /// Collects the connection's values of one kind (headers, or decoded query arguments).
    ///
    /// Read with their lengths (`MHD_get_connection_values_n`), not as C strings: a query argument
    /// may decode to bytes that include NUL (`%00`), and a C-string read would silently cut it there,
    /// so a value over a limit could pass as a short one.
    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> [(name: String, value: String)] {
        final class Collector {
            var values: [(name: String, value: String)] = []
        }
        let collector = Collector()
        _ = MHD_get_connection_values_n(
            connection, kind,
            { cls, _, key, keySize, value, valueSize in
                let collector = Unmanaged<Collector>.fromOpaque(cls!).takeUnretainedValue()
                if let key {
                    let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
                    let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
                    collector.values.append((name, text))
                }
                return .YES
            }, Unmanaged.passUnretained(collector).toOpaque())
        return collector.values
    }
}
