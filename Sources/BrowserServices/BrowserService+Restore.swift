import BrowserModel
public import BrowserRecords
import Foundation

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
    public func restore(_ stored: StoredState,
                        tabs provider: (@Sendable (_ windowID: String) throws -> [String: TabRecord])? = nil) async throws -> RestoreSummary {
        var summary = RestoreSummary()
        let windowsByProfile = Dictionary(grouping: stored.windows, by: \.profileID)
        for profile in stored.profiles {
            let state = BrowserState(id: ProfileID(rawValue: profile.id), name: profile.name, createdAt: profile.createdAt)
            let executor = ProfileExecutor(session: ProfileSession(browserState: state, limits: limits))
            let windows = windowsByProfile[profile.id] ?? []
            let closed = stored.recentlyClosed[profile.id] ?? []
            let allTabs = stored.tabs
            let tabsOf: @Sendable (String) throws -> [String: TabRecord] = provider ?? { _ in allTabs }
            let directory = self.directory
            let (snapshot, restoredTabs) = try await executor.perform { session -> (ProfileSnapshot, Int) in
                let mediator = ProfileMediator.attach(to: session, directory: directory)
                mediator.isRestoring = true
                var count = 0
                for record in windows {
                    count += try Self.restoreWindow(record, tabs: try tabsOf(record.id), into: session)
                }
                session.recentlyClosed.restore(closed.map(Self.closedTab))
                mediator.publishWindows()
                mediator.isRestoring = false
                for browser in session.browserList.browsers() { mediator.attachConsumers(to: browser) }
                mediator.publishProfiles()
                mediator.profileDirty = false
                mediator.markPersisted()
                return (mediator.snapshot(of: session.browserState), count)
            }
            directory.putProfile(snapshot, executor: executor, rootID: state.id)
            summary.profiles += 1
            summary.windows += windows.count
            summary.tabs += restoredTabs
        }
        return summary
    }

    private static func restoreWindow(_ record: WindowRecord, tabs: [String: TabRecord], into session: ProfileSession) throws -> Int {
        let browser = try session.createBrowser(id: BrowserID(rawValue: record.id), createdAt: record.createdAt)
        let list = browser.webStateList
        var restored: [(WebState, TabRecord)] = []
        for id in record.tabOrder {
            guard let tab = tabs[id] else { continue }
            let items = tab.history.map {
                NavigationItem(url: $0.url, title: $0.title, transition: PageTransition(rawValue: $0.transition) ?? .link,
                               timestamp: $0.timestamp)
            }
            let history = (try? NavigationHistory(items: items, currentIndex: tab.historyIndex))
                ?? ((try? NavigationHistory(items: items, currentIndex: items.count - 1)) ?? NavigationHistory())
            let webState = WebState(id: TabID(rawValue: tab.id), history: history, title: tab.title, isLoading: tab.loading,
                                    progress: tab.progress, faviconURL: tab.faviconURL, createdAt: tab.createdAt,
                                    lastActiveAt: tab.lastActiveAt)
            let pinned = restored.count < record.pinnedCount
            try list.insert(webState, InsertionParams(index: list.count, pinned: pinned))
            restored.append((webState, tab))
        }
        for group in record.groups {
            let indices = restored.indices.filter { restored[$0].1.groupID == group.id }
            guard let first = indices.first, let last = indices.last, first >= list.pinnedCount,
                  last - first + 1 == indices.count, list.group(withID: TabGroupID(rawValue: group.id)) == nil else { continue }
            let data = TabGroupVisualData(title: group.title, color: TabGroupColor(rawValue: group.color) ?? .grey,
                                          collapsed: group.collapsed)
            try list.createGroup(indices: Set(indices), visualData: data, id: TabGroupID(rawValue: group.id))
        }
        for (index, (_, tab)) in restored.enumerated() {
            guard let openerID = tab.openerID, let navigationIndex = tab.openerNavigationIndex else { continue }
            let openerIndex = list.index(ofTabWithID: TabID(rawValue: openerID))
            guard openerIndex >= 0, openerIndex != index else { continue }
            try list.restoreOpener(list.webState(at: openerIndex)!, navigationIndex: navigationIndex, at: index)
        }
        if list.containsIndex(record.activeIndex) {
            try list.activate(at: record.activeIndex)
            let (webState, tab) = restored[record.activeIndex]
            webState.markActive(at: tab.lastActiveAt)
        }
        browser.lastActiveAt = record.lastActiveAt
        if let mediator = browser.userData.get(WindowMediator.self) {
            mediator.version = record.version
            mediator.markDirtyForPublish()
        }
        return restored.count
    }

    private static func closedTab(_ record: ClosedTabRecord) -> ClosedTab {
        let items = record.history.map {
            NavigationItem(url: $0.url, title: $0.title, transition: PageTransition(rawValue: $0.transition) ?? .link, timestamp: $0.timestamp)
        }
        let history = (try? NavigationHistory(items: items, currentIndex: record.historyIndex)) ?? NavigationHistory()
        return ClosedTab(id: ClosedTabID(rawValue: record.id), tabID: TabID(rawValue: record.tabID), history: history, title: record.title,
                         faviconURL: record.faviconURL, browserID: BrowserID(rawValue: record.windowID), index: record.index,
                         groupID: record.groupID.map { TabGroupID(rawValue: $0) }, wasActive: record.wasActive,
                         wasPinned: record.wasPinned, closedAt: record.closedAt)
    }
}
