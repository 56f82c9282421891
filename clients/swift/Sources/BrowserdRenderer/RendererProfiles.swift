/// The profiles browserd gave one renderer (issue 55), and which of them have their Chromium running:
/// a pure value, told what browserd said at each renewal and when a profile's windows are watched or
/// used, answering which Chromiums to start and stop (the renderer carries them out, one Chromium
/// with its own user-data directory per profile).
///
/// - What browserd no longer gives (released, or moved under a new fence) stops at once.
/// - At most ``maximumRunning`` run. A profile that needs its Chromium (browserd gave it, or one of its
///   windows is watched or used again) and finds no room closes the least recently used one whose
///   windows nobody watches and that was not used within ``recentlyUsed``; when every running one is
///   watched or recent, it waits (``waiting``) until one is not.
/// - A profile stopped for room keeps its assignment: its tabs stay unrealized in browserd until it
///   runs again.
public struct RendererProfiles: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        /// Its Chromium runs.
        case running
        /// It needs its Chromium and waits for room.
        case waiting
        /// Stopped for room; it waits for nothing until a window of it is watched or used again.
        case idle
    }

    public struct Profile: Sendable, Equatable {
        public var id: String
        public var fence: UInt64
        /// When a window of it was last watched or used (seconds on the renderer's clock).
        public var lastUsed: Double
        /// Whether a window of it is watched now (a stream subscriber).
        public var watched: Bool
        public var state: State
    }

    public enum Action: Sendable, Equatable {
        /// Start the profile's Chromium (its reports carry `fence`).
        case start(profile: String, fence: UInt64)
        /// Stop it: browserd no longer gives it to this renderer (its pages go, its tabs stay).
        case release(profile: String)
        /// Stop it for room (it stays this renderer's: it starts again when it is needed).
        case idle(profile: String)
    }

    public let maximumRunning: Int
    /// How long a use keeps a profile's Chromium from being closed for room (seconds).
    public let recentlyUsed: Double
    public private(set) var profiles: [String: Profile] = [:]

    public init(maximumRunning: Int, recentlyUsed: Double = 60) {
        self.maximumRunning = max(1, maximumRunning)
        self.recentlyUsed = recentlyUsed
    }

    public var running: Set<String> { Set(profiles.values.filter { $0.state == .running }.map(\.id)) }
    public var waiting: [String] { profiles.values.filter { $0.state == .waiting }.map(\.id).sorted() }

    /// What browserd gives this renderer now (profile → fence), at registration or renewal.
    public mutating func held(_ given: [String: UInt64], now: Double) -> [Action] {
        var actions: [Action] = []
        for (id, profile) in profiles.sorted(by: { $0.key < $1.key }) where given[id] != profile.fence {
            // Gone, or given again under a new fence (it moved away and back): what runs stops.
            profiles[id] = nil
            if profile.state == .running { actions.append(.release(profile: id)) }
        }
        for (id, fence) in given.sorted(by: { $0.key < $1.key }) where profiles[id] == nil {
            // New to this renderer: it renders the profile's windows at once (they want a renderer).
            profiles[id] = Profile(id: id, fence: fence, lastUsed: now, watched: false, state: .waiting)
        }
        return actions + startWaiting(now: now)
    }

    /// A window of `profile` is watched (or no longer), or was used, at `now`: an idle one needs its
    /// Chromium again.
    public mutating func used(_ profile: String, watched: Bool, now: Double) -> [Action] {
        guard var entry = profiles[profile] else { return [] }
        entry.watched = watched
        entry.lastUsed = now
        if entry.state == .idle { entry.state = .waiting }
        profiles[profile] = entry
        return startWaiting(now: now)
    }

    /// What browserd says of `profile` at a renewal: whether anyone but this renderer watches it, and
    /// when it was last used (nil: not lately). A watch, or a use newer than the last one known, is
    /// demand: an idle profile needs its Chromium again. A profile no longer watched may be closed
    /// for room once its last use is old enough.
    public mutating func seen(_ profile: String, watched: Bool, lastUsed: Double?, now: Double) -> [Action] {
        guard var entry = profiles[profile] else { return [] }
        var demand = watched && !entry.watched
        entry.watched = watched
        if let lastUsed, lastUsed > entry.lastUsed {
            entry.lastUsed = lastUsed
            demand = true
        }
        if watched { entry.lastUsed = max(entry.lastUsed, now) }
        if demand, entry.state == .idle { entry.state = .waiting }
        profiles[profile] = entry
        return startWaiting(now: now)
    }

    /// Time passed: a waiting profile may find room now (a running one is no longer recent).
    public mutating func tick(now: Double) -> [Action] { startWaiting(now: now) }

    private mutating func startWaiting(now: Double) -> [Action] {
        var actions: [Action] = []
        // The most recently used waiting profile first.
        let waiting = profiles.values.filter { $0.state == .waiting }.sorted { ($0.lastUsed, $1.id) > ($1.lastUsed, $0.id) }
        for profile in waiting {
            if running.count >= maximumRunning {
                let closable = profiles.values.filter { $0.state == .running && !$0.watched && now - $0.lastUsed >= recentlyUsed }
                guard let victim = closable.min(by: { ($0.lastUsed, $0.id) < ($1.lastUsed, $1.id) }) else { break }
                profiles[victim.id]?.state = .idle
                actions.append(.idle(profile: victim.id))
            }
            profiles[profile.id]?.state = .running
            actions.append(.start(profile: profile.id, fence: profile.fence))
        }
        return actions
    }
}

/// Live pages across a renderer's profiles (`--max-live-pages`): each window's active tab first (the
/// most recently used windows first), then the other tabs, most recently used first, up to `maximum`.
public enum LivePageBudget {
    public struct Window: Sendable, Equatable {
        public var id: String
        /// When it was last used or watched (seconds); more recent windows come first.
        public var lastUsed: Double
        /// Its tabs, most recently active first (the active one first).
        public var tabs: [String]
    }

    /// The tabs that have a live page, by window.
    public static func live(_ windows: [Window], maximum: Int) -> [String: Set<String>] {
        let ordered = windows.sorted { ($0.lastUsed, $1.id) > ($1.lastUsed, $0.id) }
        var live: [String: Set<String>] = [:]
        var left = max(0, maximum)
        var depth = 0
        // Round by round: every window's first tab, then every window's second, …
        while left > 0 {
            var any = false
            for window in ordered where depth < window.tabs.count {
                any = true
                guard left > 0 else { break }
                live[window.id, default: []].insert(window.tabs[depth])
                left -= 1
            }
            guard any else { break }
            depth += 1
        }
        return live
    }
}
