import BrowserModel
import BrowserServices
import Testing

@Suite struct BrowserServiceTests {
    @Test func windowLifecycleThroughCommands() async throws {
        let service = BrowserService()
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
        let service = BrowserService()
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
        let service = BrowserService()
        let profile = try await service.createProfile(name: "p")
        let window = try await service.createWindow(profile: profile.id)
        let (tab, _) = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://a.example"), in: window.id)
        _ = try await service.dispatch(TabCommands.close, tab.id, in: window.id)
        let closed = try await service.recentlyClosed(profile: profile.id)
        #expect(closed.map(\.url) == ["https://a.example/"])
        let (restored, _) = try await service.restoreClosedTab(profile: profile.id, entry: closed[0].id)
        #expect(restored.url == "https://a.example/" && restored.active)
    }

    @Test func incognitoProfileAndItsWindows() async throws {
        let service = BrowserService()
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
