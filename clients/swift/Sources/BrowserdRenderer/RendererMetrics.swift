import BrowserdClient
import Foundation
import HTTPTypes
public import OpenAPIRuntime
public import Prometheus

/// What a renderer counts (Prometheus, at its status port's `/metrics`): profiles held and running,
/// live pages, Chromium starts, reports browserd refused as fenced, failed renewals, and how long
/// browserd takes to answer a report.
public final class RendererMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    public let profilesHeld: Gauge
    public let profilesRunning: Gauge
    public let livePages: Gauge
    public let chromiumStarts: Counter
    public let fencedReports: Counter
    public let renewalFailures: Counter
    public let reportSeconds: DurationHistogram
    public let webStateSaves: Counter

    public init() {
        profilesHeld = registry.makeGauge(name: "browserd_renderer_profiles_held", help: "Profiles browserd gave this renderer.")
        profilesRunning = registry.makeGauge(name: "browserd_renderer_profiles_running", help: "Profiles whose Chromium runs now.")
        livePages = registry.makeGauge(name: "browserd_renderer_live_pages", help: "Tabs with a live page now, across the profiles.")
        chromiumStarts = registry.makeCounter(name: "browserd_renderer_chromium_starts_total", help: "Chromium processes started (restarts included).")
        fencedReports = registry.makeCounter(
            name: "browserd_renderer_fenced_reports_total", help: "Reports browserd refused because another renderer holds the profile now.")
        webStateSaves = registry.makeCounter(
            name: "browserd_renderer_web_state_saves_total", help: "Times a profile's changed web state (cookies, localStorage) was saved at browserd.")
        renewalFailures = registry.makeCounter(name: "browserd_renderer_renewal_failures_total", help: "Registrations or renewals that failed.")
        reportSeconds = registry.makeDurationHistogram(
            name: "browserd_renderer_report_seconds",
            buckets: [
                .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
            ],
            help: "From a request to browserd (a report, a read) to its answer's head.")
    }

    /// The exposition (Prometheus' text format).
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    /// A middleware that times each request to browserd (not the event streams: they last).
    public var timing: ReportTiming { ReportTiming(histogram: reportSeconds) }
}

/// Times each request to browserd into a histogram (``RendererMetrics/reportSeconds``).
public struct ReportTiming: ClientMiddleware {
    let histogram: DurationHistogram

    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard operationID != "watchWindow", operationID != "watchProfile" else { return try await next(request, body, baseURL) }
        let start = ContinuousClock.now
        let answer = try await next(request, body, baseURL)
        histogram.record(ContinuousClock.now - start)
        return answer
    }
}
