import Foundation
import Synchronization

/// `--max-live-pages` across a renderer's profiles (issue 55): each profile's ``Renderer`` says, per
/// window, which tabs it would give a live page (the active one first, then the most recently used)
/// and when the window was last active; the allocator answers which of them may have one, by
/// ``LivePageBudget`` over every window of every profile (each window's active tab first, the most
/// recently active windows first). When a window's share changes because another window changed,
/// that window's renderer is told to look again.
public final class LivePageAllocator: Sendable {
    public let maximum: Int
    private struct State {
        var windows: [String: LivePageBudget.Window] = [:]
        /// Who to tell when a window's share changes (its renderer).
        var owners: [String: @Sendable (String) -> Void] = [:]
        var live: [String: Set<String>] = [:]
    }
    private let state = Mutex(State())

    public init(maximum: Int) { self.maximum = max(0, maximum) }

    private static let epoch = ContinuousClock.now
    /// Seconds on the clock every renderer of the process shares (when a window was last active).
    public static var clock: Double {
        let elapsed = ContinuousClock.now - epoch
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// `window` would give these tabs (most wanted first) a live page; it was last active at
    /// `lastUsed`. Returns the tabs it may give one now; other windows whose share changed are told.
    public func want(
        _ tabs: [String], window: String, lastUsed: Double, owner: @escaping @Sendable (String) -> Void
    ) -> Set<String> {
        let (mine, changed) = state.withLock { state -> (Set<String>, [(String, @Sendable (String) -> Void)]) in
            state.windows[window] = LivePageBudget.Window(id: window, lastUsed: lastUsed, tabs: tabs)
            state.owners[window] = owner
            return Self.allocate(&state, maximum: maximum, except: window)
        }
        for (other, tell) in changed { tell(other) }
        return mine
    }

    /// `window` has no pages any more (it closed, or its profile stopped).
    public func remove(_ window: String) {
        let changed = state.withLock { state -> [(String, @Sendable (String) -> Void)] in
            guard state.windows.removeValue(forKey: window) != nil else { return [] }
            state.owners[window] = nil
            state.live[window] = nil
            return Self.allocate(&state, maximum: maximum, except: window).1
        }
        for (other, tell) in changed { tell(other) }
    }

    /// How many tabs may have a live page now, across every window.
    public var allotted: Int { state.withLock { $0.live.values.reduce(0) { $0 + $1.count } } }

    private static func allocate(
        _ state: inout State, maximum: Int, except window: String
    ) -> (Set<String>, [(String, @Sendable (String) -> Void)]) {
        let live = LivePageBudget.live(Array(state.windows.values), maximum: maximum)
        var changed: [(String, @Sendable (String) -> Void)] = []
        for (id, _) in state.windows where id != window && (live[id] ?? []) != (state.live[id] ?? []) {
            if let owner = state.owners[id] { changed.append((id, owner)) }
        }
        state.live = live
        return (live[window] ?? [], changed)
    }
}
