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
    }

    /// The most sessions at once (New Session past it: `session not created`).
    static let limit = 1_000

    private let sessions = Mutex<[String: Session]>([:])

    var count: Int { sessions.withLock { $0.count } }

    func add(_ session: Session) -> Bool {
        sessions.withLock { sessions in
            guard sessions.count < Self.limit else { return false }
            sessions[session.id] = session
            return true
        }
    }

    /// The session `id` as `principal` may see it.
    /// - Throws: `invalid session id` when there is none (or it belongs to another profile's token).
    func session(_ id: String, for principal: Principal) throws -> Session {
        guard let session = sessions.withLock({ $0[id] }), principal == .admin || session.principal == principal else {
            throw WebDriverError.invalidSessionID(id)
        }
        return session
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

    /// A new session id: its profile's id, a dot, a UUID. Several instances on one database route a
    /// session's commands to the instance that holds its profile by the part before the dot.
    static func newID(profile: ProfileID) -> String { profile.rawValue + "." + UUID().uuidString.lowercased() }
}
