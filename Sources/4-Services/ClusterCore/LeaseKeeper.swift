public import BrowserModel

/// What to do about the leases this instance holds, decided from what happened to them: a pure value
/// state machine (`mutating func event(...) -> Action`, as postgres-nio's), carried out by
/// ``ClusterMembership`` (which talks to the database and unloads profiles).
///
/// - A renewal that reports leases taken over drops those profiles at once.
/// - Renewal failing for ``ClusterTiming/giveUpAfter`` (0.8 of a lease) drops every profile held: the
///   database may hand them on when their leases expire, and by then they must not be served here.
///   A renewal that succeeds before that resets the clock (a short outage drops nothing).
/// - A commit fenced out (another instance took the profile over) or refused by the database drops
///   that profile.
public struct LeaseKeeper: Sendable {
    /// Why a profile is dropped.
    public enum Reason: Sendable, Equatable {
        case takenOver
        case renewalFailing(String)
        case fenced
        case refused
        /// A commit failed here: memory may be ahead of the database (the profile comes back from it).
        case commitFailed
    }

    public enum Action: Sendable, Equatable {
        case none
        /// Stop serving these profiles (unload them, forget their leases).
        case drop([ProfileID], Reason)
        /// Stop serving every profile held.
        case dropAll(Reason)
    }

    public let timing: ClusterTiming
    /// When renewal last succeeded (or keeping started).
    public private(set) var lastRenewal: ContinuousClock.Instant
    /// Whether everything was dropped since renewal last succeeded (dropped once, not at every failure).
    public private(set) var gaveUp = false

    public init(timing: ClusterTiming, now: ContinuousClock.Instant) {
        self.timing = timing
        self.lastRenewal = now
    }

    /// A renewal succeeded; the database said the leases in `lost` are held by others now.
    public mutating func renewed(lost: [ProfileID], at now: ContinuousClock.Instant) -> Action {
        lastRenewal = now
        gaveUp = false
        return lost.isEmpty ? .none : .drop(lost, .takenOver)
    }

    /// A renewal failed (the database did not answer, or answered an error).
    public mutating func renewalFailed(_ error: String, at now: ContinuousClock.Instant) -> Action {
        guard !gaveUp, now - lastRenewal > timing.giveUpAfter else { return .none }
        gaveUp = true
        return .dropAll(.renewalFailing(error))
    }

    /// A commit of `profile` was fenced out: another instance holds its lease now.
    public mutating func fenced(_ profile: ProfileID) -> Action { .drop([profile], .fenced) }

    /// The database refused a change of `profile` (its other changes are not affected).
    public mutating func refused(_ profile: ProfileID) -> Action { .drop([profile], .refused) }
}
