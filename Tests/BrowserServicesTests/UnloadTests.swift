import BrowserModel
import Foundation
import Testing

@testable import BrowserServices

/// A profile dropped from memory (idle, or its lease moved) leaves nothing behind: its session, windows,
/// tabs and mediators are freed (a leak here would keep memory from following the working set).
struct UnloadTests {
    final class Weak: @unchecked Sendable {
        // `@unchecked Sendable`: written once on the executor, read after the executor is done with it.
        weak var session: ProfileSession?
        weak var browser: Browser?
        weak var tab: WebState?
        weak var mediator: WindowMediator?
        weak var profileMediator: ProfileMediator?
    }

    @Test func anUnloadedProfileIsFreed() async throws {
        let service = BrowserService(framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        let window = try await service.createWindow(profile: profile.id)
        _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://a.example"), in: window.id)
        _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://b.example"), in: window.id)
        let weak = Weak()
        await service.snapshots.profile(profile.id)?.executor.perform { session in
            weak.session = session
            weak.browser = session.browserList.browsers().first
            weak.tab = weak.browser?.webStateList.webState(at: 0)
            weak.mediator = weak.browser?.userData.get(WindowMediator.self)
            weak.profileMediator = session.userData.get(ProfileMediator.self)
        }
        #expect(weak.tab != nil && weak.mediator != nil && weak.profileMediator != nil)
        await service.unloadProfile(profile.id)
        try await Task.sleep(for: .milliseconds(50))
        // Checked as booleans: a failure must not reflect a half-freed object graph.
        let freed = (
            tab: weak.tab == nil, mediator: weak.mediator == nil, browser: weak.browser == nil,
            profileMediator: weak.profileMediator == nil, session: weak.session == nil
        )
        #expect(freed.tab, "the tab is freed")
        #expect(freed.mediator, "the window mediator is freed")
        #expect(freed.browser, "the window is freed")
        #expect(freed.profileMediator, "the profile mediator is freed")
        #expect(freed.session, "the session is freed")
    }
}
