public import BrowserModel
import Synchronization

/// What keeping leases needs of the database.
public protocol LeaseRenewing: Sendable {
    /// Renews every lease this instance holds.
    /// - Returns: the profiles whose lease another instance holds now.
    /// - Throws: the database did not answer, or answered an error.
    func renew() async throws -> Set<ProfileID>

    /// The profiles whose lease this instance holds.
    var heldProfiles: [ProfileID] { get }
}

/// What stopping serving a profile takes on this instance.
public protocol ProfileDropping: Sendable {
    /// Stops serving `profile`: its lease and owner forgotten, its memory unloaded if it was held.
    func drop(_ profile: ProfileID, reason: LeaseKeeper.Reason) async
}

/// Keeps this instance's leases: renews them every ``ClusterTiming/renewEvery`` and carries out what the
/// ``LeaseKeeper`` decides from renewals, fenced commits and refused changes (drop some profiles, or
/// all). The database and the unloading are seams (``LeaseRenewing``, ``ProfileDropping``).
public final class LeaseFollower: Sendable {
    private let keeper: Mutex<LeaseKeeper>
    private let renewing: any LeaseRenewing
    private let dropping: any ProfileDropping
    private let describe: @Sendable (any Error) -> String
    public let timing: ClusterTiming

    public init(
        timing: ClusterTiming, renewing: any LeaseRenewing, dropping: any ProfileDropping, now: ContinuousClock.Instant = .now,
        describe: @escaping @Sendable (any Error) -> String = { "\($0)" }
    ) {
        keeper = Mutex(LeaseKeeper(timing: timing, now: now))
        self.timing = timing
        self.renewing = renewing
        self.dropping = dropping
        self.describe = describe
    }

    /// Renews every lease once, and drops what the keeper says.
    /// - Parameter now: when the renewal's answer came (a test's clock); by default the moment it came.
    public func renewOnce(now: ContinuousClock.Instant? = nil) async {
        let action: LeaseKeeper.Action
        do {
            let lost = try await renewing.renew()
            action = keeper.withLock { $0.renewed(lost: lost.sorted(), at: now ?? .now) }
        } catch {
            // The database may already have handed our profiles on: stop serving them in time.
            action = keeper.withLock { $0.renewalFailed(describe(error), at: now ?? .now) }
        }
        await perform(action)
    }

    /// A commit of `profile` was fenced out: another instance holds it now.
    public func fenced(_ profile: ProfileID) async { await perform(keeper.withLock { $0.fenced(profile) }) }

    /// The database refused one of `profile`'s changes.
    public func refused(_ profile: ProfileID) async { await perform(keeper.withLock { $0.refused(profile) }) }

    /// Renews every ``ClusterTiming/renewEvery`` until cancelled.
    public func running() -> Task<Void, Never> {
        let interval = timing.renewEvery
        return Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                await self.renewOnce()
            }
        }
    }

    private func perform(_ action: LeaseKeeper.Action) async {
        switch action {
        case .none:
            return
        case .drop(let profiles, let reason):
            for profile in profiles { await dropping.drop(profile, reason: reason) }
        case .dropAll(let reason):
            for profile in renewing.heldProfiles { await dropping.drop(profile, reason: reason) }
        }
    }
}
