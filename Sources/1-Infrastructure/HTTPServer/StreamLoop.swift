import CMicroHTTPD
import Foundation
import Sockets
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A thread that sends the streams' bytes over sockets it owns, on an ``EventLoopCore`` (one epoll set,
/// one eventfd to be woken, the streams handed over with something to send).
///
/// A stream is scheduled when bytes are written to it (once, however many writes come before the
/// loop gets to it), flushed with one `writev` per HTTP chunk, and, when its socket is full, left
/// until epoll says it is writable. Every stream's socket is watched for the client hanging up
/// (`EPOLLRDHUP`), so a client that leaves is noticed at once, idle or not. A stream is registered
/// under its id (a tag), never its descriptor.
///
/// Thread confinement: `registered` and every socket call happen on the loop's thread only; other
/// threads hand streams over through the core (``schedule(_:)``).
final class StreamLoop: @unchecked Sendable {
    // `@unchecked Sendable`: `registered` is confined to the loop's thread (see above); the rest is
    // immutable, a Mutex or Atomic, or the core (Sendable).
    private let core = EventLoopCore<StreamWriter>(capacity: 512, refusesAfterStop: false)
    private struct Registration {
        let writer: StreamWriter
        /// Whether epoll reports the socket writable too (only while it is full).
        var writable = false
    }

    private var registered: [EventLoopCore<StreamWriter>.Tag: Registration] = [:]
    /// Whether the loop is writing streams out (it took some and has not yet found none left).
    let busy = Atomic<Bool>(false)
    /// Called on the loop's thread when a stream has ended: whether its socket was given back to
    /// libmicrohttpd (a clean end), else it is closed here.
    private let ended: @Sendable (StreamWriter, _ clean: Bool) -> Bool
    let name: String

    init(name: String, ended: @escaping @Sendable (StreamWriter, Bool) -> Bool) {
        self.name = name
        self.ended = ended
    }

    func start() {
        let thread = Thread { [self] in
            Thread.current.name = name
            run()
        }
        thread.start()
    }

    /// Ends the loop's thread once every stream it holds has ended.
    func stop() { core.stop() }

    /// Puts `writer` on the list to flush (its caller saw it was not there yet).
    func schedule(_ writer: StreamWriter) {
        core.submit(writer, onQueued: { busy.store(true, ordering: .releasing) })
    }

    private static func tag(_ writer: StreamWriter) -> EventLoopCore<StreamWriter>.Tag { .init(UInt64(bitPattern: Int64(writer.id)) &+ 1) }

    private func run() {
        var batch: [StreamWriter] = []
        while true {
            // Take what is ready; sleep only when there is nothing.
            let stopped = core.take(into: &batch, marked: { sleeps in busy.store(!sleeps, ordering: .releasing) })
            for writer in batch { flush(writer) }
            let none = batch.isEmpty
            batch.removeAll(keepingCapacity: true)
            if stopped && registered.isEmpty && none { break }
            core.wait(milliseconds: none ? 1000 : 0) { event in
                guard let writer = registered[event.tag]?.writer else { return }
                if event.hungUp {
                    end(writer, clean: false)
                } else if event.writable {
                    flush(writer)
                }
            }
        }
    }

    private func flush(_ writer: StreamWriter) {
        // Scheduled just before it ended: its socket may be closed, or given back.
        guard !writer.hasEnded else { return }
        let tag = Self.tag(writer)
        if registered[tag] == nil {
            // First flush: watch the socket for the client hanging up.
            do {
                try core.register(writer.socket, as: tag, events: .hangUp)
            } catch {
                writer.markClosed()
                if !ended(writer, false) { writer.socket.close() }
                return
            }
            registered[tag] = Registration(writer: writer)
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
            _ = try? writer.socket.withDescriptor {
                setsockopt($0, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            }
            end(writer, clean: false)
        }
    }

    /// Whether epoll also reports the socket writable (only while it is full).
    private func watch(_ writer: StreamWriter, writable: Bool) {
        let tag = Self.tag(writer)
        guard registered[tag]?.writable != writable else { return }
        registered[tag]?.writable = writable
        try? core.modify(writer.socket, as: tag, events: writable ? [.hangUp, .writable] : .hangUp)
    }

    private func end(_ writer: StreamWriter, clean: Bool) {
        guard registered.removeValue(forKey: Self.tag(writer)) != nil else { return }
        core.deregister(writer.socket)
        writer.markClosed()
        if !ended(writer, clean) { writer.socket.close() }
    }
}
