public import BrowserAPI
public import BrowserModel
public import BrowserServices
import Foundation
public import HTTPServer
public import Logging
public import ProcessMemory

#if PostgreSQL
    public import BrowserPostgres
    public import ClusterCore
#endif

/// Everything browserd is configured with, after command line, environment and defaults are merged.
public struct BrowserdConfiguration: Sendable {
    /// The HTTP server's address, threads and limits.
    public var server: ServerConfiguration
    /// Where the SQLite database lives (the default store).
    public var dataDirectory: String
    #if PostgreSQL
        /// PostgreSQL instead of SQLite (`--database-url`): the shared store of several instances.
        public var database: DatabaseURL?
        /// Every duration of the cluster, from ``leaseSeconds``.
        public var clusterTiming: ClusterTiming { ClusterTiming(leaseSeconds: leaseSeconds) }
        /// How requests reach the instance that holds their profile (the relay; async-http-client for
        /// the benchmark that compares them, `BROWSERD_FORWARD_THROUGH`).
        public var forwardingPath: ForwardingPath = .relay

        /// Sets ``forwardingPath`` by its name (`relay`, `async-http-client`); false when it is unknown.
        public mutating func forward(through name: String) -> Bool {
            guard let path = ForwardingPath(rawValue: name) else { return false }
            forwardingPath = path
            return true
        }
    #endif
    /// Whether the state lives in PostgreSQL (always false in a build without the `PostgreSQL` trait).
    public var usesDatabase: Bool {
        #if PostgreSQL
            database != nil
        #else
            false
        #endif
    }
    /// Where other instances reach this one (`--advertise-url`); nil: `http://HOST:PORT` of the server.
    public var advertiseURL: String?
    /// How long a profile's lease lasts without renewal (`--lease-seconds`); an instance that dies
    /// leaves its profiles to others after this long.
    public var leaseSeconds: Double = 10
    public var logLevel: Logger.Level
    /// The administrator's API token; nil turns authentication off (allowed on loopback only).
    public var adminToken: String?
    /// `durable` (default): a 2xx means committed to disk. `relaxed`: answered once queued for the
    /// next group commit; a crash can lose the changes of the last commit (milliseconds).
    public var relaxedDurability = false
    /// Replay buffers, queues, tick and caps of the event streams.
    public var events = EventStreamLimits()
    /// Where the W3C WebDriver facade answers (`--webdriver-base-path`); nil: no facade.
    public var webDriverBasePath: String? = "/webdriver"
    /// Web origins whose pages may call the API from a browser (`--cors-origins`); empty: none.
    public var corsOrigins: [String] = []
    /// The model's caps, the byte budget per profile (`--profile-max-bytes`) among them.
    public var modelLimits = ModelLimits()
    /// WebDriver sessions: idle timeout and caps (`--webdriver-session-timeout`, `--webdriver-sessions-per-profile`).
    public var webDriver = WebDriverLimits()
    /// Unused stream tickets one caller may hold (`--stream-tickets-per-principal`).
    public var streamTicketsPerPrincipal = StreamTicketStore.defaultPerPrincipalLimit
    /// Idempotency keys kept per caller (`--idempotency-keys-per-principal`; the oldest leave first).
    public var idempotencyKeysPerPrincipal = 10_000
    /// The secret every instance on one database shares (`--cluster-secret-file`): sent on every
    /// forwarded and internal request, so an instance takes such a request only from another instance.
    public var clusterSecret: String?
    /// Bytes each profile may write to the store per second, on average (`--profile-write-bytes-per-second`;
    /// 0: no quota); a profile may write eight seconds' worth at once after a quiet while.
    public var profileWriteBytesPerSecond = 1 << 20
    /// Bytes of windows' encoded answers kept for their next read (`--window-answer-cache-bytes`; the
    /// least recently read leave first; 0: none kept).
    public var windowAnswerCacheBytes = BrowserService.defaultAnswerCacheBytes
    /// Backups kept beside the database (`--backup-keep`; the oldest are removed).
    public var backupKeep = 5
    /// The largest profile document `POST /v1/profiles/import` takes (`--max-import-bytes`); two are
    /// held at once at most.
    public var maxImportBytes = 256 << 20
    /// The most bytes a Firefox session file may decode to (`--max-session-bytes`). A session is
    /// parsed whole: its peak memory is about 7× its decoded size in the worst shape measured
    /// (`bench/hostile_import.py`: tiny entries), so the default keeps one import under ~450 MiB.
    public var maxSessionBytes = 64 << 20
    /// The longest an upload (`POST /v1/profiles/import`: its whole body) or an export (`GET
    /// /v1/profiles/{id}/export`: the whole document) may take, in seconds (`--transfer-timeout`):
    /// past it the connection is closed, so no slow sender or reader holds a slot for longer.
    public var transferTimeoutSeconds = 600
    /// Whether every stored profile is loaded at start (`--preload-profiles`), rather than on its first use.
    public var preloadProfiles = false
    /// How the allocator is steered so that memory follows the working set (process-wide settings):
    /// ``MemoryPolicy/untouched`` unless set, so tests never change them; the executable runs with
    /// ``MemoryPolicy/followsWorkingSet``.
    public var memoryPolicy: MemoryPolicy = .untouched
    /// How long a profile nobody uses (no request, stream or WebDriver session; no incognito profile)
    /// stays in memory (`--profile-idle-seconds`; nil: for ever). The embedded store only.
    public var profileIdle: Duration? = .seconds(600)
    /// How long a renderer holds its registration, and so its profiles, after each renewal
    /// (`--renderer-lease-seconds`): one that stops renewing loses its profiles to others after it.
    public var rendererLeaseSeconds = 10

    /// The request headers a browser page may send, and the answer headers it may read.
    public static let corsAllowedHeaders = ["Authorization", "Content-Type", "Idempotency-Key", "If-Match", "Last-Event-ID"]
    public static let corsExposedHeaders = ["ETag", "Location", "Idempotent-Replayed", "Retry-After"]

    /// The server's CORS policy for ``corsOrigins``; nil when the list is empty.
    public var corsPolicy: CORSPolicy? {
        corsOrigins.isEmpty
            ? nil
            : CORSPolicy(
                origins: corsOrigins, allowedHeaders: Self.corsAllowedHeaders,
                exposedHeaders: Self.corsExposedHeaders, maxAgeSeconds: 600)
    }

    public init(
        server: ServerConfiguration = ServerConfiguration(), dataDirectory: String = "./data", logLevel: Logger.Level = .info,
        adminToken: String? = nil
    ) {
        self.server = server
        self.dataDirectory = dataDirectory
        self.logLevel = logLevel
        self.adminToken = adminToken
    }

    /// Whether the server binds only a loopback address.
    public var isLoopbackOnly: Bool {
        let host = server.host
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// A problem with the configuration that stops start-up.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Checks the values against sane ranges.
    /// - Throws: ``Invalid`` naming the first bad option.
    public func validate() throws {
        func check(_ ok: Bool, _ message: String) throws { if !ok { throw Invalid(description: message) } }
        try check((0...65_535).contains(server.port), "--port must be 0…65535, got \(server.port)")
        try check((1...256).contains(server.threads), "--threads must be 1…256, got \(server.threads)")
        try check((16...1_000_000).contains(server.connectionLimit), "--connection-limit must be 16…1000000, got \(server.connectionLimit)")
        try check((1...86_400).contains(server.idleTimeoutSeconds), "--idle-timeout must be 1…86400 seconds, got \(server.idleTimeoutSeconds)")
        try check((1024...(1 << 30)).contains(server.maxBodyBytes), "--max-body-bytes must be 1 KiB…1 GiB, got \(server.maxBodyBytes)")
        try check(server.streamHeartbeatInterval >= .milliseconds(100), "--heartbeat-interval must be at least 0.1 s")
        try check(
            server.perIPConnectionLimit == 0 || (1..<server.connectionLimit).contains(server.perIPConnectionLimit),
            "--per-ip-connection-limit must be below --connection-limit (\(server.connectionLimit)), so that one address cannot hold every connection, or 0 (no per-address limit, behind a reverse proxy); got \(server.perIPConnectionLimit)"
        )
        try check((1...3_600).contains(server.requestHeadTimeoutSeconds), "--request-head-timeout must be 1…3600 seconds, got \(server.requestHeadTimeoutSeconds)")
        try check((0...(1 << 30)).contains(server.minimumBodyRate), "--min-body-rate must be 0…1073741824 bytes/s, got \(server.minimumBodyRate)")
        if let hosts = server.allowedHosts {
            try check(
                !hosts.isEmpty && hosts.allSatisfy { !$0.contains("/") && !$0.contains(" ") },
                "--allowed-hosts must list host names like browserd.example.com, got \(hosts)")
        }
        try check(!dataDirectory.isEmpty, "--data-dir must not be empty")
        try check((1...1_000_000).contains(events.replayEvents), "--replay-events must be 1…1000000, got \(events.replayEvents)")
        try check((1024...(1 << 30)).contains(events.replayBytes), "--replay-bytes must be 1 KiB…1 GiB, got \(events.replayBytes)")
        try check((1024...(1 << 30)).contains(events.queueBytes), "--stream-queue-bytes must be 1 KiB…1 GiB, got \(events.queueBytes)")
        try check(events.tick >= .milliseconds(1) && events.tick <= .seconds(1), "--event-tick-ms must be 1…1000")
        try check(events.maxStreams >= 1, "--max-streams must be at least 1, got \(events.maxStreams)")
        try check(events.maxStreamsPerProfile >= 1, "--max-streams-per-profile must be at least 1, got \(events.maxStreamsPerProfile)")
        if let base = webDriverBasePath {
            try check(
                base.hasPrefix("/") && !base.hasSuffix("/") && !base.hasPrefix("/v1") && base != "/inspector"
                    && !base.contains("{") && !base.contains("?") && !base.contains(" "),
                "--webdriver-base-path must be a path like /webdriver (no trailing slash, not under /v1), got \(base)")
        }
        try check(modelLimits.profileBytes >= 64 * 1024, "--profile-max-bytes must be at least 65536, got \(modelLimits.profileBytes)")
        try check(webDriver.sessionTimeout >= .seconds(1), "--webdriver-session-timeout must be at least 1 second")
        try check((1...1_000).contains(webDriver.perProfile), "--webdriver-sessions-per-profile must be 1…1000, got \(webDriver.perProfile)")
        try check((1...100_000).contains(streamTicketsPerPrincipal), "--stream-tickets-per-principal must be 1…100000, got \(streamTicketsPerPrincipal)")
        try check((1...1_000_000).contains(idempotencyKeysPerPrincipal), "--idempotency-keys-per-principal must be 1…1000000, got \(idempotencyKeysPerPrincipal)")
        try check((0...(1 << 30)).contains(profileWriteBytesPerSecond), "--profile-write-bytes-per-second must be 0…1073741824, got \(profileWriteBytesPerSecond)")
        try check((0...(1 << 34)).contains(windowAnswerCacheBytes), "--window-answer-cache-bytes must be 0…17179869184, got \(windowAnswerCacheBytes)")
        try check((1...1_000).contains(backupKeep), "--backup-keep must be 1…1000, got \(backupKeep)")
        // liblz4 (a session file) and the document parser count in 32 bits: 2 GiB at most.
        try check((1 << 20...Int(Int32.max)).contains(maxImportBytes), "--max-import-bytes must be 1 MiB…2 GiB (2147483647), got \(maxImportBytes)")
        try check((1 << 20...Int(Int32.max)).contains(maxSessionBytes), "--max-session-bytes must be 1 MiB…2 GiB (2147483647), got \(maxSessionBytes)")
        try check((1...86_400).contains(transferTimeoutSeconds), "--transfer-timeout must be 1…86400 seconds, got \(transferTimeoutSeconds)")
        try check(leaseSeconds >= 0.3 && leaseSeconds <= 3600, "--lease-seconds must be 0.3…3600, got \(leaseSeconds)")
        if let advertiseURL {
            try check(
                (advertiseURL.hasPrefix("http://") || advertiseURL.hasPrefix("https://")) && !advertiseURL.hasSuffix("/")
                    && URLComponents(string: advertiseURL)?.host?.isEmpty == false,
                "--advertise-url must be an http(s) URL without a trailing slash, like http://10.0.0.2:8080, got \(advertiseURL)")
            try check(usesDatabase, "--advertise-url needs --database-url (it is how other instances on that database reach this one)")
        }
        if usesDatabase {
            try check(
                (clusterSecret?.utf8.count ?? 0) >= 16,
                "--database-url needs --cluster-secret-file (or BROWSERD_CLUSTER_SECRET_FILE): a file holding a secret of at least 16 characters that every instance on the database shares"
            )
        }
        if usesDatabase, advertiseURL == nil, server.host == "0.0.0.0" || server.host == "::" {
            throw Invalid(
                description: "--advertise-url is needed with --database-url when binding \(server.host): other instances must know which address reaches this one")
        }
        for origin in corsOrigins {
            if let problem = CORSPolicy.problem(with: origin) { throw Invalid(description: "--cors-origins: \(problem)") }
        }
        if corsOrigins.contains("*") {
            try check(adminToken == nil, "--cors-origins '*' is allowed only while authentication is off: list the origins that may call")
        }
        if let adminToken {
            try check(adminToken.count >= 16, "the admin token must have at least 16 characters")
        } else {
            try check(
                isLoopbackOnly,
                "refusing to serve \(server.host) without an admin token: set BROWSERD_ADMIN_TOKEN or --admin-token-file (auth may be off only on a loopback address)")
        }
    }
}
