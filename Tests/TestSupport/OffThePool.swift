import Foundation
public import Testing

/// Runs a suite's or a test's code on threads of its own instead of Swift's cooperative pool.
///
/// The cooperative pool has one thread per core: two on CI. Swift Testing starts every test on it at
/// once, and the live-server tests need it free, because their servers answer deferred requests in
/// tasks on that pool. A test that computes for seconds (a randomized model run, the fuzz corpus) or
/// waits by blocking (for a child process's port, on a socket) held one of those two threads for that
/// long; two such tests at once left no thread for any server, and unrelated tests timed out.
///
/// Two kinds, by what the code does with a thread (SE-0417 task executor preference):
/// - `.offThePool`: code that waits. Each job gets a thread of its own (``OffThePoolExecutor/waiting``),
///   so no number of blocked tests starves another.
/// - `.computing`: code that computes. Jobs share ``OffThePoolExecutor/computing``, half the cores,
///   so the long computations queue among themselves and leave the other cores to the servers.
///
///     @Suite(.computing) struct RandomizedTests { … }
public struct OffThePool: SuiteTrait, TestTrait, TestScoping {
    let executor: OffThePoolExecutor

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(executor) { try await function() }
    }
}

extension Trait where Self == OffThePool {
    /// Runs code that waits (sockets, child processes, sleeps) on threads of its own, one per job.
    public static var offThePool: Self { OffThePool(executor: .waiting) }

    /// Runs code that computes for long on a few threads of its own, half the cores.
    public static var computing: Self { OffThePool(executor: .computing) }
}

/// A task executor on threads of its own: with no width, one more whenever every thread is busy (a job
/// never waits for another); with a width, at most that many. Idle threads end after two seconds.
///
/// `@unchecked Sendable`: its state is guarded by `condition`.
public final class OffThePoolExecutor: TaskExecutor, @unchecked Sendable {
    public static let waiting = OffThePoolExecutor(name: "waiting", width: nil)
    public static let computing = OffThePoolExecutor(name: "computing", width: max(1, ProcessInfo.processInfo.activeProcessorCount / 2))

    /// The executor whose thread runs the calling code, if any.
    public static var current: String? { Thread.current.threadDictionary[threadKey] as? String }

    private static let threadKey = "browserd-tests.off-the-pool"

    private let name: String
    private let width: Int?
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var threads = 0
    /// Threads waiting for a job that no enqueue has claimed yet.
    private var idle = 0
    /// Waiting threads claimed by an enqueue, not yet awake.
    private var wakeups = 0

    init(name: String, width: Int?) {
        self.name = name
        self.width = width
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if idle > 0 {
            idle -= 1
            wakeups += 1
            condition.signal()
        } else if threads < width ?? .max {
            threads += 1
            let thread = Thread { [self] in work() }
            thread.name = "tests-\(name)"
            thread.threadDictionary[Self.threadKey] = name
            thread.start()
        }  // else every thread of a full pool is busy: the first to finish takes the job.
        condition.unlock()
    }

    private func work() {
        condition.lock()
        while true {
            if next < jobs.count {
                let job = jobs[next]
                next += 1
                if next == jobs.count {
                    jobs.removeAll(keepingCapacity: true)
                    next = 0
                }
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
                condition.lock()
                continue
            }
            idle += 1
            let woken = condition.wait(until: Date(timeIntervalSinceNow: 2))
            if wakeups > 0 {
                wakeups -= 1  // an enqueue claimed a waiting thread (idle is already one less)
                continue
            }
            idle -= 1
            if !woken {
                threads -= 1
                condition.unlock()
                return
            }
        }
    }
}
