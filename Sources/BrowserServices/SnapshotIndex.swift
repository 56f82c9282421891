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
        var cached: (version: Int, value: any Sendable)?
    }

    struct State {
        var profiles: [ProfileID: ProfileEntry] = [:]
        var windows: [BrowserID: WindowEntry] = [:]
        var tabs: [TabID: BrowserID] = [:]
        var groups: [TabGroupID: BrowserID] = [:]
    }

    private let state = Mutex(State())
    /// The event stream sources of every window and profile.
    let events: EventHub

    /// Told of every action a window's dispatcher ran (for metrics).
    let onAction: (@Sendable (_ name: String, _ ok: Bool) -> Void)?

    init(events: EventHub, onAction: (@Sendable (String, Bool) -> Void)? = nil) {
        self.events = events
        self.onAction = onAction
    }

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

    // Profiles come, change and go here; each change is also the profile directory stream's event,
    // appended under this index's lock so the directory's events and snapshots follow its order.

    func putProfile(_ snapshot: ProfileSnapshot, executor: ProfileExecutor, rootID: ProfileID) {
        state.withLock { state in
            let known = state.profiles[snapshot.id] != nil
            state.profiles[snapshot.id] = ProfileEntry(executor: executor, snapshot: snapshot, rootID: rootID)
            announce(known ? "profiles.update" : "profiles.add", snapshot, in: state)
        }
    }

    func updateProfile(_ snapshot: ProfileSnapshot) {
        state.withLock { state in
            guard let old = state.profiles[snapshot.id]?.snapshot, old != snapshot else { return }
            state.profiles[snapshot.id]?.snapshot = snapshot
            announce("profiles.update", snapshot, in: state)
        }
    }

    func removeProfile(_ id: ProfileID) {
        state.withLock { state in
            guard state.profiles.removeValue(forKey: id) != nil else { return }
            events.directory.append([PendingEvent(topic: .browsers, name: "profiles.remove", json: EventJSON.object("profileId", id.rawValue) { _ in })],
                                    snapshot: Self.directory(state))
        }
    }

    private func announce(_ name: String, _ profile: ProfileSnapshot, in state: State) {
        events.directory.append([PendingEvent(topic: .browsers, name: name, json: EventJSON.object { json in
            json.key("profile")
            json.profileItem(profile)
        })], snapshot: Self.directory(state))
    }

    /// The directory as of `state`: every profile, oldest first.
    private static func directory(_ state: State) -> DirectorySnapshot {
        DirectorySnapshot(profiles: state.profiles.values.map(\.snapshot).sorted { ($0.createdAt, $0.id.rawValue) < ($1.createdAt, $1.id.rawValue) })
    }

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
            state.windows[snapshot.id] = WindowEntry(snapshot: snapshot, rootID: rootID, cached: nil)
        }
    }

    func removeWindow(_ id: BrowserID) {
        state.withLock { state in
            guard let old = state.windows.removeValue(forKey: id) else { return }
            for tab in old.snapshot.tabs where state.tabs[tab.id] == id { state.tabs[tab.id] = nil }
            for group in old.snapshot.groups where state.groups[group.id] == id { state.groups[group.id] = nil }
        }
    }

    /// Forgets profiles and windows that another instance owns now, and ends their streams (without
    /// a closing event: nothing was closed).
    func unload(profiles: [ProfileID], windows: [BrowserID]) {
        state.withLock { state in
            for id in windows {
                guard let old = state.windows.removeValue(forKey: id) else { continue }
                for tab in old.snapshot.tabs where state.tabs[tab.id] == id { state.tabs[tab.id] = nil }
                for group in old.snapshot.groups where state.groups[group.id] == id { state.groups[group.id] = nil }
            }
            for id in profiles { state.profiles[id] = nil }
        }
        for id in windows { events.endWindow(id) }
        for id in profiles { events.endProfile(id) }
    }

    /// The window's snapshot and a value made from it (e.g. its encoded answer), made at most once per
    /// version.
    func cachedWindow<T: Sendable>(_ id: BrowserID, make: (WindowSnapshot) -> T) -> (WindowSnapshot, T)? {
        guard let entry = window(id) else { return nil }
        if let cached = entry.cached, cached.version == entry.snapshot.version, let value = cached.value as? T {
            return (entry.snapshot, value)
        }
        let value = make(entry.snapshot)
        state.withLock { state in
            if state.windows[id]?.snapshot.version == entry.snapshot.version {
                state.windows[id]?.cached = (entry.snapshot.version, value)
            }
        }
        return (entry.snapshot, value)
    }
}
