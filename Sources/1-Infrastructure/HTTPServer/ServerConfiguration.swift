/// How the HTTP server binds and what it allows.
public struct ServerConfiguration: Sendable {
    /// IP address to bind (`127.0.0.1`, `0.0.0.0`, `::1`, `::`); `localhost` means `127.0.0.1`.
    public var host: String
    /// TCP port; 0 picks a free one (see ``HTTPServer/port``).
    public var port: Int
    /// Worker threads, each with its own epoll set (default: the number of cores).
    public var threads: Int
    /// Most connections libmicrohttpd holds at once (its own default is only 1,020). Streams leave
    /// libmicrohttpd once answered (see `StreamLoop`): their owner bounds them.
    public var connectionLimit: Int
    /// Seconds an idle or stalled connection is kept; suspended streams are exempt.
    public var idleTimeoutSeconds: Int
    /// Largest request body accepted; larger ones get 413.
    public var maxBodyBytes: Int
    /// Memory per connection for the request head and buffers; a head that does not fit gets 414/431.
    /// 16 KiB (a head of up to about 15 KiB, Node.js's limit too): libmicrohttpd zeroes the whole pool
    /// for every request on a kept connection, 3% of a server's CPU per `GET` at its 32 KiB default.
    public var connectionMemoryBytes: Int
    /// Pending connections the kernel queues before accepting.
    public var listenBacklog: Int
    /// How often idle streams get their heartbeat bytes.
    public var streamHeartbeatInterval: Duration
    /// How long a graceful shutdown waits for in-flight requests before it stops anyway.
    public var shutdownGracePeriod: Duration
    /// The web origins that may call from a browser; nil: none (no CORS header is ever sent).
    public var cors: CORSPolicy?
    /// Most connections one client address holds in libmicrohttpd at once (0: no limit). Behind a
    /// reverse proxy every client has the proxy's address: set 0 there and limit at the proxy.
    /// Below ``connectionLimit``, so that one address can never hold every connection.
    public var perIPConnectionLimit: Int

    /// The per-address limit a server of `connectionLimit` connections gets unless told: a quarter
    /// of them, at most 1,024.
    public static func defaultPerIPConnectionLimit(connectionLimit: Int) -> Int { max(1, min(1_024, connectionLimit / 4)) }
    /// Seconds a request head may take from its request line to its last header (a slow client that
    /// sends a byte now and then is ended at this deadline, not kept while it is merely not idle).
    public var requestHeadTimeoutSeconds: Int
    /// Bytes per second a request body must keep up after the head timeout's grace (0: only the
    /// idle timeout bounds a body).
    public var minimumBodyRate: Int
    /// The host names (without port) a request's `Host` may name; nil: any. A request naming another
    /// host gets 421, so a page on a rebound DNS name cannot reach a server bound to loopback.
    public var allowedHosts: [String]?
    /// Refuses state-changing requests a browser sent from another origin (403); nil: no check.
    public var crossOriginProtection: CrossOriginProtection?
    /// The requests whose `X-Browserd-Pipelined: more` is honoured (their answers held for the run,
    /// ``HTTPServer/pipelinedHeader``): another instance's relay; nil: nobody's. Asked only of a request
    /// that carries the hint.
    public var pipelineHintFrom: (@Sendable (HTTPRequest) -> Bool)?
    /// Paths whose POST bodies may be larger than ``maxBodyBytes`` (e.g. an upload of a whole
    /// document), and how many such bodies are held at once; nil: none.
    public var largeBodies: LargeBodies?
    /// Headers every answer carries unless it has them already (e.g. which instance answered; an
    /// answer relayed from another server keeps its own).
    public var responseHeaders: HTTPHeaders = [:]

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        threads: Int = ServerConfiguration.coreCount,
        connectionLimit: Int = 16_000,
        idleTimeoutSeconds: Int = 60,
        maxBodyBytes: Int = 1 << 20,
        connectionMemoryBytes: Int = 16 * 1024,
        listenBacklog: Int = 4096,
        streamHeartbeatInterval: Duration = .seconds(15),
        shutdownGracePeriod: Duration = .seconds(10),
        cors: CORSPolicy? = nil,
        perIPConnectionLimit: Int = 1_024,
        requestHeadTimeoutSeconds: Int = 10,
        minimumBodyRate: Int = 1_024,
        allowedHosts: [String]? = nil,
        crossOriginProtection: CrossOriginProtection? = nil
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.connectionLimit = connectionLimit
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxBodyBytes = maxBodyBytes
        self.connectionMemoryBytes = connectionMemoryBytes
        self.listenBacklog = listenBacklog
        self.streamHeartbeatInterval = streamHeartbeatInterval
        self.shutdownGracePeriod = shutdownGracePeriod
        self.cors = cors
        self.perIPConnectionLimit = perIPConnectionLimit
        self.requestHeadTimeoutSeconds = requestHeadTimeoutSeconds
        self.minimumBodyRate = minimumBodyRate
        self.allowedHosts = allowedHosts
        self.crossOriginProtection = crossOriginProtection
    }

    /// The deadlines a request's head and body must keep (see ``RequestDeadlines``).
    public var deadlines: RequestDeadlines {
        RequestDeadlines(
            idleTimeout: .seconds(idleTimeoutSeconds), headTimeout: .seconds(requestHeadTimeoutSeconds),
            minimumBodyRate: minimumBodyRate)
    }

    /// The host names a server bound to `host` answers for when no list is given: a loopback bind
    /// answers only loopback names (DNS rebinding); any other bind, any name.
    public static func loopbackHosts(for host: String) -> [String]? {
        guard host == "localhost" || host == "::1" || host.hasPrefix("127.") else { return nil }
        var names = ["localhost", "127.0.0.1", "::1", "[::1]"]
        if !names.contains(host) { names.append(host) }
        return names
    }

    /// The number of cores this process may run on.
    public static var coreCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
