public import BrowserModel
import Synchronization

/// Who pays attention to each regular profile, besides its renderer (issue 55): how many event
/// streams watch it (a window's or the profile's), and when a request last used it. A renderer at its
/// limit of running Chromiums closes a profile nobody watches or used lately, and starts one again
/// when it is watched or used; browserd tells each renderer this with its renewal.
///
/// A request or stream that carries `Browserd-Renderer` is the renderer's own, and counts for nothing.
/// Bounded: one entry per regular profile that was used (at most the profiles that exist; entries of
/// profiles nobody watches and nobody used for ``forgetAfter`` go as others come).
public final class ProfileAttention: Sendable {
    struct Entry {
        var watchers = 0
        var lastUsed: ContinuousClock.Instant
    }

    /// What a renderer is told of a profile.
    public struct Seen: Sendable, Equatable {
        public var watched: Bool
        /// Seconds since a request last used it (nil: not within ``forgetAfter``).
        public var idleSeconds: Double?
    }

    public let forgetAfter: Duration
    private let entries = Mutex<[ProfileID: Entry]>([:])

    public init(forgetAfter: Duration = .seconds(3600)) { self.forgetAfter = forgetAfter }

    /// A request (not a renderer's) used `root` now.
    public func used(_ root: ProfileID, now: ContinuousClock.Instant = .now) {
        entries.withLock { entries in
            if entries[root] == nil, entries.count >= 1024, entries.count.isMultiple(of: 1024) { forget(&entries, now: now) }
            entries[root, default: Entry(lastUsed: now)].lastUsed = now
        }
    }

    /// A stream (not a renderer's) watches `root` from now until the returned closure is called.
    public func watch(_ root: ProfileID, now: ContinuousClock.Instant = .now) -> @Sendable () -> Void {
        entries.withLock { entries in
            entries[root, default: Entry(lastUsed: now)].watchers += 1
            entries[root]?.lastUsed = now
        }
        let ended = Mutex(false)
        return { [self] in
            let already = ended.withLock { was in
                defer { was = true }
                return was
            }
            guard !already else { return }
            let end = ContinuousClock.now
            entries.withLock { entries in
                entries[root]?.watchers -= 1
                entries[root]?.lastUsed = end
            }
        }
    }

    /// What is known of `root` at `now`.
    public func seen(_ root: ProfileID, now: ContinuousClock.Instant = .now) -> Seen {
        entries.withLock { entries in
            guard let entry = entries[root] else { return Seen(watched: false, idleSeconds: nil) }
            let idle = entry.lastUsed.duration(to: now)
            return Seen(
                watched: entry.watchers > 0,
                idleSeconds: idle > forgetAfter ? nil : Double(idle.components.seconds) + Double(idle.components.attoseconds) / 1e18)
        }
    }

    private func forget(_ entries: inout [ProfileID: Entry], now: ContinuousClock.Instant) {
        entries = entries.filter { $0.value.watchers > 0 || $0.value.lastUsed.duration(to: now) <= forgetAfter }
    }
}
