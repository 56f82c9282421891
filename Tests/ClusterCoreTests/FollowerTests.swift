import BrowserAccess
import BrowserModel
import BrowserRecords
import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ClusterCore

/// The lease follower and the token follower against fake databases: what each drops, keeps or forgets.
@Suite(.offThePool) struct FollowerTests {
    struct Failure: Error {}

    /// The database's leases, as the test says.
    final class Leases: LeaseRenewing {
        let state = Mutex((lost: Set<ProfileID>(), fails: false, held: ["p1", "p2"] as [ProfileID]))
        func renew() async throws -> Set<ProfileID> {
            try state.withLock {
                if $0.fails { throw Failure() }
                return $0.lost
            }
        }
        var heldProfiles: [ProfileID] { state.withLock { $0.held } }
    }

    /// What was dropped, in order.
    final class Dropped: ProfileDropping {
        let profiles = Mutex<[(ProfileID, LeaseKeeper.Reason)]>([])
        func drop(_ profile: ProfileID, reason: LeaseKeeper.Reason) async { profiles.withLock { $0.append((profile, reason)) } }
        var names: [ProfileID] { profiles.withLock { $0.map(\.0) } }
    }

    let timing = ClusterTiming(leaseSeconds: 10)

    @Test func aLeaseTakenOverIsDroppedAndOnlyIt() async {
        let (leases, dropped, start) = (Leases(), Dropped(), ContinuousClock.now)
        let follower = LeaseFollower(timing: timing, renewing: leases, dropping: dropped, now: start)
        await follower.renewOnce(now: start + .seconds(3))
        #expect(dropped.names.isEmpty)
        leases.state.withLock { $0.lost = ["p2"] }
        await follower.renewOnce(now: start + .seconds(6))
        #expect(dropped.names == ["p2"])
        #expect(dropped.profiles.withLock { $0.first?.1 } == .takenOver)
    }

    @Test func renewalFailingPastTheGraceDropsEverythingOnce() async {
        let (leases, dropped, start) = (Leases(), Dropped(), ContinuousClock.now)
        let follower = LeaseFollower(timing: timing, renewing: leases, dropping: dropped, now: start, describe: { _ in "down" })
        leases.state.withLock { $0.fails = true }
        // A short outage drops nothing (0.8 of a 10 s lease is 8 s).
        await follower.renewOnce(now: start + .seconds(4))
        #expect(dropped.names.isEmpty)
        await follower.renewOnce(now: start + .seconds(9))
        #expect(Set(dropped.names) == ["p1", "p2"])
        #expect(dropped.profiles.withLock { $0.first?.1 } == .renewalFailing("down"))
        // Once: the next failures drop nothing more.
        await follower.renewOnce(now: start + .seconds(12))
        #expect(dropped.names.count == 2)
    }

    @Test func aRenewalInTimeResetsTheGrace() async {
        let (leases, dropped, start) = (Leases(), Dropped(), ContinuousClock.now)
        let follower = LeaseFollower(timing: timing, renewing: leases, dropping: dropped, now: start)
        leases.state.withLock { $0.fails = true }
        await follower.renewOnce(now: start + .seconds(7))
        leases.state.withLock { $0.fails = false }
        await follower.renewOnce(now: start + .seconds(7.5))
        leases.state.withLock { $0.fails = true }
        await follower.renewOnce(now: start + .seconds(14))
        #expect(dropped.names.isEmpty)
    }

    @Test func fencedAndRefusedCommitsDropTheirProfile() async {
        let dropped = Dropped()
        let follower = LeaseFollower(timing: timing, renewing: Leases(), dropping: dropped)
        await follower.fenced("p1")
        await follower.refused("p2")
        #expect(dropped.profiles.withLock { $0.map(\.1) } == [.fenced, .refused])
        #expect(dropped.names == ["p1", "p2"])
    }

    /// The database's tokens, as the test says.
    final class Tokens: StoredTokenReading {
        let state = Mutex((records: [String: TokenRecord](), fails: false))
        func storedTokens() async throws -> [TokenRecord] {
            try state.withLock {
                if $0.fails { throw Failure() }
                return Array($0.records.values)
            }
        }
        func storedToken(_ id: String) async throws -> TokenRecord? {
            try state.withLock {
                if $0.fails { throw Failure() }
                return $0.records[id]
            }
        }
    }

    static func token(_ id: String, of profile: String) -> TokenRecord {
        TokenRecord(id: id, profileID: profile, hash: Array(repeating: 1, count: 32), createdAt: Date(timeIntervalSince1970: 1))
    }

    @Test func tokensFollowTheDatabase() async {
        let (store, stored) = (TokenStore(adminToken: nil), Tokens())
        let follower = TokenFollower(tokens: store, stored: stored, logger: Logger(label: "test"))
        stored.state.withLock { $0.records = ["k1": Self.token("k1", of: "p1"), "k2": Self.token("k2", of: "p2")] }
        await follower.reload()
        #expect(store.record("k1") != nil && store.record("k2") != nil)
        // Issued elsewhere: read and kept.
        stored.state.withLock { $0.records["k3"] = Self.token("k3", of: "p1") }
        await follower.changed("k3")
        #expect(store.record("k3")?.profileID == ProfileID(rawValue: "p1"))
        // Revoked elsewhere: gone from the database, so forgotten here.
        stored.state.withLock { $0.records["k2"] = nil }
        await follower.changed("k2")
        #expect(store.record("k2") == nil)
        // A deleted profile: every token of it revoked, without a query.
        stored.state.withLock { $0.fails = true }
        await follower.changed("profile:p1")
        #expect(store.record("k1") == nil && store.record("k3") == nil)
    }

    @Test func aTokenWhoseReadFailsIsForgottenAndAFailedReloadKeepsWhatIsKnown() async {
        let (store, stored) = (TokenStore(adminToken: nil), Tokens())
        let follower = TokenFollower(tokens: store, stored: stored, logger: Logger(label: "test"))
        stored.state.withLock { $0.records = ["k1": Self.token("k1", of: "p1"), "k2": Self.token("k2", of: "p1")] }
        await follower.reload()
        stored.state.withLock { $0.fails = true }
        await follower.reload()
        #expect(store.record("k1") != nil && store.record("k2") != nil)
        await follower.changed("k1")
        #expect(store.record("k1") == nil)
        #expect(store.record("k2") != nil)
    }
}
