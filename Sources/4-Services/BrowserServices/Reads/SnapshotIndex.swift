import BrowserModel
import Synchronization

/// The index of published snapshots, readable from any thread: profiles and their executors, and the
/// latest published snapshot of every window, with tab and group ids mapped to their windows.
///
/// Mediators write it from inside their profile's executor after each change; HTTP handlers read it
/// without waiting for any executor (reads never wait for mutations or the disk).
final class SnapshotIndex: Sendable {
    struct ProfileEntry {
        let executor: ProfileExecutor
        var snapshot: ProfileSnapshot
        /// The regular profile whose session holds this profile (itself when regular).
        let rootID: ProfileID
    }

    struct WindowEntry {
        var snapshot: WindowSnapshot
        let rootID: ProfileID
    }

    /// A value made from one version of a window (its encoded answer).
    struct CachedAnswer: Sendable {
        let version: Int
        let value: any Sendable
    }

    struct State {
        var profiles: [ProfileID: ProfileEntry] = [:]
        var windows: [BrowserID: WindowEntry] = [:]
        var tabs: [TabID: BrowserID] = [:]
        var groups: [TabGroupID: BrowserID] = [:]
        /// Profiles other instances hold, as they last announced them (several instances on one
        /// database): part of the directory, never of this instance's model.
        var remote: [ProfileID: ProfileSnapshot] = [:]
        /// Windows' answers, each made once per version and kept within a budget of bytes, the least
        /// recently read leaving first (a loaded profile no longer keeps every window's answer).
        var answers: ByteLRU<BrowserID, CachedAnswer>
        /// Which answers are kept: a window's, the second time its version is built.
        var admission = AnswerAdmission()
        var answerStats = AnswerCacheStats()

        /// Gives back what the indexes no longer need after windows left (an unloaded profile's tabs):
        /// Swift's dictionaries never shrink by themselves, and an idle server must return to the size
        /// of an empty one.
        mutating func shrinkIfSparse() {
            tabs.shrinkIfSparse()
            groups.shrinkIfSparse()
            windows.shrinkIfSparse()
        }
    }

    private let state: Mutex<State>
    /// The event stream sources of every window and profile.
    let events: EventHub

    /// Told of every action a window's dispatcher ran (for metrics).
    let onAction: (@Sendable (_ name: String, _ ok: Bool) -> Void)?

    /// Told of every change of the directory made here (a profile created, changed or deleted; not
    /// one restored or unloaded because its lease moved), for other instances to follow.
    let directoryChanged = Mutex<(@Sendable ([DirectoryChange]) -> Void)?>(nil)
    /// Told the regular profiles a change (here or another instance's) left with windows.
    let windowsOpen = Mutex<(@Sendable (Set<ProfileID>) -> Void)?>(nil)

    init(events: EventHub, onAction: (@Sendable (String, Bool) -> Void)? = nil, answerCacheBytes: Int = SnapshotIndex.defaultAnswerCacheBytes) {
        self.events = events
        self.onAction = onAction
        state = Mutex(State(answers: ByteLRU(limit: answerCacheBytes)))
    }

    /// The bytes of windows' answers kept at most by default.
    static let defaultAnswerCacheBytes = 16 << 20

    func profile(_ id: ProfileID) -> ProfileEntry? { state.withLock { $0.profiles[id] } }

    /// Every profile's latest snapshot, in no order.
    func profileSnapshots() -> [ProfileSnapshot] { state.withLock { $0.profiles.values.map(\.snapshot) } }

    /// The latest snapshot of every window (of `profile` only, when given), in no order.
    func windowSnapshots(profile: ProfileID? = nil) -> [WindowSnapshot] {
        state.withLock { state in state.windows.values.map(\.snapshot).filter { profile == nil || $0.profileID == profile } }
    }

    /// The executor of every regular profile (each holds its off-the-record one too).
    func sessionExecutors() -> [ProfileExecutor] {
        state.withLock { state in state.profiles.values.filter { $0.rootID == $0.snapshot.id }.map(\.executor) }
    }

    func window(_ id: BrowserID) -> WindowEntry? { state.withLock { $0.windows[id] } }

    func browser(ofTab id: TabID) -> BrowserID? { state.withLock { $0.tabs[id] } }

    func browser(ofGroup id: TabGroupID) -> BrowserID? { state.withLock { $0.groups[id] } }

    /// The room the tab index holds (for tests: it must shrink when profiles leave).
    var tabIndexCapacity: Int { state.withLock { $0.tabs.capacity } }

    // Profiles come, change and go here; each change is also the profile directory stream's event,
    // appended under this index's lock so the directory's events and snapshots follow its order.

    /// Puts a profile in memory: created, changed, or restored after taking its lease over. A profile
    /// another instance announced before (it held it) changes hands without an `add`; its
    /// off-the-record profile there ended with that instance's hold and is removed.
    func putProfile(_ snapshot: ProfileSnapshot, executor: ProfileExecutor, rootID: ProfileID) {
        let published: [DirectoryChange] = state.withLock { state in
            let known = state.profiles[snapshot.id] != nil
            state.profiles[snapshot.id] = ProfileEntry(executor: executor, snapshot: snapshot, rootID: rootID)
            var changes: [DirectoryChange] = []
            if !known, let before = state.remote.removeValue(forKey: snapshot.id) {
                for (id, other) in state.remote where other.parentID == snapshot.id {
                    state.remote[id] = nil
                    announceRemoval(id, in: state)
                    changes.append(.remove(id))
                }
                if before != snapshot {
                    announce("profiles.update", snapshot, in: state)
                    changes.append(.put(snapshot))
                }
                return changes
            }
            announce(known ? "profiles.update" : "profiles.add", snapshot, in: state)
            return [.put(snapshot)]
        }
        publish(published)
    }

    func updateProfile(_ snapshot: ProfileSnapshot) {
        let changed: Bool = state.withLock { state in
            guard let old = state.profiles[snapshot.id]?.snapshot, old != snapshot else { return false }
            state.profiles[snapshot.id]?.snapshot = snapshot
            announce("profiles.update", snapshot, in: state)
            return true
        }
        if changed { publish([.put(snapshot)]) }
    }

    func removeProfile(_ id: ProfileID) {
        let removed: Bool = state.withLock { state in
            guard state.profiles.removeValue(forKey: id) != nil else { return false }
            announceRemoval(id, in: state)
            return true
        }
        if removed { publish([.remove(id)]) }
    }

    private func announce(_ name: String, _ profile: ProfileSnapshot, in state: State) {
        events.directory.append(
            [
                PendingEvent(
                    topic: .browsers, name: name,
                    json: EventJSON.object { json in
                        json.key("profile")
                        json.profileItem(profile)
                    })
            ], snapshot: Self.directory(state))
    }

    private func announceRemoval(_ id: ProfileID, in state: State) {
        events.directory.append(
            [PendingEvent(topic: .browsers, name: "profiles.remove", json: EventJSON.object("profileId", id.rawValue) { _ in })],
            snapshot: Self.directory(state))
    }

    private func publish(_ changes: [DirectoryChange]) {
        tellWindowsOpen(changes)
        guard !changes.isEmpty, let tell = directoryChanged.withLock({ $0 }) else { return }
        tell(changes)
    }

    /// Tells ``windowsOpen`` the regular profiles `changes` leave with windows (their own or their
    /// off-the-record profile's).
    private func tellWindowsOpen(_ changes: [DirectoryChange]) {
        var roots = Set<ProfileID>()
        for case .put(let profile) in changes where profile.windowCount > 0 {
            roots.insert(profile.incognito ? profile.parentID ?? profile.id : profile.id)
        }
        guard !roots.isEmpty, let tell = windowsOpen.withLock({ $0 }) else { return }
        tell(roots)
    }

    /// The directory as of `state`: every profile, here and (several instances) elsewhere, oldest first.
    private static func directory(_ state: State) -> DirectorySnapshot {
        var all = state.profiles.values.map(\.snapshot)
        for (id, profile) in state.remote where state.profiles[id] == nil { all.append(profile) }
        return DirectorySnapshot(profiles: all.sorted { ($0.createdAt, $0.id.rawValue) < ($1.createdAt, $1.id.rawValue) })
    }

    // Several instances: what other instances announce.

    /// Every profile in the directory, here and elsewhere, in no order.
    func directoryProfiles() -> [ProfileSnapshot] {
        state.withLock { state in
            state.profiles.values.map(\.snapshot) + state.remote.filter { state.profiles[$0.key] == nil }.map(\.value)
        }
    }

    /// Applies changes another instance announced; one about a profile held here is stale (its
    /// sender no longer holds it) and ignored. Each change that matters is the directory's event.
    func applyRemote(_ changes: [DirectoryChange]) {
        let applied: [DirectoryChange] = state.withLock { state in
            var applied: [DirectoryChange] = []
            for change in changes {
                switch change {
                case .put(let profile):
                    guard state.profiles[profile.id] == nil, state.remote[profile.id] != profile else { continue }
                    let known = state.remote[profile.id] != nil
                    state.remote[profile.id] = profile
                    applied.append(change)
                    announce(known ? "profiles.update" : "profiles.add", profile, in: state)
                case .remove(let id):
                    guard state.profiles[id] == nil else { continue }
                    let gone = [id] + state.remote.values.filter { $0.parentID == id }.map(\.id)
                    for id in gone where state.remote.removeValue(forKey: id) != nil { announceRemoval(id, in: state) }
                }
            }
            return applied
        }
        tellWindowsOpen(applied)
    }

    /// Replaces what is known of the regular profiles held elsewhere with `stored` (every stored
    /// regular profile, read after notifications may have been missed): those gone are removed,
    /// the others put. Off-the-record profiles elsewhere are kept unless their profile is gone.
    func resyncRemote(stored: [ProfileSnapshot]) {
        let ids = Set(stored.map(\.id))
        let gone: [DirectoryChange] = state.withLock { state in
            state.remote.values.filter { !$0.incognito && !ids.contains($0.id) }.map { .remove($0.id) }
        }
        let puts: [DirectoryChange] = state.withLock { state in
            stored.map { profile in
                // The database does not know an off-the-record profile; the one announced stays linked.
                var profile = profile
                if profile.offTheRecordID == nil, let linked = state.remote[profile.id]?.offTheRecordID, state.remote[linked] != nil {
                    profile.offTheRecordID = linked
                }
                return .put(profile)
            }
        }
        applyRemote(gone + puts)
    }

    /// The profiles held here, as announced to other instances (an instance that starts asks).
    /// The regular profiles of the directory that are not in memory here.
    func remoteRegularProfiles() -> [ProfileID] {
        state.withLock { state in state.remote.values.filter { !$0.incognito && state.profiles[$0.id] == nil }.map(\.id) }
    }

    var hasRemoteRegularProfiles: Bool {
        state.withLock { state in state.remote.values.contains { !$0.incognito && state.profiles[$0.id] == nil } }
    }

    /// Whether `id` is a regular profile of the directory that is not in memory here.
    func isRemote(_ id: ProfileID) -> Bool {
        state.withLock { state in state.profiles[id] == nil && state.remote[id].map { !$0.incognito } == true }
    }

    func localProfiles() -> [ProfileSnapshot] { state.withLock { $0.profiles.values.map(\.snapshot) } }

    /// Publishes a window's snapshot, re-indexing its tabs and groups.
    /// - Parameter tabMoves: tabs that joined (true) or left (false) the window since its last
    ///   snapshot, in order; nil re-indexes every tab.
    func putWindow(_ snapshot: WindowSnapshot, rootID: ProfileID, tabMoves: [(TabID, joined: Bool)]? = nil) {
        state.withLock { state in
            let old = state.windows[snapshot.id]?.snapshot
            if let tabMoves, old != nil {
                for (id, joined) in tabMoves {
                    if joined {
                        state.tabs[id] = snapshot.id
                    } else if state.tabs[id] == snapshot.id {
                        // A tab that moved on may already be indexed in its new window: only unindex our own.
                        state.tabs[id] = nil
                    }
                }
            } else {
                if let old {
                    for tab in old.tabs where state.tabs[tab.id] == snapshot.id { state.tabs[tab.id] = nil }
                }
                for tab in snapshot.tabs { state.tabs[tab.id] = snapshot.id }
            }
            if let old {
                if old.groups.count != snapshot.groups.count || !zip(old.groups, snapshot.groups).allSatisfy({ $0.id == $1.id }) {
                    for group in old.groups where state.groups[group.id] == snapshot.id { state.groups[group.id] = nil }
                    for group in snapshot.groups { state.groups[group.id] = snapshot.id }
                }
            } else {
                for group in snapshot.groups { state.groups[group.id] = snapshot.id }
            }
            state.windows[snapshot.id] = WindowEntry(snapshot: snapshot, rootID: rootID)
            // Its answer was the previous version's.
            state.answers.remove(snapshot.id)
        }
    }

    func removeWindow(_ id: BrowserID) {
        state.withLock { state in
            guard let old = state.windows.removeValue(forKey: id) else { return }
            state.answers.remove(id)
            state.admission.forget(id)
            for tab in old.snapshot.tabs where state.tabs[tab.id] == id { state.tabs[tab.id] = nil }
            for group in old.snapshot.groups where state.groups[group.id] == id { state.groups[group.id] = nil }
            state.shrinkIfSparse()
        }
    }

    /// Forgets profiles and windows that another instance owns now, and ends their streams (without
    /// a closing event: nothing was closed). The regular profile stays in the directory (held
    /// elsewhere); its off-the-record profile ends here (`profiles.remove`).
    /// - Returns: what was removed, for the caller to let go of where it chooses.
    @discardableResult
    func unload(profiles: [ProfileID], windows: [BrowserID]) -> [Any] {
        var ended: [DirectoryChange] = []
        var removed: [Any] = []
        state.withLock { state in
            for id in windows {
                guard let old = state.windows.removeValue(forKey: id) else { continue }
                state.answers.remove(id)
                state.admission.forget(id)
                removed.append(old)
                for tab in old.snapshot.tabs where state.tabs[tab.id] == id { state.tabs[tab.id] = nil }
                for group in old.snapshot.groups where state.groups[group.id] == id { state.groups[group.id] = nil }
            }
            for id in profiles {
                guard let entry = state.profiles.removeValue(forKey: id) else { continue }
                removed.append(entry)
                if entry.snapshot.incognito {
                    // Ends with this instance's hold, like a crashed browser's private tabs.
                    announceRemoval(id, in: state)
                    ended.append(.remove(id))
                } else {
                    // Still in the directory, held elsewhere now: with strings of its own, since the
                    // snapshot's came from the model's heap (see ``LoadThread``).
                    let kept = entry.snapshot.copied()
                    state.remote[kept.id] = kept
                }
            }
            state.shrinkIfSparse()
        }
        publish(ended)
        for id in windows { events.endWindow(id) }
        for id in profiles { events.endProfile(id) }
        return removed
    }

    /// The window's snapshot and a value made from it (e.g. its encoded answer of `bytes(value)`
    /// bytes), made once per version while it stays among the answers kept (``ByteLRU``); a version
    /// read once is not kept (``AnswerAdmission``).
    func cachedWindow<T: Sendable>(_ id: BrowserID, bytes: (T) -> Int, make: (WindowSnapshot) -> T) -> (WindowSnapshot, T)? {
        let found = state.withLock { state -> (WindowEntry, T?)? in
            guard let entry = state.windows[id] else { return nil }
            if let cached = state.answers.get(id), cached.version == entry.snapshot.version, let value = cached.value as? T {
                state.answerStats.hits += 1
                return (entry, value)
            }
            state.answerStats.misses += 1
            return (entry, nil)
        }
        guard let (entry, hit) = found else { return nil }
        if let hit { return (entry.snapshot, hit) }
        let value = make(entry.snapshot)
        let size = bytes(value)
        state.withLock { state in
            guard state.windows[id]?.snapshot.version == entry.snapshot.version, state.answers.limit > 0,
                state.admission.admits(id, version: entry.snapshot.version)
            else { return }
            state.answerStats.evictions += state.answers.put(id, CachedAnswer(version: entry.snapshot.version, value: value), bytes: size).count
        }
        return (entry.snapshot, value)
    }

    /// What the answers kept hold now, and how they served.
    var answerCache: AnswerCacheStats {
        state.withLock { state in
            var stats = state.answerStats
            stats.bytes = state.answers.bytes
            stats.entries = state.answers.count
            stats.limit = state.answers.limit
            return stats
        }
    }
}

extension Dictionary {
    /// Rebuilds the dictionary at its size once it is under a quarter full (and past a small floor): a
    /// rebuild follows removals of at least three times its new size, so it costs O(1) per removal.
    mutating func shrinkIfSparse(floor: Int = 1024) {
        guard capacity > floor, count < capacity / 4 else { return }
        var rebuilt = Self(minimumCapacity: count)
        for (key, value) in self { rebuilt[key] = value }
        self = rebuilt
    }
}

/// The windows' answers kept (``ByteLRU``): what they hold and how reads found them since start.
public struct AnswerCacheStats: Sendable, Equatable {
    public var bytes = 0
    public var entries = 0
    public var limit = 0
    public var hits = 0
    public var misses = 0
    public var evictions = 0

    public init() {}
}
