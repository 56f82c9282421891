import Synchronization

/// Whether browserd can take API traffic: not before start-up work is done, nor while a dependency
/// (such as the database) is failing. `/readyz` reports it.
public final class Readiness: Sendable {
    private let reasons = Mutex<[String: String]>(["startup": "starting up"])

    public init() {}

    /// What holds readiness back, by component, sorted by component.
    public var blockers: [(component: String, reason: String)] {
        reasons.withLock { $0.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }

    /// Marks `component` as not ready, with a reason for operators.
    public func block(_ component: String, reason: String) {
        reasons.withLock { $0[component] = reason }
    }

    /// Marks `component` as ready again.
    public func clear(_ component: String) {
        _ = reasons.withLock { $0.removeValue(forKey: component) }
    }
}
