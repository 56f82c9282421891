import BrowserAPI
import BrowserAccess
import BrowserPersistence
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
    /// Which renderer renders which profile (renderers register with `PUT /v1/renderers/{name}`).
    let rendererRegistry: StoredRendererRegistry
    /// Answers kept per Idempotency-Key (also stored with their changes and restored at start).
    let idempotency: IdempotencyStore
    /// The API's routes (what the backend asks of them, e.g. whether a profile has WebDriver sessions).
    let api: APIRoutes
    /// The stream tickets the API issues and redeems.
    let tickets: StreamTicketStore
    let registry: PrometheusCollectorRegistry
    let sink: StoreSink
    /// Awaited before the saved state is loaded (tests hold restore open with it).
    let restoreGate = Mutex<(@Sendable () async -> Void)?>(nil)
    /// Retries a failed storage until it is healthy again; stopped at shutdown.
    let recovery: StorageRecovery
    /// Settles the renderer leases that ran out (``APIRoutes/settleExpiredLeases()``) while serving.
    private let leaseSweep = Mutex<Task<Void, Never>?>(nil)
    /// Every (method, template) the server answers, for the contract check.
    let routes: [(method: HTTPMethod, template: String)]
    /// Where the state lives: the embedded SQLite file, or PostgreSQL with the cluster.
    let backend: any StoreBackend
    let metricsFactory: PrometheusMetricsFactory

    /// Builds the application; nothing listens until ``start()``.
    /// - Parameters:
    ///   - configuration: validated configuration.
    ///   - logger: the root logger.
    public init(configuration: BrowserdConfiguration, logger: Logger) {
        configuration.memoryPolicy.applyAtStart()
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
        let streamsGauge = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "browserd", metricName: "event", unitName: "streams", helpText: "Event streams open now."))
        let serviceForMetrics = Mutex<BrowserService?>(nil)
        let backend = Self.backend(for: configuration, sink: sink, factory: factory)
        self.backend = backend
        let renderersGauge = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "browserd", metricName: "renderers", unitName: "registered", helpText: "Renderers whose registration is live."))
        let assignedGauge = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "browserd", metricName: "renderer", unitName: "assigned_profiles", helpText: "Profiles a renderer holds now."))
        let registryForMetrics = Mutex<StoredRendererRegistry?>(nil)
        let answerMetrics = AnswerCacheMetrics(factory: factory)
        operations.beforeScrape = {
            if let service = serviceForMetrics.withLock({ $0 }) {
                streamsGauge.set(to: Double(service.events.openStreams))
                answerMetrics.record(service.answerCache)
            }
            if let registry = registryForMetrics.withLock({ $0 }) {
                let (renderers, assigned) = registry.counts()
                renderersGauge.set(to: Double(renderers))
                assignedGauge.set(to: Double(assigned))
            }
            backend.beforeScrape()
        }
        operations.register(in: &router)
        InspectorRoutes().register(in: &router)
        let actionMetrics = ActionMetrics(factory: factory)
        let service = BrowserService(
            limits: configuration.modelLimits, sink: sink, storedTabs: backend.storedTabs, waitsForCommit: !configuration.relaxedDurability,
            events: configuration.events, framing: SSEFraming(),
            onAction: { name, ok in
                actionMetrics.count(name, ok: ok)
            },
            writeQuota: configuration.profileWriteBytesPerSecond == 0
                ? nil
                : WriteQuota(bytesPerSecond: configuration.profileWriteBytesPerSecond, burstBytes: 8 * configuration.profileWriteBytesPerSecond),
            answerCacheBytes: configuration.windowAnswerCacheBytes)
        self.service = service
        serviceForMetrics.withLock { $0 = service }
        let tokens = TokenStore(adminToken: configuration.adminToken)
        self.tokens = tokens
        let rendererRegistry = StoredRendererRegistry(
            leaseDuration: .seconds(configuration.rendererLeaseSeconds),
            wanting: { [service, stored = backend.storedProfiles] in try await StoredRendererRegistry.profilesWithWindows(service, stored: stored) },
            commit: { [sink] change in try await sink.commit(change) })
        self.rendererRegistry = rendererRegistry
        // A profile's first window is placed with a renderer at once, not at a renderer's next renewal.
        service.onWindowsOpen { [weak rendererRegistry] profiles in rendererRegistry?.windowsOpened(in: profiles) }
        registryForMetrics.withLock { $0 = rendererRegistry }
        let api = APIRoutes(
            service: service, tokens: tokens, idempotency: idempotency,
            tickets: tickets, webDriverBasePath: configuration.webDriverBasePath,
            unavailable: { readiness.blockers.first { $0.component == "startup" || $0.component == "restore" }?.reason },
            backup: { try await backend.backup() },
            saveToken: { issued, revoked in
                var change = ChangeSet()
                if let issued { change.tokens = [issued.stored] }
                if let revoked { change.deletedTokens = [revoked.id] }
                change.profileID = (issued ?? revoked)?.profileID.rawValue
                try await sink.commit(change)
            },
            storedProfiles: backend.storedProfiles,
            otherWindows: backend.otherWindows,
            // Several instances: after authentication, each request is placed (served here, taken
            // over, or forwarded to the instance that holds its profile).
            placement: backend.placement,
            transfer: backend.transfer,
            webDriverLimits: configuration.webDriver,
            rendererControl: HTTPRendererControl(),
            renderers: rendererRegistry
        )
        self.api = api
        api.register(in: &router)
        // Another instance's relay sends a run of forwarded reads as one pipeline; its reads are then
        // answered through this router, each through the API's guard as on the wire.
        router.add(.post, APIRoutes.clusterPipelinePath, .enclosing(EnclosedPipeline.Policy(maxRequests: 64, admits: backend.admitsPipeline)))
        self.routes = router.routes
        // After a failed commit: at once, read back what the database holds and bring memory back to
        // it (what was answered 503 did not happen; reads work on a full disk); then, once a write
        // commits again, take changes again.
        let rolledBack = Mutex(false)
        recovery.configure { [service, sink] in
            guard let writer = sink.writer else { throw StoreError.stopped }
            if !rolledBack.withLock({ $0 }) {
                try await backend.realign(after: writer, service: service, logger: logger)
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
        // A profile document may be far larger than any other body: judged from its head first (only
        // the administrator imports), two at most held at once, one per sender, each within the
        // transfer timeout.
        server.largeBodies = LargeBodies(
            paths: ["/v1/profiles/import"], maxBytes: configuration.maxImportBytes, concurrent: 2, perPrincipal: 1,
            deadline: .seconds(configuration.transferTimeoutSeconds), admit: APIRoutes.uploadAdmission(tokens: tokens))
        // No web page on another origin may change state (CSRF), whether authentication is on or off;
        // a browser UI on an origin CORS allows may. curl and SDKs send neither header: allowed.
        let cors = server.cors
        server.crossOriginProtection = CrossOriginProtection { origin in cors?.allows(origin) ?? false }
        // Several instances: every answer names the instance that made it (a relayed one keeps its own).
        server.responseHeaders = backend.responseHeaders
        // Answers held for a pipelined run (TCP_CORK): only for another instance's relay.
        server.pipelineHintFrom = backend.honoursPipelineHint
        let http = HTTPServer(
            configuration: server, router: router, logger: logger,
            observer: MetricsObserver(factory: factory))
        self.server = http
        // The adaptive tick gathers events only while the stream loops still write the last ones.
        service.events.deliveryBusy { [weak http] in http?.streamsBusy ?? false }
        Gauge(label: "browserd_build_info", dimensions: [("version", BuildInfo.version)], factory: factory).record(1)
    }

    /// Opens the store and brings the state into memory (as the backend does it), binds the server and
    /// marks the service ready.
    /// - Throws: when the data directory cannot be made writable, the database is unusable (it is
    ///   never overwritten), or the address cannot be bound.
    public func start() async throws {
        try await backend.start(self, started: .now)
        let api = self.api
        leaseSweep.withLock {
            $0 = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: RendererLeases.expirySweep)
                    await api.settleExpiredLeases()
                }
            }
        }
    }

    /// The start-up line (tests and tools read its `address`), after a warning when authentication is off.
    func announceStarted(_ store: Logger.Metadata) {
        if configuration.adminToken == nil {
            logger.warning("authentication is off: no admin token is set (allowed only because the server binds loopback)")
        }
        logger.info(
            "browserd started",
            metadata: store.merging([
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
        leaseSweep.withLock { $0?.cancel() }
        await server.shutdown()
        service.events.stop()
        rendererRegistry.stop()
        recovery.stop()
        if let writer = sink.detach() {
            await writer.stop()
            let stats = writer.statistics
            logger.info("store writer stopped", metadata: ["commits": "\(stats.commits)", "changes": "\(stats.changes)"])
        }
        await backend.stop()
        logger.info("browserd stopped")
    }

    /// The bound port (useful with port 0).
    public var port: Int { server.port }
}

extension Application {
    /// The store the configuration names: SQLite under the data directory, or (in a build with the
    /// `PostgreSQL` trait) PostgreSQL with the cluster.
    fileprivate static func backend(for configuration: BrowserdConfiguration, sink: StoreSink, factory: any MetricsFactory) -> any StoreBackend {
        #if PostgreSQL
            if let url = configuration.database {
                return ClusterBackend(url: url, configuration: configuration, sink: sink, factory: factory)
            }
        #endif
        return EmbeddedBackend(
            dataDirectory: configuration.dataDirectory, backupKeep: configuration.backupKeep,
            preload: configuration.preloadProfiles, idle: configuration.profileIdle)
    }
}
