import BrowserAPI
import BrowserPersistence
import BrowserRecords
import BrowserServices
import Foundation
import HTTPServer
import Logging
import Synchronization

/// The state in one SQLite file under the data directory (the default): restored whole at start
/// (tabs read on their own thread while the model is rebuilt), rolled back in memory after a failed
/// commit, backed up with `VACUUM INTO`.
struct EmbeddedBackend: StoreBackend {
    let dataDirectory: String
    let backupKeep: Int

    var databasePath: String { (dataDirectory as NSString).appendingPathComponent("browserd.sqlite") }
    var storedProfiles: (@Sendable () async throws -> [ProfileSnapshot])? { nil }
    var otherWindows: (@Sendable (HTTPRequest) async throws -> [ListedWindow])? { nil }
    var placement: PlacementSlot? { nil }
    var responseHeaders: HTTPHeaders { [:] }

    func backup() async throws -> (path: String, bytes: Int) {
        try await DatabaseBackup(databasePath: databasePath, keep: backupKeep).write()
    }

    func start(_ app: Application, started: ContinuousClock.Instant) async throws {
        try DataDirectory(path: dataDirectory).prepare()
        let store = try PersistenceStore(path: databasePath)
        app.readiness.block("restore", reason: "restoring the saved state")
        app.readiness.clear("startup")
        try app.server.start()
        if let gate = app.restoreGate.withLock({ $0 }) { await gate() }
        let stored = try store.load(includingTabs: false)
        let feed = TabFeed(store: store, windows: BrowserService.restoreOrder(stored))
        let totals = (profiles: stored.profiles.count, windows: stored.windows.count, tabs: try store.tabCount())
        // A long restore says how far it is: /readyz's 503 body at each window, a log line each second.
        let progress = Mutex(BrowserService.RestoreSummary())
        let (readiness, logger) = (app.readiness, app.logger)
        @Sendable func describe(_ done: BrowserService.RestoreSummary) -> String {
            "\(done.profiles)/\(totals.profiles) profiles, \(done.windows)/\(totals.windows) windows, \(done.tabs)/\(totals.tabs) tabs"
        }
        let reporter = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                if Task.isCancelled { break }
                logger.info("restoring", metadata: ["progress": "\(describe(progress.withLock { $0 }))"])
            }
        }
        let summary: BrowserService.RestoreSummary
        do {
            summary = try await app.service.restore(stored, tabs: { try feed.tabs(ofWindow: $0) }) { done in
                progress.withLock { $0 = done }
                readiness.block("restore", reason: "restoring the saved state: \(describe(done))")
            }
            reporter.cancel()
            feed.finish()
        } catch {
            reporter.cancel()
            feed.finish()
            throw error
        }
        app.tokens.restore(stored.tokens.map(TokenStore.Record.init))
        app.idempotency.restore(stored.idempotency)
        app.sink.attach(StoreWriter(store: store))
        readiness.clear("restore")
        for (window, route, outcome) in await app.service.runSavedRoutes() {
            logger.notice(
                "followed a route saved during restore",
                metadata: [
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
        logger.info(
            "restored",
            metadata: [
                "database": "\(databasePath)", "profiles": "\(summary.profiles)", "windows": "\(summary.windows)",
                "tabs": "\(summary.tabs)", "repairs": "\(summary.repairs.count)", "duration": "\(ContinuousClock.now - started)",
            ])
        app.announceStarted(["dataDir": "\(dataDirectory)"])
    }

    func realign(after failure: StoreWriter, service: BrowserService, logger: Logger) async throws {
        let stored = try await failure.readBack()
        let summary = try await service.rollBack(to: stored)
        for repair in summary.repairs.prefix(100) {
            logger.warning("rollback repaired a stored value", metadata: ["repair": "\(repair)"])
        }
        logger.notice(
            "changes that were not committed were undone in memory",
            metadata: [
                "windowsRebuilt": "\(summary.windowsRebuilt)", "windowsClosed": "\(summary.windowsClosed)",
                "windowsReopened": "\(summary.windowsReopened)", "profilesRemoved": "\(summary.profilesRemoved)",
                "profilesRestored": "\(summary.profilesRestored)",
            ])
    }

    func beforeScrape() {}

    func stop() async {}
}
