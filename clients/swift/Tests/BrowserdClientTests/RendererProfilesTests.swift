import Synchronization
import Testing

@testable import BrowserdRenderer

/// A renderer's profiles (issue 55), without Chromium or a server: which have their Chromium running
/// under `--max-profiles`, and which tabs have a live page under `--max-live-pages`.
@Suite(.computing) struct RendererProfilesTests {
    @Test func whatBrowserdGivesStartsAndWhatItTakesBackStops() {
        var profiles = RendererProfiles(maximumRunning: 10)
        #expect(profiles.held(["p1": 1, "p2": 2], now: 0) == [.start(profile: "p1", fence: 1), .start(profile: "p2", fence: 2)])
        // p1 moved away; p2 came back under a new fence (it was elsewhere meanwhile): both stop, p2 starts again.
        #expect(profiles.held(["p2": 5], now: 1) == [.release(profile: "p1"), .release(profile: "p2"), .start(profile: "p2", fence: 5)])
        #expect(profiles.running == ["p2"])
    }

    /// At `--max-profiles 2`, a third profile closes the least recently used one nobody watches; that
    /// one starts again once a window of it is used (closing the next least recently used).
    @Test func theLeastRecentlyUsedUnwatchedProfileMakesRoom() {
        var profiles = RendererProfiles(maximumRunning: 2, recentlyUsed: 60)
        _ = profiles.held(["p1": 1, "p2": 2], now: 0)
        _ = profiles.used("p2", watched: true, now: 10)
        #expect(profiles.held(["p1": 1, "p2": 2, "p3": 3], now: 100) == [.idle(profile: "p1"), .start(profile: "p3", fence: 3)])
        #expect(profiles.running == ["p2", "p3"])
        // p1 is needed again (a client opened its window): p3 (unwatched, not used for 60 s) makes room; p2 is watched.
        #expect(profiles.used("p1", watched: true, now: 200) == [.idle(profile: "p3"), .start(profile: "p1", fence: 1)])
        #expect(profiles.running == ["p1", "p2"])
    }

    /// When every running profile is watched or recent, a needed one waits, and starts once one is not.
    @Test func aProfileWaitsWhileEveryRunningOneIsInUse() {
        var profiles = RendererProfiles(maximumRunning: 1, recentlyUsed: 60)
        _ = profiles.held(["p1": 1], now: 0)
        #expect(profiles.held(["p1": 1, "p2": 2], now: 10) == [])
        #expect(profiles.waiting == ["p2"])
        #expect(profiles.tick(now: 59) == [])
        #expect(profiles.tick(now: 60) == [.idle(profile: "p1"), .start(profile: "p2", fence: 2)])
        #expect(profiles.waiting.isEmpty, "the idle one waits for a use, not for room")
    }

    /// What browserd tells at each renewal: a watch or a new use is demand (an idle profile starts
    /// again); an old use is none; a profile no longer watched may make room once its use is old.
    @Test func renewalsSayWhoWatchesAndUses() {
        var profiles = RendererProfiles(maximumRunning: 1, recentlyUsed: 5)
        _ = profiles.held(["p1": 1, "p2": 2], now: 0)
        #expect(profiles.running == ["p1"] && profiles.waiting == ["p2"])
        // A use from before p1 was given is old news: nothing changes until p1 is idle long enough.
        #expect(profiles.seen("p1", watched: false, lastUsed: -3, now: 1) == [])
        #expect(profiles.tick(now: 5) == [.idle(profile: "p1"), .start(profile: "p2", fence: 2)])
        // Nobody watches p1, and no use is newer than the last: it stays idle.
        #expect(profiles.seen("p1", watched: false, lastUsed: -3, now: 6) == [])
        // Somebody watches it: p2 (not used since it was given at 0) makes room at once.
        #expect(profiles.seen("p1", watched: true, lastUsed: nil, now: 8) == [.idle(profile: "p2"), .start(profile: "p1", fence: 1)])
        // A new use of p2 (a client's request at 11): it waits while p1 is watched …
        #expect(profiles.seen("p2", watched: false, lastUsed: 11, now: 12) == [])
        #expect(profiles.waiting == ["p2"])
        // … and starts once nobody watches p1 and its last use (the watch, until 8) is 5 s old.
        #expect(profiles.seen("p1", watched: false, lastUsed: nil, now: 13) == [.idle(profile: "p1"), .start(profile: "p2", fence: 2)])
    }

    /// Live pages across profiles: every window's active tab first, most recently used windows first,
    /// then the second tabs, and so on, up to the maximum.
    @Test func livePagesGoToEachWindowsActiveTabFirst() {
        let windows = [
            LivePageBudget.Window(id: "w1", lastUsed: 1, tabs: ["a1", "a2", "a3"]),
            LivePageBudget.Window(id: "w2", lastUsed: 3, tabs: ["b1", "b2"]),
            LivePageBudget.Window(id: "w3", lastUsed: 2, tabs: ["c1"]),
        ]
        #expect(LivePageBudget.live(windows, maximum: 2) == ["w2": ["b1"], "w3": ["c1"]])
        #expect(LivePageBudget.live(windows, maximum: 4) == ["w1": ["a1"], "w2": ["b1", "b2"], "w3": ["c1"]])
        #expect(LivePageBudget.live(windows, maximum: 100) == ["w1": ["a1", "a2", "a3"], "w2": ["b1", "b2"], "w3": ["c1"]])
        #expect(LivePageBudget.live(windows, maximum: 0).isEmpty)
    }

    /// `--max-live-pages` shared by a renderer's windows (of any profile): a window that becomes active
    /// takes its share from the others, which are told; a window that goes gives it back.
    @Test func windowsShareTheLivePages() {
        let allocator = LivePageAllocator(maximum: 3)
        let told = Mutex<[String]>([])
        let tell: @Sendable (String) -> Void = { window in told.withLock { $0.append(window) } }
        #expect(allocator.want(["a1", "a2", "a3"], window: "A", lastUsed: 1, owner: tell) == ["a1", "a2", "a3"])
        // B, more recent: every window's active tab first, then B's second.
        #expect(allocator.want(["b1", "b2"], window: "B", lastUsed: 2, owner: tell) == ["b1", "b2"])
        #expect(told.withLock { $0 } == ["A"], "A's share changed")
        #expect(allocator.want(["a1", "a2", "a3"], window: "A", lastUsed: 1, owner: tell) == ["a1"])
        #expect(allocator.allotted == 3)
        allocator.remove("B")
        #expect(told.withLock { $0 } == ["A", "A"])
        #expect(allocator.want(["a1", "a2", "a3"], window: "A", lastUsed: 1, owner: tell) == ["a1", "a2", "a3"])
    }
}
