import ArgumentParser
import BrowserServices
import BrowserdApp
import Foundation
import HTTPServer
import Logging
import ProcessMemory
import ServiceLifecycle

#if PostgreSQL
    import BrowserPostgres
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs the service until SIGTERM or SIGINT, then shuts down gracefully and exits 0.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the service (the default).")

    /// Every default, as the configuration types define it (never repeated here).
    static let defaults = BrowserdConfiguration()
    static func text(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(value) }
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
    static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

    @Option(help: "Address to bind, an IP literal [env: BROWSERD_HOST] (default: \(Self.defaults.server.host)).")
    var host: String?

    @Option(help: "TCP port; 0 picks a free one [env: BROWSERD_PORT] (default: \(Self.defaults.server.port)).")
    var port: Int?

    @Option(help: "Folder for the database [env: BROWSERD_DATA_DIR] (default: \(Self.defaults.dataDirectory)).")
    var dataDir: String?

    @Option(
        help:
            "Keep the state in PostgreSQL instead of SQLite under --data-dir (a build with the PostgreSQL trait: make release-postgres): postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require] [env: BROWSERD_DATABASE_URL]."
    )
    var databaseUrl: String?

    @Option(help: "File holding the PostgreSQL password, when the URL has none [env: BROWSERD_DATABASE_PASSWORD_FILE].")
    var databasePasswordFile: String?

    @Option(
        help:
            "With --database-url: the URL other instances reach this one at, e.g. http://10.0.0.2:8080 [env: BROWSERD_ADVERTISE_URL] (default: http://HOST:PORT of this server)."
    )
    var advertiseUrl: String?

    @Option(
        help:
            "With --database-url (needed then): a file holding the secret every instance on the database shares, at least 16 characters; instances send it on the requests they forward [env: BROWSERD_CLUSTER_SECRET_FILE]."
    )
    var clusterSecretFile: String?

    @Option(
        help:
            "With --database-url: seconds a profile's lease lasts without renewal; a dead instance's profiles move on after this long [env: BROWSERD_LEASE_SECONDS] (default: \(Self.text(Self.defaults.leaseSeconds)))."
    )
    var leaseSeconds: Double?

    @Option(help: "trace, debug, info, notice, warning, error or critical [env: BROWSERD_LOG_LEVEL] (default: \(Self.defaults.logLevel.rawValue)).")
    var logLevel: String?

    @Option(help: "HTTP worker threads [env: BROWSERD_THREADS] (default: the number of cores).")
    var threads: Int?

    @Option(
        help:
            "Most HTTP connections at once, event streams not included (--max-streams bounds those) [env: BROWSERD_CONNECTION_LIMIT] (default: \(Self.defaults.server.connectionLimit))."
    )
    var connectionLimit: Int?

    @Option(help: "Largest request body in bytes; larger gets 413 [env: BROWSERD_MAX_BODY_BYTES] (default: \(Self.defaults.server.maxBodyBytes)).")
    var maxBodyBytes: Int?

    @Option(help: "Seconds before an idle or stalled connection is closed [env: BROWSERD_IDLE_TIMEOUT] (default: \(Self.defaults.server.idleTimeoutSeconds)).")
    var idleTimeout: Int?

    @Option(
        help:
            "Most connections one client address may hold at once, below --connection-limit (0: no limit; behind a reverse proxy every client has its address) [env: BROWSERD_PER_IP_CONNECTION_LIMIT] (default: a quarter of --connection-limit, at most 1024)."
    )
    var perIpConnectionLimit: Int?

    @Option(
        help:
            "Seconds a request head may take from its first line to its last header, however steadily it trickles in [env: BROWSERD_REQUEST_HEAD_TIMEOUT] (default: \(Self.defaults.server.requestHeadTimeoutSeconds))."
    )
    var requestHeadTimeout: Int?

    @Option(
        help:
            "Bytes per second a request body must keep up after the head timeout's grace (0: off) [env: BROWSERD_MIN_BODY_RATE] (default: \(Self.defaults.server.minimumBodyRate))."
    )
    var minBodyRate: Int?

    @Option(
        help:
            "Comma-separated host names a request's Host may name (421 otherwise); default: the loopback names on a loopback bind (DNS rebinding), any name elsewhere [env: BROWSERD_ALLOWED_HOSTS]."
    )
    var allowedHosts: String?

    @Option(
        help:
            "Seconds between heartbeats on idle streams [env: BROWSERD_HEARTBEAT_INTERVAL] (default: \(Self.text(Self.seconds(Self.defaults.server.streamHeartbeatInterval))))."
    )
    var heartbeatInterval: Double?

    @Option(
        help:
            "Seconds a graceful shutdown waits for in-flight requests [env: BROWSERD_SHUTDOWN_GRACE] (default: \(Self.text(Self.seconds(Self.defaults.server.shutdownGracePeriod))))."
    )
    var shutdownGrace: Double?

    @Option(
        help:
            "durable (a 2xx means on disk) or relaxed (answer once queued for the next commit; a crash may lose the last few milliseconds of changes) [env: BROWSERD_DURABILITY] (default: \(Self.defaults.relaxedDurability ? "relaxed" : "durable"))."
    )
    var durability: String?

    @Option(help: "Events kept per window for resuming a stream [env: BROWSERD_REPLAY_EVENTS] (default: \(Self.defaults.events.replayEvents)).")
    var replayEvents: Int?

    @Option(help: "Bytes of events kept per window for resuming a stream [env: BROWSERD_REPLAY_BYTES] (default: \(Self.defaults.events.replayBytes)).")
    var replayBytes: Int?

    @Option(help: "Bytes queued for one slow stream client before it is reset [env: BROWSERD_STREAM_QUEUE_BYTES] (default: \(Self.defaults.events.queueBytes)).")
    var streamQueueBytes: Int?

    @Option(
        help: "Milliseconds events gather at most before they go out together [env: BROWSERD_EVENT_TICK_MS] (default: \(Self.milliseconds(Self.defaults.events.tick))).")
    var eventTickMs: Int?

    @Option(
        help:
            "true: events go out at once while the previous ones are delivered and gather (a tick at most) only while they are still being written; false: a fixed tick [env: BROWSERD_EVENT_TICK_ADAPTIVE] (default: \(Self.defaults.events.adaptiveTick))."
    )
    var eventTickAdaptive: Bool?

    @Option(help: "Most event streams at once, in all (503 past it) [env: BROWSERD_MAX_STREAMS] (default: \(Self.defaults.events.maxStreams)).")
    var maxStreams: Int?

    @Option(
        help:
            "Most event streams at once per regular profile (429 past it) [env: BROWSERD_MAX_STREAMS_PER_PROFILE] (default: \(Self.defaults.events.maxStreamsPerProfile))."
    )
    var maxStreamsPerProfile: Int?

    @Option(
        help:
            "Path of the W3C WebDriver facade, e.g. /webdriver (New Session at <path>/session); 'none' turns it off [env: BROWSERD_WEBDRIVER_BASE_PATH] (default: \(Self.defaults.webDriverBasePath ?? "none"))."
    )
    var webdriverBasePath: String?

    @Option(
        help:
            "Most bytes of history text (URLs, titles, recently closed tabs) one profile may hold, its incognito profile included; growth past it gets 507 [env: BROWSERD_PROFILE_MAX_BYTES] (default: \(Self.defaults.modelLimits.profileBytes))."
    )
    var profileMaxBytes: Int?

    @Option(
        help:
            "Bytes each profile may write to the store per second on average (eight seconds' worth at once); past it its changes get 429 until it is back under (0: no quota) [env: BROWSERD_PROFILE_WRITE_BYTES_PER_SECOND] (default: \(Self.defaults.profileWriteBytesPerSecond))."
    )
    var profileWriteBytesPerSecond: Int?

    @Option(
        help:
            "Most bytes of windows' encoded answers kept for their next read; past it the least recently read leave (0: none kept) [env: BROWSERD_WINDOW_ANSWER_CACHE_BYTES] (default: \(Self.defaults.windowAnswerCacheBytes))."
    )
    var windowAnswerCacheBytes: Int?

    @Option(
        help:
            "Seconds an unused WebDriver session lives; then it ends as if deleted [env: BROWSERD_WEBDRIVER_SESSION_TIMEOUT] (default: \(Self.text(Self.seconds(Self.defaults.webDriver.sessionTimeout))))."
    )
    var webdriverSessionTimeout: Double?

    @Option(help: "Most WebDriver sessions one profile may have open [env: BROWSERD_WEBDRIVER_SESSIONS_PER_PROFILE] (default: \(Self.defaults.webDriver.perProfile)).")
    var webdriverSessionsPerProfile: Int?

    @Option(
        help:
            "Most unused stream tickets one caller (the admin, or one profile's tokens) may hold; past it 429 [env: BROWSERD_STREAM_TICKETS_PER_PRINCIPAL] (default: \(Self.defaults.streamTicketsPerPrincipal))."
    )
    var streamTicketsPerPrincipal: Int?

    @Option(
        help:
            "Idempotency keys kept per caller; the oldest leave first, never another caller's [env: BROWSERD_IDEMPOTENCY_KEYS_PER_PRINCIPAL] (default: \(Self.defaults.idempotencyKeysPerPrincipal))."
    )
    var idempotencyKeysPerPrincipal: Int?

    @Option(help: "Backups kept beside the database by POST /v1/admin/backup; older ones are removed [env: BROWSERD_BACKUP_KEEP] (default: \(Self.defaults.backupKeep)).")
    var backupKeep: Int?

    @Option(help: "Largest profile document POST /v1/profiles/import takes, in bytes [env: BROWSERD_MAX_IMPORT_BYTES] (default: \(Self.defaults.maxImportBytes)).")
    var maxImportBytes: Int?

    @Option(
        help:
            "Most bytes a Firefox session file (POST /v1/profiles/import?format=firefox) may decode to; its import peaks at about 7 times this in memory [env: BROWSERD_MAX_SESSION_BYTES] (default: \(Self.defaults.maxSessionBytes))."
    )
    var maxSessionBytes: Int?

    @Option(
        help:
            "Seconds an import's upload (its whole body) or an export (the whole document) may take; past it the connection is closed [env: BROWSERD_TRANSFER_TIMEOUT] (default: \(Self.defaults.transferTimeoutSeconds))."
    )
    var transferTimeout: Int?

    @Option(
        help:
            "true: load every stored profile at start (ready once all are in memory); false: read only the directory of profiles at start and load each on its first use [env: BROWSERD_PRELOAD_PROFILES] (default: \(Self.defaults.preloadProfiles))."
    )
    var preloadProfiles: Bool?

    @Option(
        help:
            "Seconds a profile nobody uses (no request, event stream or WebDriver session, no incognito profile) stays in memory before it is dropped (it is all on disk and loads again on its next use); 0: never [env: BROWSERD_PROFILE_IDLE_SECONDS] (default: \(Int(Self.defaults.profileIdle.map { Double($0.components.seconds) } ?? 0)))."
    )
    var profileIdleSeconds: Int?

    @Option(
        help:
            "Seconds a renderer holds its registration and profiles after each renewal; a renderer that stops renewing loses its profiles to the others after it (2-300) [env: BROWSERD_RENDERER_LEASE_SECONDS] (default: \(Self.defaults.rendererLeaseSeconds))."
    )
    var rendererLeaseSeconds: Int?

    @Option(
        help:
            "Comma-separated web origins (scheme://host:port) whose pages may call the API from a browser (CORS); '*' only while auth is off [env: BROWSERD_CORS_ORIGINS] (default: none)."
    )
    var corsOrigins: String?

    @Option(help: "File holding the admin API token [or env: BROWSERD_ADMIN_TOKEN with the token itself]. Without one, auth is off, which is allowed only on loopback.")
    var adminTokenFile: String?

    func run() async throws {
        let configuration = try makeConfiguration()
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            // Clients' text (paths, names, errors) never reaches the log raw: control characters escaped.
            return EscapingLogHandler(handler)
        }
        let logger = Logger(label: "browserd")
        // A file-size limit must fail writes (EFBIG → 503), not kill the server.
        signal(SIGXFSZ, SIG_IGN)
        raiseOpenFileLimit(wanted: configuration.server.connectionLimit + configuration.events.maxStreams + 256, logger: logger)
        let application = Application(configuration: configuration, logger: logger)
        let group = ServiceGroup(
            services: [ServerService(application: application)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: logger)
        do {
            try await group.run()
        } catch {
            logger.critical("browserd cannot run: \(error)")
            throw ExitCode.failure
        }
    }

    func makeConfiguration() throws -> BrowserdConfiguration {
        var server = Self.defaults.server
        server.host = try resolve(host, "BROWSERD_HOST", default: server.host) { $0 }
        server.port = try resolve(port, "BROWSERD_PORT", default: server.port) { Int($0) }
        server.threads = try resolve(threads, "BROWSERD_THREADS", default: server.threads) { Int($0) }
        server.connectionLimit = try resolve(connectionLimit, "BROWSERD_CONNECTION_LIMIT", default: server.connectionLimit) { Int($0) }
        server.maxBodyBytes = try resolve(maxBodyBytes, "BROWSERD_MAX_BODY_BYTES", default: server.maxBodyBytes) { Int($0) }
        server.idleTimeoutSeconds = try resolve(idleTimeout, "BROWSERD_IDLE_TIMEOUT", default: server.idleTimeoutSeconds) { Int($0) }
        // Unless given, a quarter of the connection limit (at most 1,024): one address never holds them all.
        server.perIPConnectionLimit = try resolve(
            perIpConnectionLimit, "BROWSERD_PER_IP_CONNECTION_LIMIT",
            default: ServerConfiguration.defaultPerIPConnectionLimit(connectionLimit: server.connectionLimit)
        ) { Int($0) }
        server.requestHeadTimeoutSeconds = try resolve(
            requestHeadTimeout, "BROWSERD_REQUEST_HEAD_TIMEOUT",
            default: server.requestHeadTimeoutSeconds
        ) { Int($0) }
        server.minimumBodyRate = try resolve(minBodyRate, "BROWSERD_MIN_BODY_RATE", default: server.minimumBodyRate) { Int($0) }
        if let hosts = allowedHosts ?? Environment.value("BROWSERD_ALLOWED_HOSTS") {
            server.allowedHosts = hosts.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let heartbeat = try resolve(heartbeatInterval, "BROWSERD_HEARTBEAT_INTERVAL", default: Self.seconds(server.streamHeartbeatInterval)) { Double($0) }
        server.streamHeartbeatInterval = .milliseconds(Int64(heartbeat * 1000))
        let grace = try resolve(shutdownGrace, "BROWSERD_SHUTDOWN_GRACE", default: Self.seconds(server.shutdownGracePeriod)) { Double($0) }
        server.shutdownGracePeriod = .milliseconds(Int64(max(0, grace) * 1000))
        let dataDirectory = try resolve(dataDir, "BROWSERD_DATA_DIR", default: Self.defaults.dataDirectory) { $0 }
        let levelName = try resolve(logLevel, "BROWSERD_LOG_LEVEL", default: Self.defaults.logLevel.rawValue) { $0 }
        guard let level = Logger.Level(rawValue: levelName.lowercased()) else {
            throw ValidationError("log level '\(levelName)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        var adminToken = Environment.value("BROWSERD_ADMIN_TOKEN")
        if let path = adminTokenFile ?? Environment.value("BROWSERD_ADMIN_TOKEN_FILE") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("cannot read the admin token file \(path)")
            }
            adminToken = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var configuration = BrowserdConfiguration(server: server, dataDirectory: dataDirectory, logLevel: level, adminToken: adminToken)
        // The server's memory follows its working set down (process-wide allocator settings). A
        // benchmark may turn settings off to measure what each earns (bench/memory_policy.py).
        configuration.memoryPolicy = .followsWorkingSet
        if let off = Environment.value("BROWSERD_MEMORY_POLICY_OFF") {
            guard let policy = MemoryPolicy.followsWorkingSet.turningOff(off) else {
                throw ValidationError(
                    "BROWSERD_MEMORY_POLICY_OFF: \(off) (expected a comma-separated list of \(MemoryPolicy.settingNames.joined(separator: ", ")), or all)")
            }
            configuration.memoryPolicy = policy
        }
        if let text = databaseUrl ?? Environment.value("BROWSERD_DATABASE_URL") {
            #if !PostgreSQL
                _ = text
                FileHandle.standardError.write(
                    Data(
                        ("browserd: this build has no PostgreSQL (the embedded default): for --database-url build it with the PostgreSQL trait, "
                            + "`make release-postgres` or `swift build -c release --traits PostgreSQL`\n").utf8))
                throw ExitCode(2)
            #else
                do {
                    var url = try DatabaseURL(text)
                    if let path = databasePasswordFile ?? Environment.value("BROWSERD_DATABASE_PASSWORD_FILE") {
                        guard url.password == nil else { throw ValidationError("give the database password in the URL or in a file, not both") }
                        guard let password = try? String(contentsOfFile: path, encoding: .utf8) else {
                            throw ValidationError("cannot read the database password file \(path)")
                        }
                        url.password = password.trimmingCharacters(in: .newlines)
                    }
                    configuration.database = url
                } catch let error as DatabaseURL.Invalid {
                    throw ValidationError(error.description)
                }
            #endif
        } else if databasePasswordFile != nil {
            throw ValidationError("--database-password-file needs --database-url")
        }
        #if PostgreSQL
            // A benchmark may send every forwarded request through async-http-client, to compare it
            // with the relay in one run (bench/scale_out.py --hop-only).
            if let path = Environment.value("BROWSERD_FORWARD_THROUGH"), !configuration.forward(through: path) {
                throw ValidationError("BROWSERD_FORWARD_THROUGH: \(path) (expected relay or async-http-client)")
            }
        #endif
        configuration.advertiseURL = advertiseUrl ?? Environment.value("BROWSERD_ADVERTISE_URL")
        if let path = clusterSecretFile ?? Environment.value("BROWSERD_CLUSTER_SECRET_FILE") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("cannot read the cluster secret file \(path)")
            }
            configuration.clusterSecret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        configuration.leaseSeconds = try resolve(leaseSeconds, "BROWSERD_LEASE_SECONDS", default: Self.defaults.leaseSeconds) { Double($0) }
        let durabilityMode = try resolve(durability, "BROWSERD_DURABILITY", default: Self.defaults.relaxedDurability ? "relaxed" : "durable") { $0 }
        guard durabilityMode == "durable" || durabilityMode == "relaxed" else {
            throw ValidationError("durability must be durable or relaxed, got '\(durabilityMode)'")
        }
        configuration.relaxedDurability = durabilityMode == "relaxed"
        var events = Self.defaults.events
        events.replayEvents = try resolve(replayEvents, "BROWSERD_REPLAY_EVENTS", default: events.replayEvents) { Int($0) }
        events.replayBytes = try resolve(replayBytes, "BROWSERD_REPLAY_BYTES", default: events.replayBytes) { Int($0) }
        events.queueBytes = try resolve(streamQueueBytes, "BROWSERD_STREAM_QUEUE_BYTES", default: events.queueBytes) { Int($0) }
        events.tick = .milliseconds(try resolve(eventTickMs, "BROWSERD_EVENT_TICK_MS", default: Self.milliseconds(events.tick)) { Int($0) })
        events.adaptiveTick = try resolve(eventTickAdaptive, "BROWSERD_EVENT_TICK_ADAPTIVE", default: events.adaptiveTick) { Bool($0) }
        events.maxStreams = try resolve(maxStreams, "BROWSERD_MAX_STREAMS", default: events.maxStreams) { Int($0) }
        events.maxStreamsPerProfile = try resolve(
            maxStreamsPerProfile, "BROWSERD_MAX_STREAMS_PER_PROFILE",
            default: events.maxStreamsPerProfile
        ) { Int($0) }
        configuration.events = events
        let webDriverPath = try resolve(webdriverBasePath, "BROWSERD_WEBDRIVER_BASE_PATH", default: Self.defaults.webDriverBasePath ?? "none") { $0 }
        configuration.webDriverBasePath = webDriverPath == "none" ? nil : webDriverPath
        configuration.modelLimits.profileBytes = try resolve(
            profileMaxBytes, "BROWSERD_PROFILE_MAX_BYTES",
            default: configuration.modelLimits.profileBytes
        ) { Int($0) }
        configuration.profileWriteBytesPerSecond = try resolve(
            profileWriteBytesPerSecond, "BROWSERD_PROFILE_WRITE_BYTES_PER_SECOND",
            default: configuration.profileWriteBytesPerSecond
        ) { Int($0) }
        configuration.windowAnswerCacheBytes = try resolve(
            windowAnswerCacheBytes, "BROWSERD_WINDOW_ANSWER_CACHE_BYTES",
            default: configuration.windowAnswerCacheBytes
        ) { Int($0) }
        let sessionTimeout = try resolve(webdriverSessionTimeout, "BROWSERD_WEBDRIVER_SESSION_TIMEOUT", default: Self.seconds(configuration.webDriver.sessionTimeout)) {
            Double($0)
        }
        configuration.webDriver.sessionTimeout = .milliseconds(Int64(max(0, sessionTimeout) * 1000))
        configuration.webDriver.perProfile = try resolve(
            webdriverSessionsPerProfile, "BROWSERD_WEBDRIVER_SESSIONS_PER_PROFILE",
            default: configuration.webDriver.perProfile
        ) { Int($0) }
        configuration.streamTicketsPerPrincipal = try resolve(
            streamTicketsPerPrincipal, "BROWSERD_STREAM_TICKETS_PER_PRINCIPAL",
            default: configuration.streamTicketsPerPrincipal
        ) { Int($0) }
        configuration.idempotencyKeysPerPrincipal = try resolve(
            idempotencyKeysPerPrincipal, "BROWSERD_IDEMPOTENCY_KEYS_PER_PRINCIPAL",
            default: configuration.idempotencyKeysPerPrincipal
        ) { Int($0) }
        configuration.backupKeep = try resolve(backupKeep, "BROWSERD_BACKUP_KEEP", default: configuration.backupKeep) { Int($0) }
        configuration.maxImportBytes = try resolve(maxImportBytes, "BROWSERD_MAX_IMPORT_BYTES", default: configuration.maxImportBytes) { Int($0) }
        configuration.maxSessionBytes = try resolve(maxSessionBytes, "BROWSERD_MAX_SESSION_BYTES", default: configuration.maxSessionBytes) { Int($0) }
        configuration.transferTimeoutSeconds = try resolve(transferTimeout, "BROWSERD_TRANSFER_TIMEOUT", default: configuration.transferTimeoutSeconds) { Int($0) }
        configuration.preloadProfiles = try resolve(preloadProfiles, "BROWSERD_PRELOAD_PROFILES", default: configuration.preloadProfiles) { Bool($0) }
        let idleSeconds = try resolve(
            profileIdleSeconds, "BROWSERD_PROFILE_IDLE_SECONDS",
            default: Int(configuration.profileIdle.map { $0.components.seconds } ?? 0)
        ) { Int($0) }
        guard idleSeconds >= 0 else { throw ValidationError("--profile-idle-seconds must be 0 (never) or more, got \(idleSeconds)") }
        configuration.profileIdle = idleSeconds == 0 ? nil : .seconds(idleSeconds)
        configuration.rendererLeaseSeconds = try resolve(
            rendererLeaseSeconds, "BROWSERD_RENDERER_LEASE_SECONDS", default: configuration.rendererLeaseSeconds
        ) { Int($0) }
        guard (2...300).contains(configuration.rendererLeaseSeconds) else {
            throw ValidationError("--renderer-lease-seconds must be 2 to 300, got \(configuration.rendererLeaseSeconds)")
        }
        let origins = try resolve(corsOrigins, "BROWSERD_CORS_ORIGINS", default: "") { $0 }
        configuration.corsOrigins = origins.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        do {
            try configuration.validate()
        } catch {
            throw ValidationError("\(error)")
        }
        return configuration
    }

    /// Raises the soft limit on open files toward the hard limit, so the connection limit can be met.
    private func raiseOpenFileLimit(wanted: Int, logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let target = min(rlim_t(wanted), limit.rlim_max)
        if limit.rlim_cur < target {
            limit.rlim_cur = target
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        if Int(limit.rlim_cur) < wanted {
            logger.warning(
                "open-file limit is below the connection limit plus the stream limit",
                metadata: [
                    "nofile": "\(limit.rlim_cur)", "wanted": "\(wanted - 256)",
                ])
        }
    }
}
