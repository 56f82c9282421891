import BrowserModel
public import BrowserRecords
import Foundation
import ProcessMemory

// Restoring what the database holds at start (spec §8): each tab at its saved index, pinned by the
// saved pinned count, groups re-created where their tabs are contiguous in the regular section,
// openers restored afterwards with their saved navigation index, the active tab, window versions and
// the recently-closed list. Nothing restored is written back.
extension BrowserService {
    /// What a restore brought back.
    public struct RestoreSummary: Sendable {
        public var profiles = 0
        public var windows = 0
        public var tabs = 0
        /// Every stored value that did not fit the model and was repaired or left out, one sentence
        /// each (e.g. a history index past the end): the application logs them.
        public var repairs: [String] = []

        public init() {}
    }

    /// The windows in the order ``restore(_:tabs:)`` rebuilds them (and asks for their tabs).
    public static func restoreOrder(_ stored: StoredState) -> [String] {
        let windowsByProfile = Dictionary(grouping: stored.windows, by: \.profileID)
        return stored.profiles.flatMap { (windowsByProfile[$0.id] ?? []).map(\.id) }
    }

    /// Rebuilds every profile from stored records. Call once, before serving.
    /// - Parameter tabs: the tabs of a window by id, asked for in ``restoreOrder(_:)``; nil takes them
    ///   from `stored.tabs`.
    /// - Parameter progress: told what is back so far after each window (from the thread building it).
    public func restore(
        _ stored: StoredState,
        tabs provider: (@Sendable (_ windowID: String) throws -> [String: TabRecord])? = nil,
        progress: (@Sendable (RestoreSummary) -> Void)? = nil
    ) async throws -> RestoreSummary {
        var summary = RestoreSummary()
        let windowsByProfile = Dictionary(grouping: stored.windows, by: \.profileID)
        for profile in stored.profiles {
            let windows = windowsByProfile[profile.id] ?? []
            let closed = stored.recentlyClosed[profile.id] ?? []
            let allTabs = stored.tabs
            let tabsOf: @Sendable (String) throws -> [String: TabRecord] = provider ?? { _ in allTabs }
            let before = summary
            let (limits, snapshots) = (self.limits, self.snapshots)
            // The session is built before anything else can reach it, on a thread that ends right
            // after (see ``LoadThread``), and then handed to its executor.
            let built = try await LoadThread.run {
                try Self.build(
                    profile, windows: windows, closed: closed, tabs: tabsOf, limits: limits, snapshots: snapshots
                ) { windows, tabs in
                    guard let progress else { return }
                    var now = before
                    now.windows += windows
                    now.tabs += tabs
                    progress(now)
                }
            }
            add(built, to: &summary)
            progress?(summary)
        }
        return summary
    }

    /// Brings one regular profile into memory from what `read` returns (nil: it is not stored), read on
    /// the thread that builds its model (see ``LoadThread``): the records never reach a long-lived
    /// thread, and are freed where they were allocated. Nothing happens when it is here already.
    public func restoreProfile(reading read: @escaping @Sendable () throws -> StoredState?) async throws -> RestoreSummary {
        let (limits, snapshots) = (self.limits, self.snapshots)
        let built = try await LoadThread.run { () throws -> BuiltProfile? in
            guard let stored = try read(), let profile = stored.profiles.first, stored.profiles.count == 1 else { return nil }
            guard snapshots.profile(ProfileID(rawValue: profile.id)) == nil else { return nil }
            return try Self.build(
                profile, windows: stored.windows, closed: stored.recentlyClosed[profile.id] ?? [], tabs: { _ in stored.tabs }, limits: limits,
                snapshots: snapshots, progress: nil)
        }
        var summary = RestoreSummary()
        if let built { add(built, to: &summary) }
        return summary
    }

    /// One profile built from its records, not yet in the index.
    struct BuiltProfile: Sendable {
        let executor: ProfileExecutor
        let snapshot: ProfileSnapshot
        let windows: Int
        let tabs: Int
        let repairs: [String]
    }

    private func add(_ built: BuiltProfile, to summary: inout RestoreSummary) {
        summary.repairs += built.repairs
        // The directory keeps this snapshot after the profile leaves memory: its strings are copied
        // here, away from the load's heap (see ``LoadThread``).
        snapshots.putProfile(built.snapshot.copied(), executor: built.executor, rootID: built.snapshot.id)
        summary.profiles += 1
        summary.windows += built.windows
        summary.tabs += built.tabs
    }

    /// Builds the session of `profile` from its records and hands it to a new executor. Nothing else
    /// can reach the session meanwhile: it runs on the caller's thread.
    /// - Parameter progress: told how many windows and tabs are back after each window.
    static func build(
        _ profile: ProfileRecord, windows: [WindowRecord], closed: [ClosedEntryRecord], tabs tabsOf: (String) throws -> [String: TabRecord],
        limits: ModelLimits, snapshots: SnapshotIndex, progress: ((Int, Int) -> Void)?
    ) throws -> BuiltProfile {
        let state = BrowserState(
            id: ProfileID(rawValue: profile.id), name: profile.name, createdAt: profile.createdAt, budget: ByteBudget(limit: limits.profileBytes))
        if let webState = profile.webState { state.restoreStorageState(try StorageStateJSON.parse(bytes: webState)) }
        let session = ProfileSession(browserState: state, limits: limits)
        let mediator = ProfileMediator.attach(to: session, snapshots: snapshots)
        mediator.isRestoring = true
        var count = 0
        var repairs: [String] = []
        let favicons = StringInterner()
        session.reserveTabCapacity(forMore: windows.reduce(0) { $0 + $1.tabOrder.count })
        for (done, record) in windows.enumerated() {
            count += try restoreWindow(record, tabs: try tabsOf(record.id), into: session, repairs: &repairs, favicons: favicons)
            progress?(done + 1, count)
        }
        restoreClosed(closed, into: session.recentlyClosed, repairs: &repairs)
        mediator.publishWindows()
        mediator.isRestoring = false
        for browser in session.browserList.browsers() { mediator.attachConsumers(to: browser) }
        mediator.publishProfiles()
        mediator.profileDirty = false
        mediator.markPersisted()
        let snapshot = mediator.snapshot(of: session.browserState)
        return BuiltProfile(executor: ProfileExecutor(session: session), snapshot: snapshot, windows: windows.count, tabs: count, repairs: repairs)
    }

    static func restoreWindow(
        _ record: WindowRecord, tabs: [String: TabRecord], into session: ProfileSession,
        repairs: inout [String], favicons: StringInterner = StringInterner()
    ) throws -> Int {
        let browser = try session.createBrowser(id: BrowserID(rawValue: record.id), createdAt: record.createdAt)
        // Its snapshot is built once from the filled list: no slot kept up to date tab by tab while
        // it fills (a chunk copied per tab was 9 % of a cold 5,000-tab profile's load), and no insert
        // handled by its mediator one by one (a new window's inserts change nothing to write or watch).
        let mediator = browser.userData.get(WindowMediator.self)
        mediator?.markDirtyForPublish()
        mediator?.restoring = true
        defer { mediator?.restoring = false }
        browser.webStateList.reserveCapacity(forMore: record.tabOrder.count)
        let count = try fill(browser, from: record, tabs: tabs, repairs: &repairs, favicons: favicons)
        if let mediator {
            mediator.version = record.version
            mediator.markDirtyForPublish()
        }
        return count
    }

    /// Puts the stored tabs, groups, openers and active tab of `record` into `browser`'s empty list.
    /// - Returns: how many tabs it holds.
    /// A tab read with its summary only (``TabRecord/summary``) is restored unrealized; the others
    /// with the history their record holds.
    /// - Parameter favicons: one string per distinct favicon URL, shared by every tab restored with
    ///   it (tabs of one site share one: 80 bytes per loaded tab fewer, `bench/big_session.py`).
    static func fill(
        _ browser: Browser, from record: WindowRecord, tabs: [String: TabRecord], repairs: inout [String],
        favicons: StringInterner = StringInterner()
    ) throws -> Int {
        let list = browser.webStateList
        // What the steps after the inserts need of each record, not the record (a copy of every
        // string it holds, retained and released once more per tab).
        struct Restored {
            let webState: WebState
            let id: String
            let position: Double
            let groupID: String?
            let openerID: String?
            let openerNavigationIndex: Int?
            let lastActiveAt: Date
        }
        var restored: [Restored] = []
        restored.reserveCapacity(record.tabOrder.count)
        for id in record.tabOrder {
            guard let tab = tabs[id] else {
                repairs.append("window \(record.id): tab \(id) is in the tab order but not stored; left out")
                continue
            }
            let webState: WebState
            if let summary = tab.summary {
                webState = unrealized(tab, summary: summary, faviconURL: favicons.intern(tab.faviconURL))
            } else {
                let history = restoredHistory(tab.history, currentIndex: tab.historyIndex, of: "tab \(tab.id)", repairs: &repairs)
                webState = WebState(
                    id: TabID(rawValue: tab.id), history: history, title: tab.title, isLoading: tab.loading,
                    progress: tab.progress, faviconURL: favicons.intern(tab.faviconURL), createdAt: tab.createdAt,
                    lastActiveAt: tab.lastActiveAt)
            }
            if let snapshot = tab.snapshot {
                webState.restoreSnapshot(
                    PageSnapshot(etag: snapshot.etag, mediaType: snapshot.mediaType, byteCount: snapshot.byteCount, capturedAt: snapshot.capturedAt))
            }
            let pinned = restored.count < record.pinnedCount
            try list.insert(webState, InsertionParams(index: list.count, pinned: pinned))
            restored.append(
                Restored(
                    webState: webState, id: tab.id, position: tab.position, groupID: tab.groupID, openerID: tab.openerID,
                    openerNavigationIndex: tab.openerNavigationIndex, lastActiveAt: tab.lastActiveAt))
        }
        // Positions as stored, so tabs that join later go between them as they are on disk.
        browser.userData.get(WindowMediator.self)?.setPositions(restored.map { ($0.webState, $0.position) })
        for group in record.groups {
            let indices = restored.indices.filter { restored[$0].groupID == group.id }
            guard let first = indices.first, let last = indices.last, first >= list.pinnedCount,
                last - first + 1 == indices.count, list.group(withID: TabGroupID(rawValue: group.id)) == nil
            else {
                repairs.append("window \(record.id): group \(group.id) has no contiguous regular tabs (or is stored twice); left out")
                continue
            }
            let color = TabGroupColor(rawValue: group.color) ?? .grey
            if TabGroupColor(rawValue: group.color) == nil {
                repairs.append("group \(group.id): unknown colour \(group.color.debugDescription); grey")
            }
            let data = TabGroupVisualData(title: group.title, color: color, collapsed: group.collapsed)
            try list.createGroup(indices: Set(indices), visualData: data, id: TabGroupID(rawValue: group.id))
        }
        for (index, tab) in restored.enumerated() {
            guard let openerID = tab.openerID, let navigationIndex = tab.openerNavigationIndex else { continue }
            let openerIndex = list.index(ofTabWithID: TabID(rawValue: openerID))
            guard openerIndex >= 0, openerIndex != index else {
                repairs.append("tab \(tab.id): its opener \(openerID) is not in window \(record.id); no opener")
                continue
            }
            try list.restoreOpener(list.webState(at: openerIndex)!, navigationIndex: navigationIndex, at: index)
        }
        if list.containsIndex(record.activeIndex) {
            try list.activate(at: record.activeIndex)
            restored[record.activeIndex].webState.markActive(at: restored[record.activeIndex].lastActiveAt)
        } else if record.activeIndex >= 0 {
            repairs.append("window \(record.id): active index \(record.activeIndex) is past its \(list.count) tabs; no active tab")
        }
        browser.lastActiveAt = record.lastActiveAt
        return restored.count
    }

    /// A tab restored without its history: what its row's summary says (the service realizes it when a
    /// command needs its history; the same repairs as a full restore apply then, unreported).
    private static func unrealized(_ tab: TabRecord, summary: HistorySummary, faviconURL: String?) -> WebState {
        // As a full restore repairs it: a current index outside the entries is the last one.
        let index = summary.count == 0 ? -1 : ((0..<summary.count).contains(tab.historyIndex) ? tab.historyIndex : summary.count - 1)
        let metadata = HistoryMetadata(visibleURL: summary.visibleURL, currentIndex: index, count: summary.count, byteCount: summary.byteCount)
        return WebState(
            id: TabID(rawValue: tab.id), metadata: metadata, title: tab.title, isLoading: tab.loading,
            progress: tab.progress, faviconURL: faviconURL, createdAt: tab.createdAt, lastActiveAt: tab.lastActiveAt)
    }

    /// A stored history as the model's; an unknown transition reads as a link, a current index past the
    /// entries as the last entry, and entries the model refuses as an empty history (each logged).
    static func restoredHistory(
        _ entries: [HistoryEntryRecord], currentIndex: Int, of owner: String,
        repairs: inout [String]
    ) -> NavigationHistory {
        let items = entries.map { entry in
            if PageTransition(rawValue: entry.transition) == nil {
                repairs.append("\(owner): unknown transition \(entry.transition.debugDescription) reads as a link")
            }
            return NavigationItem(
                url: entry.url, title: entry.title, transition: PageTransition(rawValue: entry.transition) ?? .link,
                timestamp: entry.timestamp)
        }
        if let history = try? NavigationHistory(items: items, currentIndex: currentIndex) { return history }
        if let history = try? NavigationHistory(items: items, currentIndex: items.count - 1) {
            repairs.append("\(owner): history index \(currentIndex) is outside its \(items.count) entries; the last entry is current")
            return history
        }
        repairs.append("\(owner): its \(items.count) history entries do not form a history; restored empty")
        return NavigationHistory()
    }

    /// Puts a profile's stored entries back in its recently-closed list; a close-all's parked tabs
    /// that were never confirmed nor undone (the process ended meanwhile) count as confirmed.
    static func restoreClosed(_ records: [ClosedEntryRecord], into list: RecentlyClosedTabs, repairs: inout [String]) {
        var entries: [ClosedEntry] = []
        var parked: [ClosedEntry] = []
        for record in records where !record.tabs.isEmpty {
            let tabs = record.tabs.map { closedTab($0, repairs: &repairs) }
            let id = ClosedTabID(rawValue: record.id)
            switch record.kind {
            case .tab: entries.append(ClosedEntry(tab: tabs[0]))
            case .window: entries.append(ClosedEntry(id: id, kind: .window, tabs: tabs))
            case .group: entries.append(ClosedEntry(id: id, kind: .group, tabs: tabs))
            case .closing: parked.append(ClosedEntry(id: id, kind: .window, tabs: tabs))
            }
        }
        list.restore(entries, parked: parked)
    }

    static func closedTab(_ record: ClosedTabRecord, repairs: inout [String]) -> ClosedTab {
        let history = restoredHistory(record.history, currentIndex: record.historyIndex, of: "closed tab \(record.id)", repairs: &repairs)
        let group = record.groupID.map { id in
            ClosedTabGroup(
                id: TabGroupID(rawValue: id),
                visualData: TabGroupVisualData(
                    title: record.group?.title ?? "", color: record.group.flatMap { TabGroupColor(rawValue: $0.color) } ?? .grey,
                    collapsed: record.group?.collapsed ?? false))
        }
        return ClosedTab(
            id: ClosedTabID(rawValue: record.id), tabID: TabID(rawValue: record.tabID), history: history, title: record.title,
            faviconURL: record.faviconURL, browserID: BrowserID(rawValue: record.windowID), index: record.index,
            group: group, wasActive: record.wasActive, wasPinned: record.wasPinned, closedAt: record.closedAt)
    }
}

/// One instance of each distinct string it is given, for the length of a restore: equal strings then
/// share one storage. Used on the thread that builds a profile only.
final class StringInterner {
    private var seen: [String: String] = [:]

    func intern(_ text: String?) -> String? {
        guard let text else { return nil }
        if let known = seen[text] { return known }
        seen[text] = text
        return text
    }
}
