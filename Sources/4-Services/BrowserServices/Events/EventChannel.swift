import Synchronization

/// How an event stream started.
public enum EventStreamStart: Sendable, Equatable {
    /// A fresh client: the snapshot events, then live updates.
    case snapshot
    /// A resuming client whose position is still buffered: the missed events follow.
    case replay(missed: Int)
    /// A resuming client whose position is lost: a `reset` with the whole state.
    case reset(reason: String)
    /// The source has ended: its last event, then the end of the stream.
    case ended
}

/// One stream source (a window, or a profile's window list): numbers its events, keeps the last
/// ones for resuming, and hands new events to its subscribers when the pump runs.
///
/// Ids are `<epoch>-<seq>`: `seq` counts this source's events from 1; `epoch` is new on every server
/// run, so an id from an earlier run is recognised and answered with a `reset`. Events are appended
/// from the profile's executor, all the events of one operation under one lock, so they reach every
/// client in one piece and in the same order.
final class EventChannel: Sendable {
    typealias Start = EventStreamStart

    private struct Stored {
        let seq: Int
        let topic: EventTopic
        let bytes: [UInt8]
    }

    private struct CacheKey: Hashable {
        let cursor: Int
        let filter: TopicFilter
    }

    private struct Subscriber {
        let sink: any EventSink
        let filter: TopicFilter
        var cursor: Int
        var lagging: Bool
    }

    private struct State {
        var events: [Stored] = []
        var head = 0
        var bytes = 0
        var lastSeq = 0
        var snapshot: any StreamSnapshot
        var subscribers: [ObjectIdentifier: Subscriber] = [:]
        var closed = false
        var liveCount: Int { events.count - head }
        var firstSeq: Int { lastSeq - liveCount + 1 }
    }

    let epoch: String
    private let limits: EventStreamLimits
    private let framing: any EventFraming
    private let state: Mutex<State>
    private let onDirty: @Sendable (EventChannel) -> Void

    init(
        epoch: String, limits: EventStreamLimits, framing: any EventFraming, snapshot: any StreamSnapshot,
        onDirty: @escaping @Sendable (EventChannel) -> Void
    ) {
        self.epoch = epoch
        self.limits = limits
        self.framing = framing
        self.state = Mutex(State(snapshot: snapshot))
        self.onDirty = onDirty
    }

    private func id(_ seq: Int) -> String { "\(epoch)-\(seq)" }

    /// The snapshot's first events, all at position `id`.
    private func initialBytes(_ snapshot: any StreamSnapshot, id: String, filter: TopicFilter) -> [UInt8] {
        snapshot.initialEvents(filter: filter).reduce(into: []) { $0 += framing.frame(id: id, event: $1.name, json: $1.json) }
    }

    /// The snapshot as one `reset` event at position `id`.
    private func resetBytes(_ snapshot: any StreamSnapshot, id: String, reason: String) -> [UInt8] {
        let event = snapshot.resetEvent(reason: reason)
        return framing.frame(id: id, event: event.name, json: event.json)
    }

    /// Numbers and keeps `events`, which brought the source to `snapshot`.
    func append(_ events: [PendingEvent], snapshot: any StreamSnapshot) {
        guard !events.isEmpty else { return }
        let wake = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            for event in events {
                state.lastSeq += 1
                let bytes = framing.frame(id: id(state.lastSeq), event: event.name, json: event.json)
                state.events.append(Stored(seq: state.lastSeq, topic: event.topic, bytes: bytes))
                state.bytes += bytes.count
            }
            state.snapshot = snapshot
            // Keep at most the configured number of events and bytes (the newest).
            while state.liveCount > 0, state.liveCount > limits.replayEvents || state.bytes > limits.replayBytes {
                state.bytes -= state.events[state.head].bytes.count
                state.head += 1
            }
            if state.head > 256 && state.head * 2 > state.events.count {
                state.events.removeFirst(state.head)
                state.head = 0
            }
            return !state.subscribers.isEmpty
        }
        if wake { onDirty(self) }
    }

    /// Sets the state new clients start from, without an event (the source's first state).
    func setSnapshot(_ snapshot: any StreamSnapshot) {
        state.withLock { $0.snapshot = snapshot }
    }

    /// Ends the source with `final` (e.g. `browser.closed`): subscribers get it, then their streams end.
    func close(final: PendingEvent) {
        let snapshot = state.withLock { $0.snapshot }
        append([final], snapshot: snapshot)
        let wake = state.withLock { state -> Bool in
            state.closed = true
            return !state.subscribers.isEmpty
        }
        if wake { onDirty(self) }
    }

    /// Adds a client: it gets the snapshot (no `lastEventID`), the events it missed, or a `reset`.
    func subscribe(_ sink: any EventSink, lastEventID: String?, filter: TopicFilter) -> Start {
        let (start, wake) = state.withLock { state -> (Start, Bool) in
            let current = id(state.lastSeq)
            if state.closed {
                if let last = state.events.last { _ = sink.write(last.bytes, evenIfFull: true) }
                sink.finish()
                return (.ended, false)
            }
            var cursor = state.lastSeq
            let start: Start
            if let lastEventID, !lastEventID.isEmpty {
                switch position(of: lastEventID, in: state) {
                case .success(let seq):
                    cursor = seq
                    start = .replay(missed: state.events[state.head...].filter { $0.seq > seq && filter.admits($0.topic) }.count)
                case .failure(let lost):
                    _ = sink.write(resetBytes(state.snapshot, id: current, reason: lost.reason), evenIfFull: true)
                    start = .reset(reason: lost.reason)
                }
            } else {
                _ = sink.write(initialBytes(state.snapshot, id: current, filter: filter), evenIfFull: true)
                start = .snapshot
            }
            state.subscribers[ObjectIdentifier(sink)] = Subscriber(sink: sink, filter: filter, cursor: cursor, lagging: false)
            return (start, cursor < state.lastSeq)
        }
        if wake { onDirty(self) }
        return start
    }

    /// Why a client's last event id gives no position to resume from.
    private struct LostPosition: Error {
        /// `restarted` (an id of an earlier run), `expired` (older than the buffer) or `unknown-id`.
        let reason: String
    }

    /// The sequence number a client's last event id stands for, if the missed events are still buffered.
    private func position(of lastEventID: String, in state: borrowing State) -> Result<Int, LostPosition> {
        let parts = lastEventID.split(separator: "-", maxSplits: 1)
        guard parts.count == 2, let seq = Int(parts[1]) else { return .failure(LostPosition(reason: "unknown-id")) }
        guard parts[0] == epoch else { return .failure(LostPosition(reason: "restarted")) }
        guard seq <= state.lastSeq else { return .failure(LostPosition(reason: "unknown-id")) }
        guard seq >= state.firstSeq - 1 else { return .failure(LostPosition(reason: "expired")) }
        return .success(seq)
    }

    /// Hands every subscriber the events it has not had, in one write each; resets clients that fell
    /// behind once they have caught up. Run by the pump, one channel at a time.
    /// - Returns: whether it must run again (a client is still catching up).
    func pump() -> Bool {
        state.withLock { state in
            var again = false
            // Clients at the same position with the same filter get the same bytes: build them once.
            var cache: [CacheKey: [UInt8]] = [:]
            let current = id(state.lastSeq)
            for (key, var subscriber) in state.subscribers {
                if subscriber.sink.isClosed {
                    state.subscribers[key] = nil
                    continue
                }
                let lost = subscriber.cursor < state.firstSeq - 1
                if subscriber.lagging || lost {
                    // Its queue overflowed or its position fell out of the buffer: once it has taken
                    // what is queued, one reset brings it to the current state.
                    if subscriber.sink.bufferedByteCount == 0 || state.closed {
                        if !state.closed {
                            _ = subscriber.sink.write(resetBytes(state.snapshot, id: current, reason: lost ? "expired" : "slow-consumer"), evenIfFull: true)
                        }
                        subscriber.cursor = state.lastSeq
                        subscriber.lagging = false
                    } else {
                        subscriber.lagging = true
                        again = true
                    }
                    state.subscribers[key] = subscriber
                    continue
                }
                guard subscriber.cursor < state.lastSeq else { continue }
                let start = subscriber.cursor - state.firstSeq + 1 + state.head
                let cacheKey = CacheKey(cursor: subscriber.cursor, filter: subscriber.filter)
                let bytes: [UInt8]
                if let cached = cache[cacheKey] {
                    bytes = cached
                } else {
                    var built: [UInt8] = []
                    for event in state.events[start...] where subscriber.filter.admits(event.topic) {
                        built.append(contentsOf: event.bytes)
                    }
                    cache[cacheKey] = built
                    bytes = built
                }
                if bytes.isEmpty {
                    subscriber.cursor = state.lastSeq
                    state.subscribers[key] = subscriber
                    continue
                }
                switch subscriber.sink.write(bytes, evenIfFull: false) {
                case .written:
                    subscriber.cursor = state.lastSeq
                    state.subscribers[key] = subscriber
                case .overflow:
                    subscriber.lagging = true
                    state.subscribers[key] = subscriber
                    again = true
                case .closed:
                    state.subscribers[key] = nil
                }
            }
            if state.closed {
                for subscriber in state.subscribers.values { subscriber.sink.finish() }
                state.subscribers = [:]
                return false
            }
            return again
        }
    }

    /// Ends every stream at once (server shutdown).
    func finishAll() {
        let sinks = state.withLock { state -> [any EventSink] in
            defer { state.subscribers = [:] }
            return state.subscribers.values.map(\.sink)
        }
        for sink in sinks { sink.finish() }
    }
}
