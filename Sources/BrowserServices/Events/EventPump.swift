import Foundation
import Synchronization

/// Delivers new events in ticks: a channel that got events is pumped at most once per tick, so each
/// client is woken at most once per tick with everything since its last wake-up, however many events
/// came. The first events after a quiet spell go out at once (no tick of delay when it is calm).
/// (libmicrohttpd walks every suspended connection on each wake-up; one wake-up per event would cost
/// O(events × streams).)
final class EventPump: Sendable {
    private struct State {
        var dirty: [ObjectIdentifier: EventChannel] = [:]
        var stopping = false
        var started = false
    }

    private let tick: Duration
    private let state = Mutex(State())
    // NSCondition is thread-safe; it only guards the wait for work.
    private let signal = NSCondition()

    init(tick: Duration) {
        self.tick = tick
    }

    /// Pumps `channel` at the next tick (the pump's thread starts with the first call).
    func markDirty(_ channel: EventChannel) {
        let (first, start) = state.withLock { state -> (Bool, Bool) in
            let wasEmpty = state.dirty.isEmpty
            state.dirty[ObjectIdentifier(channel)] = channel
            defer { state.started = true }
            return (wasEmpty, !state.started && !state.stopping)
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "browserd-event-pump"
            thread.start()
        }
        if first {
            signal.lock()
            signal.signal()
            signal.unlock()
        }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        signal.lock()
        signal.signal()
        signal.unlock()
    }

    private func run() {
        var lastPump = ContinuousClock.now - tick
        while true {
            signal.lock()
            while state.withLock({ $0.dirty.isEmpty && !$0.stopping }) { signal.wait() }
            signal.unlock()
            if state.withLock({ $0.stopping }) { return }
            // At most one pump per tick: events after a quiet spell go out at once; events that come
            // sooner gather until the tick since the last pump is over, then go out together.
            let wait = tick - (ContinuousClock.now - lastPump)
            if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18) }
            lastPump = ContinuousClock.now
            let channels = state.withLock { state -> [EventChannel] in
                defer { state.dirty = [:] }
                return Array(state.dirty.values)
            }
            for channel in channels where channel.pump() { markDirty(channel) }
        }
    }
}
