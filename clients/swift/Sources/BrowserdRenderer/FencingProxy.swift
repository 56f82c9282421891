import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// The fence every request of Chromium goes through: a forward proxy on loopback that Chromium is
/// started with (`--proxy-server`, and `--proxy-bypass-list=<-loopback>` so that loopback goes through
/// it too). It reads each request's head (``ProxyRequest``), resolves the host once, asks the
/// ``NetworkPolicy`` and connects to the very address it judged, then passes bytes both ways; a refused
/// tunnel gets 403 and a refused request a closed connection, so the page sees a network error. Every
/// target kind goes through it alike — pages, iframes in any process, workers of every kind,
/// WebSockets (Chromium tunnels them with CONNECT) — since it is Chromium's network service, not a
/// page, that speaks to it.
///
/// The decisions are values (``ProxyRequest``, ``NetworkPolicy``); this type only carries them out.
public final class FencingProxy: Sendable {
    /// The port on 127.0.0.1 it listens on.
    public let port: Int
    private let channel: any Channel
    /// Its own thread, unless it was given a loop.
    private let group: MultiThreadedEventLoopGroup?
    private let resolver: NIOThreadPool
    private let state: ProxyState

    /// Its limits: connections at once (one page's requests among them), how long a request's head may
    /// take, how long a connection to a destination may take.
    public struct Limits: Sendable {
        public var connections = 1_024
        public var headTimeout: TimeAmount = .seconds(30)
        public var connectTimeout: TimeAmount = .seconds(10)
        /// From a request's head to its destination answering (every address tried): past it, refused.
        public var decideTimeout: TimeAmount = .seconds(20)
        /// Name lookups at once (`getaddrinfo` blocks a thread each; a name whose DNS never answers
        /// must not hold them all), and how long one is waited for.
        public var lookups = 64
        public var lookupTimeout: TimeAmount = .seconds(5)
        /// Bytes after a head read while its destination is decided; past it, reading pauses.
        public var pendingBytes = 64 * 1024
        public init() {}
    }

    /// Starts it on 127.0.0.1 (a port of the kernel's choosing), its connections on `loop`, or on a
    /// thread of its own (nil). On the loop that reads Chromium's pipe it cost the same CPU and
    /// lengthened the commits' tail (p99 8.1–10.2 ms against 4.2–11.0 ms on its own thread, alternated:
    /// docs/benchmarks.md, run 11): a page's load and its commit then wait on one thread.
    public static func start(
        policy: NetworkPolicy, limits: Limits = Limits(), logger: Logger, loop: (any EventLoop)? = nil
    ) async throws -> FencingProxy {
        let group = loop == nil ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        let loop = loop ?? group!.next()
        // getaddrinfo blocks: it runs on threads of its own, never on the event loop.
        let resolver = NIOThreadPool(numberOfThreads: 8)
        resolver.start()
        let state = ProxyState(policy: policy, limits: limits, logger: logger)
        do {
            let channel = try await ServerBootstrap(group: loop)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    state.track(channel)
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ProxyConnectionHandler(state: state, resolver: resolver))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            let port = channel.localAddress?.port ?? 0
            state.ownPort.withLockedValue { $0 = port }
            return FencingProxy(port: port, channel: channel, group: group, resolver: resolver, state: state)
        } catch {
            try? await group?.shutdownGracefully()
            try? await resolver.shutdownGracefully()
            throw error
        }
    }

    private init(port: Int, channel: any Channel, group: MultiThreadedEventLoopGroup?, resolver: NIOThreadPool, state: ProxyState) {
        self.port = port
        self.channel = channel
        self.group = group
        self.resolver = resolver
        self.state = state
    }

    /// How many requests it refused since it started (for tests and the status line).
    public var refusals: Int { state.refusals }

    /// Stops listening and closes every connection (a page's closes its destination's too: ``GlueHandler``;
    /// one still connecting closes its destination as it connects).
    public func stop() async {
        try? await channel.close()
        for connection in state.connections() { try? await connection.close() }
        try? await group?.shutdownGracefully()
        try? await resolver.shutdownGracefully()
    }
}

/// What the proxy's connections share: the policy, the count of open connections, and which
/// refusals were logged (each destination once, at most ``loggedLimit`` of them).
final class ProxyState: Sendable {
    let policy: NetworkPolicy
    let limits: FencingProxy.Limits
    let logger: Logger
    private struct Counts {
        var open = 0
        var refusals = 0
        var logged: Set<String> = []
        var local: (addresses: Set<IPAddress>, read: ContinuousClock.Instant)?
    }
    private let counts = NIOLockedValueBox(Counts())
    static let loggedLimit = 256
    /// The fence's own port (never a destination).
    let ownPort = NIOLockedValueBox<Int?>(nil)
    private let lookupsUnderWay = NIOLockedValueBox(0)
    /// Chromium's open connections to it, closed when it stops (on a loop it was given, no group of its own ends them).
    private let open = NIOLockedValueBox([ObjectIdentifier: any Channel]())

    func track(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        open.withLockedValue { $0[key] = channel }
        channel.closeFuture.whenComplete { [open] _ in _ = open.withLockedValue { $0.removeValue(forKey: key) } }
    }

    func connections() -> [any Channel] { open.withLockedValue { Array($0.values) } }

    /// A lookup may start: false when ``FencingProxy/Limits/lookups`` are under way already.
    func lookupStarts() -> Bool {
        lookupsUnderWay.withLockedValue {
            guard $0 < limits.lookups else { return false }
            $0 += 1
            return true
        }
    }

    func lookupEnded() { lookupsUnderWay.withLockedValue { $0 -= 1 } }

    init(policy: NetworkPolicy, limits: FencingProxy.Limits, logger: Logger) {
        self.policy = policy
        self.limits = limits
        self.logger = logger
    }

    var refusals: Int { counts.withLockedValue { $0.refusals } }

    /// This machine's interface addresses (`getifaddrs`), read again when a second old.
    func localAddresses() -> Set<IPAddress> {
        if let cached = counts.withLockedValue({ $0.local }), ContinuousClock.now - cached.read < .seconds(1) { return cached.addresses }
        let addresses = Self.interfaceAddresses()
        counts.withLockedValue { $0.local = (addresses, .now) }
        return addresses
    }

    static func interfaceAddresses() -> Set<IPAddress> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(first) }
        var addresses = Set<IPAddress>()
        var next: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = next {
            if let address = entry.pointee.ifa_addr, let ip = IPAddress(socketAddress: address) { addresses.insert(ip) }
            next = entry.pointee.ifa_next
        }
        return addresses
    }

    /// A connection opens: false when the proxy holds its limit already (the connection is closed).
    func opened() -> Bool {
        counts.withLockedValue {
            guard $0.open < limits.connections else { return false }
            $0.open += 1
            return true
        }
    }

    func closed() { counts.withLockedValue { $0.open -= 1 } }

    func refused(_ destination: String, reason: String) {
        let first = counts.withLockedValue {
            $0.refusals += 1
            guard $0.logged.count < Self.loggedLimit else { return false }
            return $0.logged.insert(destination).inserted
        }
        if first { logger.notice("a page's request to \(destination) refused: \(reason) (not an --allow-origin or --allow-network)") }
    }
}

/// One connection from Chromium: its request's head, the decision, then bytes both ways.
private final class ProxyConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Phase {
        case head([UInt8])
        /// Resolving or connecting; bytes after the head wait here (reading pauses past the limit).
        case deciding(pending: ByteBuffer)
        case relaying
        case done
    }

    private let state: ProxyState
    private let resolver: NIOThreadPool
    private var phase = Phase.head([])
    private var counted = false
    /// The head's deadline, then the decision's: cancelled once passed (a timer left to fire would
    /// wake the loop for nothing, seconds after its connection ended).
    private var deadline: Scheduled<Void>?

    init(state: ProxyState, resolver: NIOThreadPool) {
        self.state = state
        self.resolver = resolver
    }

    func channelActive(context: ChannelHandlerContext) {
        guard state.opened() else {
            phase = .done
            context.close(promise: nil)
            return
        }
        counted = true
        let loop = context.eventLoop.assumeIsolated()
        deadline = loop.scheduleTask(in: state.limits.headTimeout) { [weak self] in
            guard let self, case .head = self.phase else { return }
            self.phase = .done
            context.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if counted {
            counted = false
            state.closed()
        }
        phase = .done
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Relaying: the glue after this handler takes the bytes (this one stays, to count the close).
        if case .relaying = phase { return context.fireChannelRead(data) }
        var buffer = unwrapInboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        switch phase {
        case .head(let before):
            let head = before + bytes
            do {
                let (request, length) = try ProxyRequest.parse(head)
                phase = .deciding(pending: ByteBuffer(bytes: head[length...]))
                let loop = context.eventLoop.assumeIsolated()
                deadline?.cancel()
                deadline = loop.scheduleTask(in: state.limits.decideTimeout) { [weak self] in
                    guard let self, case .deciding = self.phase else { return }
                    self.phase = .done
                    context.close(promise: nil)
                }
                decide(request, context: context)
            } catch .incomplete {
                phase = .head(head)
            } catch {
                phase = .done
                respond("400 Bad Request", context: context)
            }
        case .deciding(var pending):
            pending.writeBytes(bytes)
            if pending.readableBytes > state.limits.pendingBytes {
                context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
            }
            phase = .deciding(pending: pending)
        case .relaying, .done:
            break
        }
    }

    private func decide(_ request: ProxyRequest, context: ChannelHandlerContext) {
        let host = request.host
        let loop = context.eventLoop
        let resolved: EventLoopFuture<[IPAddress]>
        if let literal = IPAddress(host) {
            resolved = loop.makeSucceededFuture([literal])
        } else if state.lookupStarts() {
            let state = state
            let lookup = resolver.runIfActive(eventLoop: loop) { Self.resolve(host) }
            lookup.whenComplete { _ in state.lookupEnded() }
            // Waited for a bounded time: a name whose DNS never answers is refused (its thread stays
            // blocked until getaddrinfo gives up, counted until then).
            let timed = loop.makePromise(of: [IPAddress].self)
            lookup.cascade(to: timed)
            let timer = loop.assumeIsolated().scheduleTask(in: state.limits.lookupTimeout) { timed.succeed([]) }
            timed.futureResult.whenComplete { _ in timer.cancel() }
            resolved = timed.futureResult
        } else {
            resolved = loop.makeSucceededFuture([])
        }
        resolved.assumeIsolated().whenComplete { [self] result in
            guard case .deciding = phase else { return }
            let addresses = (try? result.get()) ?? []
            switch state.policy.decide(
                host: host, port: request.port, addresses: addresses, localAddresses: state.localAddresses(),
                ownPort: state.ownPort.withLockedValue { $0 })
            {
            case .refuse(let reason):
                state.refused("\(NetworkPolicy.normalised(host: host)):\(request.port)", reason: reason)
                phase = .done
                if case .tunnel = request.kind {
                    respond("403 Forbidden", context: context)
                } else {
                    // No answer at all: the page sees a network error (not a page of ours).
                    context.close(promise: nil)
                }
            case .connect(let candidates):
                connect(to: candidates, request: request, context: context)
            }
        }
    }

    /// Connects to the first candidate that answers (a name's IPv6 and IPv4 addresses, say).
    private func connect(to candidates: [IPAddress], request: ProxyRequest, context: ChannelHandlerContext) {
        guard let address = candidates.first, let socketAddress = try? SocketAddress(ipAddress: address.plainText, port: request.port) else {
            phase = .done
            if case .tunnel = request.kind {
                respond("502 Bad Gateway", context: context)
            } else {
                context.close(promise: nil)
            }
            return
        }
        let client = context.channel
        ClientBootstrap(group: context.eventLoop)
            .connectTimeout(state.limits.connectTimeout)
            // (TCP_NODELAY is ClientBootstrap's default. `.socketOption(.tcp_nodelay)` would set option 1
            // at SOL_SOCKET — SO_DEBUG, which a container refuses: every connect failed there.)
            .connect(to: socketAddress)
            .assumeIsolated()
            .whenComplete { [self] result in
                guard case .deciding(let pending) = phase, client.isActive else {
                    if case .success(let upstream) = result { upstream.close(promise: nil) }
                    return
                }
                switch result {
                case .failure(let error):
                    state.logger.debug("the fence could not connect to \(address) port \(request.port): \(error)")
                    connect(to: Array(candidates.dropFirst()), request: request, context: context)
                case .success(let upstream):
                    phase = .relaying
                    deadline?.cancel()
                    deadline = nil
                    let (ours, theirs) = GlueHandler.matchedPair()
                    do {
                        try upstream.pipeline.syncOperations.addHandler(theirs)
                        switch request.kind {
                        case .tunnel:
                            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 Connection Established\r\n\r\n")), promise: nil)
                        case .forward(let head):
                            upstream.write(ByteBuffer(bytes: head), promise: nil)
                        }
                        if pending.readableBytes > 0 { upstream.write(pending, promise: nil) }
                        upstream.flush()
                        try context.pipeline.syncOperations.addHandler(ours)
                        context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
                    } catch {
                        phase = .done
                        upstream.close(promise: nil)
                        context.close(promise: nil)
                    }
                }
            }
    }

    private func respond(_ status: String, context: ChannelHandlerContext) {
        let answer = "HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// The addresses `host` resolves to, in the resolver's order (the system's: `/etc/hosts`, DNS).
    static func resolve(_ host: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            if let address = info.pointee.ai_addr, let ip = IPAddress(socketAddress: address) { addresses.append(ip) }
            next = info.pointee.ai_next
        }
        var seen = Set<IPAddress>()
        return addresses.filter { seen.insert($0).inserted }
    }
}

/// Two channels glued together: what one reads, the other writes, with back-pressure (a side reads
/// only while its partner can write) and the close of one closing the other. Both live on one event loop.
private final class GlueHandler: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var readWaiting = false

    static func matchedPair() -> (GlueHandler, GlueHandler) {
        let (first, second) = (GlueHandler(), GlueHandler())
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Bytes may be waiting already (a tunnel's first bytes): reading starts now.
        if context.channel.isActive { context.read() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { partner?.context?.write(data, promise: nil) }

    func channelReadComplete(context: ChannelHandlerContext) { partner?.context?.flush() }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
        partner?.context?.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let partner, partner.readWaiting {
            partner.readWaiting = false
            partner.context?.read()
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.context?.channel.isWritable ?? false {
            context.read()
        } else {
            readWaiting = true
        }
    }
}

extension IPAddress {
    /// An IPv4 or IPv6 socket address's IP (nil for another family).
    init?(socketAddress address: UnsafeMutablePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
            self = .v4(UInt32(bigEndian: v4))
        case AF_INET6:
            var v6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
        default:
            return nil
        }
    }

    /// The address without brackets (as `SocketAddress` takes it).
    var plainText: String {
        let text = description
        return text.hasPrefix("[") ? String(text.dropFirst().dropLast()) : text
    }
}
