import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a profile's load (its read, then the building of its model) on a thread that ends when the
/// work returns, so that what the load leaves in the allocator goes when the profile does.
///
/// Why: glibc gives each thread an arena, and a thread that ends hands its arena on whole. Built on
/// a worker of the shared pool, a profile's model would share pages with what that worker allocates
/// for ever after (its dispatch continuations, its thread cache of freed blocks, strings kept by
/// long-lived tables), and after the profile leaves memory each such block would keep a page of the
/// model's heap resident. So the load allocates on a thread of its own, and nothing long-lived is
/// allocated there: the caller allocates the job before the thread starts, and the thread hands it
/// back without allocating (a lock, a list threaded through the jobs, a condition signal) to one
/// long-lived completion thread, which resumes the waiting task (resuming allocates the dispatch
/// continuation that runs it; it must not come from the load's arena).
/// `bench/big_session.py` measures the effect: RSS after idle against the empty server.
public enum LoadThread {
    /// Names the calling thread as the system sees it (`top -H`, perf, `/proc/<pid>/task/*/comm`).
    /// Foundation's `Thread.current.name` may not reach the system when set first thing on a
    /// detached thread (the name then stays its creator's, a pool thread's), so the kernel's name is
    /// set directly as well.
    static func name(_ name: String) {
        Thread.current.name = name
        #if canImport(Glibc)
            let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                _ = name.withCString { write(fd, $0, strlen($0)) }
                close(fd)
            }
        #endif
    }

    /// At most this many loads run at once; the others wait their turn, in order. A load is CPU and
    /// allocation work: more at once than cores only contend, and each holds a thread (many profiles
    /// touched together, a take-over of many, must not make as many threads).
    public static let concurrentLimit = max(2, ProcessInfo.processInfo.activeProcessorCount)

    /// Runs `body` on a new thread and returns what it returns (or throws what it throws).
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            Completions.shared.start(Job<T>(continuation, body))
        }
    }

    /// One load, from its start to its result handed back.
    class Waiting: @unchecked Sendable {
        // `@unchecked Sendable`: `next` is touched only under the completions' lock.
        var next: Waiting?
        func perform() {}
        func resume() {}
    }

    final class Job<T: Sendable>: Waiting, @unchecked Sendable {
        // `@unchecked Sendable`: `outcome` is written once by the load thread before it posts the
        // job, and read once by the completion thread after it took the job under the same lock.
        let continuation: CheckedContinuation<T, any Error>
        let body: @Sendable () throws -> T
        var outcome: Result<T, any Error>?

        init(_ continuation: CheckedContinuation<T, any Error>, _ body: @escaping @Sendable () throws -> T) {
            self.continuation = continuation
            self.body = body
        }

        override func perform() { outcome = Result(catching: body) }

        override func resume() {
            continuation.resume(with: outcome ?? .failure(CancellationError()))
        }
    }

    /// Starts loads (at most ``concurrentLimit`` at once) and, on one long-lived thread, resumes the
    /// tasks of finished ones.
    final class Completions: @unchecked Sendable {
        // `@unchecked Sendable`: `finished`, `queued` and `running` are guarded by `condition`'s
        // lock; the thread is started once, in `init`.
        static let shared = Completions()
        private let condition = NSCondition()
        private var finished: Waiting?
        private var queued: [Waiting] = []
        private var running = 0

        private init() {
            Thread.detachNewThread {
                LoadThread.name("bd-loaded")
                self.loop()
            }
        }

        /// Starts `job` on a thread of its own, or queues it behind the loads under way.
        func start(_ job: Waiting) {
            condition.lock()
            let now = running < LoadThread.concurrentLimit
            if now { running += 1 } else { queued.append(job) }
            condition.unlock()
            if now { spawn(job) }
        }

        private func spawn(_ job: Waiting) {
            Thread.detachNewThread {
                LoadThread.name("bd-load")
                job.perform()
                self.post(job)
            }
        }

        /// Hands `job` over (from the load's thread; allocates nothing).
        private func post(_ job: Waiting) {
            condition.lock()
            job.next = finished
            finished = job
            condition.signal()
            condition.unlock()
        }

        private func loop() {
            while true {
                condition.lock()
                while finished == nil { condition.wait() }
                var job = finished
                finished = nil
                var next: [Waiting] = []
                var done = job
                while let current = done {
                    done = current.next
                    if queued.isEmpty { running -= 1 } else { next.append(queued.removeFirst()) }
                }
                condition.unlock()
                for waiting in next { spawn(waiting) }
                while let current = job {
                    job = current.next
                    current.next = nil
                    current.resume()
                }
            }
        }
    }
}
