import NIOConcurrencyHelpers

/// Wakes one waiting loop when something it watches changed: a signal given while nobody waits is
/// kept for the next wait, and a wait ends at its limit without one (or at once when its task is
/// cancelled). The renderer's lease loop waits on one instead of looking every 50 ms.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        /// Which wait the limit's timer belongs to.
        var wait = 0
    }
    private let state = NIOLockedValueBox(State())

    init() {}

    func signal() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once signalled (a signal since the last wait counts), after `limit` without one, or
    /// at once when the calling task is cancelled.
    func wait(upTo limit: Duration) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let number = state.withLockedValue { state -> Int? in
                    guard !state.pending, !Task.isCancelled else {
                        state.pending = false
                        return nil
                    }
                    state.wait += 1
                    state.waiter = continuation
                    return state.wait
                }
                guard let number else { return continuation.resume() }
                Task { [weak self] in
                    try? await Task.sleep(for: limit)
                    self?.expire(number)
                }
            }
        } onCancel: {
            signal()
        }
    }

    private func expire(_ number: Int) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard state.wait == number, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
