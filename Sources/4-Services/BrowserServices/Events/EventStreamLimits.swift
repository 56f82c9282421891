/// Bounds of the event streams.
public struct EventStreamLimits: Sendable {
    /// Events kept per window (and per profile) for resuming.
    public var replayEvents: Int
    /// Bytes kept per window (and per profile) for resuming.
    public var replayBytes: Int
    /// Bytes queued for one slow client before it is reset.
    public var queueBytes: Int
    /// How long events gather at most before they go out together (one wake-up per stream per tick).
    public var tick: Duration
    /// Whether the tick adapts: events go out at once while the previous ones are delivered, and
    /// gather (up to `tick`) only while they are still being written. Off: a fixed tick.
    public var adaptiveTick: Bool
    /// Streams open at once, in all (503 past it) and per regular profile (429 past it).
    public var maxStreams: Int
    public var maxStreamsPerProfile: Int
    /// The reconnection delay clients are told (`retry:`).
    public var retryMilliseconds: Int

    public init(
        replayEvents: Int = 1_000, replayBytes: Int = 1 << 20, queueBytes: Int = 1 << 20, tick: Duration = .milliseconds(20),
        adaptiveTick: Bool = true, maxStreams: Int = 12_000, maxStreamsPerProfile: Int = 2_000, retryMilliseconds: Int = 2_000
    ) {
        self.replayEvents = replayEvents
        self.replayBytes = replayBytes
        self.queueBytes = queueBytes
        self.tick = tick
        self.adaptiveTick = adaptiveTick
        self.maxStreams = maxStreams
        self.maxStreamsPerProfile = maxStreamsPerProfile
        self.retryMilliseconds = retryMilliseconds
    }
}
