public import BrowserAccess
public import BrowserModel
public import BrowserRecords

/// Where one request goes — served here, taken over, forwarded to the instance that holds its
/// profile, or answered 503 — decided as a pure value state machine (`mutating func event(...) ->
/// Action`, as postgres-nio's): each event is what the database or another instance said, each action
/// what to ask next. ``ClusterMembership`` carries the actions out (queries, the forwarder, takeovers);
/// the decisions are unit-tested without PostgreSQL or sockets.
///
/// The rules:
/// - A request that names nothing placeable, or what this instance holds, is served here.
/// - While the database does not answer, anything not held here is 503 at once.
/// - The regular profile that holds the subject comes from the database; a subject no stored profile
///   holds is an incognito one (only its owner's memory has it): its likely owners are searched, unless
///   another instance forwarded the request (then it is served here, i.e. 404).
/// - A live owner elsewhere gets the request forwarded, once: a request another instance forwarded is
///   never forwarded again (the lease moved meanwhile: 503, retry).
/// - No live owner (never held, expired, or this instance's own previous run): taken over here.
/// - An owner that does not answer and whose address refuses connections is gone: its profile is taken
///   over now; a read is then served here, a change gets 503 (it may have reached the dead owner).
public struct Placement: Sendable {
    /// What a request names, by its route's parameters, query or body.
    public typealias Subject = RequestSubject

    /// The instance that holds a lease, as the database says.
    public struct Owner: Sendable, Equatable {
        public var instanceID: InstanceID
        public var url: String
        /// Whether its lease has not expired.
        public var live: Bool

        public init(instanceID: InstanceID, url: String, live: Bool) {
            self.instanceID = instanceID
            self.url = url
            self.live = live
        }
    }

    public enum Action: Sendable, Equatable {
        /// Run the handler here.
        case serveHere
        /// Answer 503 `/problems/unavailable` with this detail (the client retries): another instance
        /// did not answer, or the profile is moving.
        case unavailable(String)
        /// Answer 503 `/problems/storage-unavailable` with this detail (the client retries): the
        /// database could not be read, as every store's failed read is answered.
        case storageUnavailable(String)
        /// Ask which stored regular profile holds the subject: then ``storedProfile(_:)``.
        case lookUpProfile(Subject)
        /// Ask who holds `profile`'s lease: then ``owner(_:)``.
        case lookUpOwner(ProfileID)
        /// Acquire `profile`'s lease and restore it here (replacing an owner found gone): then ``tookOver(_:)``.
        case takeOver(ProfileID, replacing: InstanceID?)
        /// Send the request to `owner`: then ``forwarded(status:)`` or ``forwardFailed()``.
        case forward(Owner, profile: ProfileID)
        /// Check whether `owner`'s address refuses connections: then ``refusal(_:)``.
        case probeRefusal(Owner)
        /// Look for the instance holding an incognito subject (never stored): its answer, or the handler here.
        case searchIncognitoOwners(Subject)
        /// The forwarded answer is the answer; `forgetOwner`: the cached owner is stale (it said 503).
        case relay(forgetOwner: Bool)
    }

    /// What a takeover ended with.
    public enum Takeover: Sendable, Equatable {
        /// This instance holds the profile now (or it was deleted meanwhile: the handler answers 404).
        case here
        /// Another instance holds it (it won the race).
        case elsewhere(Owner)
        /// The database failed.
        case failed
    }

    private enum State: Sendable, Equatable {
        case initial
        case lookingUpProfile
        case lookingUpOwner(ProfileID)
        case takingOver(ProfileID)
        case forwarding(Owner, profile: ProfileID)
        case probing(Owner, profile: ProfileID)
        case takingOverFromTheGone(ProfileID)
        case done
    }

    public let instanceID: InstanceID
    /// Whether another instance of the cluster sent this request (it is never forwarded again).
    public let fromPeer: Bool
    /// Whether the request only reads (a read can be served after taking a gone owner's profile over).
    public let isRead: Bool
    private var state = State.initial

    public init(instanceID: InstanceID, fromPeer: Bool, isRead: Bool) {
        self.instanceID = instanceID
        self.fromPeer = fromPeer
        self.isRead = isRead
    }

    /// The request arrives (after authentication).
    /// - Parameters:
    ///   - subject: what it names; nil: nothing placeable (served here).
    ///   - heldHere: whether this instance holds the subject's profile in memory.
    ///   - databaseAnswers: whether the database answered its last probe.
    public mutating func start(subject: Subject?, heldHere: Bool, databaseAnswers: Bool) -> Action {
        precondition(state == .initial, "a placement starts once")
        guard let subject, !heldHere else { return finish(.serveHere) }
        guard databaseAnswers else {
            return finish(.storageUnavailable("The database does not answer, so which instance holds this profile cannot be known; retry."))
        }
        state = .lookingUpProfile
        return .lookUpProfile(subject)
    }

    /// The database said which stored regular profile holds the subject (nil: none).
    /// - Parameter callerReaches: whether the caller may use that profile (the administrator, or its
    ///   token). When not, nothing is taken over, relayed or probed for it: served here, where the
    ///   handler answers 404 as for an id nothing holds.
    public mutating func storedProfile(_ profile: ProfileID?, subject: Subject, callerReaches: Bool = true) -> Action {
        precondition(state == .lookingUpProfile, "storedProfile after lookUpProfile")
        guard let profile else {
            // The database never has off-the-record profiles and what they hold: their owners may.
            return finish(fromPeer ? .serveHere : .searchIncognitoOwners(subject))
        }
        guard callerReaches else { return finish(.serveHere) }
        state = .lookingUpOwner(profile)
        return .lookUpOwner(profile)
    }

    /// The database said who holds the profile's lease (nil: nobody ever did).
    public mutating func owner(_ owner: Owner?) -> Action {
        guard case .lookingUpOwner(let profile) = state else { preconditionFailure("owner after lookUpOwner") }
        if let owner, owner.live, owner.instanceID != instanceID { return send(to: owner, profile: profile) }
        state = .takingOver(profile)
        return .takeOver(profile, replacing: nil)
    }

    /// A takeover ended.
    public mutating func tookOver(_ result: Takeover) -> Action {
        switch state {
        case .takingOver(let profile):
            switch result {
            case .here: return finish(.serveHere)
            case .elsewhere(let owner): return send(to: owner, profile: profile)
            case .failed: return finish(.storageUnavailable("The profile could not be read from the database; nothing was changed. Retry."))
            }
        case .takingOverFromTheGone:
            // The request may have reached the owner before it died: only a read is safe to serve now.
            guard result == .here else { return finish(.unavailable("The instance that holds the profile did not answer; retry.")) }
            return finish(
                isRead
                    ? .serveHere
                    : .unavailable("The instance that held the profile is gone and this one took it over; retry."))
        default:
            preconditionFailure("tookOver after takeOver")
        }
    }

    /// The owner answered with `status`.
    public mutating func forwarded(status: Int) -> Action {
        guard case .forwarding = state else { preconditionFailure("forwarded after forward") }
        // A 503 from the owner: it no longer holds the profile (moving). Ask the database next time.
        return finish(.relay(forgetOwner: status == 503))
    }

    /// The owner could not be reached.
    public mutating func forwardFailed() -> Action {
        guard case .forwarding(let owner, let profile) = state else { preconditionFailure("forwardFailed after forward") }
        state = .probing(owner, profile: profile)
        return .probeRefusal(owner)
    }

    /// Whether the unreachable owner's address refuses connections (nothing listens: it is gone).
    public mutating func refusal(_ refuses: Bool) -> Action {
        guard case .probing(let owner, let profile) = state else { preconditionFailure("refusal after probeRefusal") }
        guard refuses else { return finish(.unavailable("The instance that holds the profile did not answer; retry.")) }
        state = .takingOverFromTheGone(profile)
        return .takeOver(profile, replacing: owner.instanceID)
    }

    private mutating func send(to owner: Owner, profile: ProfileID) -> Action {
        // Forwarded to us, but we do not hold it: the lease moved meanwhile. Never a second hop.
        guard !fromPeer else { return finish(.unavailable("The profile is moving between instances; retry.")) }
        state = .forwarding(owner, profile: profile)
        return .forward(owner, profile: profile)
    }

    private mutating func finish(_ action: Action) -> Action {
        state = .done
        return action
    }
}
