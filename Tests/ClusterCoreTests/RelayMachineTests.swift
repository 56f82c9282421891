import TestSupport
import Testing

@testable import ClusterCore

/// The relay's decisions without a socket: each test tells the machine what the connections did and
/// checks what it asks the loop to do.
@Suite(.offThePool) struct RelayMachineTests {
    let t0 = ContinuousClock.now
    typealias Action = RelayMachine.Action

    func machine(limit: Int = 100, encloses: Bool = false) -> RelayMachine {
        RelayMachine(
            settings: .init(connectionLimit: limit, reuseWithin: .seconds(20), deadline: .seconds(60), connectTimeout: .milliseconds(500), encloses: encloses))
    }

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0 + .milliseconds(milliseconds) }

    /// `count` requests to `key`, with fresh ids.
    func requests(_ m: inout RelayMachine, _ count: Int, key: String = "a", pipelines: Bool = true, bodyless: Bool = true) -> [RelayMachine.Request] {
        (0..<count).map { _ in .init(id: m.makeJobID(), key: key, pipelines: pipelines, bodyless: bodyless) }
    }

    /// The connection each request was sent on, by the actions.
    func sends(_ actions: [Action]) -> [RelayMachine.JobID: RelayMachine.ConnectionID] {
        var sent: [RelayMachine.JobID: RelayMachine.ConnectionID] = [:]
        for case .send(let job, let connection) in actions { sent[job] = connection }
        return sent
    }

    func opened(_ actions: [Action]) -> [RelayMachine.ConnectionID] {
        actions.compactMap { if case .open(let id, _, _) = $0 { id } else { nil } }
    }

    @Test func readsShareAFewConnectionsAndAStalledOneTakesNoMore() {
        var m = machine()
        let slow = requests(&m, 1)
        let first = m.turn(slow, now: at(0))
        #expect(first == [.open(1, key: "a", pipelined: true), .send(slow[0].id, on: 1)])
        m.connected(1)
        // 10 ms later the slow read is still unanswered: its connection is stalled, reads go elsewhere.
        let reads = requests(&m, 80)
        let actions = m.turn(reads, now: at(10))
        let placed = sends(actions)
        #expect(placed.count == 80, "every read placed")
        #expect(!placed.values.contains(1), "nothing behind the stalled read")
        let pipelined = Set(actions.compactMap { if case .open(let id, _, true) = $0 { id } else { nil } })
        #expect(pipelined.count == 3, "four pipelined connections to an owner at most (the stalled one counts)")
        for connection in pipelined { #expect(placed.values.filter { $0 == connection }.count <= RelayMachine.pipelineDepth) }
        // Past the depth of the other three, a read takes a connection of its own.
        let own = Set(actions.compactMap { if case .open(let id, _, false) = $0 { id } else { nil } })
        #expect(own.count == 80 - 3 * RelayMachine.pipelineDepth)
        // An answer on the slow connection makes it take reads again.
        #expect(m.answered(1, status: 200, keepAlive: true, now: at(20)) == [.answer(slow[0].id)])
        let next = requests(&m, 1)
        #expect(sends(m.turn(next, now: at(21)))[next[0].id] == 1, "an idle pipelined connection comes first")
    }

    @Test func aReadLostWithItsConnectionIsSentAgainThenFails() {
        var m = machine()
        let read = requests(&m, 1)
        _ = m.turn(read, now: at(0))
        m.connected(1)
        var connection = 1
        for attempt in 1...RelayMachine.pipelinedAttempts {
            let actions = m.lost(connection, receivedNothing: false, now: at(attempt))
            #expect(actions.first == .close(connection))
            let again = sends(actions)
            #expect(again.count == 1 && again[read[0].id] != nil, "attempt \(attempt): sent again")
            connection = again[read[0].id]!
            m.connected(connection)
        }
        #expect(m.lost(connection, receivedNothing: false, now: at(10)) == [.close(connection), .fail(read[0].id, .closed)])
    }

    @Test func aChangeIsSentAgainOnlyFromAKeptConnectionThatAnsweredNothing() {
        var m = machine()
        let first = requests(&m, 1, pipelines: false, bodyless: false)
        #expect(m.turn(first, now: at(0)) == [.open(1, key: "a", pipelined: false), .send(first[0].id, on: 1)])
        m.connected(1)
        // A new connection that breaks: the owner may have taken the change, it fails.
        #expect(m.lost(1, receivedNothing: true, now: at(1)) == [.close(1), .fail(first[0].id, .closed)])
        let second = requests(&m, 1, pipelines: false, bodyless: false)
        _ = m.turn(second, now: at(2))
        m.connected(2)
        #expect(m.answered(2, status: 201, keepAlive: true, now: at(3)) == [.answer(second[0].id)])
        // Kept, then used again: the owner closed it before taking the request, which goes once more.
        let third = requests(&m, 1, pipelines: false, bodyless: false)
        #expect(m.turn(third, now: at(4)) == [.send(third[0].id, on: 2)])
        let retried = m.lost(2, receivedNothing: true, now: at(5))
        #expect(retried == [.close(2), .open(3, key: "a", pipelined: false), .send(third[0].id, on: 3)])
        m.connected(3)
        // Something of its answer came: it is not sent again.
        #expect(m.lost(3, receivedNothing: false, now: at(6)) == [.close(3), .fail(third[0].id, .closed)])
    }

    @Test func keptConnectionsAreUsedWithinTheirWindowAndClosedAfter() {
        var m = machine()
        let one = requests(&m, 1, pipelines: false, bodyless: false)
        _ = m.turn(one, now: at(0))
        m.connected(1)
        _ = m.answered(1, status: 200, keepAlive: true, now: at(1))
        // Too old to use: closed, and a new one opened.
        let late = requests(&m, 1, pipelines: false, bodyless: false)
        #expect(m.turn(late, now: at(21_000)) == [.close(1), .open(2, key: "a", pipelined: false), .send(late[0].id, on: 2)])
        m.connected(2)
        _ = m.answered(2, status: 200, keepAlive: true, now: at(21_001))
        // Unused for the window: the tick closes it.
        #expect(m.tick(now: at(30_000)) == [])
        #expect(m.tick(now: at(41_001)) == [.close(2)])
        #expect(m.connectionCount == 0)
    }

    @Test func pastTheConnectionLimitARequestFailsAtOnce() {
        var m = machine(limit: 2)
        let changes = requests(&m, 3, pipelines: false, bodyless: false)
        let actions = m.turn(changes, now: at(0))
        #expect(opened(actions).count == 2)
        #expect(actions.last == .fail(changes[2].id, .busy("the relay holds 2 connections already")))
        #expect(!RelayFailure.busy("").addressMayBeStale && RelayFailure.connect("").addressMayBeStale)
    }

    @Test func deadlinesAndConnectTimeouts() {
        var m = machine()
        let connecting = requests(&m, 1, key: "b", pipelines: false, bodyless: false)
        _ = m.turn(connecting, now: at(0))
        #expect(m.tick(now: at(400)) == [])
        #expect(m.tick(now: at(500)) == [.close(1), .fail(connecting[0].id, .connect("no answer within 0.5 seconds"))])
        // A read past its deadline fails; a read pipelined behind it goes again elsewhere (it has time left).
        let reads = requests(&m, 5)
        let spread = sends(m.turn(Array(reads[..<4]), now: at(1_000)))
        #expect(Set(spread.values) == [2, 3, 4, 5])
        for connection in 2...5 { m.connected(connection) }
        #expect(sends(m.turn([reads[4]], now: at(1_002)))[reads[4].id] == 2, "behind the first, on the least busy")
        let late = m.tick(now: at(61_000))
        #expect(late.first == .fail(reads[0].id, .timedOut))
        #expect(late.contains(.close(2)))
        let moved = sends(late)[reads[4].id]
        #expect(moved != nil && !(2...5).contains(moved!), "sent again on a new connection: \(late)")
        for read in reads[1..<4] { #expect(late.contains(.fail(read.id, .timedOut))) }
    }

    @Test func aTurnsReadsToOneOwnerAreEnclosedUnlessItRefused() {
        var m = machine(encloses: true)
        let reads = requests(&m, 20)
        let change = RelayMachine.Request(id: m.makeJobID(), key: "a", pipelines: false, bodyless: false)
        let actions = m.turn(reads + [change], now: at(0))
        let enclosures = actions.compactMap { if case .enclose(let id, let members, _) = $0 { (id, members) } else { nil } }
        #expect(enclosures.map(\.1.count) == [16, 4])
        #expect(enclosures.flatMap(\.1) == reads.map(\.id), "every read once, in order")
        let sent = sends(actions)
        #expect(sent.count == 3, "two enclosures and the change: \(sent)")
        #expect(sent[change.id] != nil)
        // The owner refuses the first (an older version): its reads go again one by one, next turn.
        let connection = sent[enclosures[0].0]!
        m.connected(connection)
        #expect(m.answered(connection, status: 404, keepAlive: true, now: at(5)) == [.discard(enclosures[0].0)])
        #expect(m.hasWaitingReads)
        let retried = sends(m.turn([], now: at(6)))
        #expect(Set(retried.keys) == Set(enclosures[0].1))
        // For a minute, a turn's reads to that owner go one by one; then enclosed again.
        #expect(!m.turn(requests(&m, 5), now: at(59_000)).contains { if case .enclose = $0 { true } else { false } })
        #expect(m.turn(requests(&m, 5), now: at(60_006)).contains { if case .enclose = $0 { true } else { false } })
    }

    @Test func anEnclosureThatFailsFailsItsMembersOnce() {
        var m = machine(encloses: true)
        let reads = requests(&m, 2)
        let actions = m.turn(reads, now: at(0))
        guard case .enclose(let id, _, _) = actions.first, let connection = sends(actions)[id] else {
            Issue.record("no enclosure: \(actions)")
            return
        }
        m.connected(connection)
        #expect(m.failed(connection, .malformed("x")) == [.close(connection), .fail(id, .malformed("x"))])
        #expect(m.stop() == [], "nothing is left under way")
    }

    @Test func stoppingFailsEverythingUnderWay() {
        var m = machine()
        let reads = requests(&m, 2)
        _ = m.turn(reads, now: at(0))
        let stop = m.stop()
        #expect(stop.filter { if case .fail(_, .closed) = $0 { true } else { false } }.count == 2)
        #expect(m.connectionCount == 0)
    }
}
