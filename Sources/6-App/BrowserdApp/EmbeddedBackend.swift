import BrowserAPI
import BrowserAccess
import BrowserPersistence
import BrowserRecords
import BrowserResidency
import BrowserServices
import Foundation
import HTTPServer
import Logging
import Metrics
import ProcessMemory
import Synchronization

/// The state in one SQLite file under the data directory (the default). At start only the directory
/// of stored profiles is read (ready at once, whatever the database holds); each profile loads on its
/// first use and leaves memory again when idle (``ProfileResidency``, ``EmbeddedPlacement``). `--preload-profiles` restores
/// every profile before ready instead (tabs read on their own thread while the model is rebuilt).
/// Rolled back in memory after a failed commit, backed up with `VACUUM INTO`.
struct EmbeddedBackend: StoreBackend {
    let dataDirectory: String
    let backupKeep: Int
    let preload: Bool
    let idle: Duration?
    private let slot = PlacementSlot()
    private let transferSlot = ProfileTransferSlot()
    private let tabsSlot = StoredTabsSlot()
    private let running = Running()

    /// What start made, for stop.
    final class Running: Sendable {
        let sweeper = Mutex<Task<Void, Never>?>(nil)
    }

    init(dataDirectory: String, backupKeep: Int, preload: Bool = false, idle: Duration? = nil) {
        self.dataDirectory = dataDirectory
        self.backupKeep = backupKeep
        self.preload = preload
        self.idle = idle
    }

    var databasePath: String { (dataDirectory as NSString).appendingPathComponent("browserd.sqlite") }
    var storedProfiles: (@Sendable () async throws -> [ProfileSnapshot])? { nil }
    var otherWindows: (@Sendable (HTTPRequest) async throws -> [ListedWindow])? { nil }
    var placement: PlacementSlot? { slot }
    var transfer: ProfileTransferSlot? { transferSlot }
    var storedTabs: any StoredTabReading { tabsSlot }
    var responseHeaders: HTTPHeaders { [:] }
    /// No cluster: no peer.
    var admitsPipeline: @Sendable (HTTPRequest) -> Bool { { _ in false } }
    var honoursPipelineHint: @Sendable (HTTPRequest) -> Bool { { _ in false } }

    func backup() async throws -> (path: String, bytes: Int) {
        try await DatabaseBackup(databasePath: databasePath, keep: backupKeep).write()
    }

    func start(_ app: Application, started: ContinuousClock.Instant) async throws {
        try DataDirectory(path: dataDirectory).prepare()
        // Checked whole (quick_check reads every page) before anything is migrated; otherwise after
        // ready, on a thread of its own, so a large database does not delay the start.
        let store = try PersistenceStore(path: databasePath, deferringCheck: true)
        app.readiness.block("restore", reason: "reading the directory of stored profiles")
        app.readiness.clear("startup")
        try app.server.start()
        if let gate = app.restoreGate.withLock({ $0 }) { await gate() }
        var shared = StoredState()
        try store.loadShared(into: &shared)
        let directory = try store.directory()
        // Counting every profile's windows and tabs filled the connection's page cache: the writer
        // needs none of it, and a server at rest holds no cache of what it read once.
        store.releaseMemory()
        let sink = app.sink
        let reader = try StoreReader(path: databasePath)
        // Unrealized tabs' histories, read when a command first needs them, on a reader of their own
        // (a failed read fails that request: 503, nothing changed, nothing made up).
        let histories = try StoreReader(path: databasePath)
        let logger = app.logger
        let realized = Counter(label: "browserd_tabs_realized_total", factory: app.metricsFactory)
        app.service.onRealizationBurst { count in
            logger.warning(
                "many tabs were realized within one second: something read whole lists of histories",
                metadata: ["realized": "\(count)+"])
        }
        tabsSlot.set(EmbeddedStoredTabs(reader: histories, realized: realized, logger: logger))
        let backend = EmbeddedResidencyBackend(
            service: app.service, reader: reader, histories: histories,
            hasWebDriverSessions: { [api = app.api] in api.hasWebDriverSessions(profile: $0) },
            flush: { try await sink.commit(ChangeSet()) }, memory: app.configuration.memoryPolicy, logger: app.logger)
        if preload { try await restoreEverything(store, app: app, started: started) }
        app.service.resyncDirectory(stored: directory.map { ProfileSnapshot(stored: $0.profile, windowCount: $0.windowCount) })
        let residency = ProfileResidency(service: app.service, backend: backend, idle: idle, factory: app.metricsFactory, logger: app.logger)
        let placement = EmbeddedPlacement(
            residency: residency, reader: reader, tokens: app.tokens, webDriverBasePath: app.configuration.webDriverBasePath, logger: app.logger)
        app.tokens.restore(shared.tokens.map(TokenStore.Record.init))
        app.rendererRegistry.restore(shared.rendererAssignments, lastFence: shared.rendererFence, renderings: shared.renderings)
        app.idempotency.restore(shared.idempotency)
        app.sink.attach(StoreWriter(store: store))
        slot.set(placement)
        transferSlot.set(
            EmbeddedProfileTransfer(
                databasePath: databasePath, service: app.service, sink: sink, reader: reader, limits: app.configuration.modelLimits,
                maxDecodedBytes: app.configuration.maxSessionBytes, timeout: .seconds(app.configuration.transferTimeoutSeconds)))
        app.readiness.clear("restore")
        running.sweeper.withLock { $0 = residency.sweeping() }
        app.logger.info(
            "ready",
            metadata: [
                "database": "\(databasePath)", "profiles": "\(directory.count)",
                "windows": "\(directory.reduce(0) { $0 + $1.windowCount })",
                "loaded": "\(app.service.heldProfiles.count)", "duration": "\(ContinuousClock.now - started)",
            ])
        app.announceStarted(["dataDir": "\(dataDirectory)"])
        checkInBackground(readiness: app.readiness, logger: app.logger, memory: app.configuration.memoryPolicy)
    }

    /// `PRAGMA quick_check` on a connection of its own: a database that fails it makes `/readyz` 503
    /// with the report (stop, and restore a backup) and says so in the log.
    private func checkInBackground(readiness: Readiness, logger: Logger, memory: MemoryPolicy) {
        let path = databasePath
        let thread = Thread {
            Thread.current.name = "bd-db-check"
            let started = ContinuousClock.now
            do {
                if let problem = try PersistenceStore(readingAt: path).quickCheck() {
                    readiness.block("integrity", reason: "the database failed PRAGMA quick_check (\(problem.prefix(200))): stop browserd and restore a backup")
                    logger.critical("the database failed its check", metadata: ["database": "\(path)", "report": "\(problem.prefix(500))"])
                } else {
                    logger.info("the database passed its check", metadata: ["duration": "\(ContinuousClock.now - started)"])
                }
            } catch {
                logger.error("the database could not be checked", metadata: ["database": "\(path)", "error": "\(error)"])
            }
            // Its connection read the whole file through a page cache now freed: give the pages back.
            memory.afterLoad()
        }
        thread.start()
    }

    /// `--preload-profiles`: every profile back in memory before ready, its progress in `/readyz`'s body
    /// and a log line each second.
    private func restoreEverything(_ store: PersistenceStore, app: Application, started: ContinuousClock.Instant) async throws {
        let stored = try store.load(includingTabs: false)
        // Counted before the feed starts: from then on the store is the feed's thread's alone.
        let totals = (profiles: stored.profiles.count, windows: stored.windows.count, tabs: try store.tabCount())
        let feed = TabFeed(store: store, windows: BrowserService.restoreOrder(stored))
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
                "profiles": "\(summary.profiles)", "windows": "\(summary.windows)", "tabs": "\(summary.tabs)",
                "repairs": "\(summary.repairs.count)", "duration": "\(ContinuousClock.now - started)",
            ])
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

    func stop() async {
        running.sweeper.withLock { $0?.cancel() }
    }
}

/// The SQLite store's reading of tabs: on a reader of its own, so a realization never waits behind a
/// profile's load (a failed read fails that request: 503, nothing changed, nothing made up).
struct EmbeddedStoredTabs: StoredTabReading {
    let reader: StoreReader
    let realized: Counter
    let logger: Logger

    func histories(ofTabs ids: [String]) async throws -> [String: BrowserService.StoredHistory] {
        do {
            let read = try await reader.read { store in
                var read: [String: BrowserService.StoredHistory] = [:]
                for id in ids {
                    if let (entries, index) = try store.history(ofTab: id) { read[id] = .init(entries: entries, index: index) }
                }
                return read
            }
            realized.increment(by: Int64(read.count))
            return read
        } catch {
            logger.error("tab histories could not be read", metadata: ["tabs": "\(ids.count)", "error": "\(error)"])
            throw error
        }
    }

    func snapshot(ofTab id: String) async throws -> SnapshotRecord? { try await reader.read { try $0.snapshot(ofTab: id) } }
}
