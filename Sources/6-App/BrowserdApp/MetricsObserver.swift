import HTTPServer
import Metrics
import Synchronization

/// Turns the server's reports into `browserd_` metrics: requests by route template, method and
/// status; request duration by route; open connections and streams. No per-tab or per-window labels.
final class MetricsObserver: HTTPServerObserver {
    private let factory: any MetricsFactory
    /// What one kind of request (method, route, status) records into, found with one lookup per
    /// request (no key string built: `bench/scale_out.py --hop-only` measured 0.7 µs per request here
    /// before, on each instance a forwarded read passes).
    private let instruments = Mutex<[Kind: Instruments]>([:])
    /// The duration timers, one per route (shared by that route's kinds).
    private let timers = Mutex<[String: Metrics.Timer]>([:])
    private let connections: Gauge
    private let streams: Gauge
    private let connectionCount = Atomic<Int>(0)
    private let streamCount = Atomic<Int>(0)

    init(factory: any MetricsFactory) {
        self.factory = factory
        connections = Gauge(label: "browserd_http_connections_open", factory: factory)
        streams = Gauge(label: "browserd_http_streams_open", factory: factory)
        connections.record(0)
        streams.record(0)
    }

    private struct Kind: Hashable {
        let method: String
        let route: String
        let status: Int
    }

    private struct Instruments {
        let counter: Counter
        /// Made with the kind's first answer that is not a stream (streams are not timed).
        var timer: Metrics.Timer?
    }

    func requestCompleted(method: HTTPMethod, route: String?, status: Int, duration: Duration, isStream: Bool) {
        // Keyed by the label, never the raw method: the label space is closed (the server answers 501
        // to other methods before they get here, and any left would share "other").
        let kind = Kind(method: Self.methodLabel(method), route: route ?? "unmatched", status: status)
        let instruments = instruments.withLock { instruments in
            if let known = instruments[kind], isStream || known.timer != nil { return known }
            var made =
                instruments[kind]
                ?? Instruments(
                    counter: Counter(
                        label: "browserd_http_requests_total",
                        dimensions: [("method", kind.method), ("route", kind.route), ("status", String(status))], factory: factory))
            if !isStream { made.timer = timer(for: kind.route) }
            instruments[kind] = made
            return made
        }
        instruments.counter.increment()
        guard !isStream, let timer = instruments.timer else { return }
        timer.record(duration: duration)
    }

    private func timer(for route: String) -> Metrics.Timer {
        timers.withLock { timers in
            if let timer = timers[route] { return timer }
            let timer = Metrics.Timer(
                label: "browserd_http_request_duration_seconds", dimensions: [("route", route)],
                preferredDisplayUnit: .seconds, factory: factory)
            timers[route] = timer
            return timer
        }
    }

    func connectionCountChanged(by delta: Int) {
        let now = connectionCount.add(delta, ordering: .relaxed).newValue
        connections.record(now)
    }

    func streamCountChanged(by delta: Int) {
        let now = streamCount.add(delta, ordering: .relaxed).newValue
        streams.record(now)
    }

    /// Methods outside the standard set share one label, so clients cannot grow the label space.
    private static func methodLabel(_ method: HTTPMethod) -> String {
        switch method.rawValue {
        case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "QUERY": method.rawValue
        default: "other"
        }
    }
}
