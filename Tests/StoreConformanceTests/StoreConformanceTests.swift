import BrowserPersistence
import BrowserRecords
import Foundation
import Synchronization
import TestSupport
import Testing

/// What every store promises (``ChangeStore``), checked on SQLite and PostgreSQL alike.
@Suite(.offThePool) struct StoreConformanceTests {
    static let time = Date(timeIntervalSince1970: 1_700_000_000.5)

    /// A profile with a window of two tabs (every optional field set on one, none on the other), a
    /// group, a recently closed tab and a token.
    static func sample(profile: String = "p0000000000000001", window: String = "w0000000000000001") -> ChangeSet {
        var change = ChangeSet()
        change.profiles = [ProfileRecord(id: profile, name: "Work ✓", createdAt: time)]
        let history = (0..<3).map { HistoryEntryRecord(url: "https://e.example/\($0)", title: "T\($0) ✓", transition: "link", timestamp: time) }
        let a = TabRecord(
            id: "t\(profile.suffix(15))a", groupID: nil, openerID: nil, openerNavigationIndex: nil, title: "A", loading: false,
            progress: 1, faviconURL: nil, createdAt: time, lastActiveAt: time, historyIndex: 2, history: history)
        let b = TabRecord(
            id: "t\(profile.suffix(15))b", groupID: "g0000000000000001", openerID: a.id, openerNavigationIndex: 2,
            title: "B", loading: true, progress: 0.25, faviconURL: "", createdAt: time,
            lastActiveAt: time.addingTimeInterval(1), historyIndex: 0, history: [history[0]], position: 1024)
        change.windows = [
            WindowRecord(
                id: window, profileID: profile, version: 7, tabOrder: [], activeIndex: 1, pinnedCount: 1,
                groups: [GroupRecord(id: "g0000000000000001", title: "G", color: "cyan", collapsed: true)],
                createdAt: time, lastActiveAt: time)
        ]
        change.tabs = [(window, a), (window, b)]
        func closed(_ n: Int, index: Int, group: Bool, active: Bool, pinned: Bool) -> ClosedTabRecord {
            ClosedTabRecord(
                id: "c\(profile.suffix(14))\(n)", tabID: "t00000000000000\(n)", windowID: window, index: index,
                groupID: group ? "g0000000000000001" : nil,
                group: group ? ClosedGroupRecord(title: "Reading \(n)", color: "cyan", collapsed: n % 2 == 0) : nil,
                wasActive: active, wasPinned: pinned, title: "Gone \(n)", faviconURL: n == 11 ? "https://e.example/f.ico" : nil,
                closedAt: time, historyIndex: 0, history: [history[1]])
        }
        // A tab entry, a window entry (two tabs, one pinned, one grouped), and a close-all's parked tabs.
        change.closedAdded = [
            (profile, ClosedEntryRecord(tab: closed(11, index: 3, group: true, active: true, pinned: false))),
            (
                profile,
                ClosedEntryRecord(
                    id: "w\(profile.suffix(15))1", kind: .window,
                    tabs: [
                        closed(12, index: 0, group: false, active: false, pinned: true),
                        closed(13, index: 1, group: true, active: true, pinned: false),
                    ])
            ),
            (
                profile,
                ClosedEntryRecord(
                    id: "x\(profile.suffix(15))1", kind: .closing,
                    tabs: [
                        closed(14, index: 0, group: false, active: false, pinned: false)
                    ])
            ),
        ]
        change.tokens = [TokenRecord(id: "k\(profile.suffix(15))1", profileID: profile, hash: Array(repeating: 7, count: 32), createdAt: time)]
        return change
    }

    static func answer(_ key: String, at date: Date) -> IdempotencyRecord {
        IdempotencyRecord(
            key: "admin\n\(key)", fingerprint: [1, 2, 3], status: 201,
            headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "Location", value: "/v1/tabs/t1")],
            body: Array(#"{"id":"t1"}"#.utf8), createdAt: date)
    }

    @Test(arguments: StoreKind.available)
    func everyFieldRoundTrips(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            let change = Self.sample()
            try await fixture.withWriter { try await $0.submit(change) }
            let stored = try await fixture.read()
            #expect(stored.profiles == change.profiles)
            var window = change.windows[0]
            window.tabOrder = change.tabs.map(\.tab.id)
            #expect(stored.windows == [window])
            #expect(stored.tabs.count == 2)
            for (_, tab) in change.tabs { #expect(stored.tabs[tab.id] == tab) }
            // Newest first: rows written in one commit are newest last.
            #expect(stored.recentlyClosed["p0000000000000001"] == change.closedAdded.map(\.entry).reversed())
            #expect(stored.tokens == change.tokens)
            #expect(try await fixture.schemaVersion() >= 1)
        }
    }

    /// Renderers' assignments: written, moved, released; the last fence only goes up (issue 55).
    @Test(arguments: StoreKind.available)
    func rendererAssignmentsRoundTrip(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            try await fixture.withWriter { writer in
                var first = ChangeSet()
                first.rendererAssignments = [
                    RendererAssignmentRecord(profileID: "p1", renderer: "a", fence: 1), RendererAssignmentRecord(profileID: "p2", renderer: "a", fence: 2),
                ]
                first.rendererFence = 2
                try await writer.submit(first)
                var second = ChangeSet()
                second.rendererAssignments = [RendererAssignmentRecord(profileID: "p2", renderer: "b", fence: 3)]
                second.releasedRendererAssignments = ["p1"]
                second.rendererFence = 3
                try await writer.submit(second)
                var stale = ChangeSet()
                stale.rendererFence = 1
                stale.renderings = [
                    RenderingRecord(profileID: "p1", pin: "a", excluded: false), RenderingRecord(profileID: "p2", pin: nil, excluded: true),
                ]
                try await writer.submit(stale)
                var cleared = ChangeSet()
                cleared.renderings = [RenderingRecord(profileID: "p1", pin: nil, excluded: false)]
                try await writer.submit(cleared)
            }
            let stored = try await fixture.read()
            #expect(stored.rendererAssignments == [RendererAssignmentRecord(profileID: "p2", renderer: "b", fence: 3)])
            #expect(stored.rendererFence == 3, "never lowered")
            #expect(stored.renderings == [RenderingRecord(profileID: "p2", pin: nil, excluded: true)], "a default one deletes the row")
        }
    }

    /// A profile's web state (issue 52): written with the profile, replaced, cleared, gone with it.
    @Test(arguments: StoreKind.available)
    func webStatesRoundTrip(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            let (first, second) = (Array(#"{"cookies":[],"origins":[{"origin":"https://a.example","localStorage":[]}]}"#.utf8), Array("{}".utf8))
            try await fixture.withWriter { writer in
                var create = Self.sample()
                create.webStates = [WebStateRecord(profileID: "p0000000000000001", json: first)]
                try await writer.submit(create)
                var other = ChangeSet()
                other.profiles = [ProfileRecord(id: "p0000000000000002", name: "Other", createdAt: Self.time.addingTimeInterval(1))]
                other.webStates = [WebStateRecord(profileID: "p0000000000000002", json: first)]
                try await writer.submit(other)
                var replace = ChangeSet()
                replace.webStates = [WebStateRecord(profileID: "p0000000000000001", json: second)]
                try await writer.submit(replace)
                var clear = ChangeSet()
                clear.webStates = [WebStateRecord(profileID: "p0000000000000002", json: nil)]
                try await writer.submit(clear)
            }
            var stored = try await fixture.read()
            #expect(stored.profiles.map(\.webState) == [second, nil])
            try await fixture.withWriter { writer in
                var delete = ChangeSet()
                delete.deletedProfiles = ["p0000000000000001"]
                try await writer.submit(delete)
                // Made again: a new profile, without the old one's web state.
                try await writer.submit(Self.sample())
            }
            stored = try await fixture.read()
            #expect(stored.profiles.first { $0.id == "p0000000000000001" }?.webState == nil, "gone with its profile")
        }
    }

    /// Deleting a profile removes its windows, tabs, groups, closed tabs and tokens; deleting a window its tabs.
    @Test(arguments: StoreKind.available)
    func deletesCascade(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            try await fixture.withWriter { writer in
                try await writer.submit(Self.sample())
                try await writer.submit(Self.sample(profile: "p0000000000000002", window: "w0000000000000002"))
                var closeWindow = ChangeSet()
                closeWindow.deletedWindows = ["w0000000000000002"]
                try await writer.submit(closeWindow)
                var deleteProfile = ChangeSet()
                deleteProfile.deletedProfiles = ["p0000000000000001"]
                try await writer.submit(deleteProfile)
            }
            let stored = try await fixture.read()
            #expect(stored.profiles.map(\.id) == ["p0000000000000002"])
            #expect(stored.windows.isEmpty && stored.tabs.isEmpty)
            #expect(stored.recentlyClosed.keys.sorted() == ["p0000000000000002"])
            #expect(stored.tokens.map(\.profileID) == ["p0000000000000002"])
        }
    }

    /// A tab's page picture is written after the tabs, loads back without its bytes (read apart, with
    /// them), is replaced by the next, stays with a tab that moves to another window, and goes with its
    /// tab (closed, its window closed); a picture of a tab no longer stored is not written.
    @Test(arguments: StoreKind.available)
    func tabPicturesGoWithTheirTabs(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            let sample = Self.sample()
            let (a, b) = (sample.tabs[0].tab, sample.tabs[1].tab)
            @Sendable func picture(_ tab: String, _ bytes: [UInt8], etag: String) -> SnapshotRecord {
                SnapshotRecord(tabID: tab, etag: etag, mediaType: "image/jpeg", byteCount: bytes.count, capturedAt: Self.time, bytes: bytes)
            }
            try await fixture.withWriter { writer in
                var change = sample
                change.snapshots = [picture(a.id, [0xFF, 0xD8, 0xFF, 1], etag: "a1"), picture("tnotstored000001", [0xFF, 0xD8, 0xFF], etag: "x")]
                try await writer.submit(change)
                var replace = ChangeSet()
                replace.snapshots = [picture(b.id, [0xFF, 0xD8, 0xFF, 2], etag: "b1"), picture(b.id, [0xFF, 0xD8, 0xFF, 3, 3], etag: "b2")]
                try await writer.submit(replace)
            }
            var stored = try await fixture.read()
            #expect(stored.tabs[a.id]?.snapshot == picture(a.id, [], etag: "a1").withByteCount(4))
            #expect(stored.tabs[b.id]?.snapshot == picture(b.id, [], etag: "b2").withByteCount(5))
            #expect(try await fixture.snapshot(ofTab: a.id) == picture(a.id, [0xFF, 0xD8, 0xFF, 1], etag: "a1"))
            #expect(try await fixture.snapshot(ofTab: b.id)?.bytes == [0xFF, 0xD8, 0xFF, 3, 3])
            #expect(try await fixture.snapshot(ofTab: "tnotstored000001") == nil)
            try await fixture.withWriter { writer in
                // b moves to a new window (one change deletes it from the old and writes it in the new); a closes.
                var move = ChangeSet()
                move.windows = [
                    WindowRecord(
                        id: "w0000000000000009", profileID: "p0000000000000001", version: 1, tabOrder: [], activeIndex: 0, pinnedCount: 0,
                        groups: [], createdAt: Self.time, lastActiveAt: Self.time)
                ]
                var moved = b
                moved.groupID = nil
                move.deletedTabs = [b.id, a.id]
                move.tabs = [("w0000000000000009", moved)]
                try await writer.submit(move)
            }
            stored = try await fixture.read()
            #expect(stored.tabs[a.id] == nil && stored.tabs[b.id]?.snapshot?.etag == "b2")
            #expect(try await fixture.snapshot(ofTab: a.id) == nil)
            #expect(try await fixture.snapshot(ofTab: b.id)?.etag == "b2")
            try await fixture.withWriter { writer in
                var close = ChangeSet()
                close.deletedWindows = ["w0000000000000009"]
                try await writer.submit(close)
            }
            #expect(try await fixture.snapshot(ofTab: b.id) == nil)
        }
    }

    /// Answers commit with their change (also one still being made when it was queued), load back
    /// field by field, and are left out once expired.
    @Test(arguments: StoreKind.available)
    func idempotencyAnswersCommitWithTheirChangeAndExpire(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let fresh = Self.answer("fresh", at: now)
            let old = Self.answer("old", at: now.addingTimeInterval(-IdempotencyRecord.lifetime - 10))
            let late = Self.answer("late", at: now.addingTimeInterval(1))
            try await fixture.withWriter { writer in
                var change = Self.sample()
                change.idempotency = [fresh, old]
                try await writer.submit(change)
                let pending = LateAnswer()
                var next = ChangeSet()
                next.deletedTabs = ["t000000000000001a"]
                next.pendingAnswers = [pending]
                let ticket = writer.enqueue(next)
                Thread {
                    usleep(30_000)
                    pending.give(late)
                }.start()
                try await ticket.wait()
            }
            #expect(try await fixture.read(now: now).idempotency.sorted { $0.key < $1.key } == [fresh, late])
            #expect(try await fixture.read(now: now.addingTimeInterval(IdempotencyRecord.lifetime + 2)).idempotency.isEmpty)
        }
    }

    /// Opening migrates a new store to the latest version once; a store written by a newer program is
    /// refused, named, and left as it was.
    @Test(arguments: StoreKind.available)
    func migrationsRunForwardAndANewerSchemaIsRefused(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            #expect(await fixture.openError() == nil)
            let version = try await fixture.schemaVersion()
            #expect(version >= 1)
            #expect(await fixture.openError() == nil, "opening again is a no-op")
            #expect(try await fixture.schemaVersion() == version)
            try await fixture.withWriter { try await $0.submit(Self.sample()) }
            try await fixture.makeNewer()
            let refusal = try #require(await fixture.openError())
            #expect(refusal.contains("newer than this browserd"))
            #expect(refusal.contains("left untouched"))
            #expect(try await fixture.schemaVersion() == 99)
        }
    }

    /// A change that cannot be stored fails its whole transaction; every change queued after it is
    /// refused unwritten until the writer has read back what is stored and resumed.
    @Test(arguments: StoreKind.available)
    func aFailedCommitStoresNothingAndRefusesUntilResumed(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            // In one transaction: a good change and one whose tabs name a window that does not exist.
            let failed = try await fixture.withStore { store -> Bool in
                var orphan = ChangeSet()
                orphan.tabs = [("w00000000000000ff", Self.sample().tabs[0].tab)]
                do {
                    try store.apply([Self.sample(), orphan])
                    return false
                } catch {
                    return true
                }
            }
            #expect(failed)
            #expect(try await fixture.read().profiles.isEmpty, "nothing of the failed transaction is stored")

            try await fixture.withWriter { writer in
                var first = ChangeSet()
                first.profiles = [ProfileRecord(id: "p00000000000000aa", name: "kept", createdAt: Self.time)]
                try await writer.submit(first)
                var orphan = Self.sample()
                orphan.profiles = []
                await #expect(throws: (any Error).self) { try await writer.submit(orphan) }
                await #expect(throws: StoreError.self) { try await writer.submit(Self.sample()) }
                let stored = try await writer.readBack()
                #expect(stored.profiles.map(\.name) == ["kept"] && stored.windows.isEmpty, "only what was committed")
                try await writer.probe()
                await #expect(throws: StoreError.self) { try await writer.submit(Self.sample()) }
                writer.resume()
                try await writer.submit(Self.sample())
            }
            #expect(try await fixture.read().profiles.count == 2)
        }
    }

    /// Concurrent changes share commits (group commit) and are all stored.
    @Test(arguments: StoreKind.available)
    func concurrentChangesShareCommits(_ kind: StoreKind) async throws {
        try await StoreFixture.with(kind) { fixture in
            let stats = try await fixture.withWriter { writer in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for i in 0..<64 {
                        group.addTask {
                            var change = ChangeSet()
                            change.profiles = [ProfileRecord(id: String(format: "p%016x", i), name: "P\(i)", createdAt: Self.time)]
                            try await writer.submit(change)
                        }
                    }
                    try await group.waitForAll()
                }
                return writer.statistics
            }
            #expect(stats.changes == 64 && stats.commits < 64)
            #expect(try await fixture.read().profiles.count == 64)
        }
    }
}

/// An answer given later by the test, as a request handler gives it after queuing its change.
final class LateAnswer: AwaitedAnswer {
    private let answer = Mutex<IdempotencyRecord?>(nil)
    // Signalled once, by `give`; DispatchSemaphore is thread-safe.
    private let given = DispatchSemaphore(value: 0)

    func give(_ record: IdempotencyRecord) {
        answer.withLock { $0 = record }
        given.signal()
    }

    func wait(timeout: DispatchTimeInterval) -> IdempotencyRecord? {
        _ = given.wait(timeout: .now() + timeout)
        return answer.withLock { $0 }
    }
}

extension SnapshotRecord {
    /// The record as a load reads it: without its bytes, with its size.
    fileprivate func withByteCount(_ count: Int) -> SnapshotRecord {
        var copy = self
        copy.byteCount = count
        copy.bytes = nil
        return copy
    }
}
