public import BrowserModel

// A profile's web state (issue 52): read from memory, replaced on the profile's executor (durable,
// for a regular profile, before it returns; an off-the-record profile's is never written).
extension BrowserService {
    /// The web state of `id` (a regular or an off-the-record profile).
    public func storageState(profile id: ProfileID) async throws -> StorageState {
        guard let entry = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        return try await run(entry.executor, mutating: false) { session in
            guard let state = session.profile(withID: id) else { throw ModelError.profileNotFound(id) }
            return state.storageState
        }
    }

    /// Replaces the web state of `id` (checked against Chromium's limits and the profile's byte
    /// budget first: nothing changes when it fails); watchers of the profile get `profile.webState`.
    public func replaceStorageState(profile id: ProfileID, with storage: StorageState) async throws {
        guard let entry = snapshots.profile(id) else { throw ModelError.profileNotFound(id) }
        try await run(entry.executor) { session in
            guard let state = session.profile(withID: id) else { throw ModelError.profileNotFound(id) }
            try state.replaceStorageState(storage)
        }
    }
}
