import BrowserModel
import BrowserRecords
import BrowserServices
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite(.computing) struct BrowserServiceTests {
    @Test func windowLifecycleThroughCommands() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "Work")
        let window = try await service.createWindow(profile: profile.id)
        #expect(window.tabs.isEmpty && window.activeIndex == -1)
        let (a, v1) = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://a.example"), in: window.id)
        #expect(a.url == "https://a.example/" && a.active && a.index == 0)
        let (b, _) = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://b.example", openerID: a.id), in: window.id)
        #expect(b.index == 1 && b.openerID == a.id)
        let snapshot = try #require(service.window(window.id))
        #expect(snapshot.tabCount == 2 && snapshot.activeTabID == b.id && snapshot.version > v1)
        #expect(service.window(ofTab: a.id) == window.id)
        #expect(service.profile(profile.id)?.windowCount == 1)
    }

    @Test func noOpKeepsTheVersion() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        let window = try await service.createWindow(profile: profile.id)
        let (tab, version) = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://a.example"), in: window.id)
        let (_, after) = try await service.dispatch(TabCommands.activate, tab.id, in: window.id)
        #expect(after == version)
        await #expect(throws: ServiceError.versionMismatch(current: version)) {
            try await service.dispatch(TabCommands.close, tab.id, in: window.id, ifMatch: version - 1)
        }
    }

    @Test func closedTabsGoToRecentlyClosedAndRestore() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        let window = try await service.createWindow(profile: profile.id)
        let (tab, _) = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://a.example"), in: window.id)
        _ = try await service.dispatch(TabCommands.close, tab.id, in: window.id)
        let closed = try await service.recentlyClosed(profile: profile.id)
        #expect(closed.map(\.leading.url) == ["https://a.example/"])
        let (restored, _) = try await service.restoreClosedTab(profile: profile.id, entry: closed[0].id)
        #expect(restored.url == "https://a.example/" && restored.active)
    }

    @Test func incognitoProfileAndItsWindows() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        let (otr, created) = try await service.offTheRecordProfile(of: profile.id)
        #expect(created && otr.incognito && otr.parentID == profile.id)
        #expect(try await service.offTheRecordProfile(of: profile.id).created == false)
        let window = try await service.createWindow(profile: otr.id)
        #expect(window.incognito)
        try await service.deleteProfile(otr.id)
        #expect(service.window(window.id) == nil)
        #expect(service.profile(otr.id) == nil)
        #expect(service.profile(profile.id)?.offTheRecordID == nil)
    }
}

@Suite(.computing) struct RestoreRepairTests {
    /// Stored values the model cannot take as they are are repaired or left out, and each is reported
    /// (the application logs the list) instead of being fixed silently.
    @Test func repairsAreReported() async throws {
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        func entry(_ url: String, _ transition: String = "link") -> HistoryEntryRecord {
            HistoryEntryRecord(url: url, title: "", transition: transition, timestamp: at)
        }
        var stored = StoredState()
        stored.profiles = [ProfileRecord(id: "p0000000000000001", name: "p", createdAt: at)]
        stored.windows = [
            WindowRecord(
                id: "w0000000000000001", profileID: "p0000000000000001", version: 3,
                tabOrder: ["t0000000000000001", "t0000000000000009", "t0000000000000002"],
                activeIndex: 7, pinnedCount: 0,
                groups: [GroupRecord(id: "g0000000000000001", title: "", color: "mauve", collapsed: false)],
                createdAt: at, lastActiveAt: at)
        ]
        stored.tabs = [
            "t0000000000000001": TabRecord(
                id: "t0000000000000001", groupID: "g0000000000000001", openerID: nil,
                openerNavigationIndex: nil, title: "", loading: false, progress: 1, faviconURL: nil,
                createdAt: at, lastActiveAt: at, historyIndex: 5,
                history: [entry("https://a.example/"), entry("https://b.example/", "teleport")]),
            "t0000000000000002": TabRecord(
                id: "t0000000000000002", groupID: nil, openerID: "t0000000000000042",
                openerNavigationIndex: 0, title: "", loading: false, progress: 1, faviconURL: nil,
                createdAt: at, lastActiveAt: at, historyIndex: 0, history: [entry("https://c.example/")]),
        ]
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let summary = try await service.restore(stored)
        #expect(summary.tabs == 2)
        let repairs = summary.repairs.joined(separator: "\n")
        #expect(summary.repairs.count == 6, "\(repairs)")
        #expect(repairs.contains("tab t0000000000000009 is in the tab order but not stored"))
        #expect(repairs.contains("history index 5 is outside its 2 entries"))
        #expect(repairs.contains("unknown transition \"teleport\""))
        #expect(repairs.contains("unknown colour \"mauve\""))
        #expect(repairs.contains("its opener t0000000000000042 is not in window"))
        #expect(repairs.contains("active index 7 is past its 2 tabs"))
        let tab = try #require(service.tab(TabID(rawValue: "t0000000000000001")))
        #expect(tab.tab.url == "https://b.example/")
    }
}

@Suite(.computing) struct RestoreProgressTests {
    /// A restore says what is back after each window, so a long one can show its progress.
    @Test func progressIsToldAfterEachWindow() async throws {
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        var stored = StoredState()
        stored.profiles = [ProfileRecord(id: "p0000000000000001", name: "a", createdAt: at), ProfileRecord(id: "p0000000000000002", name: "b", createdAt: at)]
        for (i, profile) in ["p0000000000000001", "p0000000000000001", "p0000000000000002"].enumerated() {
            let tabs = (0..<(i + 1)).map { String(format: "t%015x%01x", i, $0) }
            stored.windows.append(
                WindowRecord(
                    id: String(format: "w%016x", i), profileID: profile, version: 1, tabOrder: tabs, activeIndex: 0,
                    pinnedCount: 0, groups: [], createdAt: at, lastActiveAt: at))
            for tab in tabs {
                stored.tabs[tab] = TabRecord(
                    id: tab, groupID: nil, openerID: nil, openerNavigationIndex: nil, title: "", loading: false,
                    progress: 1, faviconURL: nil, createdAt: at, lastActiveAt: at, historyIndex: 0,
                    history: [HistoryEntryRecord(url: "https://e.example/", title: "", transition: "link", timestamp: at)])
            }
        }
        let seen = Mutex<[String]>([])
        let summary = try await BrowserService(storedTabs: NothingStored(), framing: TestFraming()).restore(
            stored,
            progress: { done in
                seen.withLock { $0.append("\(done.profiles)p \(done.windows)w \(done.tabs)t") }
            })
        #expect(summary.profiles == 2 && summary.windows == 3 && summary.tabs == 6)
        #expect(seen.withLock { $0 } == ["0p 1w 1t", "0p 2w 3t", "1p 2w 3t", "1p 3w 6t", "2p 3w 6t"])
    }
}
