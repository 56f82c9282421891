import TestSupport
import Testing

@testable import ClusterCore

/// Which profiles an instance stops serving, and when: the lease's timing against renewal's failures.
@Suite(.offThePool) struct LeaseKeeperTests {
    let timing = ClusterTiming(leaseSeconds: 10)
    let start = ContinuousClock.now

    @Test func timingIsDerivedFromTheLease() {
        #expect(timing.renewEvery == .milliseconds(3333))
        #expect(timing.giveUpAfter == .seconds(8))
        #expect(timing.giveUpAfter < timing.lease, "every profile is dropped before its lease can expire elsewhere")
        #expect(timing.renewEvery * 2 < timing.giveUpAfter, "two renewals may fail before giving up")
        let short = ClusterTiming(leaseSeconds: 0.3)
        #expect(short.renewEvery == .milliseconds(100) && short.giveUpAfter == .milliseconds(240))
    }

    /// A renewal that says leases were taken over drops those profiles at once.
    @Test func leasesTakenOverAreDropped() {
        var keeper = LeaseKeeper(timing: timing, now: start)
        #expect(keeper.renewed(lost: [], at: start + .seconds(3)) == .none)
        #expect(keeper.renewed(lost: ["p1"], at: start + .seconds(6)) == .drop(["p1"], .takenOver))
    }

    /// Lease expiry against renewal: failures for less than 0.8 of a lease drop nothing (a short
    /// outage); past it everything is dropped once, before the database can hand the leases on.
    @Test func renewalFailingPastTheDeadlineDropsEverythingOnce() {
        var keeper = LeaseKeeper(timing: timing, now: start)
        #expect(keeper.renewalFailed("down", at: start + .seconds(3)) == .none)
        #expect(keeper.renewalFailed("down", at: start + .seconds(7)) == .none)
        #expect(keeper.renewalFailed("down", at: start + .milliseconds(8001)) == .dropAll(.renewalFailing("down")))
        #expect(keeper.renewalFailed("down", at: start + .seconds(9)) == .none, "dropped once")
        #expect(keeper.renewed(lost: [], at: start + .seconds(10)) == .none)
        #expect(keeper.renewalFailed("down", at: start + .seconds(17)) == .none, "the clock restarted at the renewal")
        #expect(keeper.renewalFailed("down", at: start + .seconds(19)) == .dropAll(.renewalFailing("down")))
    }

    /// A renewal that succeeds just before the deadline keeps everything.
    @Test func aRenewalJustInTimeKeepsEverything() {
        var keeper = LeaseKeeper(timing: timing, now: start)
        #expect(keeper.renewalFailed("slow", at: start + .milliseconds(7999)) == .none)
        #expect(keeper.renewed(lost: [], at: start + .milliseconds(7999)) == .none)
        #expect(keeper.renewalFailed("slow", at: start + .seconds(12)) == .none)
    }

    /// Fencing: a commit refused because another instance holds the lease now drops that profile only.
    @Test func aFencedOrRefusedCommitDropsItsProfile() {
        var keeper = LeaseKeeper(timing: timing, now: start)
        #expect(keeper.fenced("p2") == .drop(["p2"], .fenced))
        #expect(keeper.refused("p3") == .drop(["p3"], .refused))
    }
}

@Suite(.offThePool) struct OwnerCacheTests {
    @Test func ownersAndProfilesAreRememberedAndForgotten() {
        var cache = OwnerCache(limit: 2)
        let a = Placement.Owner(instanceID: "a", url: "http://a", live: true)
        cache.remember(a, of: "p1")
        cache.remember(profile: "p1", holding: .window("w1"))
        cache.remember(profile: "p1", holding: .group("w1"))
        #expect(cache.owner(of: "p1") == a && cache.profile(holding: .window("w1")) == "p1")
        cache.forgetOwner(of: "p1")
        #expect(cache.owner(of: "p1") == nil && cache.profile(holding: .window("w1")) == "p1", "ids never change profile")
        cache.remember(a, of: "p1")
        cache.forgetOwners()
        #expect(cache.owner(of: "p1") == nil)
        cache.forgetProfile("p1")
        #expect(cache.profile(holding: .window("w1")) == nil && cache.profile(holding: .group("w1")) == nil)
    }

    /// Bounded: a full map is emptied, then refills from the database.
    @Test func theCacheIsBounded() {
        var cache = OwnerCache(limit: 2)
        for id in ["t1", "t2", "t3"] { cache.remember(profile: "p", holding: .tab(id)) }
        #expect(cache.profile(holding: .tab("t1")) == nil && cache.profile(holding: .tab("t3")) == "p")
    }
}
