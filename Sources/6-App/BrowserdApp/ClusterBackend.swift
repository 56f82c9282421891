#if PostgreSQL
    import BrowserAPI
    import BrowserCluster
    import ClusterCore
    import BrowserPersistence
    import BrowserPostgres
    import BrowserRecords
    import BrowserServices
    import Foundation
    import HTTPServer
    import Logging
    import Metrics
    import Synchronization

    /// The state in PostgreSQL, shared by several instances (`--database-url`): nothing is restored up
    /// front — each profile is restored by the instance that first takes its lease (see
    /// ``ClusterMembership``); a failed commit drops the profiles held instead of rolling memory back;
    /// PostgreSQL's own tools back it up.
    final class ClusterBackend: StoreBackend {
        let url: DatabaseURL
        let configuration: BrowserdConfiguration
        /// This process's id among the instances, named in every answer (`X-Browserd-Instance`).
        let instanceID = InstanceID.random()
        /// The membership, once started (routes and metrics are made before).
        let membership = ClusterMembership.Slot()
        let placementSlot = PlacementSlot()
        private let tabsSlot = StoredTabsSlot()
        /// The PostgreSQL pool's task, ended at shutdown after the writer.
        private let pool = Mutex<Task<Void, Never>?>(nil)
        private let ownedGauge: Gauge

        init(url: DatabaseURL, configuration: BrowserdConfiguration, sink: StoreSink, factory: any MetricsFactory) {
            self.url = url
            self.configuration = configuration
            ownedGauge = Gauge(label: "browserd_owned_profiles", factory: factory)
            // A commit fenced out, or refused, drops that profile here (another instance holds it, or the
            // database would not take its change).
            let membership = self.membership
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

        var storedProfiles: (@Sendable () async throws -> [ProfileSnapshot])? {
            { [membership] in
                guard let cluster = membership.current else { return [] }
                return try await cluster.stored.storedProfiles().map { ProfileSnapshot(stored: $0.record, windowCount: $0.windowCount) }
            }
        }

        var otherWindows: (@Sendable (HTTPRequest) async throws -> [ListedWindow])? {
            { [membership] request in
                guard let cluster = membership.current else { return [] }
                return try await cluster.otherWindows(request)
            }
        }

        var placement: PlacementSlot? { placementSlot }
        var transfer: ProfileTransferSlot? { nil }
        var storedTabs: any StoredTabReading { tabsSlot }

        var responseHeaders: HTTPHeaders {
            var headers = HTTPHeaders()
            headers.set(ClusterMembership.instanceHeader, instanceID.rawValue)
            return headers
        }

        var admitsPipeline: @Sendable (HTTPRequest) -> Bool {
            { [membership] request in membership.current?.admitsPipeline(request) ?? false }
        }

        var honoursPipelineHint: @Sendable (HTTPRequest) -> Bool {
            { [membership] request in membership.current?.isFromPeer(request) ?? false }
        }

        func backup() async throws -> (path: String, bytes: Int) {
            throw HTTPError(
                409, kind: "backup-elsewhere", title: "Backup Elsewhere",
                detail: "The state is in PostgreSQL: back it up with PostgreSQL's own tools (pg_dump, base backups).")
        }

        func start(_ app: Application, started: ContinuousClock.Instant) async throws {
            let timing = configuration.clusterTiming
            let held = HeldLeases(instanceID: instanceID, advertiseURL: configuration.advertiseURL ?? "", ttlSeconds: timing.leaseSeconds)
            let store = PostgresStore(url: url, fence: held, callDeadline: timing.databaseCallDeadline, logger: app.logger)
            // The pool serves leases once run() has started: start it before the first query. Detached:
            // the pool must outlive the service group's graceful shutdown (which its run() would follow),
            // since the writer commits what is queued after the server stops; ``stop()`` ends it last.
            await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                pool.withLock {
                    $0 = Task.detached {
                        started.resume()
                        await store.run()
                    }
                }
            }
            try await store.prepare()
            // The server answers from here on; until the writer is attached below, API calls get 503s
            // saying so and /readyz is not 200 (a client that waited for it must find writes taken).
            app.readiness.block("restore", reason: "joining the cluster: reading leases and renderers from the database")
            app.readiness.clear("startup")
            try app.server.start()
            if held.advertiseURL.isEmpty {
                let host = configuration.server.host
                held.advertiseURL = "http://\(host.contains(":") ? "[\(host)]" : host):\(app.server.port)"
            }
            let cluster = ClusterMembership(
                leases: ProfileLeases(store: store, held: held, logger: app.logger), store: store,
                service: app.service, tokens: app.tokens, idempotency: app.idempotency,
                webDriverBasePath: configuration.webDriverBasePath, secret: configuration.clusterSecret ?? "",
                timing: timing, forwarding: configuration.forwardingPath, idle: configuration.profileIdle,
                hasWebDriverSessions: { [api = app.api] in api.hasWebDriverSessions(profile: $0) },
                flush: { [sink = app.sink] in try await sink.commit(ChangeSet()) }, memory: configuration.memoryPolicy,
                factory: app.metricsFactory, logger: app.logger)
            membership.set(cluster)
            placementSlot.set(cluster)
            // Tabs' pictures stored by an earlier run (or another instance), read when one is asked for.
            tabsSlot.set(ClusterStoredTabs(lookups: cluster.stored))
            // Which renderer holds which profile: decided in the database by every instance (read
            // before the server takes renderers' calls: "restore" still blocks them).
            try await app.rendererRegistry.share(PostgresRendererState(store: store), logger: app.logger)
            app.sink.attach(StoreWriter(store: store))
            // /readyz says whether the database answers (probed every ClusterTiming.databaseProbeEvery).
            let (readiness, logger) = (app.readiness, app.logger)
            let down = Mutex(false)
            cluster.start { error in
                let wasDown = down.withLock { was in
                    defer { was = error != nil }
                    return was
                }
                if let error {
                    if !wasDown { logger.error("the database does not answer", metadata: ["error": "\(error)"]) }
                    readiness.block("database", reason: "the database does not answer: \(error)")
                } else {
                    if wasDown { logger.notice("the database answers again") }
                    readiness.clear("database")
                }
            }
            readiness.clear("restore")
            app.announceStarted([
                "database": "\(store.url)", "instance": "\(held.instanceID)", "advertise": "\(held.advertiseURL)",
                "leaseSeconds": "\(held.ttlSeconds)", "startup": "\(ContinuousClock.now - started)",
            ])
        }

        /// Memory is not rolled back but dropped, profile by profile (the database is the truth, and another
        /// instance may take a profile over meanwhile); each comes back with the next request that names it.
        func realign(after failure: StoreWriter, service: BrowserService, logger: Logger) async throws {
            guard let cluster = membership.current else { return }
            let held = service.heldProfiles
            for profile in held { await cluster.drop(profile.rawValue, reason: .commitFailed) }
            try? await cluster.leases.release(held.map(\.rawValue))
            logger.notice(
                "profiles dropped from memory after a failed commit; they come back from the database on demand",
                metadata: ["profiles": "\(held.count)"])
        }

        func beforeScrape() {
            if let cluster = membership.current { ownedGauge.record(cluster.leases.held.count) }
        }

        func stop() async {
            if let cluster = membership.current { await cluster.stop() }
            if let pool = pool.withLock({ $0 }) {
                pool.cancel()
                await pool.value
            }
        }
    }

    /// PostgreSQL's reading of tabs: pictures stored by an earlier run or another instance. Its
    /// profiles are restored with every history (none is left unrealized), so none is read here.
    struct ClusterStoredTabs: StoredTabReading {
        let lookups: StoredLookups

        func histories(ofTabs ids: [String]) async throws -> [String: BrowserService.StoredHistory] {
            throw ServiceError.storageUnreadable("this store restores every history whole: none is left to read")
        }

        func snapshot(ofTab id: String) async throws -> SnapshotRecord? { try await lookups.snapshot(ofTab: id) }
    }
#endif
