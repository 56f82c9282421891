public import BrowserAPI
public import BrowserAccess
import BrowserModel
public import BrowserRecords
public import ClusterCore
public import HTTPServer
public import Logging

/// Carries out a ``Placement`` machine's actions for one request: the one interpreter of placement.
///
/// It runs first on the server thread (``placeAtOnce(_:subject:)``), as far as memory and caches take
/// it: served here, a 503, or relayed to a known owner without a task. When an action needs waiting
/// (a query, a takeover, a forward through a task), the machine is handed on as it stands to
/// ``carryOut(_:from:_:)`` in a task, which goes on from that action: nothing is asked twice. The world
/// is reached through three seams (``PlacementLookups``, ``PlacementForwarding``, ``PlacementHolding``)
/// so that every path is unit-tested without PostgreSQL or sockets.
public struct PlacementInterpreter: Sendable {
    public typealias Subject = Placement.Subject

    public let instanceID: InstanceID
    let lookups: any PlacementLookups
    let forwarding: any PlacementForwarding
    let holding: any PlacementHolding
    /// Called for every request sent on to another instance (a counter).
    let forwardedOne: @Sendable () -> Void
    let logger: Logger

    public init(
        instanceID: InstanceID, lookups: any PlacementLookups, forwarding: any PlacementForwarding, holding: any PlacementHolding,
        forwardedOne: @escaping @Sendable () -> Void = {}, logger: Logger
    ) {
        self.instanceID = instanceID
        self.lookups = lookups
        self.forwarding = forwarding
        self.holding = holding
        self.forwardedOne = forwardedOne
        self.logger = logger
    }

    /// Where `request` goes, decided on the server thread from what is known without waiting; when
    /// more is needed, ``PlacedAtOnce/continuing(_:)`` carries the same machine on. Never blocks.
    public func placeAtOnce(_ request: HTTPRequest, subject: Subject?) -> PlacedAtOnce {
        var (placement, action) = start(request, naming: subject)
        while true {
            switch atOnce(&placement, action, request) {
            case .next(let next):
                action = next
            case .done(let answer):
                return answer.map(PlacedAtOnce.answered) ?? .here
            case .waits:
                if case .forward(let owner, let profile) = action, let start = forwarding.relayAtOnce(request, to: owner.url) {
                    let machine = placement
                    return .underway { complete in self.relay(start, request, to: owner, profile: profile, machine, complete) }
                }
                let machine = placement
                let pending = action
                return .continuing {
                    var placement = machine
                    return await self.carryOut(&placement, from: pending, request)
                }
            }
        }
    }

    /// Where `request` goes, waiting for whatever it needs (its answer from another instance, a 503),
    /// or nil: served here.
    public func place(_ request: HTTPRequest, subject: Subject?) async -> HTTPResponse? {
        var (placement, action) = start(request, naming: subject)
        return await carryOut(&placement, from: action, request)
    }

    /// Carries out the machine's actions from `action` on: each at once when it can be, else waiting.
    public func carryOut(_ placement: inout Placement, from action: Placement.Action, _ request: HTTPRequest) async -> HTTPResponse? {
        var action = action
        while true {
            let step = atOnce(&placement, action, request)
            switch step {
            case .next(let next):
                action = next
                continue
            case .done(let answer):
                return answer
            case .waits:
                break
            }
            switch await waiting(&placement, action, request) {
            case .next(let next): action = next
            case .done(let answer): return answer
            case .waits: preconditionFailure("an action carried out waiting always ends")
            }
        }
    }

    /// A machine for `request`, started.
    func start(_ request: HTTPRequest, naming subject: Subject?) -> (Placement, Placement.Action) {
        var placement = Placement(
            instanceID: instanceID, fromPeer: forwarding.isFromPeer(request), isRead: request.method == .get || request.method == .head)
        let action = placement.start(
            subject: subject, heldHere: subject.map(holding.holdsHere) ?? false, databaseAnswers: holding.databaseAnswers)
        return (placement, action)
    }

    /// What carrying out one action gave.
    enum Step {
        /// The machine's next action.
        case next(Placement.Action)
        /// Placement is over: this answer, or nil (served here).
        case done(HTTPResponse?)
        /// The action needs waiting (a query, a takeover, a forward).
        case waits
    }

    /// `action` carried out if it needs no waiting: answers, and lookups the caches can answer.
    func atOnce(_ placement: inout Placement, _ action: Placement.Action, _ request: HTTPRequest) -> Step {
        switch action {
        case .serveHere:
            return .done(nil)
        case .unavailable(let detail):
            return .done(Self.unavailable(detail, request))
        case .storageUnavailable(let detail):
            return .done(Self.storageUnavailable(detail, request))
        case .lookUpProfile(let subject):
            guard let known = lookups.knownProfile(holding: subject) else { return .waits }
            return .next(placement.storedProfile(known, subject: subject, callerReaches: Self.callerReaches(known)))
        case .lookUpOwner(let profile):
            guard let known = lookups.knownOwner(of: profile), known.instanceID != instanceID else { return .waits }
            return .next(placement.owner(known))
        case .relay:
            // Only a forward's answer leads here, and ``relayed(_:profile:_:)`` answers it.
            assertionFailure("relay is carried out with its forward")
            return .done(nil)
        case .takeOver, .forward, .probeRefusal, .searchIncognitoOwners:
            return .waits
        }
    }

    /// `action` carried out, waiting for the database, a takeover or another instance.
    func waiting(_ placement: inout Placement, _ action: Placement.Action, _ request: HTTPRequest) async -> Step {
        switch action {
        case .lookUpProfile(let subject):
            do {
                let stored = try await lookups.storedProfile(holding: subject)
                return .next(placement.storedProfile(stored, subject: subject, callerReaches: Self.callerReaches(stored)))
            } catch {
                return .done(lookupFailed(error, request))
            }
        case .lookUpOwner(let profile):
            do {
                return .next(placement.owner(try await lookups.owner(of: profile)))
            } catch {
                return .done(lookupFailed(error, request))
            }
        case .takeOver(let profile, let replacing):
            return .next(placement.tookOver(await holding.takeOver(profile, replacing: replacing)))
        case .forward(let owner, let profile):
            forwardedOne()
            do {
                let answer = try await forwarding.forward(request, to: owner.url)
                return .done(relayed(answer, profile: profile, &placement))
            } catch {
                return .next(forwardFailed(error, owner: owner, profile: profile, &placement))
            }
        case .probeRefusal(let owner):
            return .next(placement.refusal(await forwarding.refusesConnections(owner.url)))
        case .searchIncognitoOwners(let subject):
            do {
                return .done(try await holding.placeOffTheRecord(subject, request))
            } catch {
                return .done(lookupFailed(error, request))
            }
        case .serveHere, .unavailable, .storageUnavailable, .relay:
            return atOnce(&placement, action, request)
        }
    }

    /// Relays `request` to `owner` without a task (`start`: the forwarder's relay of it, ready); what is
    /// left after a failure (a probe, a takeover) goes on in a task.
    func relay(
        _ start: PlacementRelay, _ request: HTTPRequest, to owner: Placement.Owner, profile: ProfileID, _ machine: Placement,
        _ complete: @escaping @Sendable (HTTPResponse?) -> Void
    ) {
        forwardedOne()
        start { result in
            var placement = machine
            switch result {
            case .success(let answer):
                complete(self.relayed(answer, profile: profile, &placement))
            case .failure(let error):
                let next = self.forwardFailed(error, owner: owner, profile: profile, &placement)
                Task { complete(await self.carryOut(&placement, from: next, request)) }
            }
        }
    }

    /// The owner answered: its answer, with the lookups kept true (an owner that said 503 no longer
    /// holds the profile; what its 201 made lives in `profile`).
    func relayed(_ answer: HTTPResponse, profile: ProfileID, _ placement: inout Placement) -> HTTPResponse {
        if case .relay(forgetOwner: true) = placement.forwarded(status: answer.status) {
            lookups.forgetOwner(of: profile)
        } else if answer.status == 201, let location = answer.headers["Location"], let made = Self.subject(named: location) {
            // What the owner just made is in the profile the request named: the next request for it
            // needs no database query to be placed.
            lookups.remember(profile: profile, holding: made)
        }
        return answer
    }

    /// The owner could not be reached: the machine's next action (probe its address), the known owner
    /// forgotten.
    func forwardFailed(_ error: any Error, owner: Placement.Owner, profile: ProfileID, _ placement: inout Placement) -> Placement.Action {
        lookups.forgetOwner(of: profile)
        logger.warning("forwarding failed", metadata: ["profile": "\(profile)", "owner": "\(owner.instanceID)", "error": "\(error)"])
        return placement.forwardFailed()
    }

    private func lookupFailed(_ error: any Error, _ request: HTTPRequest) -> HTTPResponse {
        logger.warning("placement failed", metadata: ["error": "\(error)"])
        return Self.storageUnavailable("The database cannot say which instance holds this profile; retry.", request)
    }

    /// The window, tab or group a `Location` names (`/v1/tabs/t…`), if it names one.
    public static func subject(named location: String) -> Subject? {
        let parts = location.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].isEmpty, parts[1] == "v1", !parts[3].isEmpty else { return nil }
        let id = String(parts[3])
        switch parts[2] {
        case "browsers": return .window(id)
        case "tabs": return .tab(id)
        case "groups": return .group(id)
        default: return nil
        }
    }

    /// Whether the request's caller may use stored profile `profile` (placement runs as the caller).
    static func callerReaches(_ profile: ProfileID?) -> Bool { profile.map { Principal.current.reaches($0) } ?? true }

    public static func unavailable(_ detail: String, _ request: HTTPRequest) -> HTTPResponse {
        HTTPError.unavailable(detail, retryAfter: 1).response(instance: request.path)
    }

    /// What every store answers when it could not be read: the same problem type as the embedded store's.
    public static func storageUnavailable(_ detail: String, _ request: HTTPRequest) -> HTTPResponse {
        HTTPError.storageUnavailable(detail, retryAfter: 1).response(instance: request.path)
    }
}
