import BrowserModel
import BrowserRecords
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import BrowserServices

/// A store in memory that applies change sets as the SQLite store does (deletes, then writes).
final class MemoryStore: DurableSink {
    struct Contents: Equatable {
        var profiles: [String: ProfileRecord] = [:]
        var windows: [String: WindowRecord] = [:]
        var tabs: [String: (window: String, tab: TabRecord)] = [:]
        /// Recently closed entries by id, with their profile and insertion order (SQLite's rowid).
        var closed: [String: (profile: String, entry: ClosedEntryRecord, rowid: Int)] = [:]
        var nextRowID = 0

        static func == (a: Contents, b: Contents) -> Bool {
            a.windows == b.windows && a.tabs.count == b.tabs.count
                && a.tabs.allSatisfy { key, value in b.tabs[key].map { $0.window == value.window && $0.tab == value.tab } ?? false }
                && a.closed.count == b.closed.count
                && a.closed.allSatisfy { key, value in b.closed[key].map { $0.profile == value.profile && $0.entry == value.entry } ?? false }
        }

        /// What the SQLite store would load from these rows: tabs in position order, closed entries
        /// newest first.
        var storedState: StoredState {
            var state = StoredState()
            state.profiles = profiles.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
            state.windows = windows.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.map { window in
                var window = window
                window.tabOrder = tabs.values.filter { $0.window == window.id }.sorted { $0.tab.position < $1.tab.position }.map(\.tab.id)
                return window
            }
            state.tabs = tabs.mapValues(\.tab)
            for (profile, entries) in Dictionary(grouping: closed.values, by: \.profile) {
                state.recentlyClosed[profile] = entries.sorted { ($0.entry.tabs[0].closedAt, $0.rowid) > ($1.entry.tabs[0].closedAt, $1.rowid) }.map(\.entry)
            }
            return state
        }
    }

    let contents = Mutex(Contents())
    var unavailableReason: String? { nil }

    func enqueue(_ change: ChangeSet) -> @Sendable () async throws -> Void {
        contents.withLock { stored in
            for profile in change.profiles { stored.profiles[profile.id] = profile }
            for id in change.deletedWindows {
                stored.windows[id] = nil
                stored.tabs = stored.tabs.filter { $0.value.window != id }
            }
            for id in change.deletedTabs { stored.tabs[id] = nil }
            for window in change.windows { stored.windows[window.id] = window }
            for header in change.windowHeaders {
                stored.windows[header.id]?.version = header.version
                stored.windows[header.id]?.activeIndex = header.activeIndex
                stored.windows[header.id]?.pinnedCount = header.pinnedCount
                stored.windows[header.id]?.lastActiveAt = header.lastActiveAt
            }
            for (window, tab) in change.tabs { stored.tabs[tab.id] = (window, tab) }
            for id in change.closedRemoved { stored.closed[id] = nil }
            for (profile, entry) in change.closedAdded {
                stored.closed[entry.id] = (profile, entry, stored.nextRowID)
                stored.nextRowID += 1
            }
        }
        return {}
    }
}

/// The incremental mediators against a full rebuild (the oracle): random operations on large windows,
/// and after each one the rows the change sets wrote equal the rows of the whole state, and the
/// published snapshot (kept slot by slot from notifications) equals one built from the model.
@Suite(.computing) struct IncrementalPersistenceTests {
    /// The whole state as rows, and each window's snapshot, built by scanning the model.
    static func fullRebuild(_ service: BrowserService) async -> (MemoryStore.Contents, [WindowSnapshot]) {
        var contents = MemoryStore.Contents()
        var windows: [WindowSnapshot] = []
        for executor in service.snapshots.sessionExecutors() {
            let (part, snapshots) = await executor.perform { session -> (MemoryStore.Contents, [WindowSnapshot]) in
                var part = MemoryStore.Contents()
                var snapshots: [WindowSnapshot] = []
                for browser in session.browserList.browsers(.regular) {
                    guard let mediator = browser.userData.get(WindowMediator.self) else { continue }
                    part.windows[browser.id.rawValue] = mediator.windowRecord()
                    for index in 0..<browser.webStateList.count {
                        let tab = mediator.tabRecord(at: index)
                        part.tabs[tab.id] = (browser.id.rawValue, tab)
                    }
                    snapshots.append(browser.snapshot(version: mediator.version))
                }
                for entry in session.recentlyClosed.entries {
                    part.closed[entry.id.rawValue] = (session.browserState.id.rawValue, ProfileMediator.record(entry, parked: false), 0)
                }
                for (id, entry) in session.recentlyClosed.parked {
                    part.closed[id.rawValue] = (session.browserState.id.rawValue, ProfileMediator.record(entry, parked: true), 0)
                }
                return (part, snapshots)
            }
            contents.windows.merge(part.windows) { $1 }
            contents.tabs.merge(part.tabs) { $1 }
            contents.closed.merge(part.closed) { $1 }
            windows += snapshots
        }
        return (contents, windows)
    }

    @Test(arguments: [(seed: UInt64(1), tabs: 200), (seed: UInt64(7), tabs: 40)])
    func incrementalEqualsFullRebuild(seed: UInt64, tabs: Int) async throws {
        let store = MemoryStore()
        let service = BrowserService(sink: store, storedTabs: NothingStored(), framing: TestFraming())
        var random = SplitMix64(seed: seed)
        let profile = try await service.createProfile(name: "p")
        let a = try await service.createWindow(profile: profile.id).id
        let b = try await service.createWindow(profile: profile.id).id
        for i in 0..<tabs {
            _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://e.example/\(i)", activate: i % 7 == 0), in: i % 3 == 0 ? b : a)
        }
        // A client of each window's event stream, folding it into its own tab list.
        var mirrors: [BrowserID: StreamMirror] = [:]
        for window in [a, b] {
            let mirror = StreamMirror()
            #expect(service.watchWindow(window, sink: mirror, lastEventID: nil, filter: .all) != nil)
            mirrors[window] = mirror
        }
        var failures = 0
        var closings: [ClosedTabID] = []
        for step in 0..<500 {
            let windowID = random.next() % 4 == 0 ? b : a
            guard let window = service.window(windowID) else { continue }
            let ids = window.tabs.map(\.id)
            let groups = window.groups.map(\.id)
            func pick() -> TabID? { ids.isEmpty ? nil : ids[Int(random.next() % UInt64(ids.count))] }
            do {
                switch random.next() % 24 {
                case 0, 1:
                    _ = try await service.dispatch(
                        TabCommands.open,
                        OpenTabRequest(
                            url: "https://n.example/\(step)", activate: random.next() % 2 == 0,
                            openerID: pick(), inheritOpener: random.next() % 5 == 0), in: windowID)
                case 2: if let id = pick() { _ = try await service.dispatch(TabCommands.close, id, in: windowID) }
                case 3: if let id = pick() { _ = try await service.dispatch(TabCommands.activate, id, in: windowID) }
                case 4: if let id = pick() { _ = try await service.dispatch(TabCommands.pin, PinRequest(tabID: id, pinned: random.next() % 2 == 0), in: windowID) }
                case 5:
                    if let id = pick(), !ids.isEmpty {
                        _ = try await service.dispatch(TabCommands.move, MoveTabRequest(tabID: id, index: Int(random.next() % UInt64(ids.count))), in: windowID)
                    }
                case 6:
                    if let id = pick() {
                        let other = windowID == a ? b : a
                        let count = service.window(other)?.tabCount ?? 0
                        _ = try await service.dispatch(
                            TabCommands.move,
                            MoveTabRequest(
                                tabID: id, index: Int(random.next() % UInt64(count + 1)),
                                destination: other), in: windowID)
                    }
                case 7:
                    if let id = pick() { _ = try await service.dispatch(TabCommands.updatePageState, PageStateUpdate(tabID: id, openerID: .some(pick())), in: windowID) }
                case 8:
                    if let id = pick() {
                        _ = try await service.dispatch(TabCommands.updatePageState, PageStateUpdate(tabID: id, title: "t\(step)", progress: 0.5), in: windowID)
                    }
                case 9: if let id = pick() { _ = try await service.dispatch(TabCommands.createGroup, CreateGroupRequest(tabIDs: [id]), in: windowID) }
                case 10:
                    if let group = groups.first, let id = pick() {
                        _ = try await service.dispatch(TabCommands.addToGroup, GroupTabsRequest(groupID: group, tabIDs: [id]), in: windowID)
                    }
                case 11: if let id = pick() { _ = try await service.dispatch(TabCommands.ungroup, GroupTabsRequest(tabIDs: [id]), in: windowID) }
                case 12: if let group = groups.last { _ = try await service.dispatch(TabCommands.deleteGroup, group, in: windowID) }
                case 13:
                    if let id = pick() {
                        _ = try await service.dispatch(
                            TabCommands.navigate, NavigateRequest(tabID: id, navigation: .navigate(url: "https://v.example/\(step)", transition: .link)), in: windowID)
                    }
                case 14: if let x = pick(), let y = pick() { _ = try await service.dispatch(TabCommands.closeMany, .tabs(Array(Set([x, y]))), in: windowID) }
                case 16:
                    if let group = groups.first, !ids.isEmpty {
                        _ = try await service.dispatch(
                            TabCommands.moveGroup, MoveGroupRequest(groupID: group, beforeIndex: Int(random.next() % UInt64(ids.count + 1))), in: windowID)
                    }
                case 17:
                    if let id = pick() {
                        _ = try await service.dispatch(TabCommands.duplicate, DuplicateRequest(tabID: id, activate: random.next() % 2 == 0), in: windowID)
                    }
                case 18:
                    if let id = pick() { _ = try await service.dispatch(TabCommands.replace, ReplaceRequest(tabID: id, url: "https://r.example/\(step)"), in: windowID) }
                case 19: if let group = groups.first { _ = try await service.dispatch(TabCommands.closeGroup, group, in: windowID) }
                case 20:
                    if random.next() % 3 == 0 {
                        let request = CloseAllTabsRequest(windows: [windowID], policy: random.next() % 2 == 0 ? .allTabs : .regularTabs)
                        closings.append(try await service.dispatch(TabCommands.closeAll, request, in: windowID).result.id)
                    }
                case 21: if !closings.isEmpty { _ = try await service.dispatch(TabCommands.undoCloseAll, closings.removeLast(), in: windowID) }
                case 22: if !closings.isEmpty { _ = try await service.dispatch(TabCommands.confirmCloseAll, closings.removeFirst(), in: windowID) }
                case 23:
                    if let id = pick(), let group = (random.next() % 2 == 0 ? groups : service.window(windowID == a ? b : a)?.groups.map(\.id) ?? []).first {
                        let target = service.window(ofGroup: group)
                        _ = try await service.dispatch(
                            TabCommands.move, MoveTabRequest(tabID: id, index: nil, destination: target, groupID: group),
                            in: windowID)
                    }
                default: _ = try await service.dispatch(TabCommands.restoreClosed, RestoreClosedTabRequest(activate: random.next() % 2 == 0), in: windowID)
                }
            } catch {
                // Refused operations (a pinned tab into a group, nothing to restore, …) change nothing.
            }
            let (oracle, snapshots) = await Self.fullRebuild(service)
            let stored = store.contents.withLock { $0 }
            // The order on disk is the tabs' positions: it must be each window's order in memory.
            for (window, record) in oracle.windows {
                let onDisk = stored.tabs.values.filter { $0.window == window }.sorted { $0.tab.position < $1.tab.position }.map(\.tab.id)
                let inMemory = await service.window(BrowserID(rawValue: window))?.tabs.map(\.id.rawValue) ?? []
                if onDisk != inMemory {
                    failures += 1
                    Issue.record("step \(step): window \(window) is ordered differently on disk (\(onDisk.count) tabs) and in memory (\(inMemory.count))")
                }
                _ = record
            }
            if stored != oracle {
                failures += 1
                let wrongTabs = oracle.tabs.keys.filter { key in stored.tabs[key].map { $0.window != oracle.tabs[key]!.window || $0.tab != oracle.tabs[key]!.tab } ?? true
                }
                Issue.record(
                    "step \(step): stored rows differ from a full rebuild (windows equal: \(stored.windows == oracle.windows), tabs: \(stored.tabs.count) vs \(oracle.tabs.count), differing: \(wrongTabs.prefix(3)))"
                )
            }
            for snapshot in snapshots where service.window(snapshot.id) != snapshot {
                failures += 1
                Issue.record("step \(step): the published snapshot of \(snapshot.id) differs from one built from the model")
            }
            // The event streams bring their clients to each window's state.
            for (window, mirror) in mirrors {
                guard let channel = service.events.window(window) else { continue }
                for _ in 0..<10 where channel.pump() {}
                if let problem = mirror.catchUp() ?? service.window(window).flatMap(mirror.difference(from:)) {
                    failures += 1
                    let log = (try? await service.actions(of: window, after: 0, limit: 1000))?.suffix(4).map { "\($0.seq) \($0.name) \($0.arguments)" } ?? []
                    Issue.record("actions: \(log)")
                    Issue.record(
                        "step \(step): the event stream of \(window) after \(mirror.eventCount) events: \(problem); last events:\n\(mirror.recent.joined(separator: "\n"))"
                    )
                }
            }
            // What was written, restored by a new service, is the state (every 20th step and the last:
            // a restore costs as much as the rest of a step together).
            if step % 20 == 19 || step == 499 {
                let restored = BrowserService(sink: MemoryStore(), storedTabs: NothingStored(), framing: TestFraming())
                _ = try await restored.restore(stored.storedState)
                for snapshot in snapshots where restored.window(snapshot.id) != snapshot {
                    failures += 1
                    Issue.record("step \(step): window \(snapshot.id) restored from what was written differs from the window")
                }
            }
            if failures > 3 { break }
            // Leave the cooperative pool to other suites' timers now and then (this test never waits).
            await Task.yield()
        }
    }
}

/// The chunked tab sequence edits like an array, across chunk splits and emptied chunks.
@Suite(.computing) struct TabSnapshotListTests {
    @Test func editsMatchAnArray() {
        let list = WebStateList()
        let tabs = (0..<600).map { _ in WebState() }
        func slot(_ i: Int) -> TabSlot { TabSlot.make(tabs[i], in: list) }
        var random = SplitMix64(seed: 42)
        var model: [TabID] = []
        var sequence = TabSnapshotList(browserID: BrowserID(rawValue: "w0000000000000001"))
        var next = 0
        for _ in 0..<3000 {
            let roll = random.next() % 10
            if roll < 5 || model.isEmpty, next < tabs.count {
                let at = Int(random.next() % UInt64(model.count + 1))
                sequence.insert(slot(next), at: at)
                model.insert(tabs[next].id, at: at)
                next += 1
            } else if roll < 8, !model.isEmpty {
                let at = Int(random.next() % UInt64(model.count))
                #expect(sequence.remove(at: at).id == model.remove(at: at))
            } else if !model.isEmpty {
                let from = Int(random.next() % UInt64(model.count))
                let to = Int(random.next() % UInt64(model.count))
                sequence.insert(sequence.remove(at: from), at: to)
                model.insert(model.remove(at: from), at: to)
            }
            if sequence.count != model.count || sequence.map(\.id) != model {
                Issue.record("the sequence differs from the array after \(next) inserts")
                return
            }
        }
        #expect(sequence.indices.allSatisfy { sequence[$0].index == $0 })
    }
}

/// A sink that can be closed, as the app's is before start-up opens the store and after shutdown.
final class ClosableSink: DurableSink {
    let open = Mutex(true)
    let enqueued = Mutex(0)
    var unavailableReason: String? { nil }
    var isOpen: Bool { open.withLock { $0 } }

    func enqueue(_ change: ChangeSet) -> @Sendable () async throws -> Void {
        enqueued.withLock { $0 += 1 }
        return {}
    }
}

@Suite(.computing) struct ClosedSinkTests {
    /// A change made while the sink is not open could never be saved: it is refused before the model
    /// changes (memory never runs ahead of the store), and taken once the sink is open.
    @Test func aClosedSinkRefusesChangesBeforeTheModelChanges() async throws {
        let sink = ClosableSink()
        let service = BrowserService(sink: sink, storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        let window = try await service.createWindow(profile: profile.id).id
        let before = sink.enqueued.withLock { $0 }
        sink.open.withLock { $0 = false }
        await #expect(throws: ServiceError.self) {
            _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://e.example/", activate: true), in: window)
        }
        #expect(service.window(window)?.tabs.isEmpty == true)
        #expect(sink.enqueued.withLock { $0 } == before)
        sink.open.withLock { $0 = true }
        _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://e.example/", activate: true), in: window)
        #expect(service.window(window)?.tabs.count == 1)
        #expect(sink.enqueued.withLock { $0 } == before + 1)
    }
}
