public import BrowserModel
public import BrowserRecords
public import ClusterCore
public import HTTPServer

// What ``PlacementInterpreter`` asks of the world beyond the owner cache (``PlacementLookups``, in
// ClusterCore): forwarding a request, and this instance's residency. The cluster's classes carry them
// out, the interpreter's tests fake them. None of them decides anything: ``Placement`` does.

/// A relay of one request to its owner, ready to start: `start` sends it, and calls its completion
/// once, from any thread, with the owner's answer or why it could not be reached. Must not block.
public typealias PlacementRelay = @Sendable (_ completion: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void) -> Void

/// Sending a request on to the instance that holds its profile.
public protocol PlacementForwarding: Sendable {
    /// Whether another instance of this cluster sent `request` (its peer proof holds).
    func isFromPeer(_ request: HTTPRequest) -> Bool

    /// The relay of `request` to `url` without a task, ready to start, or nil when it cannot be
    /// relayed so (its owner's address is not resolved yet, or it is a kind the relay does not carry).
    /// Starting it calls its completion once, from any thread. Must not block.
    func relayAtOnce(_ request: HTTPRequest, to url: String) -> PlacementRelay?

    /// Sends `request` to `url` and returns its answer.
    /// - Throws: the instance could not be reached, or did not answer in time.
    func forward(_ request: HTTPRequest, to url: String) async throws -> HTTPResponse

    /// Whether `url`'s address refuses connections (nothing listens there: its instance is gone).
    func refusesConnections(_ url: String) async -> Bool
}

/// This instance's side: what it holds, taking a profile over, finding an off-the-record subject.
public protocol PlacementHolding: Sendable {
    /// Whether the profile that holds `subject` is in memory here (and, if so, marks it used).
    func holdsHere(_ subject: Placement.Subject) -> Bool

    /// Whether the database answered its last probe.
    var databaseAnswers: Bool { get }

    /// Takes `profile`'s lease (replacing an owner found gone) and restores it here, once however
    /// many requests ask.
    func takeOver(_ profile: ProfileID, replacing unreachable: InstanceID?) async -> Placement.Takeover

    /// The answer of the instance that holds off-the-record `subject` (which only its owner's memory
    /// has), or nil when none does (the handler here answers 404).
    /// - Throws: the database could not be read.
    func placeOffTheRecord(_ subject: Placement.Subject, _ request: HTTPRequest) async throws -> HTTPResponse?
}
