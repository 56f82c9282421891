import BrowserAccess
import BrowserModel
import Foundation
import Synchronization

/// The WebDriver sessions of this process (in memory: a restart ends them all). A session owns the
/// tabs it created; its window handles are those tabs' ids.
final class WebDriverSessions: Sendable {
    struct Timeouts: Sendable, Equatable {
        var script: Int? = 30_000
        var pageLoad: Int? = 300_000
        var implicit: Int? = 0
    }

    struct Session: Sendable {
        let id: String
        let principal: Principal
        let profile: ProfileID
        /// The tabs the session created, in that order (some may have been closed since).
        var handles: [TabID]
        /// The current top-level window (tab); nil after it was closed, until a switch.
        var current: TabID?
        var timeouts = Timeouts()
        /// When a command last named the session (it expires after ``WebDriverLimits/sessionTimeout`` unused).
        var lastUsed: ContinuousClock.Instant = .now
    }

    let limits: WebDriverLimits
    private let sessions = Mutex<[String: Session]>([:])

    init(limits: WebDriverLimits = WebDriverLimits()) { self.limits = limits }

    var count: Int { sessions.withLock { $0.count } }

    /// Why a session cannot be added now.
    enum Refusal: Error, CustomStringConvertible {
        case profileLimit(Int)
        case totalLimit(Int)

        var description: String {
            switch self {
            case .profileLimit(let limit): "this profile has \(limit) sessions open, the most it may; end one first (idle sessions end by themselves)"
            case .totalLimit(let limit): "\(limit) sessions are open; end one first"
            }
        }
    }

    /// Whether `profile` has a session open.
    func any(profile: ProfileID) -> Bool { sessions.withLock { $0.values.contains { $0.profile == profile } } }

    /// Whether a session of `profile` may be added now.
    func check(profile: ProfileID) throws(Refusal) {
        let refusal = sessions.withLock { sessions in Self.refusal(sessions, profile: profile, limits: limits) }
        if let refusal { throw refusal }
    }

    private static func refusal(_ sessions: [String: Session], profile: ProfileID, limits: WebDriverLimits) -> Refusal? {
        if sessions.count >= limits.total { return .totalLimit(limits.total) }
        if sessions.values.lazy.filter({ $0.profile == profile }).count >= limits.perProfile { return .profileLimit(limits.perProfile) }
        return nil
    }

    func add(_ session: Session) throws(Refusal) {
        let refusal = sessions.withLock { sessions -> Refusal? in
            if let refusal = Self.refusal(sessions, profile: session.profile, limits: limits) { return refusal }
            sessions[session.id] = session
            return nil
        }
        if let refusal { throw refusal }
    }

    /// The session `id` as `principal` may see it; naming it keeps it from expiring.
    /// - Throws: `invalid session id` when there is none (or it belongs to another profile's token).
    func session(_ id: String, for principal: Principal, now: ContinuousClock.Instant = .now) throws -> Session {
        let found = sessions.withLock { sessions -> Session? in
            guard var session = sessions[id], principal == .admin || session.principal == principal else { return nil }
            session.lastUsed = now
            sessions[id] = session
            return session
        }
        guard let found else { throw WebDriverError.invalidSessionID(id) }
        return found
    }

    func update(_ id: String, _ change: (inout Session) -> Void) {
        sessions.withLock { sessions in
            if var session = sessions[id] {
                change(&session)
                sessions[id] = session
            }
        }
    }

    func remove(_ id: String) -> Session? { sessions.withLock { $0.removeValue(forKey: id) } }

    /// Removes and returns the sessions unused for longer than the session timeout.
    func removeExpired(now: ContinuousClock.Instant = .now) -> [Session] {
        sessions.withLock { sessions in
            let expired = sessions.values.filter { now - $0.lastUsed > limits.sessionTimeout }
            for session in expired { sessions[session.id] = nil }
            return expired
        }
    }

    /// A new session id: its profile's id, a dot, a UUID. Several instances on one database route a
    /// session's commands to the instance that holds its profile by the part before the dot.
    static func newID(profile: ProfileID) -> String { profile.rawValue + "." + UUID().uuidString.lowercased() }
}

/// How many WebDriver sessions may be open, and how long an unused one lives.
public struct WebDriverLimits: Sendable, Equatable {
    /// A session no command has named for this long ends (its tabs close), as if deleted.
    public var sessionTimeout: Duration
    /// The most sessions one profile may have open (New Session past it: `session not created`).
    public var perProfile: Int
    /// The most sessions open at once, in all.
    public var total: Int

    public init(sessionTimeout: Duration = .seconds(600), perProfile: Int = 16, total: Int = 1_000) {
        self.sessionTimeout = sessionTimeout
        self.perProfile = perProfile
        self.total = total
    }
}
