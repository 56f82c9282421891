import BrowserServices
import TestSupport
import Testing

/// The write quota's token bucket: charged after a change, refusing while in debt, refilled by time.
@Suite(.computing) struct WriteQuotaTests {
    @Test func aProfileInDebtWaitsAndOthersDoNot() {
        let quota = WriteQuota(bytesPerSecond: 1_000, burstBytes: 4_000)
        let start = ContinuousClock.now
        #expect(quota.retryAfter(profile: "a", now: start) == nil)
        quota.charge(3_000, profile: "a", now: start)
        #expect(quota.retryAfter(profile: "a", now: start) == nil)  // 1,000 left of the burst
        quota.charge(3_500, profile: "a", now: start)
        #expect(quota.retryAfter(profile: "a", now: start) == 3)  // 2,500 in debt at 1,000/s
        #expect(quota.retryAfter(profile: "b", now: start) == nil)
        #expect(quota.retryAfter(profile: "a", now: start.advanced(by: .seconds(2))) == 1)
        #expect(quota.retryAfter(profile: "a", now: start.advanced(by: .seconds(3))) == nil)
    }

    @Test func theBucketRefillsOnlyUpToTheBurst() {
        var bucket = WriteQuota.Bucket(tokens: 0, updated: .now)
        bucket.refill(now: bucket.updated.advanced(by: .seconds(100)), rate: 10, burst: 50)
        #expect(bucket.tokens == 50)
        bucket.tokens = -25
        #expect(bucket.secondsUntilCredit(rate: 10) == 3)
    }
}
