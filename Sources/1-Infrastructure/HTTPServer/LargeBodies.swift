import Synchronization

/// POST paths that take bodies up to `maxBytes` instead of the server's usual limit (an upload of a
/// whole document). Memory for uploads stays bounded whoever sends them, and nobody may hold it who
/// may not upload:
/// - the request head is judged first (``admit``: who is sending, and may they): a refusal (401,
///   403) is answered before a slot is taken or a byte of the body is read;
/// - at most `concurrent` such bodies are held at once, and at most `perPrincipal` by one sender
///   (a request past either gets 503 before its body is read);
/// - a body must arrive whole within `deadline` of its head, however steadily it trickles.
public struct LargeBodies: Sendable {
    /// What the head of an upload says of it.
    public enum Admission: Sendable {
        /// It may be read, as `principal`'s (what the per-sender limit counts by).
        case admit(principal: String)
        /// Refused as it is: answered from the head, and the connection closed (the body is not wanted).
        case refuse(HTTPError)
    }

    /// Judges an upload from its path and request head (`header` looks a header up by name).
    public typealias Admit = @Sendable (_ path: String, _ header: (String) -> String?) -> Admission

    public var paths: Set<String>
    public var maxBytes: Int
    public var concurrent: Int
    public var perPrincipal: Int
    public var deadline: Duration
    /// nil: every upload is admitted, all as one sender.
    public var admit: Admit?

    public init(
        paths: Set<String>, maxBytes: Int, concurrent: Int = 2, perPrincipal: Int = 1, deadline: Duration = .seconds(600),
        admit: Admit? = nil
    ) {
        self.paths = paths
        self.maxBytes = maxBytes
        self.concurrent = concurrent
        self.perPrincipal = perPrincipal
        self.deadline = deadline
        self.admit = admit
    }
}

/// The large-body slots held now: in all, and by each sender.
final class LargeBodySlots: Sendable {
    private let held = Mutex<(total: Int, byPrincipal: [String: Int])>((0, [:]))

    /// Takes a slot for `principal` when fewer than `limits.concurrent` are held in all and fewer than
    /// `limits.perPrincipal` by it.
    func take(for principal: String, _ limits: LargeBodies) -> Bool {
        held.withLock { held in
            let mine = held.byPrincipal[principal, default: 0]
            guard held.total < limits.concurrent, mine < limits.perPrincipal else { return false }
            held.total += 1
            held.byPrincipal[principal] = mine + 1
            return true
        }
    }

    func release(for principal: String) {
        held.withLock { held in
            held.total -= 1
            let mine = held.byPrincipal[principal, default: 1] - 1
            held.byPrincipal[principal] = mine > 0 ? mine : nil
        }
    }

    var total: Int { held.withLock { $0.total } }
}
