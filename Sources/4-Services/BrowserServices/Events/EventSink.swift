/// What happened to bytes handed to an ``EventSink``.
public enum EventSinkWrite: Sendable, Equatable {
    case written
    /// The client is too slow: its queue is full and nothing was taken.
    case overflow
    /// The stream has ended.
    case closed
}

/// Where one event stream's bytes go. The HTTP edge adapts its stream writer to this, so the event
/// channels know nothing of HTTP. Every method is safe from any thread.
public protocol EventSink: AnyObject, Sendable {
    /// Queues bytes for the client.
    /// - Parameter evenIfFull: take them when nothing is queued even past the queue's bound (a
    ///   snapshot or a reset, which must reach the client once).
    func write(_ bytes: [UInt8], evenIfFull: Bool) -> EventSinkWrite
    /// Bytes taken but not yet sent to the client.
    var bufferedByteCount: Int { get }
    var isClosed: Bool { get }
    /// Ends the stream once what is queued is sent.
    func finish()
}
