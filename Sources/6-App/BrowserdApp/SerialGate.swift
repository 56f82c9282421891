import Synchronization

/// Lets one task at a time through, in the order they came (an async mutex whose holder may await):
/// what must happen one after the other across a suspension, such as a decision and the commit that
/// makes it durable.
final class SerialGate: Sendable {
    private let state = Mutex<(busy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Waits until the gate is free, and takes it.
    func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let free = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if free { continuation.resume() }
        }
    }

    /// Gives the gate to the next waiter, or frees it.
    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    /// Runs `body` holding the gate.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await enter()
        defer { leave() }
        return try await body()
    }
}
