import CLinuxEvents
import CMicroHTTPD
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A thread that sends the streams' bytes over sockets it owns: one epoll set, one eventfd to be
/// woken, and the list of streams with something to send.
///
/// A stream is scheduled when bytes are written to it (once, however many writes come before the
/// loop gets to it), flushed with one `writev` per HTTP chunk, and, when its socket is full, left
/// until epoll says it is writable. Every stream's socket is watched for the client hanging up
/// (`EPOLLRDHUP`), so a client that leaves is noticed at once, idle or not.
///
/// Thread confinement: `registered` and every socket call happen on the loop's thread only; other
/// threads touch `ready` (under its mutex) and the eventfd.
final class StreamLoop: @unchecked Sendable {
    // `@unchecked Sendable`: `registered` is confined to the loop's thread (see above); the rest is
    // immutable or a Mutex/Atomic.
    private let epoll: Int32
    private let wakeFD: Int32
    private let ready = Mutex<(streams: [StreamWriter], sleeping: Bool)>(([], false))
    private struct Registration {
        let writer: StreamWriter
        /// Whether epoll reports the socket writable too (only while it is full).
        var writable = false
    }

    private var registered: [Int32: Registration] = [:]
    private let stopped = Atomic<Bool>(false)
    /// Whether the loop is writing streams out (it took some and has not yet found none left).
    let busy = Atomic<Bool>(false)
    /// Called on the loop's thread when a stream has ended: whether its socket was given back to
    /// libmicrohttpd (a clean end), else it is closed here.
    private let ended: @Sendable (StreamWriter, _ clean: Bool) -> Bool
    let name: String

    init(name: String, ended: @escaping @Sendable (StreamWriter, Bool) -> Bool) {
        self.name = name
        self.ended = ended
        var wake: Int32 = -1
        epoll = CLinuxEvents_create_loop(&wake)
        wakeFD = wake
    }

    func start() {
        let thread = Thread { [self] in
            Thread.current.name = name
            run()
        }
        thread.start()
    }

    /// Ends the loop's thread once every stream it holds has ended.
    func stop() {
        stopped.store(true, ordering: .releasing)
        wake()
    }

    /// Puts `writer` on the list to flush (its caller saw it was not there yet).
    func schedule(_ writer: StreamWriter) {
        let sleeping = ready.withLock { ready -> Bool in
            ready.streams.append(writer)
            busy.store(true, ordering: .releasing)
            defer { ready.sleeping = false }
            return ready.sleeping
        }
        if sleeping { wake() }
    }

    private func wake() { CLinuxEvents_wake(wakeFD) }

    private func run() {
        let capacity = 512
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        var batch: [StreamWriter] = []
        while true {
            // Take what is ready; sleep only when there is nothing.
            let waitMs: Int32 = ready.withLock { ready in
                if ready.streams.isEmpty {
                    ready.sleeping = true
                    busy.store(false, ordering: .releasing)
                    return 1000
                }
                busy.store(true, ordering: .releasing)
                swap(&batch, &ready.streams)
                return 0
            }
            for writer in batch { flush(writer) }
            batch.removeAll(keepingCapacity: true)
            if stopped.load(ordering: .acquiring) && registered.isEmpty && ready.withLock({ $0.streams.isEmpty }) { break }
            let count = epoll_wait(epoll, events, Int32(capacity), waitMs)
            ready.withLock { $0.sleeping = false }
            guard count > 0 else { continue }
            for index in 0..<Int(count) {
                let event = events[index]
                let fd = event.data.fd
                if fd == wakeFD {
                    CLinuxEvents_drain(wakeFD)
                    continue
                }
                guard let writer = registered[fd]?.writer else { continue }
                if event.events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                    end(writer, clean: false)
                } else if event.events & EPOLLOUT.rawValue != 0 {
                    flush(writer)
                }
            }
        }
        close(wakeFD)
        close(epoll)
    }

    private func flush(_ writer: StreamWriter) {
        // Scheduled just before it ended: its descriptor may already be another connection's.
        guard !writer.hasEnded else { return }
        if registered[writer.fd] == nil {
            // First flush: watch the socket for the client hanging up.
            var event = epoll_event()
            event.events = EPOLLRDHUP.rawValue
            event.data.fd = writer.fd
            guard epoll_ctl(epoll, EPOLL_CTL_ADD, writer.fd, &event) == 0 else {
                writer.markClosed()
                if !ended(writer, false) { writer.socket.close() }
                return
            }
            registered[writer.fd] = Registration(writer: writer)
        }
        switch writer.flush() {
        case .idle:
            watch(writer, writable: false)
        case .waitWritable:
            watch(writer, writable: true)
        case .finished:
            end(writer, clean: true)
        case .close:
            end(writer, clean: false)
        case .abort:
            // SO_LINGER with a zero time: close resets the connection and frees its send buffer.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(writer.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            end(writer, clean: false)
        }
    }

    /// Whether epoll also reports the socket writable (only while it is full).
    private func watch(_ writer: StreamWriter, writable: Bool) {
        guard registered[writer.fd]?.writable != writable else { return }
        registered[writer.fd]?.writable = writable
        var event = epoll_event()
        event.events = EPOLLRDHUP.rawValue | (writable ? EPOLLOUT.rawValue : 0)
        event.data.fd = writer.fd
        _ = epoll_ctl(epoll, EPOLL_CTL_MOD, writer.fd, &event)
    }

    private func end(_ writer: StreamWriter, clean: Bool) {
        guard registered.removeValue(forKey: writer.fd) != nil else { return }
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, writer.fd, nil)
        writer.markClosed()
        if !ended(writer, clean) { writer.socket.close() }
    }
}
