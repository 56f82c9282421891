import Sockets

#if canImport(Glibc)
    import Glibc
#endif

/// What a relay connection received and has not consumed yet, in one buffer the socket is read into
/// directly (no intermediate copy): `recv` writes behind ``bytes``, answers are read off their front.
///
/// Not thread-safe: owned by one ``RelayLoop`` connection, used on the loop's thread only.
final class ReceiveBuffer {
    /// Free room made before each read; the buffer doubles when a read fills it.
    static let readSize = 16 * 1024
    /// A buffer grown past this while answers were large goes back to its first size once it is empty,
    /// so an idle kept connection holds little.
    static let keptCapacity = 256 * 1024

    private var storage: UnsafeMutableRawPointer
    private(set) var capacity: Int
    private var start = 0
    private var end = 0

    /// The size a buffer starts with and goes back to (``clear()``).
    private let initialCapacity: Int

    /// - Parameter capacity: its first size (``readSize`` at least): a pipelined connection's holds a
    ///   whole run of answers, which an owner sends together, so it is read at once and rarely moved.
    init(capacity: Int = ReceiveBuffer.readSize) {
        initialCapacity = max(capacity, Self.readSize)
        self.capacity = initialCapacity
        storage = .allocate(byteCount: initialCapacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    var isEmpty: Bool { start == end }
    var count: Int { end - start }

    /// The bytes received and not consumed.
    var bytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: (storage + start).assumingMemoryBound(to: UInt8.self), count: end - start)
    }

    /// Drops the first `count` bytes (an answer read off the front).
    func consume(_ count: Int) {
        precondition(count <= end - start)
        start += count
        if start == end { clear() }
    }

    func clear() {
        start = 0
        end = 0
        if capacity > Self.keptCapacity {
            storage.deallocate()
            capacity = initialCapacity
            storage = .allocate(byteCount: capacity, alignment: 16)
        }
    }

    /// Reads what `fd` has (at most the free room, ``readSize`` at least): `recv`'s result, the
    /// number of bytes added when positive. `full` tells whether the read filled the room offered
    /// (then more may be waiting).
    func receive(from socket: Socket) -> (result: Int, full: Bool) {
        makeRoom()
        let room = capacity - end
        guard let n = try? socket.withDescriptor({ recv($0, storage + end, room, 0) }) else {
            errno = EBADF
            return (-1, false)
        }
        if n > 0 { end += n }
        return (n, n == room)
    }

    /// At least ``readSize`` free bytes behind the data: the unconsumed bytes move to the front, or
    /// the buffer doubles.
    private func makeRoom() {
        guard capacity - end < Self.readSize else { return }
        if start > 0 {
            // The regions may overlap: a raw pointer's `copyMemory` is a `memmove`.
            storage.copyMemory(from: storage + start, byteCount: end - start)
            end -= start
            start = 0
            if capacity - end >= Self.readSize { return }
        }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity * 2, alignment: 16)
        grown.copyMemory(from: storage, byteCount: end)
        storage.deallocate()
        storage = grown
        capacity *= 2
    }
}
