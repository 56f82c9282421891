import CLinuxEvents
import Dispatch
import Synchronization

/// How browserd steers glibc's allocator so that its resident memory follows the working set down
/// (profiles leave memory when idle). Every setting is process-wide, so the policy is one value,
/// chosen once: the executable runs with ``followsWorkingSet``; ``untouched`` (the configuration's
/// default, so every test process) changes nothing, and applications sharing a process never toggle
/// each other's settings.
///
/// The settings and what each earned when it was added (`bench/big_session.py`, 100,000 tabs loaded
/// then evicted, RSS after idle over the empty server's):
/// - ``trimThreshold`` 512 KiB. Any threshold set through `mallopt` also ends glibc's sliding rule (the
///   mmap threshold rising to the largest block freed, the trim threshold to twice that), so big blocks
///   stay mapped on their own from 128 KiB and go back to the system when freed (1.34× after idle
///   under the sliding rule, 1.07× with it ended, before evictions returned memory; 1.11× against 1.04×
///   in `bench/memory_policy.py` now). 512 KiB because at
///   glibc's 128 KiB, equal to the top pad, every free reaching a heap's top gave pages back that the
///   next allocations faulted in again (~0.4 page faults per forwarded read,
///   `bench/scale_out.py --hop-only`). (A fixed `M_MMAP_THRESHOLD` of 128 KiB was set too, until
///   `bench/memory_policy.py` showed it changed nothing: the trim threshold had already frozen it there.)
/// - ``returnsFreedMemoryDuringEvictions``: while idle profiles are freed, no top pad, no fast bins,
///   every free trims (1.08× at 1,000,000 stored tabs, 1.13× before); glibc's settings come back after
///   (kept on, a mutation of a 1,000-window profile cost 35% more CPU, `bench/flat_cost.py`).
/// - ``trimsAfterLoads``: `malloc_trim` once a load's records are garbage, and after the start-up
///   check read the whole file through a page cache. Off the request's path: the trim runs on a
///   thread of its own ``trimDelay`` after a load (one trim for the loads of that time).
///   Run before the answer, it was 2.9 % of browserd's CPU samples over 20 cold 5,000-tab loads, all
///   on the loading thread (`perf record` during `bench/big_session.py`'s cold measure), once per load.
///
/// (Loads and unloads also run on threads that end right after, `LoadThread` and
/// `ProfileRemains.releaseOnAThreadOfItsOwn`, so the allocator's per-thread caches go back with them; that is
/// structure, not a setting, and stays whatever the policy.)
public struct MemoryPolicy: Sendable, Equatable {
    /// `M_TRIM_THRESHOLD` (which also freezes the mmap threshold at 128 KiB); nil leaves glibc's sliding
    /// thresholds.
    public var trimThreshold: Int32?
    /// Whether evictions switch the allocator to giving freed memory back at once while they free.
    public var returnsFreedMemoryDuringEvictions: Bool
    /// Whether free heap pages are given back after a profile's load and the start-up check.
    public var trimsAfterLoads: Bool

    public init(trimThreshold: Int32?, returnsFreedMemoryDuringEvictions: Bool, trimsAfterLoads: Bool) {
        self.trimThreshold = trimThreshold
        self.returnsFreedMemoryDuringEvictions = returnsFreedMemoryDuringEvictions
        self.trimsAfterLoads = trimsAfterLoads
    }

    /// glibc as it comes: nothing set, nothing trimmed.
    public static let untouched = MemoryPolicy(
        trimThreshold: nil, returnsFreedMemoryDuringEvictions: false, trimsAfterLoads: false)

    /// The server's: memory follows the working set down.
    public static let followsWorkingSet = MemoryPolicy(
        trimThreshold: 512 * 1024, returnsFreedMemoryDuringEvictions: true, trimsAfterLoads: true)

    /// The names of the settings, as ``turningOff(_:)`` takes them.
    public static let settingNames = ["trim-threshold", "evictions", "trim-after-loads"]

    /// This policy with the named settings off (a comma-separated list of ``settingNames``, or `all`):
    /// how `bench/memory_policy.py` measures what each setting earns, through the executable's
    /// `BROWSERD_MEMORY_POLICY_OFF`. Nil when a name is unknown.
    public func turningOff(_ list: String) -> MemoryPolicy? {
        var policy = self
        for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            switch name {
            case "all": policy = .untouched
            case "trim-threshold": policy.trimThreshold = nil
            case "evictions": policy.returnsFreedMemoryDuringEvictions = false
            case "trim-after-loads": policy.trimsAfterLoads = false
            default: return nil
            }
        }
        return policy
    }

    /// Sets the threshold (once per process: the first application's policy that sets one wins).
    public func applyAtStart() {
        guard let trimThreshold else { return }
        Self.applied.withLock { applied in
            guard !applied else { return }
            applied = true
            _ = CLinuxEvents_set_trim_threshold(trimThreshold)
        }
    }

    /// Before idle profiles are freed.
    public func beginEvictions() {
        if returnsFreedMemoryDuringEvictions { CLinuxEvents_return_freed_memory_eagerly(1, trimThreshold ?? 128 * 1024) }
    }

    /// After they were freed: the free pages go back, and glibc's settings with this policy's thresholds.
    public func endEvictions() {
        guard returnsFreedMemoryDuringEvictions else { return }
        _ = CLinuxEvents_trim_heap()
        CLinuxEvents_return_freed_memory_eagerly(0, trimThreshold ?? 128 * 1024)
    }

    /// After a load's (or a whole-file check's) records became garbage: the free pages go back
    /// ``trimDelay`` later, on a thread of their own, so that no request waits for the trim (it walks
    /// every arena); the loads of those 200 ms share one trim, and loads that never pause still get one
    /// each ``trimDelay``.
    public func afterLoad() {
        guard trimsAfterLoads else { return }
        let first = Self.trims.withLock { state in
            defer { state.scheduled = true }
            return !state.scheduled
        }
        guard first else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.trimDelay) {
            Self.trims.withLock { $0.scheduled = false }
            _ = CLinuxEvents_trim_heap()
            Self.trims.withLock { $0.done &+= 1 }
        }
    }

    /// How long after a load its free pages are given back.
    static let trimDelay: DispatchTimeInterval = .milliseconds(200)

    /// How many trims ``afterLoad()`` has run in this process (tests).
    public static var trimsDone: Int { trims.withLock { $0.done } }

    private static let applied = Mutex(false)
    private static let trims = Mutex((scheduled: false, done: 0))
}
