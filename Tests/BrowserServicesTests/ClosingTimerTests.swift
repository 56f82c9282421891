import BrowserModel
import TestSupport
import Testing

@testable import BrowserServices

/// A close-all's undo window is a timer; a client cannot make the service hold more of them than the
/// pending close-alls a profile may have (16): the model confirms the oldest, and their timers end.
@Suite(.computing) struct ClosingTimerTests {
    @Test func timersAreBoundedByThePendingCloseAlls() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        let window = try await service.createWindow(profile: profile.id)
        var last: TabsClosingSnapshot?
        for round in 0..<40 {
            _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://e.example/\(round)"), in: window.id)
            last = try await service.closeAllTabs(profile: profile.id, window: nil, policy: .allTabs, undoSeconds: 600)
            #expect(last?.state == .pending)
        }
        #expect(service.closingTimers.withLock { $0.count } == 1, "a close-all on the same window confirms the one before")
        let closing = try #require(last)
        _ = try await service.undoCloseAll(profile: profile.id, closing: closing.id)
        #expect(service.closingTimers.withLock { $0.isEmpty }, "an undone close-all has no timer left")
        #expect(try await service.recentlyClosed(profile: profile.id).count == 25, "the confirmed ones were recorded (capped)")
    }

    @Test func atMostSixteenPendingPerProfile() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        for round in 0..<20 {
            let window = try await service.createWindow(profile: profile.id)
            _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://e.example/\(round)"), in: window.id)
            _ = try await service.closeAllTabs(profile: profile.id, window: window.id, policy: .allTabs, undoSeconds: 600)
        }
        #expect(service.closingTimers.withLock { $0.count } == ModelLimits().pendingClosingsPerProfile)
    }
}
