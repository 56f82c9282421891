import Foundation
import TestSupport
import Testing

/// The traits the suites use (``OffThePool``): code that waits and code that computes runs off the
/// cooperative pool, synchronous and asynchronous tests alike; jobs that wait never wait for each other.
@Suite(.offThePool) struct OffThePoolTests {
    @Test func aSynchronousTestRunsOnAThreadOfItsOwn() {
        #expect(OffThePoolExecutor.current == "waiting")
    }

    @Test func anAsynchronousTestComesBackToAThreadOfItsOwn() async throws {
        try await Task.sleep(for: .milliseconds(10))
        #expect(OffThePoolExecutor.current == "waiting")
    }

    @Test(.computing) func computingTestsShareTheComputingThreads() {
        #expect(OffThePoolExecutor.current == "computing")
    }

    /// Eight children that each wait for all the others: with a fixed number of threads this would hang.
    @Test func childrenThatWaitForEachOtherEachGetAThread() async {
        let arrived = Counter()
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    arrived.add()
                    return arrived.waitFor(8)
                }
            }
            for await allArrived in group { #expect(allArrived) }
        }
    }
}

/// A blocking counter for the test above.
private final class Counter: @unchecked Sendable {  // guarded by `condition`
    private let condition = NSCondition()
    private var value = 0

    func add() {
        condition.withLock { value += 1 }
        condition.broadcast()
    }

    func waitFor(_ target: Int) -> Bool {
        condition.withLock {
            let deadline = Date(timeIntervalSinceNow: 5)
            while value < target { guard condition.wait(until: deadline) else { return value >= target } }
            return true
        }
    }
}
