import CMicroHTTPD
import Synchronization

/// Feeds one streaming response (e.g. server-sent events); safe to use from any thread.
///
/// Bytes written are buffered until the client's connection takes them. While the buffer is empty
/// the connection is suspended, so an idle stream holds no thread and costs no CPU; a write wakes it.
/// The buffer is bounded: past ``StreamBody/maxBufferedBytes`` a write reports ``WriteResult/overflow``
/// and the caller decides (drop and resynchronise, or ``abort()``).
public final class StreamWriter: Sendable {
    /// What happened to a write.
    public enum WriteResult: Sendable, Equatable {
        case written
        /// The client is too slow: the buffer is full and nothing was added.
        case overflow
        /// The stream has ended (client gone, finished or server stopping).
        case closed
    }

    struct State {
        var buffer: [UInt8] = []
        var offset = 0
        var suspended = false
        var closed = false
        var finishing = false
        var aborting = false
        var lastWrite: ContinuousClock.Instant
        var onClose: [@Sendable () -> Void] = []
        var pending: Int { buffer.count - offset }
    }

    /// A server-unique number for this stream.
    public let id: Int
    let connection: ConnectionHandle
    let maxBufferedBytes: Int
    let heartbeat: [UInt8]?
    let state: Mutex<State>

    init(id: Int, connection: ConnectionHandle, body: StreamBody) {
        self.id = id
        self.connection = connection
        self.maxBufferedBytes = body.maxBufferedBytes
        self.heartbeat = body.heartbeat
        var initial = State(lastWrite: .now)
        initial.buffer = body.preamble
        self.state = Mutex(initial)
    }

    /// Queues bytes for the client and wakes its connection.
    /// - Returns: whether the bytes were taken; nothing is taken on overflow or once closed.
    /// - Parameter evenIfFull: take the bytes when nothing is buffered even if they are more than the
    ///   bound (a snapshot larger than the bound must still reach the client once).
    @discardableResult
    public func write(_ bytes: [UInt8], evenIfFull: Bool = false) -> WriteResult {
        state.withLock { s in
            if s.closed || s.finishing || s.aborting { return .closed }
            if s.pending + bytes.count > maxBufferedBytes && !(evenIfFull && s.pending == 0) { return .overflow }
            if s.offset > 0 && s.offset >= s.buffer.count / 2 {
                s.buffer.removeFirst(s.offset)
                s.offset = 0
            }
            s.buffer.append(contentsOf: bytes)
            s.lastWrite = .now
            wake(&s)
            return .written
        }
    }

    /// Bytes written but not yet taken by the client.
    public var bufferedByteCount: Int { state.withLock { $0.pending } }

    /// Whether the stream has ended or is ending.
    public var isClosed: Bool { state.withLock { $0.closed || $0.finishing || $0.aborting } }

    /// Ends the stream cleanly once the buffered bytes are sent (the connection may be kept alive).
    public func finish() {
        state.withLock { s in
            guard !s.closed else { return }
            s.finishing = true
            wake(&s)
        }
    }

    /// Ends the stream at once, dropping buffered bytes and closing the connection.
    public func abort() {
        state.withLock { s in
            guard !s.closed else { return }
            s.aborting = true
            wake(&s)
        }
    }

    /// Registers work to run once when the stream ends for any reason (at once if it has ended).
    public func onClose(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { s -> Bool in
            if s.closed { return true }
            s.onClose.append(action)
            return false
        }
        if runNow { action() }
    }

    /// Writes the heartbeat if nothing was written for `interval`.
    func heartbeatIfIdle(interval: Duration, now: ContinuousClock.Instant) {
        guard let heartbeat else { return }
        let idle = state.withLock { now - $0.lastWrite >= interval }
        if idle { write(heartbeat) }
    }

    // MARK: Server side

    /// Resumes the connection if it is suspended. Caller holds the lock.
    private func wake(_ s: inout State) {
        if s.suspended && !s.closed {
            s.suspended = false
            connection.resume()
        }
    }

    /// The content reader: copies buffered bytes, or suspends the connection when there are none.
    /// Runs on the connection's worker thread.
    func read(into destination: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        state.withLock { s in
            if s.aborting { return Int(CMicroHTTPD_CONTENT_READER_END_WITH_ERROR) }
            let count = min(max, s.pending)
            if count > 0 {
                s.buffer.withUnsafeBufferPointer { source in
                    UnsafeMutableRawPointer(destination).copyMemory(
                        from: source.baseAddress! + s.offset, byteCount: count)
                }
                s.offset += count
                if s.offset == s.buffer.count {
                    s.buffer.removeAll(keepingCapacity: s.buffer.count <= 4096)
                    s.offset = 0
                }
                return count
            }
            if s.finishing || s.closed { return Int(CMicroHTTPD_CONTENT_READER_END_OF_STREAM) }
            s.suspended = true
            connection.suspend()
            return 0
        }
    }

    /// The connection is gone (libmicrohttpd's completion callback): never touch it again.
    func markClosed() {
        let actions = state.withLock { s -> [@Sendable () -> Void] in
            s.closed = true
            s.suspended = false
            let actions = s.onClose
            s.onClose = []
            s.buffer = []
            s.offset = 0
            return actions
        }
        for action in actions { action() }
    }
}
