import BrowserAPI
import BrowserCluster
import BrowserModel
import BrowserPersistence
import BrowserPostgres
import BrowserRecords
public import BrowserServices
import Foundation
public import HTTPServer
public import Logging
import Metrics
import Prometheus
import Synchronization

/// browserd assembled: configuration, metrics, readiness, the route table and the HTTP server.
///
/// Tests create it in-process with port 0; the executable wraps it in a service group. Everything
/// here is wiring: the routes it registers belong to their own types.
public final class Application: Sendable {
    public let configuration: BrowserdConfiguration
    public let logger: Logger
    public let readiness = Readiness()
    public let server: HTTPServer
    /// The browser model behind the API.
    public let service: BrowserService
    let tokens: TokenStore
    /// Answers kept per Idempotency-Key (also stored with their changes and restored at start).
    let idempotency: IdempotencyStore
    /// The stream tickets the API issues and redeems.
    let tickets: StreamTicketStore
    let registry: PrometheusCollectorRegistry
    let sink: StoreSink
    /// Awaited before the saved state is loaded (tests hold restore open with it).
    let restoreGate = Mutex<(@Sendable () async -> Void)?>(nil)
    /// Retries a failed storage until it is healthy again; stopped at shutdown.
    let recovery: StorageRecovery
    /// Every (method, template) the server answers, for the contract check.
    let routes: [(method: HTTPMethod, template: String)]
    /// The PostgreSQL pool's task (with `--database-url`), ended at shutdown after the writer.
    let postgresRun = Mutex<Task<Void, Never>?>(nil)
    /// With `--database-url`: this instance among those on the database (made at start).
    let membership = ClusterMembership.Slot()
    /// With `--database-url`: the API's placement stage (the membership, once started).
    let placement = PlacementSlot()
    /// With `--database-url`: this process's id among the instances, named in every answer.
    let instanceID = "i" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
    let metricsFactory: PrometheusMetricsFactory

    /// Builds the application; nothing listens until ``start()``.
    /// - Parameters:
    ///   - configuration: validated configuration.
    ///   - logger: the root logger.
    public init(configuration: BrowserdConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let idempotency = IdempotencyStore(capacity: configuration.idempotencyKeysPerPrincipal)
        self.idempotency = idempotency
        let tickets = StreamTicketStore(perPrincipalLimit: configuration.streamTicketsPerPrincipal)
        self.tickets = tickets
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["browserd_http_request_duration_seconds"] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        self.metricsFactory = factory
        var router = Router()
        let readiness = self.readiness
        let recovery = StorageRecovery(logger: logger)
        self.recovery = recovery
        let sink = StoreSink { reason in
            readiness.block("storage", reason: "the database cannot be written: \(reason)")
            logger.error("storage failed; refusing changes until it recovers", metadata: ["error": "\(reason)"])
            recovery.start()
        }
        self.sink = sink
        var operations = OperationsRoutes(readiness: readiness, registry: registry, configuration: configuration)
        let streamsGauge = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "browserd", metricName: "event", unitName: "streams", helpText: "Event streams open now."))
        let serviceForMetrics = Mutex<BrowserService?>(nil)
        let ownedGauge = registry.makeGauge(descriptor: MetricNameDescriptor(
            namespace: "browserd", metricName: "owned", unitName: "profiles",
            helpText: "Regular profiles whose lease this instance holds (several instances on PostgreSQL)."))
        let membership = self.membership
        operations.beforeScrape = {
            if let service = serviceForMetrics.withLock({ $0 }) { streamsGauge.set(to: Double(service.events.openStreams)) }
            if let cluster = membership.current { ownedGauge.set(to: Double(cluster.leases.held.count)) }
        }
        operations.register(in: &router)
        InspectorRoutes().register(in: &router)
        let actionMetrics = ActionMetrics(factory: factory)
        let service = BrowserService(limits: configuration.modelLimits, sink: sink, waitsForCommit: !configuration.relaxedDurability,
                                     events: configuration.events, framing: SSEFraming(), onAction: { name, ok in
            actionMetrics.count(name, ok: ok)
        }, writeQuota: configuration.profileWriteBytesPerSecond == 0 ? nil
            : WriteQuota(bytesPerSecond: configuration.profileWriteBytesPerSecond, burstBytes: 8 * configuration.profileWriteBytesPerSecond))
        self.service = service
        serviceForMetrics.withLock { $0 = service }
        let databasePath = (configuration.dataDirectory as NSString).appendingPathComponent("browserd.sqlite")
        let tokens = TokenStore(adminToken: configuration.adminToken)
        self.tokens = tokens
        let storedProfiles: @Sendable () async throws -> [ProfileSnapshot] = {
            guard let cluster = membership.current else { return [] }
            return try await cluster.leases.storedProfiles().map { ProfileSnapshot(stored: $0.record, windowCount: $0.windowCount) }
        }
        let otherWindows: @Sendable (HTTPRequest) async throws -> [ListedWindow] = { request in
            guard let cluster = membership.current else { return [] }
            return try await cluster.otherWindows(request)
        }
        APIRoutes(
            service: service, tokens: tokens, idempotency: idempotency,
            tickets: tickets, webDriverBasePath: configuration.webDriverBasePath,
            unavailable: { readiness.blockers.first { $0.component == "startup" || $0.component == "restore" }?.reason },
            backup: { [database = configuration.database] in
                if database != nil {
                    throw HTTPError(409, kind: "backup-elsewhere", title: "Backup Elsewhere",
                                    detail: "The state is in PostgreSQL: back it up with PostgreSQL's own tools (pg_dump, base backups).")
                }
                return try await DatabaseBackup(databasePath: databasePath, keep: configuration.backupKeep).write()
            },
            saveToken: { issued, revoked in
                var change = ChangeSet()
                if let issued { change.tokens = [issued.stored] }
                if let revoked { change.deletedTokens = [revoked.id] }
                change.profileID = (issued ?? revoked)?.profileID.rawValue
                try await sink.commit(change)
            },
            storedProfiles: configuration.database == nil ? nil : storedProfiles,
            otherWindows: configuration.database == nil ? nil : otherWindows,
            // Several instances: after authentication, each request is placed (served here, taken
            // over, or forwarded to the instance that holds its profile).
            placement: configuration.database == nil ? nil : placement,
            webDriverLimits: configuration.webDriver
        ).register(in: &router)
        if configuration.database != nil {
            sink.onFenced.withLock { slot in
                slot = { profile in
                    guard let cluster = membership.current else { return }
                    Task { await cluster.fenced(profile) }
                }
            }
            sink.onRefused.withLock { slot in
                slot = { profile in
                    guard let cluster = membership.current else { return }
                    Task { await cluster.refused(profile) }
                }
            }
        }
        self.routes = router.routes
        // After a failed commit: at once, read back what the database holds and bring memory back to
        // it (what was answered 503 did not happen; reads work on a full disk); then, once a write
        // commits again, take changes again.
        let rolledBack = Mutex(false)
        recovery.configure { [service, sink] in
            guard let writer = sink.writer else { throw StoreError.stopped }
            if !rolledBack.withLock({ $0 }) {
                if let cluster = membership.current {
                    // Several instances: memory is not rolled back but dropped, profile by profile (the
                    // database is the truth, and another instance may take a profile over meanwhile);
                    // each comes back from the database with the next request that names it.
                    let held = service.heldProfiles
                    for profile in held { await cluster.drop(profile.rawValue, reason: .commitFailed) }
                    try? await cluster.leases.release(held.map(\.rawValue))
                    logger.notice("profiles dropped from memory after a failed commit; they come back from the database on demand",
                                  metadata: ["profiles": "\(held.count)"])
                } else {
                    let stored = try await writer.readBack()
                    let summary = try await service.rollBack(to: stored)
                    for repair in summary.repairs.prefix(100) {
                        logger.warning("rollback repaired a stored value", metadata: ["repair": "\(repair)"])
                    }
                    logger.notice("changes that were not committed were undone in memory", metadata: [
                        "windowsRebuilt": "\(summary.windowsRebuilt)", "windowsClosed": "\(summary.windowsClosed)",
                        "windowsReopened": "\(summary.windowsReopened)", "profilesRemoved": "\(summary.profilesRemoved)",
                        "profilesRestored": "\(summary.profilesRestored)",
                    ])
                }
                rolledBack.withLock { $0 = true }
            }
            try await writer.probe()
            rolledBack.withLock { $0 = false }
            writer.resume()
            sink.recovered()
            readiness.clear("storage")
            logger.notice("storage recovered: changes are taken again")
        }
        var server = configuration.server
        server.cors = server.cors ?? configuration.corsPolicy
        // On a loopback bind only loopback names are answered (DNS rebinding), unless listed.
        server.allowedHosts = server.allowedHosts ?? ServerConfiguration.loopbackHosts(for: server.host)
        // With authentication off, no web page may change state: a POST must be JSON (CSRF).
        server.requireJSONForUnauthenticatedPosts = configuration.adminToken == nil
        // Several instances: every answer names the instance that made it (a relayed one keeps its own).
        if configuration.database != nil { server.responseHeaders.set(ClusterMembership.instanceHeader, instanceID) }
        let http = HTTPServer(configuration: server, router: router, logger: logger,
                              observer: MetricsObserver(factory: factory))
        self.server = http
        // The adaptive tick gathers events only while the stream loops still write the last ones.
        service.events.deliveryBusy { [weak http] in http?.streamsBusy ?? false }
        Gauge(label: "browserd_build_info", dimensions: [("version", BuildInfo.version)], factory: factory).record(1)
    }

    /// The database file under the data directory.
    public var databasePath: String { (configuration.dataDirectory as NSString).appendingPathComponent("browserd.sqlite") }

    /// Prepares the data directory, opens the database and restores what it holds, binds the server
    /// and marks the service ready.
    /// - Throws: when the data directory cannot be made writable, the database is unusable (it is
    ///   never overwritten), or the address cannot be bound.
    public func start() async throws {
        let started = ContinuousClock.now
        // The store: SQLite under the data directory, or PostgreSQL (migrated by the first instance).
        let sqlite: PersistenceStore?
        let postgres: PostgresStore?
        let held: HeldLeases?
        if let url = configuration.database {
            let leases = HeldLeases(instanceID: instanceID, advertiseURL: configuration.advertiseURL ?? "", ttlSeconds: configuration.leaseSeconds)
            let store = PostgresStore(url: url, fence: leases, callDeadline: configuration.clusterTiming.databaseCallDeadline, logger: logger)
            // The pool serves leases once run() has started: start it before the first query. Detached:
            // the pool must outlive the service group's graceful shutdown (which its run() would
            // follow), since the writer commits what is queued after the server stops; ``shutdown()``
            // ends it last.
            await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                postgresRun.withLock { $0 = Task.detached { started.resume(); await store.run() } }
            }
            try await store.prepare()
            (sqlite, postgres, held) = (nil, store, leases)
        } else {
            try DataDirectory(path: configuration.dataDirectory).prepare()
            (sqlite, postgres, held) = (try PersistenceStore(path: databasePath), nil, nil)
        }
        if let postgres, let held {
            try await startMember(store: postgres, held: held, started: started)
            return
        }
        readiness.block("restore", reason: "restoring the saved state")
        readiness.clear("startup")
        try server.start()
        if let gate = restoreGate.withLock({ $0 }) { await gate() }
        // SQLite: tabs are read on their own thread while the model is rebuilt. PostgreSQL: one read.
        let stored: StoredState
        let feed: TabFeed?
        let tabTotal: Int
        if let sqlite {
            stored = try sqlite.load(includingTabs: false)
            feed = TabFeed(store: sqlite, windows: BrowserService.restoreOrder(stored))
            tabTotal = try sqlite.tabCount()
        } else {
            stored = try await postgres!.load()
            feed = nil
            tabTotal = stored.tabs.count
        }
        // A long restore says how far it is: /readyz's 503 body at each window, a log line each second.
        let totals = (profiles: stored.profiles.count, windows: stored.windows.count, tabs: tabTotal)
        let progress = Mutex(BrowserService.RestoreSummary())
        let readiness = self.readiness
        @Sendable func describe(_ done: BrowserService.RestoreSummary) -> String {
            "\(done.profiles)/\(totals.profiles) profiles, \(done.windows)/\(totals.windows) windows, \(done.tabs)/\(totals.tabs) tabs"
        }
        let logger = self.logger
        let reporter = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                if Task.isCancelled { break }
                logger.info("restoring", metadata: ["progress": "\(describe(progress.withLock { $0 }))"])
            }
        }
        let summary: BrowserService.RestoreSummary
        var tabsOfWindow: (@Sendable (String) throws -> [String: TabRecord])?
        if let feed { tabsOfWindow = { try feed.tabs(ofWindow: $0) } }
        do {
            summary = try await service.restore(stored, tabs: tabsOfWindow) { done in
                progress.withLock { $0 = done }
                readiness.block("restore", reason: "restoring the saved state: \(describe(done))")
            }
            reporter.cancel()
            feed?.finish()
        } catch {
            reporter.cancel()
            feed?.finish()
            throw error
        }
        tokens.restore(stored.tokens.map(TokenStore.Record.init))
        idempotency.restore(stored.idempotency)
        sink.attach(StoreWriter(store: sqlite.map { $0 as any ChangeStore } ?? postgres!))
        readiness.clear("restore")
        for (window, route, outcome) in await service.runSavedRoutes() {
            logger.notice("followed a route saved during restore", metadata: [
                "window": "\(window)", "savedRoute": "\(route.id)", "outcome": "\(outcome)",
            ])
        }
        // Stored values the model could not take as they were: each is said once (the first 100).
        for repair in summary.repairs.prefix(100) {
            logger.warning("restore repaired a stored value", metadata: ["repair": "\(repair)"])
        }
        if summary.repairs.count > 100 {
            logger.warning("restore repaired more stored values", metadata: ["more": "\(summary.repairs.count - 100)"])
        }
        logger.info("restored", metadata: [
            "database": "\(databasePath)", "profiles": "\(summary.profiles)", "windows": "\(summary.windows)",
            "tabs": "\(summary.tabs)", "repairs": "\(summary.repairs.count)", "duration": "\(ContinuousClock.now - started)",
        ])
        announceStarted(["dataDir": "\(configuration.dataDirectory)"])
    }

    /// The start-up line (tests and tools read its `address`), after a warning when authentication is off.
    func announceStarted(_ store: Logger.Metadata) {
        if configuration.adminToken == nil {
            logger.warning("authentication is off: no admin token is set (allowed only because the server binds loopback)")
        }
        logger.info("browserd started", metadata: store.merging([
            "version": "\(BuildInfo.version)",
            "address": "\(configuration.server.host):\(server.port)",
            "threads": "\(configuration.server.threads)",
            "connectionLimit": "\(configuration.server.connectionLimit)",
            "maxBodyBytes": "\(configuration.server.maxBodyBytes)",
            "idleTimeout": "\(configuration.server.idleTimeoutSeconds)s",
        ]) { $1 })
    }

    /// Stops taking work, answers what is in flight, ends streams and stops the server.
    public func shutdown() async {
        readiness.block("shutdown", reason: "shutting down")
        await server.shutdown()
        service.events.stop()
        recovery.stop()
        if let writer = sink.detach() {
            await writer.stop()
            let stats = writer.statistics
            logger.info("store writer stopped", metadata: ["commits": "\(stats.commits)", "changes": "\(stats.changes)"])
        }
        if let cluster = membership.current { await cluster.stop() }
        if let pool = postgresRun.withLock({ $0 }) {
            pool.cancel()
            await pool.value
        }
        logger.info("browserd stopped")
    }

    /// The bound port (useful with port 0).
    public var port: Int { server.port }
}
