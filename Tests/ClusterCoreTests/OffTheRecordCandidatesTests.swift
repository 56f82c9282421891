import TestSupport
import Testing

@testable import ClusterCore

/// The order in which instances are asked for an off-the-record subject: the announced parents'
/// owners first, then every other live instance, each once.
@Suite(.offThePool) struct OffTheRecordCandidatesTests {
    let announced = [
        OffTheRecordCandidates.Announced(id: "i1", parentID: "p1"),
        OffTheRecordCandidates.Announced(id: "i2", parentID: "p2"),
        OffTheRecordCandidates.Announced(id: "i3", parentID: "p1"),
    ]

    @Test func aProfileAsksItsOwnParentsOwnerOnly() {
        #expect(OffTheRecordCandidates.parents(of: .profile("i2"), announced: announced) == ["p2"])
        // Not announced (made a moment ago): no parent known, the other instances are asked.
        #expect(OffTheRecordCandidates.parents(of: .profile("i9"), announced: announced).isEmpty)
    }

    @Test func aWindowTabOrGroupAsksEveryAnnouncedParentOnceInOrder() {
        for subject: Placement.Subject in [.window("w"), .tab("t"), .group("g")] {
            #expect(OffTheRecordCandidates.parents(of: subject, announced: announced) == ["p1", "p2"])
        }
        #expect(OffTheRecordCandidates.parents(of: .tab("t"), announced: []).isEmpty)
    }

    @Test func parentsOwnersComeFirstThenTheOthersEachOnce() {
        let order = OffTheRecordCandidates.order(
            parentOwners: ["http://b", "http://a", "http://b"], otherInstances: ["http://c", "http://a", "http://d"])
        #expect(order == ["http://b", "http://a", "http://c", "http://d"])
        #expect(OffTheRecordCandidates.order(parentOwners: [], otherInstances: ["http://c"]) == ["http://c"])
        #expect(OffTheRecordCandidates.order(parentOwners: [], otherInstances: []).isEmpty)
    }

    /// A candidate that cannot say (a timeout, a 503) leaves the search unable to say "not found".
    @Test func aCandidateThatCannotSayMakesTheSearchUnavailableNotNotFound() {
        #expect(OffTheRecordCandidates.answer(status: 200) == .has)
        #expect(OffTheRecordCandidates.answer(status: 404) == .hasNot)
        for status in [nil, 429, 500, 502, 503, 504] as [Int?] { #expect(OffTheRecordCandidates.answer(status: status) == .couldNotSay) }
        #expect(OffTheRecordCandidates.nobodyHasIt([]) == .notFound)
        #expect(OffTheRecordCandidates.nobodyHasIt([.hasNot, .hasNot]) == .notFound)
        #expect(OffTheRecordCandidates.nobodyHasIt([.hasNot, .couldNotSay]) == .unavailable)
    }
}
