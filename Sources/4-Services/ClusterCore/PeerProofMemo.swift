import Synchronization

/// Proofs of bodyless requests (reads) remembered for the second they were made or checked in, so a
/// read forwarded again and again (a window polled by many clients) costs one HMAC per second on
/// each instance instead of one per request (`bench/scale_out.py --hop-only`: ~1 µs of CPU per
/// forwarded `GET` on each side).
///
/// A proof binds its method, path, sender and second (``PeerProof``): within one second the same
/// read from the same sender has the same proof, so a remembered one is exactly what would be
/// computed again, and a remembered check is the check's own result at the same clock second.
/// Only valid proofs are remembered; what is remembered goes when the second changes, and at most
/// ``capacity`` entries are kept (past it, nothing more is added until the next second).
public final class PeerProofMemo: Sendable {
    public init() {}

    public static let capacity = 1024

    private let made = Mutex<(second: Int, proofs: [String: String])>((0, [:]))
    private let verified = Mutex<(second: Int, proofs: [String: String])>((0, [:]))

    /// The key of a read: its method, path and sender (none holds a line break).
    public static func key(method: String, path: String, from instance: String) -> String {
        method + "\n" + path + "\n" + instance
    }

    /// The proof made for `key` in `second`, or `make()`'s, remembered.
    public func proof(for key: String, at second: Int, make: () -> String) -> String {
        if let known = made.withLock({ $0.second == second ? $0.proofs[key] : nil }) { return known }
        let value = make()
        Self.remember(value, for: key, at: second, in: made)
        return value
    }

    /// Whether `value` was found valid for `key` in `second`; else `check()`'s answer, a valid proof
    /// remembered.
    public func isValid(_ value: String, for key: String, at second: Int, check: () -> Bool) -> Bool {
        if verified.withLock({ $0.second == second && $0.proofs[value] == key }) { return true }
        guard check() else { return false }
        Self.remember(key, for: value, at: second, in: verified)
        return true
    }

    private static func remember(_ value: String, for key: String, at second: Int, in memo: borrowing Mutex<(second: Int, proofs: [String: String])>) {
        memo.withLock { memo in
            if memo.second != second {
                memo.second = second
                memo.proofs.removeAll(keepingCapacity: true)
            }
            if memo.proofs.count < capacity { memo.proofs[key] = value }
        }
    }
}
