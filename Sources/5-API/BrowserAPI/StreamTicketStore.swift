import BrowserAccess
import DequeModule
import Foundation
import Synchronization

/// Short-lived, single-use tickets that let a browser open one event stream without an
/// `Authorization` header (`EventSource` cannot send one), so no long-lived token goes into a URL
/// (where logs and history keep it). A ticket is issued to a bearer-authenticated caller for one
/// stream and carries that caller's scope; it is redeemed once, within ``lifetime`` (60 s).
///
/// Bounded per caller: each principal (the administrator, or one profile's tokens) holds at most
/// ``perPrincipalLimit`` outstanding tickets, so one tenant issuing in a loop is refused (429) while
/// everyone else still gets theirs; ``limit`` bounds them all. Expired tickets leave in issue order
/// (every ticket lives as long), so issuing never scans the store.
public final class StreamTicketStore: Sendable {
    /// How long a ticket stays valid after it is issued, unless told otherwise.
    public static let defaultLifetime: Duration = .seconds(60)
    /// The most tickets outstanding at once, in all.
    public static let limit = 100_000
    /// The most tickets one principal may hold outstanding at once, unless told otherwise.
    public static let defaultPerPrincipalLimit = 64

    struct Ticket {
        let principal: Principal
        /// The profile token it was issued to (nil: the administrator): revoking that token voids it.
        let tokenID: String?
        /// The stream it opens: `/v1/browsers/{id}/events` or `/v1/events?profileId={id}`.
        let target: String
        let expires: ContinuousClock.Instant
    }

    private struct State {
        var tickets: [String: Ticket] = [:]
        /// Tickets in the order they were issued (and so expire), with their principal's scope.
        var order: Deque<(ticket: String, scope: String, expires: ContinuousClock.Instant)> = []
        /// Outstanding tickets per principal scope.
        var perScope: [String: Int] = [:]

        mutating func remove(_ ticket: String) -> Ticket? {
            guard let found = tickets.removeValue(forKey: ticket) else { return nil }
            let scope = found.principal.scope
            perScope[scope, default: 1] -= 1
            if perScope[scope] == 0 { perScope[scope] = nil }
            return found
        }

        /// Drops expired tickets from the front of the issue order (and entries of tickets used since).
        mutating func expire(now: ContinuousClock.Instant) {
            while let first = order.first, first.expires <= now || tickets[first.ticket] == nil {
                order.removeFirst()
                _ = remove(first.ticket)
            }
        }
    }

    private let state = Mutex(State())
    /// How long a ticket stays valid after it is issued.
    public let lifetime: Duration
    /// The most tickets one principal may hold outstanding.
    public let perPrincipalLimit: Int

    public init(lifetime: Duration = StreamTicketStore.defaultLifetime, perPrincipalLimit: Int = StreamTicketStore.defaultPerPrincipalLimit) {
        self.lifetime = lifetime
        self.perPrincipalLimit = perPrincipalLimit
    }

    /// Why a ticket was not issued.
    enum Refusal: Error {
        /// The caller holds ``perPrincipalLimit`` outstanding tickets.
        case principalLimit
        /// ``limit`` tickets are outstanding in all.
        case globalLimit
    }

    /// Issues a ticket for `target`.
    /// - Returns: the ticket and when it expires.
    /// - Throws: ``Refusal`` when the caller, or everyone together, holds the most tickets allowed.
    func issue(for principal: Principal, tokenID: String? = nil, target: String) throws(Refusal) -> (ticket: String, expiresAt: Date) {
        let now = ContinuousClock.now
        var generator = SystemRandomNumberGenerator()
        let ticket =
            "st_"
            + (0..<4).map { _ in
                let word = String(generator.next() as UInt64, radix: 16)
                return String(repeating: "0", count: 16 - word.count) + word
            }.joined()
        let scope = principal.scope
        let refusal = state.withLock { state -> Refusal? in
            state.expire(now: now)
            guard state.perScope[scope, default: 0] < perPrincipalLimit else { return .principalLimit }
            guard state.tickets.count < Self.limit else { return .globalLimit }
            let expires = now.advanced(by: lifetime)
            state.tickets[ticket] = Ticket(principal: principal, tokenID: tokenID, target: target, expires: expires)
            state.order.append((ticket, scope, expires))
            state.perScope[scope, default: 0] += 1
            return nil
        }
        if let refusal { throw refusal }
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        return (ticket, Date().addingTimeInterval(seconds))
    }

    /// Takes the ticket: the caller it was issued to (and its token), when it opens `target` and has
    /// not expired. A ticket is gone after its first use, whether or not it matched.
    func redeem(_ ticket: String, target: String) -> (principal: Principal, tokenID: String?)? {
        let now = ContinuousClock.now
        guard let found = state.withLock({ $0.remove(ticket) }), found.expires > now, found.target == target else {
            return nil
        }
        return (found.principal, found.tokenID)
    }

    /// Whether `ticket` is outstanding for `target`, without using it.
    func isOutstanding(_ ticket: String, target: String) -> Bool {
        let now = ContinuousClock.now
        return state.withLock { $0.tickets[ticket].map { $0.expires > now && $0.target == target } ?? false }
    }

    /// Voids every outstanding ticket issued to these tokens (they were revoked).
    func revoke(tokens ids: Set<String>) {
        state.withLock { state in
            let void = state.tickets.filter { $0.value.tokenID.map(ids.contains) ?? false }.map(\.key)
            for ticket in void { _ = state.remove(ticket) }
        }
    }

    /// Tickets issued and not yet used or expired.
    public var outstanding: Int {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.expire(now: now)
            return state.tickets.count
        }
    }
}
