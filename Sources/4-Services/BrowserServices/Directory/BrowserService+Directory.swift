public import BrowserModel

// With several instances on one database, the profile directory (`GET /v1/profiles`, the
// administrator's `GET /v1/events`) shows every instance's profiles: each instance tells the others
// what changes here, and applies what they tell it. The model never sees another instance's profiles.
extension BrowserService {
    /// Calls `tell` with each change of the directory made here: a profile created, renamed, its
    /// window count changed, deleted; an off-the-record profile ended because its lease moved. A
    /// profile restored or unloaded because its lease moved is no change.
    public func onDirectoryChange(_ tell: @escaping @Sendable ([DirectoryChange]) -> Void) {
        snapshots.directoryChanged.withLock { $0 = tell }
    }

    /// Calls `tell` with the regular profiles a change of the directory leaves with windows (their
    /// own or their off-the-record profile's; a change made here or told by another instance): a
    /// renderer may be wanted for them now (issue 55).
    public func onWindowsOpen(_ tell: @escaping @Sendable (Set<ProfileID>) -> Void) {
        snapshots.windowsOpen.withLock { $0 = tell }
    }

    /// Applies changes another instance told (stale ones, about profiles held here, are ignored);
    /// the directory's watchers here see them as events.
    public func applyDirectoryChanges(_ changes: [DirectoryChange]) { snapshots.applyRemote(changes) }

    /// Replaces what is known of regular profiles held elsewhere with every stored regular profile
    /// (after notifications may have been missed).
    public func resyncDirectory(stored: [ProfileSnapshot]) { snapshots.resyncRemote(stored: stored) }

    /// The profiles held here (what another instance that starts asks for).
    public func localProfiles() -> [ProfileSnapshot] { snapshots.localProfiles() }

    /// Every profile in the directory, here and elsewhere, ordered by creation then id.
    public func directoryProfiles() -> [ProfileSnapshot] {
        snapshots.directoryProfiles().sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }
}
