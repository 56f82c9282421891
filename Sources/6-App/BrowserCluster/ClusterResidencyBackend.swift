import BrowserAPI
import BrowserAccess
import BrowserModel
import BrowserPostgres
import BrowserRecords
import BrowserResidency
import BrowserServices
import ClusterCore
import Logging
import Metrics
import ProcessMemory

/// How a cluster instance brings a profile into memory: it takes the profile's lease, then reads it;
/// and lets it go: what it queued committed, then the lease given back (another instance may take it
/// at once). The rules of when are ``ProfileResidency``'s, shared with the embedded store.
final class ClusterResidencyBackend: ResidencyBackend {
    /// An acquire found the lease held by a live instance: the request goes there.
    struct MovedElsewhere: Error {
        let owner: Placement.Owner
    }

    let leases: ProfileLeases
    let store: PostgresStore
    let service: BrowserService
    let tokens: TokenStore
    let idempotency: IdempotencyStore
    let hasWebDriverSessions: @Sendable (ProfileID) -> Bool
    /// Returns once every change queued so far is committed.
    let flush: @Sendable () async throws -> Void
    /// `browserd_lease_takeovers_total`.
    let takeovers: Counter
    /// What the allocator is asked to do after a load and around evictions (the application's memory policy).
    let memory: MemoryPolicy
    let logger: Logger

    init(
        leases: ProfileLeases, store: PostgresStore, service: BrowserService, tokens: TokenStore, idempotency: IdempotencyStore,
        hasWebDriverSessions: @escaping @Sendable (ProfileID) -> Bool, flush: @escaping @Sendable () async throws -> Void, takeovers: Counter,
        memory: MemoryPolicy, logger: Logger
    ) {
        self.memory = memory
        self.leases = leases
        self.store = store
        self.service = service
        self.tokens = tokens
        self.idempotency = idempotency
        self.hasWebDriverSessions = hasWebDriverSessions
        self.flush = flush
        self.logger = logger
        self.takeovers = takeovers
    }

    func acquire(_ id: ProfileID, replacing unreachable: InstanceID?) async throws -> Bool {
        let profile = id.rawValue
        switch try await leases.acquire(profile, replacing: unreachable) {
        case .heldElsewhere(let instance, let url):
            throw MovedElsewhere(owner: Placement.Owner(instanceID: instance, url: url, live: true))
        case .acquired(let epoch):
            let started = ContinuousClock.now
            do {
                let stored = try await store.load(profile: profile)
                guard !stored.profiles.isEmpty else {
                    // Deleted meanwhile: nothing to hold (the request is answered 404 here).
                    try? await leases.release([profile])
                    return false
                }
                let summary = try await service.restoreProfile(stored)
                tokens.restore(stored.tokens.map(TokenStore.Record.init))
                idempotency.restore(stored.idempotency)
                memory.afterLoad()
                takeovers.increment()
                logger.notice(
                    "took a profile over",
                    metadata: [
                        "profile": "\(profile)", "epoch": "\(epoch)", "windows": "\(summary.windows)", "tabs": "\(summary.tabs)",
                        "duration": "\(ContinuousClock.now - started)",
                    ])
                return true
            } catch {
                // Not restored: give the lease back so this or another instance can try again.
                try? await leases.release([profile])
                throw error
            }
        }
    }

    func keeps(_ id: ProfileID) -> Bool { hasWebDriverSessions(id) }

    func evictionsBegin() { memory.beginEvictions() }
    func evictionsEnd() { memory.endEvictions() }

    func flushBeforeRelease(_ id: ProfileID) async throws { try await flush() }

    func released(_ id: ProfileID) async {
        // What it queued is committed before the lease goes: the next owner reads the last commit.
        do {
            try await flush()
            try await leases.release([id.rawValue])
        } catch {
            // The lease expires by itself; until then requests for it wait or get a 503.
            leases.forget(id.rawValue)
            logger.warning("dropping an idle profile: its changes or its lease could not be handed on", metadata: ["profile": "\(id)", "error": "\(error)"])
        }
    }
}
