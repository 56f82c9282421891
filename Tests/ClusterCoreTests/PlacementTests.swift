import BrowserRecords
import TestSupport
import Testing

@testable import ClusterCore

/// Where a request goes, decided without PostgreSQL or sockets: each test feeds the machine what the
/// database and the other instances said and checks what it asks next.
@Suite(.offThePool) struct PlacementTests {
    let me: InstanceID = "i-me"
    let other = Placement.Owner(instanceID: "i-other", url: "http://10.0.0.2:8080", live: true)

    private func placement(fromPeer: Bool = false, read: Bool = true) -> Placement {
        Placement(instanceID: me, fromPeer: fromPeer, isRead: read)
    }

    @Test func whatIsHeldHereOrNamesNothingIsServedHere() {
        var held = placement()
        #expect(held.start(subject: .window("w1"), heldHere: true, databaseAnswers: false) == .serveHere)
        var nothing = placement()
        #expect(nothing.start(subject: nil, heldHere: false, databaseAnswers: true) == .serveHere)
    }

    @Test func withoutTheDatabaseAnythingElseIs503AtOnce() {
        var p = placement()
        guard case .storageUnavailable = p.start(subject: .tab("t1"), heldHere: false, databaseAnswers: false) else {
            Issue.record("expected 503")
            return
        }
    }

    /// A live owner elsewhere gets the request; its answer is relayed.
    @Test func aLiveOwnerElsewhereGetsTheRequest() {
        var p = placement()
        #expect(p.start(subject: .window("w1"), heldHere: false, databaseAnswers: true) == .lookUpProfile(.window("w1")))
        #expect(p.storedProfile("p1", subject: .window("w1")) == .lookUpOwner("p1"))
        #expect(p.owner(other) == .forward(other, profile: "p1"))
        #expect(p.forwarded(status: 200) == .relay(forgetOwner: false))
    }

    /// A forwarded request is never forwarded again: the lease moved while it was in flight (503, retry).
    @Test func aForwardedRequestIsNeverForwardedAgain() {
        var p = placement(fromPeer: true)
        _ = p.start(subject: .tab("t1"), heldHere: false, databaseAnswers: true)
        _ = p.storedProfile("p1", subject: .tab("t1"))
        guard case .unavailable(let detail) = p.owner(other) else {
            Issue.record("a forwarded request was forwarded again")
            return
        }
        #expect(detail.contains("moving"))
    }

    /// The profile moved while the request was in flight: the old owner says 503; the cached owner is
    /// forgotten so the next request asks the database.
    @Test func aProfileMovingWhileARequestIsInFlight() {
        var p = placement()
        _ = p.start(subject: .profile("p1"), heldHere: false, databaseAnswers: true)
        _ = p.storedProfile("p1", subject: .profile("p1"))
        _ = p.owner(other)
        #expect(p.forwarded(status: 503) == .relay(forgetOwner: true))
    }

    /// Nobody holds it, its lease expired, or its holder is this instance's previous run: taken over here.
    @Test func anUnheldOrExpiredProfileIsTakenOverHere() {
        for owner in [
            nil, Placement.Owner(instanceID: "i-dead", url: "http://x", live: false),
            Placement.Owner(instanceID: me, url: "http://me", live: true),
        ] {
            var p = placement()
            _ = p.start(subject: .group("g1"), heldHere: false, databaseAnswers: true)
            _ = p.storedProfile("p1", subject: .group("g1"))
            #expect(p.owner(owner) == .takeOver("p1", replacing: nil))
            #expect(p.tookOver(.here) == .serveHere)
        }
    }

    /// Two instances race for a lease: the loser forwards to the winner.
    @Test func losingATakeoverRaceForwardsToTheWinner() {
        var p = placement()
        _ = p.start(subject: .profile("p1"), heldHere: false, databaseAnswers: true)
        _ = p.storedProfile("p1", subject: .profile("p1"))
        _ = p.owner(nil)
        #expect(p.tookOver(.elsewhere(other)) == .forward(other, profile: "p1"))
        var failed = placement()
        _ = failed.start(subject: .profile("p1"), heldHere: false, databaseAnswers: true)
        _ = failed.storedProfile("p1", subject: .profile("p1"))
        _ = failed.owner(nil)
        guard case .storageUnavailable = failed.tookOver(.failed) else {
            Issue.record("a failed takeover must be 503")
            return
        }
    }

    /// The owner does not answer and its address refuses connections: it is gone, its profile is taken
    /// over; a read is served, a change gets 503 (it may have reached the dead owner).
    @Test func aDeadOwnersProfileIsTakenOver() {
        for read in [true, false] {
            var p = placement(read: read)
            _ = p.start(subject: .window("w1"), heldHere: false, databaseAnswers: true)
            _ = p.storedProfile("p1", subject: .window("w1"))
            _ = p.owner(other)
            #expect(p.forwardFailed() == .probeRefusal(other))
            #expect(p.refusal(true) == .takeOver("p1", replacing: other.instanceID))
            let after = p.tookOver(.here)
            if read {
                #expect(after == .serveHere)
            } else if case .unavailable(let detail) = after {
                #expect(detail.contains("took it over"))
            } else {
                Issue.record("a change after a takeover from the gone must be 503")
            }
        }
    }

    /// An owner that does not answer but whose address still accepts connections may be alive (busy,
    /// paused): nothing is taken over; 503.
    @Test func anUnansweringLiveOwnerIsNotTakenOver() {
        var p = placement()
        _ = p.start(subject: .window("w1"), heldHere: false, databaseAnswers: true)
        _ = p.storedProfile("p1", subject: .window("w1"))
        _ = p.owner(other)
        _ = p.forwardFailed()
        guard case .unavailable = p.refusal(false) else {
            Issue.record("expected 503")
            return
        }
    }

    /// An id no stored profile holds: an incognito one's owner is searched; a forwarded request is
    /// answered here (404) rather than searched again.
    @Test func anUnknownIdIsSearchedOnceThenNotFound() {
        var p = placement()
        _ = p.start(subject: .tab("t-unknown"), heldHere: false, databaseAnswers: true)
        #expect(p.storedProfile(nil, subject: .tab("t-unknown")) == .searchIncognitoOwners(.tab("t-unknown")))
        var forwarded = placement(fromPeer: true)
        _ = forwarded.start(subject: .tab("t-unknown"), heldHere: false, databaseAnswers: true)
        #expect(forwarded.storedProfile(nil, subject: .tab("t-unknown")) == .serveHere)
    }
}
