import Foundation
import Synchronization

/// Short-lived, single-use tickets that let a browser open one event stream without an
/// `Authorization` header (`EventSource` cannot send one), so no long-lived token goes into a URL
/// (where logs and history keep it). A ticket is issued to a bearer-authenticated caller for one
/// stream and carries that caller's scope; it is redeemed once, within ``lifetime`` (60 s).
public final class StreamTicketStore: Sendable {
    /// How long a ticket stays valid after it is issued, unless told otherwise.
    public static let defaultLifetime: Duration = .seconds(60)
    /// The most tickets outstanding at once (issuing past it is refused with 429).
    public static let limit = 10_000

    struct Ticket {
        let principal: Principal
        /// The stream it opens: `/v1/browsers/{id}/events` or `/v1/events?profileId={id}`.
        let target: String
        let expires: ContinuousClock.Instant
    }

    private let tickets = Mutex<[String: Ticket]>([:])
    /// How long a ticket stays valid after it is issued.
    public let lifetime: Duration

    public init(lifetime: Duration = StreamTicketStore.defaultLifetime) {
        self.lifetime = lifetime
    }

    /// Issues a ticket for `target`.
    /// - Returns: the ticket and when it expires; nil when ``limit`` tickets are outstanding.
    func issue(for principal: Principal, target: String) -> (ticket: String, expiresAt: Date)? {
        let now = ContinuousClock.now
        var generator = SystemRandomNumberGenerator()
        let ticket = "st_" + (0..<4).map { _ in
            let word = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - word.count) + word
        }.joined()
        let issued = tickets.withLock { tickets -> Bool in
            if tickets.count >= Self.limit { tickets = tickets.filter { $0.value.expires > now } }
            guard tickets.count < Self.limit else { return false }
            tickets[ticket] = Ticket(principal: principal, target: target, expires: now.advanced(by: lifetime))
            return true
        }
        guard issued else { return nil }
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        return (ticket, Date().addingTimeInterval(seconds))
    }

    /// Takes the ticket: the caller it was issued to, when it opens `target` and has not expired.
    /// A ticket is gone after its first use, whether or not it matched.
    func redeem(_ ticket: String, target: String) -> Principal? {
        let now = ContinuousClock.now
        guard let found = tickets.withLock({ $0.removeValue(forKey: ticket) }), found.expires > now, found.target == target else {
            return nil
        }
        return found.principal
    }

    /// Tickets issued and not yet used or expired.
    public var outstanding: Int {
        let now = ContinuousClock.now
        return tickets.withLock { $0.values.filter { $0.expires > now }.count }
    }
}
