import TestSupport
import Testing

@testable import BrowserdRenderer

/// The lease loop's wake-up (``WakeSignal``): a signal wakes the wait (or the next one), a wait ends
/// at its limit without one or at once when cancelled, and no timer outlives its wait.
@Suite(.offThePool, .timeLimit(.minutes(1))) struct WakeSignalTests {
    @Test func aSignalGivenBeforeTheWaitEndsItAndTheTimerGoes() async {
        let wake = WakeSignal()
        wake.signal()
        wake.signal()
        await wake.wait(upTo: .seconds(3600))
        #expect(!wake.holdsTimer)
    }

    /// A wait under way ends when signalled, or at once when its task is cancelled; its timer goes.
    @Test(arguments: [false, true]) func aWaitUnderWayEndsOnASignalOrACancel(cancelling: Bool) async {
        let wake = WakeSignal()
        let waiting = Task { await wake.wait(upTo: .seconds(3600)) }
        while !wake.holdsTimer { await Task.yield() }
        if cancelling { waiting.cancel() } else { wake.signal() }
        await waiting.value
        #expect(!wake.holdsTimer)
    }

    @Test func aWaitWithoutASignalEndsAtItsLimit() async {
        let wake = WakeSignal()
        await wake.wait(upTo: .milliseconds(5))
        #expect(!wake.holdsTimer)
    }
}
