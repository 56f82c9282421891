import BrowserPersistence
import BrowserRecords
import Foundation
import TestSupport
import Testing

/// Random change sequences, committed in random group-commit batches, leave the same state in every
/// store as one change per transaction leaves in SQLite (the reference). PostgreSQL merges a batch's
/// changes into a few statements (last write of each row wins): this is what checks that the merge
/// never reorders what matters (a tab closed and reopened, a recently-closed entry replaced, a
/// window closed after its tabs moved, ...).
@Suite(.offThePool) struct StoreDifferentialTests {
    @Test(arguments: StoreKind.available, [0xB20D, 7, 2026] as [UInt64])
    func randomBatchesLeaveWhatOneChangeAtATimeLeaves(_ kind: StoreKind, seed: UInt64) async throws {
        var generator = ChangeGenerator(seed: seed)
        let changes = (0..<400).map { _ in generator.next() }
        var cuts = SplitMix64(seed: seed &+ 1)
        var batches: [[ChangeSet]] = []
        var index = 0
        while index < changes.count {
            let size = [1, 1, 2, 3, 5, 8, 13, 40][Int(cuts.next() % 8)]
            batches.append(Array(changes[index..<min(changes.count, index + size)]))
            index += size
        }
        let cut = batches
        let reference = try await StoreFixture.with(.sqlite) { fixture in
            try await fixture.withStore { store in for change in changes { try store.apply([change]) } }
            return try await fixture.read()
        }
        let batched = try await StoreFixture.with(kind) { fixture in
            try await fixture.withStore { store in for batch in cut { try store.apply(batch) } }
            return try await fixture.read()
        }
        #expect(reference.profiles.count > 3 && reference.tabs.count > 20 && !reference.recentlyClosed.isEmpty, "a state worth comparing")
        #expect(batched.profiles == reference.profiles)
        #expect(batched.windows == reference.windows)
        let differing = Set(batched.tabs.keys).union(reference.tabs.keys).filter { batched.tabs[$0] != reference.tabs[$0] }.sorted()
        #expect(
            differing.isEmpty,
            "tabs that differ: \(differing.prefix(3).map { "\($0): \(String(describing: batched.tabs[$0])) vs \(String(describing: reference.tabs[$0]))" })")
        #expect(batched.recentlyClosed == reference.recentlyClosed)
        #expect(batched.tokens == reference.tokens)
        #expect(batched.idempotency.sorted { $0.key < $1.key } == reference.idempotency.sorted { $0.key < $1.key })
    }
}

/// Changes as the mediators make them, valid against what earlier changes stored: tabs opened, updated,
/// moved between windows of their profile, closed (with a recently-closed entry) and reopened under
/// their old id; windows opened and closed; profiles made and deleted; tokens; answers.
struct ChangeGenerator {
    private var random: SplitMix64
    private var profiles: [String] = []
    private var windows: [String: String] = [:]  // window → profile
    private var tabs: [String: String] = [:]  // tab → window
    private var closed: [String: (profile: String, tab: String)] = [:]
    private var counter = 0
    private var clock = 1_700_000_000.0

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    private mutating func id(_ prefix: String) -> String {
        counter += 1
        return prefix + String(format: "%015x", counter)
    }

    private mutating func now() -> Date {
        clock += Double(random.below(2000)) / 1000
        return Date(timeIntervalSince1970: clock)
    }

    private mutating func tab(_ id: String) -> TabRecord {
        let time = now()
        let history = (0...random.below(3)).map { HistoryEntryRecord(url: "https://e.example/\(id)/\($0)", title: "T\($0)", transition: "link", timestamp: time) }
        return TabRecord(
            id: id, groupID: random.below(4) == 0 ? "g000000000000001" : nil, openerID: random.below(3) == 0 ? tabs.keys.sorted().first : nil,
            openerNavigationIndex: random.below(3) == 0 ? random.below(5) : nil, title: "title \(random.below(1000))",
            loading: random.below(2) == 0, progress: Double(random.below(100)) / 100,
            faviconURL: random.below(3) == 0 ? "https://e.example/\(random.below(9)).ico" : nil, createdAt: time, lastActiveAt: now(),
            historyIndex: history.count - 1, history: history, position: Double(counter) * 8 + Double(random.below(7)))
    }

    mutating func next() -> ChangeSet {
        var change = ChangeSet()
        if random.below(9) == 0 {
            change.idempotency = [
                IdempotencyRecord(
                    key: "admin\n\(random.below(30))", fingerprint: [UInt8(random.below(256))], status: 201,
                    headers: [.init(name: "Location", value: "/v1/x")], body: [1, 2], createdAt: now())
            ]
        }
        let roll = random.below(100)
        if profiles.isEmpty || roll < 3 {
            let profile = id("p")
            profiles.append(profile)
            change.profiles = [ProfileRecord(id: profile, name: "P \(profile)", createdAt: now())]
            return change
        }
        let profile = profiles[random.below(profiles.count)]
        let profileWindows = windows.filter { $0.value == profile }.keys.sorted()
        if profileWindows.isEmpty || roll < 8 {
            let window = id("w")
            windows[window] = profile
            change.windows = [
                WindowRecord(
                    id: window, profileID: profile, version: 1, tabOrder: [], activeIndex: -1, pinnedCount: 0,
                    groups: random.below(2) == 0 ? [GroupRecord(id: "g000000000000001", title: "G", color: "blue", collapsed: false)] : [],
                    createdAt: now(), lastActiveAt: now())
            ]
            return change
        }
        let window = profileWindows[random.below(profileWindows.count)]
        let windowTabs = tabs.filter { $0.value == window }.keys.sorted()
        switch roll {
        case 8..<10 where profiles.count > 2:
            profiles.removeAll { $0 == profile }
            for (w, p) in windows where p == profile {
                windows[w] = nil
                for (t, tw) in tabs where tw == w { tabs[t] = nil }
            }
            closed = closed.filter { $0.value.profile != profile }
            change.deletedProfiles = [profile]
        case 10..<13:
            windows[window] = nil
            for (t, w) in tabs where w == window { tabs[t] = nil }
            change.deletedWindows = [window]
        case 13..<16:
            change.tokens = [TokenRecord(id: id("k"), profileID: profile, hash: [UInt8(random.below(256))], createdAt: now())]
        case 16..<40 where !windowTabs.isEmpty:
            // Closed: a recently-closed entry takes its place (the oldest may go past the cap).
            let tab = windowTabs[random.below(windowTabs.count)]
            tabs[tab] = nil
            change.deletedTabs = [tab]
            let entry = id("c")
            closed[entry] = (profile, tab)
            change.closedAdded = [
                (
                    profile,
                    ClosedEntryRecord(
                        tab: ClosedTabRecord(
                            id: entry, tabID: tab, windowID: window, index: random.below(5), groupID: nil, wasActive: random.below(2) == 0,
                            wasPinned: false, title: "closed \(tab)", faviconURL: nil, closedAt: now(), historyIndex: 0,
                            history: [HistoryEntryRecord(url: "https://e.example/c", title: "c", transition: "typed", timestamp: now())]))
                )
            ]
            if closed.count > 6, let oldest = closed.keys.sorted().first {
                closed[oldest] = nil
                change.closedRemoved = [oldest]
            }
        case 40..<48:
            // Reopened under the old tab id; its entry goes.
            let entries = closed.filter { $0.value.profile == profile }.keys.sorted()
            guard let entry = entries.first, let tabID = closed[entry]?.tab, tabs[tabID] == nil else {
                openTab(in: window, &change)
                break
            }
            closed[entry] = nil
            change.closedRemoved = [entry]
            tabs[tabID] = window
            change.tabs = [(window, tab(tabID))]
        case 48..<56 where !windowTabs.isEmpty && profileWindows.count > 1:
            // Moved to another window of the profile.
            let tab = windowTabs[random.below(windowTabs.count)]
            let target = profileWindows.first { $0 != window }!
            tabs[tab] = target
            change.tabs = [(target, self.tab(tab))]
            change.windowHeaders = [WindowHeaderRecord(id: window, version: random.below(1000), activeIndex: -1, pinnedCount: 0, lastActiveAt: now())]
        case 56..<75 where !windowTabs.isEmpty:
            // Page state of a tab, and its window's header.
            let tab = windowTabs[random.below(windowTabs.count)]
            change.tabs = [(window, self.tab(tab))]
            change.windowHeaders = [
                WindowHeaderRecord(
                    id: window, version: random.below(1000), activeIndex: random.below(3),
                    pinnedCount: random.below(2), lastActiveAt: now())
            ]
        case 75..<80:
            // The window's groups changed (the whole window row is written).
            change.windows = [
                WindowRecord(
                    id: window, profileID: profile, version: random.below(1000), tabOrder: [], activeIndex: 0,
                    pinnedCount: 0,
                    groups: [
                        GroupRecord(
                            id: "g000000000000001", title: "G\(random.below(9))",
                            color: "red", collapsed: random.below(2) == 0)
                    ],
                    createdAt: now(), lastActiveAt: now())
            ]
        default:
            openTab(in: window, &change)
        }
        return change
    }

    private mutating func openTab(in window: String, _ change: inout ChangeSet) {
        let tabID = id("t")
        tabs[tabID] = window
        change.tabs = [(window, tab(tabID))]
        change.windowHeaders = [WindowHeaderRecord(id: window, version: random.below(1000), activeIndex: 0, pinnedCount: 0, lastActiveAt: now())]
    }
}
