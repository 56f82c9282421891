import Foundation
import Synchronization

/// Delivers new events to the channels' clients, each client getting everything since its last
/// wake-up in one write.
///
/// Adaptive (the default): events go out at once when the transport has written the previous ones
/// (calm: no delay), and gather while it is still writing them, for one tick at most (under load:
/// one write per client for many events). Fixed: a channel is pumped at most once per tick, the
/// first events after a quiet spell at once.
final class EventPump: Sendable {
    private struct State {
        var dirty: [ObjectIdentifier: EventChannel] = [:]
        var stopping = false
        var started = false
    }

    private let tick: Duration
    private let adaptive: Bool
    private let busy = Mutex<(@Sendable () -> Bool)?>(nil)
    private let state = Mutex(State())
    // NSCondition is thread-safe; it only guards the wait for work.
    private let signal = NSCondition()

    init(tick: Duration, adaptive: Bool = true) {
        self.tick = tick
        self.adaptive = adaptive
    }

    func setBusyProbe(_ probe: @escaping @Sendable () -> Bool) {
        busy.withLock { $0 = probe }
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
            let thread = Thread { [self] in
                Thread.current.name = "bd-event-pump"
                run()
            }
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
            if adaptive {
                // While the transport still writes the last events, gather (a tick at most).
                if let busy = busy.withLock({ $0 }) {
                    let deadline = lastPump + tick
                    while busy() && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.0002) }
                }
            } else {
                // At most one pump per tick: events after a quiet spell go out at once; events that come
                // sooner gather until the tick since the last pump is over, then go out together.
                let wait = tick - (ContinuousClock.now - lastPump)
                if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18) }
            }
            lastPump = ContinuousClock.now
            let channels = state.withLock { state -> [EventChannel] in
                defer { state.dirty = [:] }
                return Array(state.dirty.values)
            }
            for channel in channels where channel.pump() { markDirty(channel) }
        }
    }
}
