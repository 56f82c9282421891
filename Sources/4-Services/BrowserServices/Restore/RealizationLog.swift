import Foundation
import Synchronization

/// Counts tabs realized (their history read on first need), and notices bursts: more than ``burst``
/// within one second means something realized a whole list by accident.
final class RealizationLog: Sendable {
    static let burst = 100
    private let state = Mutex<(total: Int, windowStart: ContinuousClock.Instant, inWindow: Int)>((0, .now, 0))
    private let burstAction = Mutex<(@Sendable (Int) -> Void)?>(nil)

    var count: Int { state.withLock { $0.total } }

    func onBurst(_ action: @escaping @Sendable (Int) -> Void) { burstAction.withLock { $0 = action } }

    func record(now: ContinuousClock.Instant = .now) {
        let burst = state.withLock { state -> Bool in
            state.total += 1
            if now - state.windowStart > .seconds(1) {
                state.windowStart = now
                state.inWindow = 0
            }
            state.inWindow += 1
            return state.inWindow == Self.burst + 1
        }
        if burst { burstAction.withLock { $0 }?(Self.burst + 1) }
    }
}
