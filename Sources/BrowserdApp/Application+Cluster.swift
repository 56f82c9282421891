import BrowserAPI
import BrowserPersistence
import BrowserPostgres
import Foundation
import Logging

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
        let (tokens, tickets) = (self.tokens, self.tickets)
        let cluster = ClusterMembership(leases: leases, store: store, service: service, tokens: tokens, idempotency: idempotency,
                                        authenticationOn: configuration.adminToken != nil, webDriverBasePath: configuration.webDriverBasePath,
                                        secret: configuration.clusterSecret ?? "",
                                        authentic: { APIRoutes.carriesValidCredentials($0, tokens: tokens, tickets: tickets) },
                                        factory: metricsFactory, logger: logger)
        membership.set(cluster)
        sink.attach(StoreWriter(store: store))
        cluster.startRenewing()
        cluster.startListening()
        cluster.startFollowingTokens()
        cluster.directory.start()
        // /readyz says whether the database answers (checked every 2 s).
        let readiness = self.readiness
        let logger = self.logger
        databaseProbe.withLock { probe in
            probe = Task.detached {
                var down = false
                while !Task.isCancelled {
                    do {
                        try await store.ping()
                        if down { logger.notice("the database answers again") }
                        down = false
                        cluster.databaseAnswers.withLock { $0 = true }
                        readiness.clear("database")
                    } catch {
                        if !down { logger.error("the database does not answer", metadata: ["error": "\(error)"]) }
                        down = true
                        cluster.databaseAnswers.withLock { $0 = false }
                        readiness.block("database", reason: "the database does not answer: \(error)")
                    }
                    try? await Task.sleep(for: .seconds(2))
                }
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
