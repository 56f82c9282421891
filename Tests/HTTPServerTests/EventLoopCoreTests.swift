import Foundation
import Sockets
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The event loops' shared core (`EventLoopCore`) and the socket's closure access to its descriptor.
@Suite(.offThePool) struct EventLoopCoreTests {
    /// Two connected non-blocking sockets.
    static func pair() -> (Socket, Socket) {
        var fds: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        return (Socket(adopting: fds[0]), Socket(adopting: fds[1]))
    }

    @Test func aClosedSocketHandsOutNoDescriptor() {
        let (a, b) = Self.pair()
        #expect((try? a.withDescriptor { $0 >= 0 }) == true)
        a.close()
        #expect(throws: SocketError.closed) { try a.withDescriptor { $0 } }
        b.close()
    }

    @Test func eventsComeUnderTheirTagAndNotAfterDeregistering() throws {
        let core = EventLoopCore<Int>(refusesAfterStop: true)
        let (watched, peer) = Self.pair()
        defer {
            watched.close()
            peer.close()
        }
        let tag = EventLoopCore<Int>.Tag(7)
        try core.register(watched, as: tag, events: [.readable, .hangUp])
        _ = [UInt8](repeating: 1, count: 3).withUnsafeBytes { peer.send($0) }
        var seen: [EventLoopCore<Int>.Tag] = []
        core.wait(milliseconds: 1000) { seen.append($0.tag) }
        #expect(seen == [tag])
        core.deregister(watched)
        _ = [UInt8](repeating: 2, count: 3).withUnsafeBytes { peer.send($0) }
        #expect(core.wait(milliseconds: 50) { _ in Issue.record("an event after deregistering") } == 0)
        watched.close()
        #expect(throws: SocketError.closed) { try core.register(watched, as: tag, events: .readable) }
    }

    @Test func aSubmissionWakesASleepingLoopAndStopEndsIt() {
        let core = EventLoopCore<Int>(refusesAfterStop: true)
        let taken = Mutex<[Int]>([])
        let done = Atomic<Bool>(false)
        let thread = Thread {
            var batch: [Int] = []
            while true {
                let stopped = core.take(into: &batch)
                taken.withLock { $0 += batch }
                if stopped { break }
                // Asleep for up to 10 s unless woken.
                core.wait(milliseconds: batch.isEmpty ? 10_000 : 0) { _ in }
                batch.removeAll()
            }
            done.store(true, ordering: .releasing)
        }
        thread.start()
        Thread.sleep(forTimeInterval: 0.1)
        let began = ContinuousClock.now
        #expect(core.submit(1))
        while taken.withLock({ $0 }) != [1], ContinuousClock.now - began < .seconds(5) { Thread.sleep(forTimeInterval: 0.005) }
        #expect(taken.withLock { $0 } == [1])
        #expect(ContinuousClock.now - began < .seconds(2), "the sleeping loop was woken, not timed out")
        core.stop()
        while !done.load(ordering: .acquiring), ContinuousClock.now - began < .seconds(5) { Thread.sleep(forTimeInterval: 0.005) }
        let ended = done.load(ordering: .acquiring)
        #expect(ended)
        #expect(!core.submit(2), "a loop that refuses after stop refuses")
        let streams = EventLoopCore<Int>(refusesAfterStop: false)
        streams.stop()
        #expect(streams.submit(3), "a stream loop still takes what its streams end with")
        #expect(streams.takeLeft() == [3])
    }
}
