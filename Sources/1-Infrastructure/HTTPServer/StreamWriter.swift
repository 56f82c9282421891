import Sockets
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Feeds one streaming response (e.g. server-sent events); safe to use from any thread.
///
/// libmicrohttpd parses the request; once the handler answers with a stream, the server takes the
/// connection's socket over (see ``StreamLoop``): libmicrohttpd lets go of the connection and its
/// memory, and the stream costs a few hundred bytes while idle. What is written is queued as the
/// caller's own arrays (shared, never copied per stream) and sent by the stream's loop thread in
/// one `writev` per wake-up, framed as one HTTP chunk; a stream that ends cleanly gives its socket
/// back to libmicrohttpd, so the client's keep-alive connection goes on.
///
/// The queue is bounded: past ``StreamBody/maxBufferedBytes`` a write reports ``WriteResult/overflow``
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
        /// Bytes sent before any chunk: the response head (not chunk-framed).
        var head: [UInt8]
        var headSent = 0
        /// Queued data, the callers' arrays as given.
        var chunks: [[UInt8]] = []
        /// Bytes of `chunks[0]` already sent.
        var firstOffset = 0
        /// Data bytes queued and not yet sent.
        var pending = 0
        /// The HTTP chunk being sent: its size (0: the last chunk), how much of its size line is
        /// sent, its data bytes still to send, and its closing CRLF bytes still to send.
        var frameSize = -1
        var frameLineSent = 0
        var frameLineLength = 0
        var frameData = 0
        var frameTrailer = 0
        /// Whether the loop has the stream on its list to flush, or waits for the socket to drain.
        var scheduled = false
        var awaitingWritable = false
        var closed = false
        var finishing = false
        var aborting = false
        var lastWrite: ContinuousClock.Instant
        var onClose: [@Sendable () -> Void] = []
    }

    /// A server-unique number for this stream.
    public let id: Int
    /// The socket, owned by the stream from the hand-over until it closes or gives it back (closed
    /// exactly once, or released to libmicrohttpd).
    let socket: Socket
    /// HTTP/1.1 chunk framing; without it (an HTTP/1.0 client) the data goes as it is and the stream
    /// ends by closing the connection.
    let chunked: Bool
    let loop: StreamLoop
    let maxBufferedBytes: Int
    let heartbeat: [UInt8]?
    let state: Mutex<State>

    init(id: Int, socket: Socket, loop: StreamLoop, head: [UInt8], chunked: Bool = true, body: StreamBody) {
        self.id = id
        self.socket = socket
        self.chunked = chunked
        self.loop = loop
        self.maxBufferedBytes = body.maxBufferedBytes
        self.heartbeat = body.heartbeat
        var initial = State(head: head, lastWrite: .now)
        if !body.preamble.isEmpty {
            initial.chunks = [body.preamble]
            initial.pending = body.preamble.count
        }
        self.state = Mutex(initial)
    }

    /// Has the loop send the head (and the preamble) now.
    func start() {
        let wake = state.withLock { Self.schedule(&$0) }
        if wake { loop.schedule(self) }
    }

    /// Queues bytes for the client and wakes the stream's loop.
    /// - Returns: whether the bytes were taken; nothing is taken on overflow or once closed.
    /// - Parameter evenIfFull: take the bytes when nothing is buffered even if they are more than the
    ///   bound (a snapshot larger than the bound must still reach the client once).
    @discardableResult
    public func write(_ bytes: [UInt8], evenIfFull: Bool = false) -> WriteResult {
        guard !bytes.isEmpty else { return isClosed ? .closed : .written }
        let (result, wake) = state.withLock { s -> (WriteResult, Bool) in
            if s.closed || s.finishing || s.aborting { return (.closed, false) }
            if s.pending + bytes.count > maxBufferedBytes && !(evenIfFull && s.pending == 0) { return (.overflow, false) }
            s.chunks.append(bytes)
            s.pending += bytes.count
            s.lastWrite = .now
            return (.written, Self.schedule(&s))
        }
        if wake { loop.schedule(self) }
        return result
    }

    /// Bytes written but not yet taken by the client's socket.
    public var bufferedByteCount: Int { state.withLock { $0.pending } }

    /// Whether the stream has ended (its socket closed or given back).
    public var hasEnded: Bool { state.withLock { $0.closed } }

    /// Whether the stream has ended or is ending.
    public var isClosed: Bool { state.withLock { $0.closed || $0.finishing || $0.aborting } }

    /// Ends the stream cleanly once the buffered bytes are sent (the connection may be kept alive).
    public func finish() {
        let wake = state.withLock { s -> Bool in
            guard !s.closed, !s.finishing else { return false }
            s.finishing = true
            return Self.schedule(&s)
        }
        if wake { loop.schedule(self) }
    }

    /// Ends the stream at once, dropping buffered bytes and closing the connection.
    public func abort() {
        let wake = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.aborting = true
            // Even while waiting for the socket to drain: the loop must close it now.
            s.awaitingWritable = false
            return Self.schedule(&s)
        }
        if wake { loop.schedule(self) }
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

    /// Puts the stream on its loop's list unless it is there, or waits for its socket to drain (then
    /// the loop flushes it when the socket is writable). Caller holds the lock.
    private static func schedule(_ s: inout State) -> Bool {
        if s.scheduled || s.awaitingWritable || s.closed { return false }
        s.scheduled = true
        return true
    }

    // MARK: The loop's side (its thread only)

    /// What the loop does next with the stream after a flush.
    enum Next {
        /// Everything queued was sent; wait for more.
        case idle
        /// The socket is full: wait until it is writable.
        case waitWritable
        /// Ended cleanly, everything sent: give the socket back for keep-alive.
        case finished
        /// Close the socket (the client is gone, or the close ends an HTTP/1.0 body).
        case close
        /// Aborted: close the socket at once, dropping what the kernel still holds for the client
        /// too (a slow reader of an aborted stream is cut now, not once it drained megabytes).
        case abort
    }

    /// Sends what is queued, one `writev` per HTTP chunk, until it is all sent or the socket is full.
    func flush() -> Next {
        state.withLock { s -> Next in
            s.scheduled = false
            s.awaitingWritable = false
            if s.closed { return .idle }
            if s.aborting { return .abort }
            while true {
                if s.frameData == 0 && s.frameTrailer == 0 && s.frameLineSent == s.frameLineLength {
                    // No chunk in flight: start one with everything queued, or end.
                    if s.pending > 0 {
                        s.frameSize = chunked ? s.pending : -1
                        s.frameLineSent = 0
                        s.frameLineLength = chunked ? Self.sizeLineLength(s.pending) : 0
                        s.frameData = s.pending
                        s.frameTrailer = chunked ? 2 : 0
                    } else if s.finishing && !chunked {
                        if s.headSent == s.head.count { return .close }  // the close ends the body
                    } else if s.finishing && s.frameSize != 0 {
                        // The last chunk: "0\r\n\r\n" (its size line and the empty trailer section).
                        s.frameSize = 0
                        s.frameLineSent = 0
                        s.frameLineLength = 5
                    } else if s.headSent == s.head.count {
                        return s.finishing ? .finished : .idle
                    }
                }
                // A socket closed meanwhile writes nothing: -1 with EBADF, as the call itself would.
                let sent = (try? socket.withDescriptor { Self.send(&s, fd: $0) }) ?? Self.badDescriptor()
                if sent < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK {
                        s.awaitingWritable = true
                        return .waitWritable
                    }
                    if errno == EINTR { continue }
                    return .close
                }
                Self.advance(&s, by: sent)
            }
        }
    }

    private static let crlf: [UInt8] = [13, 10]

    /// Bytes of the size line of a chunk of `size` data bytes (hex digits and CRLF).
    private static func sizeLineLength(_ size: Int) -> Int {
        var digits = 1
        var rest = size >> 4
        while rest > 0 {
            digits += 1
            rest >>= 4
        }
        return digits + 2
    }

    /// One `writev` of the head's rest, the chunk's size line, its data (the queued arrays as they
    /// are) and its closing CRLF. Returns the bytes sent, or -1 with `errno`.
    private static func badDescriptor() -> Int {
        errno = EBADF
        return -1
    }

    private static func send(_ s: inout State, fd: Int32) -> Int {
        let maxVectors = 64
        return withUnsafeTemporaryAllocation(of: iovec.self, capacity: maxVectors) { vectors -> Int in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { line -> Int in
                var count = 0
                func add(_ base: UnsafeRawPointer?, _ length: Int) {
                    guard length > 0, count < maxVectors, let base else { return }
                    vectors[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: length)
                    count += 1
                }
                // The size line, written out (hex, CRLF; the last chunk's is "0\r\n\r\n").
                var length = 0
                if s.frameSize == 0 {
                    for byte in "0\r\n\r\n".utf8 {
                        line[length] = byte
                        length += 1
                    }
                } else if s.frameSize > 0 {
                    var shift = (s.frameLineLength - 3) * 4
                    while shift >= 0 {
                        let digit = UInt8((s.frameSize >> shift) & 15)
                        line[length] = digit < 10 ? 48 + digit : 87 + digit  // 0-9, a-f
                        length += 1
                        shift -= 4
                    }
                    line[length] = 13
                    line[length + 1] = 10
                    length += 2
                }
                // The data's pointers outlive their `withUnsafeBytes` calls: each is the storage of a
                // native array that `s.chunks` keeps alive, unchanged while the lock is held, until
                // `writev` has returned.
                return s.head.withUnsafeBytes { head -> Int in
                    add(head.baseAddress.map { $0 + s.headSent }, head.count - s.headSent)
                    add(UnsafeRawPointer(line.baseAddress!) + s.frameLineSent, length - s.frameLineSent)
                    var left = s.frameData
                    var index = 0
                    var offset = s.firstOffset
                    while left > 0, index < s.chunks.count, count < maxVectors - 1 {
                        let take = min(left, s.chunks[index].count - offset)
                        s.chunks[index].withUnsafeBytes { add($0.baseAddress.map { $0 + offset }, take) }
                        left -= take
                        index += 1
                        offset = 0
                    }
                    let trailerStart = 2 - s.frameTrailer
                    return Self.crlf.withUnsafeBytes { crlf -> Int in
                        if left == 0 { add(crlf.baseAddress.map { $0 + trailerStart }, s.frameTrailer) }
                        return writev(fd, vectors.baseAddress, Int32(count))
                    }
                }
            }
        }
    }

    /// Marks `sent` bytes of the head, size line, data and trailer as sent, in that order.
    private static func advance(_ s: inout State, by sent: Int) {
        var left = sent
        let head = min(left, s.head.count - s.headSent)
        s.headSent += head
        left -= head
        if s.headSent == s.head.count, !s.head.isEmpty {
            s.head = []
            s.headSent = 0
        }
        let line = min(left, s.frameLineLength - s.frameLineSent)
        s.frameLineSent += line
        left -= line
        let data = min(left, s.frameData)
        s.frameData -= data
        s.pending -= data
        left -= data
        var consumed = data
        while consumed > 0, let first = s.chunks.first {
            let rest = first.count - s.firstOffset
            if consumed >= rest {
                consumed -= rest
                s.chunks.removeFirst()
                s.firstOffset = 0
            } else {
                s.firstOffset += consumed
                consumed = 0
            }
        }
        if s.frameData == 0 {
            let trailer = min(left, s.frameTrailer)
            s.frameTrailer -= trailer
        }
        if s.chunks.isEmpty && s.chunks.capacity > 16 { s.chunks = [] }
    }

    /// The stream has ended and its socket is closed or given back: never touch it again.
    func markClosed() {
        let actions = state.withLock { s -> [@Sendable () -> Void] in
            s.closed = true
            s.scheduled = false
            s.awaitingWritable = false
            let actions = s.onClose
            s.onClose = []
            s.chunks = []
            s.pending = 0
            s.head = []
            return actions
        }
        for action in actions { action() }
    }
}
