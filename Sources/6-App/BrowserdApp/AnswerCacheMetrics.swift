import BrowserServices
import Metrics
import Synchronization

/// The windows' answers kept (`--window-answer-cache-bytes`), read at each scrape:
/// `browserd_window_answers_bytes`, `…_entries`, `…_limit_bytes`, and the reads it served or not since
/// start (`browserd_window_answers_hits_total`, `…_misses_total`, `…_evictions_total`).
final class AnswerCacheMetrics: Sendable {
    private let bytes: Gauge
    private let entries: Gauge
    private let limit: Gauge
    private let hits: Counter
    private let misses: Counter
    private let evictions: Counter
    /// What the counters were told up to the last scrape.
    private let told = Mutex(AnswerCacheStats())

    init(factory: any MetricsFactory) {
        bytes = Gauge(label: "browserd_window_answers_bytes", factory: factory)
        entries = Gauge(label: "browserd_window_answers_entries", factory: factory)
        limit = Gauge(label: "browserd_window_answers_limit_bytes", factory: factory)
        hits = Counter(label: "browserd_window_answers_hits_total", factory: factory)
        misses = Counter(label: "browserd_window_answers_misses_total", factory: factory)
        evictions = Counter(label: "browserd_window_answers_evictions_total", factory: factory)
    }

    func record(_ stats: AnswerCacheStats) {
        bytes.record(Double(stats.bytes))
        entries.record(Double(stats.entries))
        limit.record(Double(stats.limit))
        let before = told.withLock { told in
            defer { told = stats }
            return told
        }
        if stats.hits > before.hits { hits.increment(by: Int64(stats.hits - before.hits)) }
        if stats.misses > before.misses { misses.increment(by: Int64(stats.misses - before.misses)) }
        if stats.evictions > before.evictions { evictions.increment(by: Int64(stats.evictions - before.evictions)) }
    }
}
