import Foundation
import ProcessMemory
import Synchronization
import TestSupport
import Testing

@testable import BrowserServices

/// A load runs on a thread of its own and hands its result back (see `LoadThread`).
@Suite(.offThePool) struct LoadThreadTests {
    struct Failed: Error, Equatable {}

    /// The calling thread's name as the system has it (what `top -H`, perf and gdb show).
    static func threadName() -> String {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines) ?? ""
    }

    @Test func theBodyRunsOnALoadThreadAndItsValueComesBack() async throws {
        let (value, name) = try await LoadThread.run { (41 + 1, Self.threadName()) }
        #expect(value == 42)
        #expect(name == "bd-load")
    }

    @Test func whatTheBodyThrowsIsThrown() async {
        await #expect(throws: Failed.self) { try await LoadThread.run { () throws -> Int in throw Failed() } }
    }

    /// Many at once, finishing in any order: each caller gets its own result, none is lost.
    @Test func concurrentLoadsEachGetTheirOwnResult() async throws {
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for i in 0..<64 {
                group.addTask {
                    let value = try await LoadThread.run { () -> Int in
                        Thread.sleep(forTimeInterval: Double(i % 4) / 1000)
                        return i * i
                    }
                    return (i, value)
                }
            }
            var all: [Int: Int] = [:]
            for try await (i, value) in group { all[i] = value }
            return all
        }
        #expect(results.count == 64)
        #expect(results.allSatisfy { $0.value == $0.key * $0.key })
    }

    /// However many are asked for at once, at most `concurrentLimit` run together; all finish.
    final class Counts: Sendable {
        let value = Mutex((now: 0, most: 0))
    }

    @Test func atMostTheLimitRunAtOnce() async throws {
        let counts = Counts()
        let limit = LoadThread.concurrentLimit
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<(3 * limit + 1) {
                group.addTask {
                    try await LoadThread.run {
                        counts.value.withLock {
                            $0.now += 1
                            $0.most = max($0.most, $0.now)
                        }
                        Thread.sleep(forTimeInterval: 0.01)
                        counts.value.withLock { $0.now -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let (now, most) = counts.value.withLock { ($0.now, $0.most) }
        #expect(now == 0)
        #expect(most >= 2 && most <= limit)
    }
}
