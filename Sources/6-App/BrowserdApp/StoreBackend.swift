import BrowserAPI
import BrowserPersistence
import BrowserServices
import HTTPServer
import Logging

/// Where the state lives, and all that comes with that choice: the embedded SQLite file
/// (``EmbeddedBackend``), or PostgreSQL shared by several instances with the cluster
/// (``ClusterBackend``). ``Application`` asks its backend; it never tests which one it has.
protocol StoreBackend: Sendable {
    /// Every regular profile stored, whichever instance holds it; nil: those in memory are all there are.
    var storedProfiles: (@Sendable () async throws -> [ProfileSnapshot])? { get }
    /// The windows other instances hold that a request's caller may see; nil: none.
    var otherWindows: (@Sendable (HTTPRequest) async throws -> [ListedWindow])? { get }
    /// The API's placement stage; nil: every request is served here.
    var placement: PlacementSlot? { get }
    /// Export and import of whole profiles; nil: this store does not offer them (501).
    var transfer: ProfileTransferSlot? { get }
    /// What the service reads of stored tabs (histories of unrealized tabs, stored pictures), given
    /// to it when it is made; its reads fail until the store is open.
    var storedTabs: any StoredTabReading { get }
    /// Headers every answer carries (which instance made it).
    var responseHeaders: HTTPHeaders { get }
    /// Whether a pipeline of reads (`APIRoutes.clusterPipelinePath`) comes from another instance of
    /// this cluster, and is answered.
    var admitsPipeline: @Sendable (HTTPRequest) -> Bool { get }
    /// Whose `X-Browserd-Pipelined: more` the HTTP edge honours: another instance's relay (proven by
    /// its peer proof), nobody else's.
    var honoursPipelineHint: @Sendable (HTTPRequest) -> Bool { get }

    /// Writes a consistent copy of the state. - Throws: an HTTP problem when this store is backed up otherwise.
    func backup() async throws -> (path: String, bytes: Int)
    /// Opens the store, brings the state into memory (or, with several instances, nothing up front),
    /// attaches the writer, starts the server and says it started.
    func start(_ app: Application, started: ContinuousClock.Instant) async throws
    /// After a failed commit, once: makes memory agree with the store again (what was answered 503 did
    /// not happen).
    func realign(after failure: StoreWriter, service: BrowserService, logger: Logger) async throws
    /// Before each metrics scrape.
    func beforeScrape()
    /// Ends what ``start(_:started:)`` started, after the writer stopped.
    func stop() async
}
