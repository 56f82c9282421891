import Foundation

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
    /// Runs `body` on a new thread and returns what it returns (or throws what it throws).
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = Job<T>(continuation)
            Thread.detachNewThread {
                Thread.current.name = "bd-load"
                job.outcome = Result(catching: body)
                Completions.shared.post(job)
            }
        }
    }

    /// One load waiting to be handed back.
    class Waiting: @unchecked Sendable {
        // `@unchecked Sendable`: `next` is touched only under the completions' lock.
        var next: Waiting?
        func resume() {}
    }

    final class Job<T: Sendable>: Waiting, @unchecked Sendable {
        // `@unchecked Sendable`: `outcome` is written once by the load thread before it posts the
        // job, and read once by the completion thread after it took the job under the same lock.
        let continuation: CheckedContinuation<T, any Error>
        var outcome: Result<T, any Error>?

        init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = continuation }

        override func resume() {
            continuation.resume(with: outcome ?? .failure(CancellationError()))
        }
    }

    /// The long-lived thread that resumes finished loads' tasks.
    final class Completions: @unchecked Sendable {
        // `@unchecked Sendable`: `finished` is guarded by `condition`'s lock; the thread is started
        // once, in `init`.
        static let shared = Completions()
        private let condition = NSCondition()
        private var finished: Waiting?

        private init() {
            Thread.detachNewThread {
                Thread.current.name = "bd-loaded"
                self.loop()
            }
        }

        /// Hands `job` over (from the load's thread; allocates nothing).
        func post(_ job: Waiting) {
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
                condition.unlock()
                while let current = job {
                    job = current.next
                    current.next = nil
                    current.resume()
                }
            }
        }
    }
}
