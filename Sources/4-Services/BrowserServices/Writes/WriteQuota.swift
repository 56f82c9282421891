import Synchronization

/// How many bytes each profile may have written to the store, as a token bucket per profile: it
/// refills at ``bytesPerSecond`` up to ``burstBytes``; every committed change is charged with what it
/// writes (``ChangeSet/approximateBytes``), after the fact, and a profile in debt has its next
/// changes refused (429 with the seconds until it is out of debt) before they are made.
///
/// Every tenant shares one writer: without a quota one tenant writing megabytes of history per
/// request would hold every other tenant's commits behind its own. Charging after the change (its
/// size is known only then) and refusing while in debt keeps the check O(1) and never refuses a
/// change that already happened.
public final class WriteQuota: Sendable {
    /// One profile's bucket: a pure value (refill, charge, how long until out of debt).
    public struct Bucket: Sendable, Equatable {
        public var tokens: Double
        public var updated: ContinuousClock.Instant

        public init(tokens: Double, updated: ContinuousClock.Instant) {
            self.tokens = tokens
            self.updated = updated
        }

        /// Refilled to `now` at `rate` bytes per second, up to `burst`.
        public mutating func refill(now: ContinuousClock.Instant, rate: Double, burst: Double) {
            let elapsed = now - updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens = min(burst, tokens + max(0, seconds) * rate)
            updated = now
        }

        /// Seconds until the bucket is out of debt (nil: it is not in debt).
        public func secondsUntilCredit(rate: Double) -> Int? {
            tokens >= 0 ? nil : max(1, Int((-tokens / rate).rounded(.up)))
        }
    }

    public let bytesPerSecond: Int
    public let burstBytes: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    /// - Parameters:
    ///   - bytesPerSecond: the sustained rate each profile may write.
    ///   - burstBytes: what a profile may write at once after a quiet while.
    public init(bytesPerSecond: Int, burstBytes: Int) {
        self.bytesPerSecond = bytesPerSecond
        self.burstBytes = burstBytes
    }

    /// Charges `bytes` written for `profile`.
    public func charge(_ bytes: Int, profile: String, now: ContinuousClock.Instant = .now) {
        let (rate, burst) = (Double(bytesPerSecond), Double(burstBytes))
        buckets.withLock { buckets in
            var bucket = buckets[profile] ?? Bucket(tokens: burst, updated: now)
            bucket.refill(now: now, rate: rate, burst: burst)
            bucket.tokens -= Double(bytes)
            buckets[profile] = bucket
        }
    }

    /// Seconds until `profile` may write again, or nil when it may now. A bucket full again is
    /// forgotten (so the table holds only profiles that wrote lately).
    public func retryAfter(profile: String, now: ContinuousClock.Instant = .now) -> Int? {
        let (rate, burst) = (Double(bytesPerSecond), Double(burstBytes))
        return buckets.withLock { buckets in
            guard var bucket = buckets[profile] else { return nil }
            bucket.refill(now: now, rate: rate, burst: burst)
            if bucket.tokens >= burst {
                buckets[profile] = nil
                return nil
            }
            buckets[profile] = bucket
            return bucket.secondsUntilCredit(rate: rate)
        }
    }
}
