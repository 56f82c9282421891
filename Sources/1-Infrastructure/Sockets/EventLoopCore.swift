import CLinuxEvents
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What every event loop of browserd shares (the stream loops' writers, the cluster's relay): one
/// epoll set, one eventfd to wake it, the work other threads hand over, and a stop flag — so each loop
/// is only what it does with its sockets.
///
/// - **Handing over.** ``submit(_:)`` (any thread) queues work under a mutex and writes the eventfd
///   only when the loop said it would sleep: a busy loop is never woken for nothing.
/// - **Registrations are tags.** A socket is registered under a ``Tag`` its loop chooses (a stream's
///   or a connection's id), never under its descriptor: an event that comes after its socket closed
///   names a tag its loop no longer knows, and is ignored, instead of reaching whatever socket took
///   the descriptor's number meanwhile. Tag 0 is the eventfd's.
///
/// Thread confinement: ``take(into:whenIdle:marked:)``, ``takeLeft()``, ``wait(milliseconds:_:)``, ``register(_:as:events:)``,
/// ``modify(_:as:events:)`` and ``deregister(_:)`` are the loop's thread's; ``submit(_:)``,
/// ``stop()`` and ``isStopped`` any thread's.
public final class EventLoopCore<Work: Sendable>: @unchecked Sendable {
    // `@unchecked Sendable`: `events` is confined to the loop's thread; the rest is immutable or a Mutex.

    public typealias Tag = EventLoop.Tag
    public typealias Event = EventLoop.Event
    public typealias Interest = EventLoop.Interest

    private let epoll: Int32
    private let wakeFD: Int32
    private let inbox = Mutex<(work: [Work], sleeping: Bool, stopped: Bool)>(([], false, false))
    private let refusesAfterStop: Bool
    private let capacity: Int
    private let events: UnsafeMutablePointer<epoll_event>

    /// - Parameters:
    ///   - capacity: the most events one ``wait(milliseconds:_:)`` takes.
    ///   - refusesAfterStop: whether ``submit(_:)`` refuses work once stopped (a relay), or takes it
    ///     to the end (a stream loop, which still writes what its streams end with).
    public init(capacity: Int = 256, refusesAfterStop: Bool) {
        var wake: Int32 = -1
        epoll = CLinuxEvents_create_loop(&wake)
        wakeFD = wake
        self.capacity = capacity
        self.refusesAfterStop = refusesAfterStop
        events = .allocate(capacity: capacity)
    }

    deinit {
        events.deallocate()
        if wakeFD >= 0 { Glibc.close(wakeFD) }
        if epoll >= 0 { Glibc.close(epoll) }
    }

    // MARK: Any thread

    /// Queues `work` for the loop, waking it if it sleeps; `onQueued` runs under the inbox's lock once
    /// it is queued (so that what it records is in step with ``take(into:whenIdle:marked:)``).
    /// - Returns: false when it was refused (the loop stopped and refuses work after it).
    @discardableResult
    public func submit(_ work: Work, onQueued: () -> Void = {}) -> Bool {
        let (accepted, sleeping) = inbox.withLock { inbox -> (Bool, Bool) in
            if inbox.stopped && refusesAfterStop { return (false, false) }
            inbox.work.append(work)
            onQueued()
            defer { inbox.sleeping = false }
            return (true, inbox.sleeping)
        }
        if sleeping { CLinuxEvents_wake(wakeFD) }
        return accepted
    }

    /// Says the loop should stop, and wakes it. Safe to call twice.
    public func stop() {
        let first = inbox.withLock { inbox -> Bool in
            defer { inbox.stopped = true }
            return !inbox.stopped
        }
        if first { CLinuxEvents_wake(wakeFD) }
    }

    public var isStopped: Bool { inbox.withLock { $0.stopped } }

    // MARK: The loop's thread

    /// Swaps what was submitted into `batch` (empty before). When nothing was and `whenIdle` says the
    /// loop has nothing else to do, the loop is marked sleeping, so the next ``submit(_:)`` wakes it.
    /// `whenIdle` and `marked` run under the inbox's lock (`marked`: whether the loop sleeps now).
    /// - Returns: whether the loop was stopped.
    public func take(into batch: inout [Work], whenIdle: () -> Bool = { true }, marked: (Bool) -> Void = { _ in }) -> Bool {
        inbox.withLock { inbox in
            swap(&batch, &inbox.work)
            let sleeps = batch.isEmpty && whenIdle()
            if sleeps { inbox.sleeping = true }
            marked(sleeps)
            return inbox.stopped
        }
    }

    /// The work submitted and not taken (after the loop stopped), taken.
    public func takeLeft() -> [Work] {
        inbox.withLock { inbox in
            defer { inbox.work = [] }
            return inbox.work
        }
    }

    /// Waits up to `milliseconds` (0: not at all) for events, then calls `body` with each one (the
    /// eventfd's are drained, not passed on). The loop is awake again after it.
    /// - Returns: how many events `body` was given.
    @discardableResult
    public func wait(milliseconds: Int32, _ body: (Event) -> Void) -> Int {
        let count = epoll_wait(epoll, events, Int32(capacity), milliseconds)
        inbox.withLock { $0.sleeping = false }
        guard count > 0 else { return 0 }
        var given = 0
        for index in 0..<Int(count) {
            let event = events[index]
            if event.data.u64 == 0 {
                CLinuxEvents_drain(wakeFD)
                continue
            }
            given += 1
            body(Event(tag: Tag(event.data.u64), flags: event.events))
        }
        return given
    }

    /// Watches `socket` under `tag`. - Throws: when the socket is closed, or epoll refuses it.
    public func register(_ socket: Socket, as tag: Tag, events interest: Interest) throws(SocketError) {
        try control(EPOLL_CTL_ADD, socket, tag, interest)
    }

    /// Changes what `socket`, registered under `tag`, is watched for.
    public func modify(_ socket: Socket, as tag: Tag, events interest: Interest) throws(SocketError) {
        try control(EPOLL_CTL_MOD, socket, tag, interest)
    }

    /// Stops watching `socket` (before it is closed, so its number is never watched for another).
    public func deregister(_ socket: Socket) {
        _ = try? socket.withDescriptor { epoll_ctl(epoll, EPOLL_CTL_DEL, $0, nil) }
    }

    private func control(_ operation: Int32, _ socket: Socket, _ tag: Tag, _ interest: Interest) throws(SocketError) {
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = tag.rawValue
        let result = try socket.withDescriptor { epoll_ctl(epoll, operation, $0, &event) }
        guard result == 0 else { throw .system("epoll_ctl", errno) }
    }
}

/// The values an ``EventLoopCore`` speaks in, whatever its work.
public enum EventLoop {
    /// A registration's name, chosen by the loop (never 0, the eventfd's).
    public struct Tag: Hashable, Sendable {
        public let rawValue: UInt64
        public init(_ rawValue: UInt64) {
            precondition(rawValue != 0, "tag 0 is the eventfd's")
            self.rawValue = rawValue
        }
    }

    /// What epoll said of one registration.
    public struct Event: Sendable {
        public let tag: Tag
        public let flags: UInt32
        public var readable: Bool { flags & EPOLLIN.rawValue != 0 }
        public var writable: Bool { flags & EPOLLOUT.rawValue != 0 }
        /// The peer hung up or the socket failed.
        public var hungUp: Bool { flags & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 }
    }

    /// What a socket is watched for.
    public struct Interest: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let readable = Interest(rawValue: EPOLLIN.rawValue)
        public static let writable = Interest(rawValue: EPOLLOUT.rawValue)
        public static let hangUp = Interest(rawValue: EPOLLRDHUP.rawValue)
        /// Edge-triggered: told once per change, read and written until the kernel says wait.
        public static let edgeTriggered = Interest(rawValue: EPOLLET.rawValue)
    }
}
