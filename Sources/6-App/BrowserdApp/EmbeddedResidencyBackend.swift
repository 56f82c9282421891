import BrowserAPI
import BrowserModel
import BrowserRecords
import BrowserResidency
import BrowserServices
import Foundation
import Logging
import ProcessMemory

/// How the embedded store brings a profile into memory: nothing to take, its rows read alone. The
/// rules of when (first touch, idle eviction) are ``ProfileResidency``'s, shared with a cluster.
struct EmbeddedResidencyBackend: ResidencyBackend {
    let service: BrowserService
    let reader: StoreReader
    /// The connection unrealized tabs read their histories through (its cache is freed with the loads').
    let histories: StoreReader?
    /// Whether a regular profile has WebDriver sessions open (they keep it in memory).
    let hasWebDriverSessions: @Sendable (ProfileID) -> Bool
    /// Returns once every change queued so far is committed.
    let flush: @Sendable () async throws -> Void
    /// What the allocator is asked to do after loads and around evictions (``MemoryPolicy``).
    let memory: MemoryPolicy
    let logger: Logger

    func acquire(_ id: ProfileID, replacing unreachable: InstanceID?) async throws -> Bool {
        // A profile deleted in memory is out of the directory at once, though its rows stay until the
        // delete commits: it is never loaded again.
        guard service.isStoredElsewhere(id) else { return false }
        let raw = id.rawValue
        // Tabs load unrealized: their rows' summaries now, each history when it is first needed.
        // Read on the thread that builds the model (see `LoadThread`): the records are garbage once
        // the model holds the profile, and are freed there.
        let reader = self.reader
        let summary = try await service.restoreProfile(reading: { try reader.readNow { try $0.loadProfile(raw, histories: false) } })
        guard summary.profiles > 0 else { return false }
        for (window, route, outcome) in await service.runSavedRoutes() {
            logger.notice(
                "followed a route saved with the window", metadata: ["window": "\(window)", "savedRoute": "\(route.id)", "outcome": "\(outcome)"])
        }
        for repair in summary.repairs.prefix(100) {
            logger.warning("loading a profile repaired a stored value", metadata: ["profile": "\(id)", "repair": "\(repair)"])
        }
        // The records a load reads are garbage once the model holds the profile: give their pages back.
        memory.afterLoad()
        return true
    }

    func keeps(_ id: ProfileID) -> Bool { hasWebDriverSessions(id) }

    func flushBeforeRelease(_ id: ProfileID) async throws { try await flush() }

    func released(_ id: ProfileID) async {
        // What it queued must be on disk before anyone loads it again.
        do { try await flush() } catch { logger.warning("dropping a profile: the writer failed", metadata: ["profile": "\(id)", "error": "\(error)"]) }
    }

    func evictionsBegin() {
        // What the drops free leaves the heap at once (see the shim); glibc's usual settings come back
        // after them (what it earns is measured by bench/memory_policy.py).
        memory.beginEvictions()
    }

    func evictionsEnd() {
        // The readers' page caches were filled by the loads, among the model's allocations: freed too,
        // the pages the dropped profiles held can go back whole.
        for reader in [reader, histories].compactMap({ $0 }) { try? reader.readNow { $0.releaseMemory() } }
        memory.endEvictions()
    }
}
