import BrowserModel
import Foundation
import TestSupport
import Testing

@testable import BrowserServices

/// A profile dropped from memory (idle, or its lease moved) leaves nothing behind: its session, windows,
/// tabs and mediators are freed (a leak here would keep memory from following the working set).
@Suite(.offThePool) struct UnloadTests {
    final class Weak: @unchecked Sendable {
        // `@unchecked Sendable`: written once on the executor, read after the executor is done with it.
        weak var session: ProfileSession?
        weak var browser: Browser?
        weak var tab: WebState?
        weak var mediator: WindowMediator?
        weak var profileMediator: ProfileMediator?
    }

    @Test func anUnloadedProfileIsFreed() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
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

    /// The window mediators (each holds a copy of every tab's state) are let go with the rest of the
    /// profile, by whoever releases its remains, not on the profile's executor while it unloads.
    @Test func theWindowMediatorsGoWithTheRemains() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        let window = try await service.createWindow(profile: profile.id)
        _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://a.example"), in: window.id)
        let weak = Weak()
        await service.snapshots.profile(profile.id)?.executor.perform { session in
            weak.mediator = session.browserList.browsers().first?.userData.get(WindowMediator.self)
        }
        let remains = await service.unloadProfile(profile.id)
        try await Task.sleep(for: .milliseconds(20))
        let heldUntilReleased = weak.mediator != nil
        #expect(heldUntilReleased, "the remains hold the window mediator")
        remains.release()
        let freed = weak.mediator == nil
        #expect(freed, "released with the remains")
    }

    /// The tab index gives its room back when the windows that filled it leave (Swift's dictionaries
    /// never shrink by themselves): an idle server returns to an empty one's size.
    @Test func theTabIndexShrinksWhenAProfileLeaves() async throws {
        let service = BrowserService(storedTabs: NothingStored(), framing: TestFraming())
        let profile = try await service.createProfile(name: "p")
        let window = try await service.createWindow(profile: profile.id)
        for i in 0..<2_000 {
            _ = try await service.dispatch(TabCommands.open, OpenTabRequest(url: "https://a.example/\(i)"), in: window.id)
        }
        let full = service.snapshots.tabIndexCapacity
        #expect(full >= 2_000)
        await service.unloadProfile(profile.id)
        #expect(service.snapshots.tabIndexCapacity < full / 4)
    }

    @Test func aSparseDictionaryIsRebuiltAtItsSize() {
        var map: [Int: Int] = [:]
        for i in 0..<10_000 { map[i] = i }
        let full = map.capacity
        for i in 0..<6_000 { map[i] = nil }
        map.shrinkIfSparse()
        #expect(map.capacity == full, "4,000 left of a table sized for 10,000: still over a quarter full")
        for i in 6_000..<9_990 { map[i] = nil }
        map.shrinkIfSparse()
        #expect(map.capacity < 64 && map.count == 10 && map[9_995] == 9_995)
        var small: [Int: Int] = [1: 1]
        small.shrinkIfSparse()
        #expect(small[1] == 1)
    }
}
