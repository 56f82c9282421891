import HTTPServer
import Prometheus

/// The operations endpoints: liveness, readiness, metrics, the contract and the API index.
/// They need no token and carry no tenant data.
struct OperationsRoutes {
    let readiness: Readiness
    let registry: PrometheusCollectorRegistry
    let configuration: BrowserdConfiguration
    /// Gauges read at scrape time (open event streams, …).
    var beforeScrape: @Sendable () -> Void = {}

    func register(in router: inout Router) {
        let healthy = HTTPResponse.json(Array(#"{"status":"ok"}"#.utf8), headers: ["Cache-Control": "no-store"])
        router.get("/healthz") { _ in healthy }

        let readiness = self.readiness
        router.get("/readyz") { _ in
            let blockers = readiness.blockers
            if blockers.isEmpty {
                return .json(Array(#"{"status":"ready"}"#.utf8), headers: ["Cache-Control": "no-store"])
            }
            var json = JSONText()
            json.beginObject()
            json.member("status", "unavailable")
            for blocker in blockers { json.member(blocker.component, blocker.reason) }
            json.endObject()
            return .json(json.bytes, status: 503, headers: ["Cache-Control": "no-store", "Retry-After": "1"])
        }

        let registry = self.registry
        let beforeScrape = self.beforeScrape
        router.get("/metrics") { _ in
            beforeScrape()
            return HTTPResponse(
                status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: registry.emitToBuffer(),
                headers: ["Cache-Control": "no-store"])
        }

        let contract = HTTPResponse(status: 200, contentType: "application/yaml", body: EmbeddedFiles.openapiYAML)
        router.get("/openapi.yaml") { _ in contract }

        let index = HTTPResponse.json(APIIndex(configuration: configuration).jsonBytes)
        router.get("/v1") { _ in index }
    }
}
