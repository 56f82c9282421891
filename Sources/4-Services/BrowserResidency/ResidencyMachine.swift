public import BrowserModel

/// Which regular profiles are in this instance's memory and what each is doing (issue 53): the
/// decisions of ``ProfileResidency`` as a value, every transition unit-tested apart from the tasks,
/// the store and the model that ``ProfileResidency`` (its shell) runs.
///
/// A profile is absent (no phase), loading, resident (with when it was last touched) or being
/// dropped (with why). Every way out of memory is a drop with a reason: idle (the sweep's), or the
/// cluster's (a lease lost, a fenced commit, a refusal, a failed commit); loads and drops of one
/// profile never overlap.
public struct ResidencyMachine: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        case loading
        case resident(touched: ContinuousClock.Instant)
        case dropping(DropReason)
    }

    /// Why a profile leaves memory.
    public enum DropReason: String, Sendable, Equatable, CustomStringConvertible {
        /// Untouched for the idle time, nothing keeping it: what it queued is flushed first, and it
        /// stays when that fails.
        case idle
        /// Another instance holds its lease now (taken over, or renewals failing until it lapsed).
        case leaseLost = "lease lost"
        /// A commit of it was fenced out: another instance holds it.
        case fenced
        /// Another instance refused it to this one.
        case refused
        /// A commit failed: memory may be ahead of the database (it comes back from the database).
        case commitFailed = "commit failed"

        public var description: String { rawValue }
    }

    public private(set) var phases: [ProfileID: Phase] = [:]

    public init() {}

    // MARK: Touching and loading

    /// A request touches `id`, whose profile the model holds: served at once, unless it is loading or
    /// being dropped (then it waits for ``want(_:held:now:)``).
    public mutating func touch(_ id: ProfileID, now: ContinuousClock.Instant) -> Bool {
        switch phases[id] {
        case .loading, .dropping: return false
        case .resident, nil:
            phases[id] = .resident(touched: now)
            return true
        }
    }

    public enum Want: Sendable, Equatable {
        /// It is being dropped: wait for the drop, then ask again.
        case waitForDrop
        /// A load is under way: wait for it.
        case joinLoad
        /// It is here (now touched).
        case here
        /// Nothing holds it: load it (it is loading from now).
        case startLoad
    }

    /// A request needs `id` in memory (`held`: the model holds it now).
    public mutating func want(_ id: ProfileID, held: Bool, now: ContinuousClock.Instant) -> Want {
        switch phases[id] {
        case .dropping: return .waitForDrop
        case .loading: return .joinLoad
        case .resident, nil:
            if held {
                phases[id] = .resident(touched: now)
                return .here
            }
            phases[id] = .loading
            return .startLoad
        }
    }

    /// A load of `id` ended; `held`: the model holds it now (false: it failed, or nothing stored it).
    public mutating func loadEnded(_ id: ProfileID, held: Bool, now: ContinuousClock.Instant) {
        guard phases[id] == .loading else { return }
        phases[id] = held ? .resident(touched: now) : nil
    }

    // MARK: Dropping

    /// The idle sweep over `candidates` (held, and nothing keeps them): the ones untouched for `idle`,
    /// each dropping from now. One seen for the first time starts its idle time now.
    public mutating func sweep(_ candidates: [ProfileID], idle: Duration, now: ContinuousClock.Instant) -> [ProfileID] {
        var dropping: [ProfileID] = []
        for id in candidates {
            switch phases[id] {
            case .loading, .dropping: continue
            case nil: phases[id] = .resident(touched: now)
            case .resident(let touched):
                guard now - touched >= idle else { continue }
                phases[id] = .dropping(.idle)
                dropping.append(id)
            }
        }
        return dropping
    }

    public enum Drop: Sendable, Equatable {
        /// Drop it now (it is dropping from now).
        case start
        /// A drop is under way: it ends that way.
        case alreadyDropping
        /// It is loading: wait for the load, then ask again.
        case afterLoad
    }

    /// `id` must leave memory for `reason` (the cluster's reasons; the sweep makes the idle ones).
    public mutating func drop(_ id: ProfileID, reason: DropReason) -> Drop {
        switch phases[id] {
        case .dropping: return .alreadyDropping
        case .loading: return .afterLoad
        case .resident, nil:
            phases[id] = .dropping(reason)
            return .start
        }
    }

    /// A drop of `id` ended: `dropped` false (an idle profile whose flush failed) keeps it, touched now.
    public mutating func dropEnded(_ id: ProfileID, dropped: Bool, now: ContinuousClock.Instant) {
        guard case .dropping = phases[id] else { return }
        phases[id] = dropped ? nil : .resident(touched: now)
    }
}
