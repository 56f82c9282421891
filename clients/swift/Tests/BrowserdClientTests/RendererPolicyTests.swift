import TestSupport
import Testing

@testable import BrowserdRenderer

/// The renderer's timing as a value: Chromium's restart waits, without Chromium.
@Suite(.computing) struct RendererPolicyTests {
    @Test func restartWaitsDoubleUpToTheirMaximum() {
        var backoff = RestartBackoff(policy: .standard)
        let waits = (0..<8).map { _ in backoff.failed() }
        #expect(waits == [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10)])
    }

    @Test func aChromiumThatRanLongEnoughStartsTheWaitsOver() {
        var backoff = RestartBackoff(policy: .standard)
        for _ in 0..<5 { _ = backoff.failed() }
        // A short run (a crash loop) keeps doubling; one past `restartResetAfter` starts over.
        #expect(backoff.failed(afterRunning: .seconds(5)) == .seconds(8))
        #expect(backoff.failed(afterRunning: .seconds(31)) == .milliseconds(250))
        #expect(backoff.failed() == .milliseconds(500))
    }

    @Test func aPolicyOfItsOwnIsFollowed() {
        var policy = RendererPolicy.standard
        policy.restartFirstDelay = .milliseconds(10)
        policy.restartMaximumDelay = .milliseconds(30)
        var backoff = RestartBackoff(policy: policy)
        #expect([backoff.failed(), backoff.failed(), backoff.failed()] == [.milliseconds(10), .milliseconds(20), .milliseconds(30)])
    }
}
