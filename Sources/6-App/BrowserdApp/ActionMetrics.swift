import Metrics
import Synchronization

/// `browserd_actions_total` by action name and result. Counters are made once per label pair and
/// kept (an action is counted on every mutation; making a counter resolves it in the registry each
/// time). Names past ``nameLimit`` share the label `other`, so run-time command names cannot grow
/// the label space.
final class ActionMetrics: Sendable {
    static let nameLimit = 256
    private let factory: any MetricsFactory
    private let counters = Mutex<[String: (ok: Counter, error: Counter)]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func count(_ name: String, ok: Bool) {
        let pair = counters.withLock { counters in
            if let pair = counters[name] { return pair }
            let label = counters.count < Self.nameLimit ? name : "other"
            if let pair = counters[label] { return pair }
            let pair = (
                ok: Counter(label: "browserd_actions_total", dimensions: [("name", label), ("result", "ok")], factory: factory),
                error: Counter(label: "browserd_actions_total", dimensions: [("name", label), ("result", "error")], factory: factory)
            )
            counters[label] = pair
            return pair
        }
        (ok ? pair.ok : pair.error).increment()
    }
}
