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
    public var connectionMemoryBytes: Int
    /// Pending connections the kernel queues before accepting.
    public var listenBacklog: Int
    /// How often idle streams get their heartbeat bytes.
    public var streamHeartbeatInterval: Duration
    /// How long a graceful shutdown waits for in-flight requests before it stops anyway.
    public var shutdownGracePeriod: Duration
    /// The web origins that may call from a browser; nil: none (no CORS header is ever sent).
    public var cors: CORSPolicy?

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        threads: Int = ServerConfiguration.coreCount,
        connectionLimit: Int = 16_000,
        idleTimeoutSeconds: Int = 60,
        maxBodyBytes: Int = 1 << 20,
        connectionMemoryBytes: Int = 32 * 1024,
        listenBacklog: Int = 4096,
        streamHeartbeatInterval: Duration = .seconds(15),
        shutdownGracePeriod: Duration = .seconds(10),
        cors: CORSPolicy? = nil
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
