import BrowserAPI
import BrowserAccess
import BrowserModel
import BrowserRecords
import BrowserResidency
import BrowserServices
import Foundation
import Metrics
import Synchronization
import TestSupport
import Testing

/// ``ProfileResidency``'s rules, with a backend of the test's own (both stores' backends are also run
/// by `WorkingSetTests` and `tests/cluster_test.py`): single flight, a failed load holds nothing, a
/// profile loading or being dropped is not served at once, idle eviction and what keeps a profile.
@Suite(.offThePool) struct ProfileResidencyTests {
    struct Unreadable: Error {}

    final class Backend: ResidencyBackend {
        let service: BrowserService
        let acquires = Mutex(0)
        let released = Mutex<[ProfileID]>([])
        let failures = Mutex(0)
        let kept = Mutex<Set<ProfileID>>([])
        let flushFails = Mutex(false)
        let acquireTakes: Duration
        let releaseTakes: Duration

        init(_ service: BrowserService, acquireTakes: Duration = .milliseconds(50), releaseTakes: Duration = .zero) {
            self.service = service
            self.acquireTakes = acquireTakes
            self.releaseTakes = releaseTakes
        }

        func acquire(_ id: ProfileID, replacing unreachable: InstanceID?) async throws -> Bool {
            acquires.withLock { $0 += 1 }
            try await Task.sleep(for: acquireTakes)
            let fails = failures.withLock { count in
                defer { count = max(0, count - 1) }
                return count > 0
            }
            if fails { throw Unreadable() }
            var stored = StoredState()
            stored.profiles = [ProfileRecord(id: id.rawValue, name: "Stored", createdAt: Date(timeIntervalSince1970: 1_000))]
            let created = Date(timeIntervalSince1970: 1_000)
            stored.windows = [
                WindowRecord(
                    id: "w-\(id.rawValue)", profileID: id.rawValue, version: 1, tabOrder: [], activeIndex: -1, pinnedCount: 0, groups: [],
                    createdAt: created, lastActiveAt: created)
            ]
            return try await service.restoreProfile(stored).profiles == 1
        }

        func keeps(_ id: ProfileID) -> Bool { kept.withLock { $0.contains(id) } }

        func flushBeforeRelease(_ id: ProfileID) async throws { if flushFails.withLock({ $0 }) { throw Unreadable() } }

        func released(_ id: ProfileID) async {
            try? await Task.sleep(for: releaseTakes)
            released.withLock { $0.append(id) }
        }
    }

    static func residency(_ backend: Backend, idle: Duration? = .seconds(10)) -> ProfileResidency {
        ProfileResidency(service: backend.service, backend: backend, idle: idle, factory: NOOPMetricsHandler.instance, logger: .init(label: "test"))
    }

    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw Unreadable() }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func concurrentFirstTouchesShareOneLoadAndNoneIsServedBeforeItEnds() async throws {
        let backend = Backend(BrowserService(storedTabs: NothingStored(), framing: SSEFraming()), acquireTakes: .milliseconds(200))
        let residency = Self.residency(backend)
        let id = ProfileID(rawValue: "p1")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 { group.addTask { try await residency.bringIn(id) } }
            try await Self.waitUntil { backend.acquires.withLock { $0 } == 1 }
            #expect(!residency.touch(id), "loading: not served at once")
            try await group.waitForAll()
        }
        #expect(backend.acquires.withLock { $0 } == 1, "16 first touches, one load")
        #expect(backend.service.holdsProfile(id))
        #expect(residency.touch(id))
        #expect(residency.root(of: .window("w-p1")) == id)
        try await residency.bringIn(id)
        #expect(backend.acquires.withLock { $0 } == 1, "in memory: nothing loads")
    }

    @Test func aFailedLoadHoldsNothingAndTheNextTouchLoadsAgain() async throws {
        let backend = Backend(BrowserService(storedTabs: NothingStored(), framing: SSEFraming()))
        backend.failures.withLock { $0 = 1 }
        let residency = Self.residency(backend)
        let id = ProfileID(rawValue: "p1")
        await #expect(throws: Unreadable.self) { try await residency.bringIn(id) }
        #expect(!backend.service.holdsProfile(id))
        #expect(residency.root(of: .profile("p1")) == nil)
        try await residency.bringIn(id)
        #expect(backend.service.holdsProfile(id))
        #expect(backend.acquires.withLock { $0 } == 2)
    }

    @Test func idleProfilesLeaveUnlessSomethingKeepsThem() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: SSEFraming())
        let backend = Backend(service, acquireTakes: .zero)
        let residency = Self.residency(backend, idle: .seconds(10))
        let (idle, kept, busy, withIncognito) = (ProfileID(rawValue: "idle"), ProfileID(rawValue: "kept"), ProfileID(rawValue: "busy"), ProfileID(rawValue: "otr"))
        for id in [idle, kept, busy, withIncognito] { try await residency.bringIn(id) }
        backend.kept.withLock { $0 = [kept] }
        _ = try await service.offTheRecordProfile(of: withIncognito)
        let start = ContinuousClock.now
        #expect(await residency.evictIdle(now: start + .seconds(5)) == [], "not idle yet")
        #expect(residency.touch(busy, now: start + .seconds(8)))
        let dropped = await residency.evictIdle(now: start + .seconds(12))
        #expect(dropped == [idle], "the kept one, the one touched at 8 s and the one with an incognito profile stay")
        #expect(backend.released.withLock { $0 } == [idle])
        #expect(!service.holdsProfile(idle) && service.holdsProfile(kept) && service.holdsProfile(busy) && service.holdsProfile(withIncognito))
        #expect(await residency.evictIdle(now: start + .seconds(19)).map(\.rawValue) == ["busy"])
        // Dropped, it comes back on its next touch.
        try await residency.bringIn(idle)
        #expect(service.holdsProfile(idle) && backend.acquires.withLock { $0 } == 5)
        #expect(await Self.residency(backend, idle: nil).evictIdle(now: start + .seconds(1_000)) == [], "no idle time: never")
    }

    /// An idle profile whose final flush fails stays in memory (what it acknowledged is not dropped),
    /// and leaves at a later sweep once the flush works (issue 53).
    @Test func anIdleProfileWhoseFlushFailsStays() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: SSEFraming())
        let backend = Backend(service, acquireTakes: .zero)
        let residency = Self.residency(backend, idle: .seconds(10))
        let id = ProfileID(rawValue: "p1")
        try await residency.bringIn(id)
        backend.flushFails.withLock { $0 = true }
        let start = ContinuousClock.now
        #expect(await residency.evictIdle(now: start + .seconds(12)) == [])
        #expect(service.holdsProfile(id) && backend.released.withLock { $0 }.isEmpty)
        #expect(residency.touch(id), "still served")
        backend.flushFails.withLock { $0 = false }
        #expect(await residency.evictIdle(now: .now + .seconds(12)) == [id])
        #expect(!service.holdsProfile(id))
    }

    @Test func aTouchDuringADropWaitsForItThenLoadsAgain() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: SSEFraming())
        let backend = Backend(service, acquireTakes: .zero, releaseTakes: .milliseconds(300))
        let residency = Self.residency(backend, idle: .seconds(1))
        let id = ProfileID(rawValue: "p1")
        try await residency.bringIn(id)
        let eviction = Task { await residency.evictIdle(now: .now + .seconds(2)) }
        try await Self.waitUntil { !service.holdsProfile(id) }
        #expect(!residency.touch(id), "being dropped: not served at once")
        try await residency.bringIn(id)
        #expect(backend.released.withLock { $0 } == [id], "the load waited for the drop to hand everything on")
        #expect(service.holdsProfile(id) && backend.acquires.withLock { $0 } == 2)
        #expect(await eviction.value == [id])
    }

    @Test func theSharedWebDriverProfileIsTheOldestRegularOneNamedSo() {
        func profile(_ id: String, _ name: String, at seconds: Double, incognito: Bool = false) -> ProfileSnapshot {
            ProfileSnapshot(
                id: ProfileID(rawValue: id), name: name, incognito: incognito, parentID: nil, offTheRecordID: nil, windowCount: 0,
                createdAt: Date(timeIntervalSince1970: seconds))
        }
        let profiles = [
            profile("a", "webdriver", at: 30), profile("b", "other", at: 5), profile("c", "webdriver", at: 20),
            profile("d", "webdriver", at: 10, incognito: true),
        ]
        #expect(ProfileResidency.sharedWebDriverProfile(among: profiles)?.id.rawValue == "c")
        #expect(ProfileResidency.sharedWebDriverProfile(among: [profiles[1]]) == nil)
    }
}
