import BrowserModel
import BrowserRecords
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import BrowserServices

/// The profile directory shared by several instances: what this one tells the others, and what it
/// makes of what they tell.
@Suite(.computing) struct DirectoryTests {
    /// Collects what the service tells other instances.
    final class Told: Sendable {
        private let changes = Mutex<[DirectoryChange]>([])
        var all: [DirectoryChange] { changes.withLock { $0 } }
        func take() -> [DirectoryChange] {
            changes.withLock {
                let all = $0
                $0 = []
                return all
            }
        }
        func add(_ more: [DirectoryChange]) { changes.withLock { $0 += more } }
    }

    private func watching(_ service: BrowserService) -> FakeSink {
        let sink = FakeSink()
        _ = service.watchDirectory(sink: sink, lastEventID: nil)
        return sink
    }

    /// The directory's events the watcher has read (after its `profiles.populate`).
    private func read(_ sink: FakeSink, _ service: BrowserService) -> [String] {
        _ = service.events.directory.pump()
        sink.drain()
        return Array(sink.events.map(\.name).drop { $0 == "profiles.populate" })
    }

    private func remote(_ name: String, windows: Int = 0, incognito: Bool = false, parent: ProfileID? = nil) -> ProfileSnapshot {
        ProfileSnapshot(
            id: ProfileID(rawValue: "remote-\(name)"), name: name, incognito: incognito, parentID: parent, offTheRecordID: nil,
            windowCount: windows, createdAt: Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test func changesMadeHereAreToldInOrder() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let told = Told()
        service.onDirectoryChange { told.add($0) }
        let profile = try await service.createProfile(name: "Work")
        #expect(told.take() == [.put(profile)])
        let window = try await service.createWindow(profile: profile.id)
        var counted = profile
        counted.windowCount = 1
        #expect(told.take() == [.put(counted)])
        let (incognito, _) = try await service.offTheRecordProfile(of: profile.id)
        let after = told.take()
        #expect(after.contains(.put(incognito)))
        #expect(after.contains { if case .put(let p) = $0 { p.id == profile.id && p.offTheRecordID == incognito.id } else { false } })
        try await service.closeWindow(window.id)
        _ = told.take()
        try await service.deleteProfile(profile.id)
        #expect(told.take().contains(.remove(profile.id)))
    }

    @Test func whatOthersTellIsListedAndStreamed() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let local = try await service.createProfile(name: "Here")
        let sink = watching(service)
        let work = remote("work")
        service.applyDirectoryChanges([.put(work)])
        service.applyDirectoryChanges([.put(work)])  // told twice: no second event
        var renamed = work
        renamed.name = "Work 2"
        service.applyDirectoryChanges([.put(renamed)])
        let otr = remote("work-otr", incognito: true, parent: work.id)
        service.applyDirectoryChanges([.put(otr)])
        #expect(service.directoryProfiles().map(\.id) == [work.id, otr.id, local.id])
        #expect(service.profiles().map(\.id) == [local.id], "the model holds only this instance's profiles")
        // A stale change about a profile held here is ignored.
        var stale = local
        stale.name = "Stale"
        service.applyDirectoryChanges([.put(stale)])
        #expect(service.profile(local.id)?.name == "Here")
        // Removing a profile removes its off-the-record profile too.
        service.applyDirectoryChanges([.remove(work.id)])
        #expect(read(sink, service) == ["profiles.add", "profiles.update", "profiles.add", "profiles.remove", "profiles.remove"])
        #expect(service.directoryProfiles().map(\.id) == [local.id])
    }

    @Test func aProfileThatChangesHandsIsNeitherAddedNorRemoved() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let told = Told()
        service.onDirectoryChange { told.add($0) }
        let profile = try await service.createProfile(name: "Moving")
        let (incognito, _) = try await service.offTheRecordProfile(of: profile.id)
        let sink = watching(service)
        _ = told.take()
        // The lease moves on: the regular profile stays listed, held elsewhere; the incognito one ends.
        await service.unloadProfile(profile.id)
        #expect(!service.holdsProfile(profile.id))
        #expect(service.directoryProfiles().map(\.id) == [profile.id])
        #expect(told.take() == [.remove(incognito.id)])
        #expect(read(sink, service) == ["profiles.remove"])
        // It comes back (this instance takes the lease again): no add, and nothing told when unchanged.
        var stored = StoredState()
        stored.profiles = [ProfileRecord(id: profile.id.rawValue, name: "Moving", createdAt: profile.createdAt)]
        _ = try await service.restoreProfile(stored)
        #expect(service.holdsProfile(profile.id))
        #expect(read(sink, service) == ["profiles.remove", "profiles.update"], "its off-the-record link is gone: one update")
        #expect(told.take().map { change -> ProfileID? in if case .put(let p) = change { p.id } else { nil } } == [profile.id])
        #expect(service.directoryProfiles().count == 1)
    }

    @Test func resyncReplacesRegularProfilesHeldElsewhere() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let a = remote("a")
        let b = remote("b")
        let otr = remote("a-otr", incognito: true, parent: a.id)
        var linked = a
        linked.offTheRecordID = otr.id
        service.applyDirectoryChanges([.put(linked), .put(b), .put(otr)])
        var a2 = a
        a2.windowCount = 3
        service.resyncDirectory(stored: [a2])
        let listed = Dictionary(uniqueKeysWithValues: service.directoryProfiles().map { ($0.id, $0) })
        #expect(Set(listed.keys) == [a.id, otr.id], "b is gone from the database; a's off-the-record profile stays")
        #expect(listed[a.id]?.windowCount == 3 && listed[a.id]?.offTheRecordID == otr.id)
    }
}
