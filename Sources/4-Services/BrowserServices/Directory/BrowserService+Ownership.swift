public import BrowserModel
public import BrowserRecords
import Foundation

// With several instances on one database, each regular profile lives in the memory of the instance
// that holds its lease: it is restored there when that instance takes the lease, and dropped from
// memory, unchanged, when the lease moves on.
extension BrowserService {
    /// Whether the regular profile `id` is in this instance's memory.
    public func holdsProfile(_ id: ProfileID) -> Bool {
        guard let entry = snapshots.profile(id) else { return false }
        return entry.rootID == id
    }

    /// The regular profile that holds a window, tab or group here (nil when none here does).
    public func rootProfile(ofTab id: TabID) -> ProfileID? { snapshots.browser(ofTab: id).flatMap { rootProfile(ofWindow: $0) } }
    public func rootProfile(ofGroup id: TabGroupID) -> ProfileID? { snapshots.browser(ofGroup: id).flatMap { rootProfile(ofWindow: $0) } }

    /// Whether the regular profile `id` is stored but not in memory: the directory lists it as held
    /// elsewhere (another instance, or the database until its first use).
    public func isStoredElsewhere(_ id: ProfileID) -> Bool { snapshots.isRemote(id) }

    /// The regular profiles the directory lists that are not in memory here.
    public func storedElsewhere() -> [ProfileID] { snapshots.remoteRegularProfiles() }

    /// Whether the directory lists any regular profile not in memory here (no list made).
    public var hasStoredElsewhere: Bool { snapshots.hasRemoteRegularProfiles }

    /// Whether the regular profile `id` has its off-the-record profile in memory.
    public func hasOffTheRecord(_ id: ProfileID) -> Bool { snapshots.profile(id)?.snapshot.offTheRecordID != nil }

    /// The regular profiles in memory.
    public var heldProfiles: [ProfileID] { snapshots.profileSnapshots().filter { !$0.incognito }.map(\.id) }

    /// Brings one regular profile back from stored records (another instance held it before).
    /// Nothing happens when it is here already.
    public func restoreProfile(_ stored: StoredState) async throws -> RestoreSummary {
        guard let profile = stored.profiles.first, stored.profiles.count == 1 else { return RestoreSummary() }
        guard !holdsProfile(ProfileID(rawValue: profile.id)) else { return RestoreSummary() }
        return try await restore(stored)
    }

    /// Drops a regular profile and its off-the-record profile from memory without changing or writing
    /// anything: another instance owns it now. The streams of its windows and of the profile end
    /// (their clients reconnect, and the new owner answers with a `reset`).
    /// - Returns: the last references to what was dropped (its session, executor and snapshots): they
    ///   are freed where the caller lets go of them (see ``ProfileRemains``).
    @discardableResult
    public func unloadProfile(_ id: ProfileID) async -> ProfileRemains {
        guard let entry = snapshots.profile(id), entry.rootID == id else { return ProfileRemains([]) }
        // On the executor: whatever was running on it has finished; nothing runs on it afterwards,
        // since requests no longer find the profile.
        let (profiles, windows, detached) = await entry.executor.perform { session -> ([ProfileID], [BrowserID], ProfileRemains) in
            let profiles = [session.browserState.id] + (session.offTheRecord.map { [$0.id] } ?? [])
            let windows = session.browserList.browsers().map(\.id)
            // A window's coordinators hold it: detach them, or the windows would outlive the session;
            // freed with it, not here on a worker thread (see ``ProfileRemains``).
            let detached = session.userData.get(ProfileMediator.self)?.releaseWindows() ?? []
            return (profiles, windows, ProfileRemains(detached))
        }
        return ProfileRemains(snapshots.unload(profiles: profiles, windows: windows) + [entry, detached])
    }
}

/// What an unloaded profile leaves: the last references to its session, executor and snapshots. The
/// thread that lets go of it frees them all (a profile of 10,000 tabs is some 10 MB of small blocks).
public final class ProfileRemains: @unchecked Sendable {
    // `@unchecked Sendable`: the values are only held, never used, and let go of once (``release()``)
    // by one thread; nothing else refers to them any more.
    private var held: [Any]?

    init(_ held: [Any]) { self.held = held }

    /// Lets go of everything now, on the calling thread.
    public func release() { held = nil }

    /// Lets go of everything on a thread of its own that ends right after: the allocator caches freed
    /// blocks per thread (tcache), and a thread's cache goes back to the shared arenas only when it
    /// ends, so freed on a worker that lives on, some of the profile's pages would stay resident.
    public func releaseOnAThreadOfItsOwn() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                Thread.current.name = "bd-unload"
                self.release()
                done.resume()
            }
            thread.start()
        }
    }
}
