#if PostgreSQL
    import BrowserAccess
    import BrowserAPI
    import BrowserModel
    import BrowserRecords
    import ClusterCore
    import HTTPServer
    import Logging
    import Synchronization
    import TestSupport
    import Testing

    @testable import BrowserCluster

    /// The one interpreter of ``Placement``, against fake seams: what it asks, in what order, and what it
    /// answers — on the server thread, in a task, and from one to the other without asking anything twice.
    @Suite(.offThePool) struct PlacementInterpreterTests {
        static let me: InstanceID = "i-me"
        static let other = Placement.Owner(instanceID: "i-other", url: "http://10.0.0.2:8080", live: true)

        /// Who holds what, as the test says; every question counted.
        final class Lookups: PlacementLookups {
            struct State {
                var known: [String: ProfileID] = [:]
                var knownOwners: [ProfileID: Placement.Owner] = [:]
                var stored: [String: ProfileID] = [:]
                var owners: [ProfileID: Placement.Owner] = [:]
                var fails = false
                var storedAsked = 0
                var ownerAsked = 0
                var forgotten: [ProfileID] = []
                var remembered: [(ProfileID, Placement.Subject)] = []
            }
            let state = Mutex(State())

            static func key(_ subject: Placement.Subject) -> String {
                switch subject {
                case .profile(let id), .window(let id), .tab(let id), .group(let id): id
                }
            }
            func knownProfile(holding subject: Placement.Subject) -> ProfileID? { state.withLock { $0.known[Self.key(subject)] } }
            func knownOwner(of profile: ProfileID) -> Placement.Owner? { state.withLock { $0.knownOwners[profile] } }
            func storedProfile(holding subject: Placement.Subject) async throws -> ProfileID? {
                try state.withLock {
                    $0.storedAsked += 1
                    if $0.fails { throw Failure() }
                    return $0.stored[Self.key(subject)]
                }
            }
            func owner(of profile: ProfileID) async throws -> Placement.Owner? {
                try state.withLock {
                    $0.ownerAsked += 1
                    if $0.fails { throw Failure() }
                    return $0.owners[profile]
                }
            }
            func forgetOwner(of profile: ProfileID) { state.withLock { $0.forgotten.append(profile) } }
            func remember(profile: ProfileID, holding subject: Placement.Subject) { state.withLock { $0.remembered.append((profile, subject)) } }
        }

        struct Failure: Error {}

        /// Another instance, as the test says: each forward answered with `answer`, or failing.
        final class Forwarding: PlacementForwarding {
            struct State {
                var atOnce = false
                var answer: Result<Int, Failure> = .success(200)
                var location: String?
                var refuses = false
                var started = 0
                var forwarded = 0
                var probed: [String] = []
            }
            let state = Mutex(State())

            func isFromPeer(_ request: HTTPRequest) -> Bool { request.headers["X-Test-Peer"] != nil }
            func relayAtOnce(_ request: HTTPRequest, to url: String) -> PlacementRelay? {
                guard state.withLock({ $0.atOnce }) else { return nil }
                return { completion in
                    self.state.withLock { $0.started += 1 }
                    completion(self.answer())
                }
            }
            private func answer() -> Result<HTTPResponse, any Error> {
                let (answer, location) = state.withLock { ($0.answer, $0.location) }
                var headers = HTTPHeaders()
                if let location { headers.add("Location", location) }
                return answer.map { HTTPResponse(status: $0, headers: headers) }.mapError { $0 }
            }
            func forward(_ request: HTTPRequest, to url: String) async throws -> HTTPResponse {
                state.withLock { $0.forwarded += 1 }
                return try answer().get()
            }
            func refusesConnections(_ url: String) async -> Bool {
                state.withLock {
                    $0.probed.append(url)
                    return $0.refuses
                }
            }
        }

        /// This instance, as the test says.
        final class Holding: PlacementHolding {
            struct State {
                var holds: Set<String> = []
                var databaseAnswers = true
                var takeover = Placement.Takeover.here
                var tookOver: [(ProfileID, InstanceID?)] = []
                var incognito: HTTPResponse?
                var searched = 0
            }
            let state = Mutex(State())

            func holdsHere(_ subject: Placement.Subject) -> Bool { state.withLock { $0.holds.contains(Lookups.key(subject)) } }
            var databaseAnswers: Bool { state.withLock { $0.databaseAnswers } }
            func takeOver(_ profile: ProfileID, replacing unreachable: InstanceID?) async -> Placement.Takeover {
                state.withLock {
                    $0.tookOver.append((profile, unreachable))
                    return $0.takeover
                }
            }
            func placeOffTheRecord(_ subject: Placement.Subject, _ request: HTTPRequest) async throws -> HTTPResponse? {
                state.withLock {
                    $0.searched += 1
                    return $0.incognito
                }
            }
        }

        let lookups = Lookups()
        let forwarding = Forwarding()
        let holding = Holding()
        /// Requests sent on to another instance, as the interpreter counts them.
        final class Count: Sendable {
            let value = Atomic(0)
        }
        let forwardedCount = Count()

        var interpreter: PlacementInterpreter {
            let count = forwardedCount
            return PlacementInterpreter(
                instanceID: Self.me, lookups: lookups, forwarding: forwarding, holding: holding,
                forwardedOne: { count.value.add(1, ordering: .relaxed) }, logger: Logger(label: "test"))
        }

        /// Tab `t1` is known to be in `p1`, whose owner is known to be ``other``: no query needed.
        func knowOwnerOfT1() {
            lookups.state.withLock {
                $0.known["t1"] = "p1"
                $0.knownOwners["p1"] = Self.other
            }
        }

        static func request(_ method: HTTPMethod = .get, _ path: String = "/v1/tabs/t1") -> HTTPRequest {
            HTTPRequest(method: method, path: path)
        }

        /// `PlacedAtOnce` carried to its end, as the API's guard does: nil means served here.
        func finish(_ placed: PlacedAtOnce) async -> HTTPResponse? {
            switch placed {
            case .here: return nil
            case .answered(let answer): return answer
            case .underway(let start):
                return await withCheckedContinuation { continuation in start { continuation.resume(returning: $0) } }
            case .continuing(let rest): return await rest()
            case .undecided:
                Issue.record("the interpreter never leaves placement undecided")
                return nil
            }
        }

        @Test func whatIsHeldHereIsServedAtOnceAskingNothing() {
            holding.state.withLock { $0.holds = ["t1"] }
            guard case .here = interpreter.placeAtOnce(Self.request(), subject: .tab("t1")) else {
                Issue.record("expected .here")
                return
            }
            #expect(lookups.state.withLock { $0.storedAsked + $0.ownerAsked } == 0)
        }

        @Test func aKnownOwnerIsRelayedWithoutATask() async {
            knowOwnerOfT1()
            forwarding.state.withLock { $0.atOnce = true }
            let placed = interpreter.placeAtOnce(Self.request(), subject: .tab("t1"))
            guard case .underway = placed else {
                Issue.record("expected .underway, got \(placed)")
                return
            }
            let answer = await finish(placed)
            #expect(answer?.status == 200)
            #expect(forwarding.state.withLock { ($0.started, $0.forwarded) } == (1, 0))
            #expect(lookups.state.withLock { $0.storedAsked + $0.ownerAsked } == 0)
            #expect(forwardedCount.value.load(ordering: .relaxed) == 1)
        }

        @Test func theServerThreadHandsItsMachineOnAndNothingIsAskedTwice() async {
            // The profile is known, its owner is not: the server thread stops at the owner's query, and the
            // task goes on from there (the profile is not asked again).
            lookups.state.withLock {
                $0.known["t1"] = "p1"
                $0.owners["p1"] = Self.other
            }
            let placed = interpreter.placeAtOnce(Self.request(), subject: .tab("t1"))
            guard case .continuing = placed else {
                Issue.record("expected .continuing, got \(placed)")
                return
            }
            #expect(lookups.state.withLock { $0.storedAsked + $0.ownerAsked } == 0, "nothing is asked on the server thread")
            let answer = await finish(placed)
            #expect(answer?.status == 200)
            #expect(lookups.state.withLock { ($0.storedAsked, $0.ownerAsked) } == (0, 1))
            #expect(forwarding.state.withLock { $0.forwarded } == 1)
        }

        @Test func aNewSubjectIsLookedUpThenForwarded() async {
            lookups.state.withLock {
                $0.stored["w1"] = "p1"
                $0.owners["p1"] = Self.other
            }
            let answer = await interpreter.place(Self.request(.get, "/v1/browsers/w1"), subject: .window("w1"))
            #expect(answer?.status == 200)
            #expect(lookups.state.withLock { ($0.storedAsked, $0.ownerAsked) } == (1, 1))
        }

        @Test func aFailedLookupIsStorageUnavailableAndChangesNothing() async {
            lookups.state.withLock { $0.fails = true }
            let answer = await finish(interpreter.placeAtOnce(Self.request(.post, "/v1/tabs/t1/reload"), subject: .tab("t1")))
            #expect(answer?.status == 503)
            #expect(answer?.headers["Retry-After"] == "1")
            #expect(answer.map { String(decoding: $0.bodyBytes, as: UTF8.self) }?.contains("/problems/storage-unavailable") == true)
            #expect(holding.state.withLock { $0.tookOver.isEmpty })
            #expect(forwarding.state.withLock { $0.forwarded + $0.started } == 0)
        }

        @Test func withoutTheDatabaseWhatIsNotHeldIs503AtOnce() {
            holding.state.withLock { $0.databaseAnswers = false }
            guard case .answered(let answer) = interpreter.placeAtOnce(Self.request(), subject: .tab("t1")) else {
                Issue.record("expected an answer at once")
                return
            }
            #expect(answer.status == 503)
        }

        @Test func aProfileNobodyHeldIsTakenOverAndServedHere() async {
            lookups.state.withLock { $0.stored["t1"] = "p1" }
            let answer = await finish(interpreter.placeAtOnce(Self.request(), subject: .tab("t1")))
            #expect(answer == nil)
            #expect(holding.state.withLock { $0.tookOver.map(\.0) } == ["p1"])
            #expect(holding.state.withLock { $0.tookOver.first?.1 } == .some(nil))
        }

        @Test func aFailedTakeoverIsStorageUnavailable() async {
            lookups.state.withLock { $0.stored["t1"] = "p1" }
            holding.state.withLock { $0.takeover = .failed }
            let answer = await interpreter.place(Self.request(), subject: .tab("t1"))
            #expect(answer?.status == 503)
        }

        @Test func anOwnerThatSays503IsForgotten() async {
            knowOwnerOfT1()
            forwarding.state.withLock {
                $0.atOnce = true
                $0.answer = .success(503)
            }
            let answer = await finish(interpreter.placeAtOnce(Self.request(), subject: .tab("t1")))
            #expect(answer?.status == 503)
            #expect(lookups.state.withLock { $0.forgotten } == ["p1"])
        }

        @Test func whatAnOwnerMadeIsRememberedInItsProfile() async {
            lookups.state.withLock {
                $0.known["w1"] = "p1"
                $0.owners["p1"] = Self.other
            }
            forwarding.state.withLock {
                $0.answer = .success(201)
                $0.location = "/v1/tabs/t9"
            }
            let answer = await finish(interpreter.placeAtOnce(Self.request(.post, "/v1/browsers/w1/tabs"), subject: .window("w1")))
            #expect(answer?.status == 201)
            let remembered = lookups.state.withLock { $0.remembered }
            #expect(remembered.count == 1)
            #expect(remembered.first?.0 == "p1")
            #expect(remembered.first?.1 == .tab("t9"))
        }

        @Test func anUnreachableOwnerWhoseAddressRefusesIsTakenOver() async {
            knowOwnerOfT1()
            forwarding.state.withLock {
                $0.atOnce = true
                $0.answer = .failure(Failure())
                $0.refuses = true
            }
            // A read is served here after the takeover ...
            let read = await finish(interpreter.placeAtOnce(Self.request(), subject: .tab("t1")))
            #expect(read == nil)
            #expect(holding.state.withLock { $0.tookOver.map(\.1) } == [Self.other.instanceID])
            #expect(forwarding.state.withLock { $0.probed } == [Self.other.url])
            #expect(lookups.state.withLock { $0.forgotten } == ["p1"])
            // ... a change is not (it may have reached the owner before it died).
            let change = await finish(interpreter.placeAtOnce(Self.request(.post, "/v1/tabs/t1/reload"), subject: .tab("t1")))
            #expect(change?.status == 503)
        }

        @Test func anUnreachableOwnerStillListeningIs503() async {
            lookups.state.withLock {
                $0.known["t1"] = "p1"
                $0.owners["p1"] = Self.other
            }
            forwarding.state.withLock { $0.answer = .failure(Failure()) }
            let answer = await finish(interpreter.placeAtOnce(Self.request(), subject: .tab("t1")))
            #expect(answer?.status == 503)
            #expect(holding.state.withLock { $0.tookOver.isEmpty })
        }

        @Test func aSubjectNoStoredProfileHoldsIsSearchedAmongIncognitoOwners() async {
            holding.state.withLock { $0.incognito = HTTPResponse(status: 200) }
            let answer = await interpreter.place(Self.request(), subject: .tab("t-incognito"))
            #expect(answer?.status == 200)
            #expect(holding.state.withLock { $0.searched } == 1)
            // Forwarded by a peer: never a second hop (served here, where the handler says 404).
            var fromPeer = Self.request()
            fromPeer.headers.add("X-Test-Peer", "1")
            #expect(await interpreter.place(fromPeer, subject: .tab("t-incognito")) == nil)
            #expect(holding.state.withLock { $0.searched } == 1)
        }

        @Test func aRequestAPeerForwardedIsNeverForwardedAgain() async {
            knowOwnerOfT1()
            var fromPeer = Self.request()
            fromPeer.headers.add("X-Test-Peer", "1")
            let answer = await finish(interpreter.placeAtOnce(fromPeer, subject: .tab("t1")))
            #expect(answer?.status == 503)
            #expect(forwarding.state.withLock { $0.forwarded + $0.started } == 0)
        }

        @Test func locationsNameWhatWasMade() {
            #expect(PlacementInterpreter.subject(named: "/v1/tabs/t1") == .tab("t1"))
            #expect(PlacementInterpreter.subject(named: "/v1/browsers/w1") == .window("w1"))
            #expect(PlacementInterpreter.subject(named: "/v1/groups/g1") == .group("g1"))
            #expect(PlacementInterpreter.subject(named: "/v1/profiles/p1") == nil)
            #expect(PlacementInterpreter.subject(named: "/v1/tabs/") == nil)
            #expect(PlacementInterpreter.subject(named: "/v2/tabs/t1/x") == nil)
        }
    }

    extension HTTPResponse {
        /// The bytes of a response that has them.
        var bodyBytes: [UInt8] {
            if case .bytes(let bytes) = body { return bytes }
            return []
        }
    }
#endif
