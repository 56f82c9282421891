import NIOConcurrencyHelpers

/// Wakes one waiting loop when something it watches changed: a signal given while nobody waits is
/// kept for the next wait, and a wait ends at its limit without one (or at once when its task is
/// cancelled). The renderer's lease loop waits on one instead of looking every 50 ms.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        /// The timer of the wait under way: cancelled when a signal ends the wait first, so no timer
        /// outlives its wait (signals may come much faster than the limit).
        var timer: Task<Void, Never>?
        /// Which wait the timer belongs to.
        var wait = 0
    }
    private let state = NIOLockedValueBox(State())

    init() {}

    func signal() {
        let (waiter, timer) = state.withLockedValue { state -> (CheckedContinuation<Void, Never>?, Task<Void, Never>?) in
            guard let waiter = state.waiter else {
                state.pending = true
                return (nil, nil)
            }
            defer { (state.waiter, state.timer) = (nil, nil) }
            return (waiter, state.timer)
        }
        timer?.cancel()
        waiter?.resume()
    }

    /// Returns once signalled (a signal since the last wait counts), after `limit` without one, or
    /// at once when the calling task is cancelled.
    func wait(upTo limit: Duration) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = state.withLockedValue { state -> Bool in
                    guard !state.pending, !Task.isCancelled else {
                        state.pending = false
                        return false
                    }
                    state.wait += 1
                    state.waiter = continuation
                    let number = state.wait
                    state.timer = Task { [weak self] in
                        try? await Task.sleep(for: limit)
                        if !Task.isCancelled { self?.expire(number) }
                    }
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }

    /// Whether a timer is held (tests: none is left once a wait ended).
    var holdsTimer: Bool { state.withLockedValue { $0.timer != nil } }

    private func expire(_ number: Int) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard state.wait == number, let waiter = state.waiter else { return nil }
            (state.waiter, state.timer) = (nil, nil)
            return waiter
        }
        waiter?.resume()
    }
}
