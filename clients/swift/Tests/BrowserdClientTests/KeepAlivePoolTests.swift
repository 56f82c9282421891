import NIOCore
import TestSupport
import Testing

@testable import BrowserdClient

/// ``KeepAlivePool``'s decisions alone, without sockets: which connection a request takes, when one
/// is made, who waits and who goes on, what is let go.
@Suite(.offThePool) struct KeepAlivePoolTests {
    final class Fake: PooledConnection {
        let host: String
        let port: Int
        var isUsable = true
        var isOnCallerLoop = false
        init(_ host: String, _ port: Int = 80, onCallerLoop: Bool = false) {
            self.host = host
            self.port = port
            isOnCallerLoop = onCallerLoop
        }
    }

    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func aKeptOneOnTheCallersLoopFirstThenTheMostRecent() {
        var pool = KeepAlivePool<Fake>(limit: 4, idleLimit: 4, idleTime: .seconds(20))
        let (a, b, c) = (Fake("a", onCallerLoop: true), Fake("a"), Fake("other"))
        for _ in 0..<3 { _ = pool.take(host: "a", port: 80, fresh: false, now: start) }
        for connection in [a, b, c] { _ = pool.keep(connection, now: start) }
        guard case .kept(let first) = pool.take(host: "a", port: 80, fresh: false, now: start).0 else {
            Issue.record("none kept")
            return
        }
        #expect(first === a)
        guard case .kept(let second) = pool.take(host: "a", port: 80, fresh: false, now: start).0 else {
            Issue.record("none kept")
            return
        }
        #expect(second === b)
        // None left to "a": a new one (a place was free), and a fresh one asked never takes a kept one.
        guard case .connect = pool.take(host: "a", port: 80, fresh: false, now: start).0 else {
            Issue.record("not made")
            return
        }
        #expect(pool.open == 4)
    }

    @Test func pastTheLimitRequestsWaitAndGoOnInOrder() {
        var pool = KeepAlivePool<Fake>(limit: 2, idleLimit: 2, idleTime: .seconds(20))
        for _ in 0..<2 {
            guard case .connect = pool.take(host: "a", port: 80, fresh: false, now: start).0 else {
                Issue.record("not made")
                return
            }
        }
        guard case .full = pool.take(host: "a", port: 80, fresh: false, now: start).0 else {
            Issue.record("not full")
            return
        }
        let waits = [pool.wait(1), pool.wait(2), pool.wait(3)]
        #expect(waits == [true, true, true])
        let cancelled = [pool.cancel(2), pool.cancel(2)]
        #expect(cancelled == [true, false])
        // One kept: the first waiting goes on (and finds it); one closed: the next.
        let woken = [pool.keep(Fake("a"), now: start).wake, pool.closed(), pool.closed()]
        #expect(woken == [1, 3, nil])
        // With an idle one there, a request need not wait.
        let waitsAgain = pool.wait(4)
        #expect(!waitsAgain)
    }

    @Test func staleOnesAreLetGoAndCountNoMore() {
        var pool = KeepAlivePool<Fake>(limit: 3, idleLimit: 3, idleTime: .seconds(20))
        let (closedByServer, old, fresh) = (Fake("a"), Fake("a"), Fake("a"))
        for _ in 0..<3 { _ = pool.take(host: "a", port: 80, fresh: false, now: start) }
        _ = pool.keep(old, now: start)
        _ = pool.keep(closedByServer, now: start + .seconds(15))
        _ = pool.keep(fresh, now: start + .seconds(15))
        closedByServer.isUsable = false
        let (take, letGo) = pool.take(host: "a", port: 80, fresh: false, now: start + .seconds(25))
        guard case .kept(let kept) = take else {
            Issue.record("none kept")
            return
        }
        #expect(kept === fresh)
        #expect(letGo.count == 2 && letGo.contains { $0 === old } && letGo.contains { $0 === closedByServer })
        #expect(pool.open == 1)
    }

    @Test func whenFullTheOldestIdleOneToAnotherServerMakesRoom() {
        var pool = KeepAlivePool<Fake>(limit: 2, idleLimit: 2, idleTime: .seconds(20))
        let (b, c) = (Fake("b"), Fake("c"))
        for _ in 0..<2 { _ = pool.take(host: "x", port: 80, fresh: false, now: start) }
        _ = pool.keep(b, now: start)
        _ = pool.keep(c, now: start)
        let (take, letGo) = pool.take(host: "a", port: 80, fresh: false, now: start)
        guard case .connect = take else {
            Issue.record("not made")
            return
        }
        #expect(letGo.count == 1 && letGo[0] === b)
        #expect(pool.open == 2)
        // Past the idle limit, the oldest idle one goes.
        var small = KeepAlivePool<Fake>(limit: 3, idleLimit: 1, idleTime: .seconds(20))
        for _ in 0..<2 { _ = small.take(host: "a", port: 80, fresh: false, now: start) }
        let first = Fake("a")
        _ = small.keep(first, now: start)
        let overflow = small.keep(Fake("a"), now: start).letGo
        #expect(overflow.first === first)
        #expect(small.open == 1)
    }

    @Test func aLimitBelowOneIsOne() {
        var pool = KeepAlivePool<Fake>(limit: 0, idleLimit: 0, idleTime: .seconds(20))
        guard case .connect = pool.take(host: "a", port: 80, fresh: false, now: start).0 else {
            Issue.record("not made")
            return
        }
        guard case .full = pool.take(host: "a", port: 80, fresh: false, now: start).0 else {
            Issue.record("not full")
            return
        }
    }
}
