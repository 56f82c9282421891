import BrowserAPI
import BrowserCluster
import BrowserPersistence
import BrowserPostgres
import Foundation
import Logging
import Synchronization

extension Application {
    /// Starts as one of several instances on a PostgreSQL database: nothing is restored up front;
    /// each profile is restored by the instance that first takes its lease (see ``ClusterMembership``).
    func startMember(store: PostgresStore, held: HeldLeases, started: ContinuousClock.Instant) async throws {
        readiness.clear("startup")
        try server.start()
        if held.advertiseURL.isEmpty {
            let host = configuration.server.host
            held.advertiseURL = "http://\(host.contains(":") ? "[\(host)]" : host):\(server.port)"
        }
        let leases = ProfileLeases(store: store, held: held, logger: logger)
        let cluster = ClusterMembership(leases: leases, store: store, service: service, tokens: tokens, idempotency: idempotency,
                                        webDriverBasePath: configuration.webDriverBasePath, secret: configuration.clusterSecret ?? "",
                                        timing: configuration.clusterTiming, factory: metricsFactory, logger: logger)
        membership.set(cluster)
        placement.set(cluster)
        sink.attach(StoreWriter(store: store))
        // /readyz says whether the database answers (probed every ClusterTiming.databaseProbeEvery).
        let (readiness, logger) = (self.readiness, self.logger)
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
        announceStarted([
            "database": "\(store.url)",
            "instance": "\(held.instanceID)",
            "advertise": "\(held.advertiseURL)",
            "leaseSeconds": "\(held.ttlSeconds)",
            "startup": "\(ContinuousClock.now - started)",
        ])
    }
}
