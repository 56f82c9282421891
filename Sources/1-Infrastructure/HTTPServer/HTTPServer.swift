import CMicroHTTPD
import Foundation
public import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP/1.1 server over libmicrohttpd: epoll worker threads, suspend/resume for deferred handlers
/// and streams, explicit limits, and a graceful shutdown that never leaves a connection suspended.
///
/// Lifecycle: ``start()`` binds and serves; ``shutdown()`` stops accepting, ends streams, waits for
/// in-flight requests (up to the grace period) and stops the daemon. Both are idempotent.
public final class HTTPServer: Sendable {
    /// Why the server could not start.
    public enum StartError: Error, CustomStringConvertible {
        case invalidHost(String)
        case daemonFailed(host: String, port: Int, reason: String)

        public var description: String {
            switch self {
            case .invalidHost(let host): "'\(host)' is not an IP address (use e.g. 127.0.0.1, 0.0.0.0 or ::1)"
            case .daemonFailed(let host, let port, let reason): "cannot listen on \(host):\(port): \(reason)"
            }
        }
    }

    public let configuration: ServerConfiguration
    let router: Router
    let logger: Logger
    let observer: (any HTTPServerObserver)?

    private let daemon = Mutex<DaemonHandle?>(nil)
    private let boundPort = Atomic<Int>(0)
    let stopping = Atomic<Bool>(false)
    let inFlight = Atomic<Int>(0)
    /// Large-body slots held now, in all and by each sender (see ``ServerConfiguration/largeBodies``).
    let largeBodySlots = LargeBodySlots()
    let nextStreamID = Atomic<Int>(1)
    let streams = Mutex<[Int: StreamWriter]>([:])
    /// The threads that send the streams' bytes (one per worker thread), made at start.
    let streamLoops = Mutex<[StreamLoop]>([])
    let waiting = Mutex<[ObjectIdentifier: RequestContext]>([:])
    /// Set to stop the heartbeat thread.
    private let heartbeatsStopped = Atomic<Bool>(false)
    /// Every open libmicrohttpd connection, for the head and body deadlines.
    let watch: ConnectionWatch

    /// Creates a server; nothing is bound until ``start()``.
    /// - Parameters:
    ///   - configuration: address, threads and limits.
    ///   - router: the route table, fixed for the server's life.
    ///   - logger: where the server logs (one debug line per request, problems at warning/error).
    ///   - observer: receives counts and timings for metrics.
    public init(configuration: ServerConfiguration, router: Router, logger: Logger, observer: (any HTTPServerObserver)? = nil) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.observer = observer
        self.watch = ConnectionWatch(deadlines: configuration.deadlines)
    }

    /// Connections ended since start for missing their head or body deadline.
    public var connectionsPastDeadline: Int { watch.endedCount }

    /// The port the server listens on (the chosen one when configured with 0); 0 before start.
    public var port: Int { boundPort.load(ordering: .acquiring) }

    /// The running daemon, if any (for giving a finished stream's socket back).
    var daemonHandle: DaemonHandle? { daemon.withLock { $0 } }

    /// Requests begun and not yet completed (a stream completes when its socket is taken over).
    public var inFlightRequests: Int { inFlight.load(ordering: .relaxed) }

    /// Open streaming responses.
    public var openStreams: Int { streams.withLock { $0.count } }

    /// Whether the stream loops are still writing what was last written to streams.
    public var streamsBusy: Bool { streamLoops.withLock { $0 }.contains { $0.busy.load(ordering: .acquiring) } }

    /// Bytes each open stream holds for its client (for tests and diagnostics).
    public var streamBufferedBytes: [Int] { streams.withLock { Array($0.values) }.map(\.bufferedByteCount) }

    /// Binds the address and starts the worker threads.
    /// - Throws: ``StartError`` when the address is not an IP literal or cannot be bound.
    public func start() throws {
        try daemon.withLock { current in
            guard current == nil else { return }
            let loops = (0..<max(1, configuration.threads)).map { index in
                StreamLoop(name: "bd-streams-\(index)") { [weak self] writer, clean in
                    self?.streamEnded(writer, clean: clean) ?? false
                }
            }
            streamLoops.withLock { $0 = loops }
            for loop in loops { loop.start() }
            let handle = try startDaemon()
            current = handle
            boundPort.store(Int(CMicroHTTPD_bound_port(handle.raw)), ordering: .releasing)
        }
        startHeartbeats()
        watch.start { [logger] count in
            logger.info("ended connections past their request deadline", metadata: ["count": "\(count)"])
        }
        logger.info(
            "http server listening",
            metadata: [
                "address": "\(configuration.host):\(port)", "threads": "\(configuration.threads)",
                "connectionLimit": "\(configuration.connectionLimit)", "idleTimeout": "\(configuration.idleTimeoutSeconds)s",
                "maxBodyBytes": "\(configuration.maxBodyBytes)", "perIPConnectionLimit": "\(configuration.perIPConnectionLimit)",
                "requestHeadTimeout": "\(configuration.requestHeadTimeoutSeconds)s",
            ])
    }

    /// Stops gracefully: no new connections, streams ended, in-flight requests answered (those still
    /// waiting after the grace period get 503), then the daemon is stopped. Safe to call twice.
    public func shutdown() async {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        guard let handle = daemon.withLock({ $0 }) else { return }
        heartbeatsStopped.store(true, ordering: .relaxed)
        // New connections are closed as they come from here on (the accept policy reads `stopping`).
        // Not `MHD_quiesce_daemon`: with a thread pool, libmicrohttpd 0.9.75 removes the listening
        // socket from each worker's epoll set from the calling thread while the worker may remove it
        // too, and aborts when its own removal finds it gone (`daemon.c:5531`, seen in CI's tests).
        let openStreams = streams.withLock { Array($0.values) }
        logger.info(
            "http server stopping",
            metadata: [
                "inFlight": "\(inFlightRequests)", "streams": "\(openStreams.count)",
            ])
        for stream in openStreams { stream.finish() }

        let deadline = ContinuousClock.now + configuration.shutdownGracePeriod
        // Requests finish, and streams send what they hold and their last chunk.
        while (inFlightRequests > 0 || self.openStreams > 0) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Whatever is still suspended must be resumed before the daemon stops (or it aborts).
        let stuck = waiting.withLock { Array($0.values) }
        for context in stuck {
            context.deliver(HTTPError.unavailable("The server is shutting down.").response(instance: context.path))
        }
        for stream in streams.withLock({ Array($0.values) }) { stream.abort() }
        let settle = ContinuousClock.now + .seconds(1)
        while (waiting.withLock({ !$0.isEmpty }) || inFlightRequests > 0) && ContinuousClock.now < settle {
            try? await Task.sleep(for: .milliseconds(10))
        }
        daemon.withLock { current in
            guard let handle = current else { return }
            // It closes its listening socket itself.
            MHD_stop_daemon(handle.raw)
            current = nil
            Unmanaged.passUnretained(self).release()
        }
        for loop in streamLoops.withLock({ $0 }) { loop.stop() }
        watch.stop()
        logger.info("http server stopped")
    }

    // MARK: Start-up

    private func startDaemon() throws -> DaemonHandle {
        let isIPv6 = configuration.host.contains(":")
        var storage = sockaddr_storage()
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        let port = UInt16(clamping: configuration.port)
        let parsed: Int32 = withUnsafeMutableBytes(of: &storage) { raw in
            if isIPv6 {
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                address.pointee.sin6_family = sa_family_t(AF_INET6)
                address.pointee.sin6_port = port.bigEndian
                return inet_pton(AF_INET6, host, &address.pointee.sin6_addr)
            } else {
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                address.pointee.sin_family = sa_family_t(AF_INET)
                address.pointee.sin_port = port.bigEndian
                return inet_pton(AF_INET, host, &address.pointee.sin_addr)
            }
        }
        guard parsed == 1 else { throw StartError.invalidHost(configuration.host) }

        // TURBO: a connection libmicrohttpd closes gets no shutdown(), so a stream's socket, taken
        // over (duplicated) when libmicrohttpd lets its connection go, stays open for the stream.
        var flags =
            MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ERROR_LOG.rawValue
            | MHD_USE_TURBO.rawValue
        if isIPv6 { flags |= MHD_USE_IPv6.rawValue }

        let access: MHD_AccessHandlerCallback = { cls, connection, url, method, version, uploadData, uploadDataSize, conCls in
            let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
            return server.handle(
                connection: connection!, url: url!, method: method!, version: version,
                uploadData: uploadData, uploadDataSize: uploadDataSize!, context: conCls!)
        }
        // Once stopping, a new connection is closed at once (see ``shutdown()``).
        let acceptPolicy: MHD_AcceptPolicyCallback = { cls, _, _ in
            guard let cls else { return .NO }
            return Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().stopping.load(ordering: .acquiring) ? .NO : .YES
        }
        let completed: MHD_RequestCompletedCallback = { cls, connection, conCls, termination in
            guard let conCls, let raw = conCls.pointee else { return }
            conCls.pointee = nil
            let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
            let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
            server.completed(context, on: connection, termination: termination)
        }
        // Each connection is watched from its start to its close (see ConnectionWatch), its record
        // kept in the socket context.
        let connectionNotice: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
            let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
            if code == .CONNECTION_NOTIFY_STARTED {
                let watched = WatchedConnection(fd: connection.map { CMicroHTTPD_connection_fd($0) } ?? -1, now: WatchedConnection.now())
                if watched.fd >= 0 {
                    server.watch.opened(watched)
                    socketContext?.pointee = Unmanaged.passRetained(watched).toOpaque()
                }
                server.observer?.connectionCountChanged(by: 1)
            } else {
                if let raw = socketContext?.pointee {
                    socketContext?.pointee = nil
                    let watched = Unmanaged<WatchedConnection>.fromOpaque(raw).takeRetainedValue()
                    server.watch.closed(watched)
                }
                server.observer?.connectionCountChanged(by: -1)
            }
        }
        // Called once a request line is read (before its headers): the head's deadline starts.
        let uriLog: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = { _, uri, connection in
            if let connection, let raw = CMicroHTTPD_socket_context(connection) {
                let watched = Unmanaged<WatchedConnection>.fromOpaque(raw).takeUnretainedValue()
                watched.requestTarget = uri.map { String(cString: $0) }
                watched.enter(.head)
            }
            return nil  // *con_cls stays NULL: the access handler's first call makes the request context
        }
        let log: MHD_LogCallback = { cls, format, arguments in
            let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
            var buffer = [CChar](repeating: 0, count: 512)
            _ = vsnprintf(&buffer, buffer.count, format, arguments!)
            let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // A stream's hand-over ends its libmicrohttpd connection this way on purpose.
            if message.hasPrefix("Application reported internal error") { return }
            server.logger.info("libmicrohttpd: \(message.trimmingTrailingNewlines())")
        }

        let me = Unmanaged.passRetained(self).toOpaque()
        let result: OpaquePointer? = withUnsafeMutablePointer(to: &storage) { address in
            var options: [MHD_OptionItem] = [
                MHD_OptionItem(option: .EXTERNAL_LOGGER, value: unsafeBitCast(log, to: Int.self), ptr_value: me),
                MHD_OptionItem(option: .SOCK_ADDR, value: 0, ptr_value: UnsafeMutableRawPointer(address)),
                MHD_OptionItem(option: .THREAD_POOL_SIZE, value: max(1, configuration.threads), ptr_value: nil),
                MHD_OptionItem(option: .CONNECTION_LIMIT, value: configuration.connectionLimit, ptr_value: nil),
                MHD_OptionItem(option: .CONNECTION_TIMEOUT, value: configuration.idleTimeoutSeconds, ptr_value: nil),
                MHD_OptionItem(option: .CONNECTION_MEMORY_LIMIT, value: configuration.connectionMemoryBytes, ptr_value: nil),
                MHD_OptionItem(option: .LISTEN_BACKLOG_SIZE, value: configuration.listenBacklog, ptr_value: nil),
                MHD_OptionItem(option: .PER_IP_CONNECTION_LIMIT, value: max(0, configuration.perIPConnectionLimit), ptr_value: nil),
                MHD_OptionItem(option: .URI_LOG_CALLBACK, value: unsafeBitCast(uriLog, to: Int.self), ptr_value: nil),
                MHD_OptionItem(option: .NOTIFY_COMPLETED, value: unsafeBitCast(completed, to: Int.self), ptr_value: me),
                MHD_OptionItem(option: .NOTIFY_CONNECTION, value: unsafeBitCast(connectionNotice, to: Int.self), ptr_value: me),
                MHD_OptionItem(option: .END, value: 0, ptr_value: nil),
            ]
            return CMicroHTTPD_start_daemon(flags, port, acceptPolicy, me, access, me, &options)
        }
        guard let result else {
            let reason = String(cString: strerror(errno))
            Unmanaged<HTTPServer>.fromOpaque(me).release()
            throw StartError.daemonFailed(host: configuration.host, port: configuration.port, reason: reason)
        }
        return DaemonHandle(raw: result)
    }

    /// Heartbeats run on a thread of their own, not on Swift's cooperative pool: they are how a
    /// suspended stream notices a client that left, so they must go on however busy the pool is.
    private func startHeartbeats() {
        let interval = configuration.streamHeartbeatInterval
        let tick = max(interval / 4, .milliseconds(50))
        let seconds = Double(tick.components.seconds) + Double(tick.components.attoseconds) / 1e18
        let thread = Thread { [weak self] in
            Thread.current.name = "bd-heartbeats"
            while true {
                Thread.sleep(forTimeInterval: seconds)
                guard let self, !self.heartbeatsStopped.load(ordering: .relaxed) else { return }
                let now = ContinuousClock.now
                for stream in self.streams.withLock({ Array($0.values) }) {
                    stream.heartbeatIfIdle(interval: interval, now: now)
                }
            }
        }
        thread.start()
    }
}

/// The daemon pointer.
///
/// `@unchecked Sendable`: it is read and cleared only under the server's `daemon` mutex, and the
/// libmicrohttpd calls made with it (quiesce, stop, info) are documented as callable from any
/// application thread.
struct DaemonHandle: @unchecked Sendable {
    let raw: OpaquePointer
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var result = self
        while result.last == "\n" || result.last == "\r" { result.removeLast() }
        return result
    }
}

/// Takes a listening socket out of the listen state (pending and new connections are refused) and
/// keeps its descriptor open.
