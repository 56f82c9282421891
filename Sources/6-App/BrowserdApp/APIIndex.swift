import Foundation
import HTTPServer

/// The document at `GET /v1`: what this server is, its limits, and where its resources are.
/// Encoded once at start-up; the answer never changes while the process runs.
struct APIIndex: Encodable {
    struct Limits: Encodable {
        let maxBodyBytes: Int
        let idleTimeoutSeconds: Int
        let connectionLimit: Int
    }

    struct Link: Encodable {
        let rel: String
        let href: String
        let method: String
        let description: String
    }

    let name = BuildInfo.name
    let version = BuildInfo.version
    let apiVersion = "v1"
    let contract = "/openapi.yaml"
    let limits: Limits
    let links: [Link] = [
        Link(rel: "self", href: "/v1", method: "GET", description: "This index."),
        Link(rel: "health", href: "/healthz", method: "GET", description: "Liveness: the process answers."),
        Link(rel: "readiness", href: "/readyz", method: "GET", description: "Readiness: start-up work is done and dependencies are healthy."),
        Link(rel: "metrics", href: "/metrics", method: "GET", description: "Prometheus metrics, all prefixed browserd_."),
        Link(rel: "contract", href: "/openapi.yaml", method: "GET", description: "The OpenAPI 3.1 contract of every endpoint."),
    ]

    init(configuration: BrowserdConfiguration) {
        limits = Limits(
            maxBodyBytes: configuration.server.maxBodyBytes,
            idleTimeoutSeconds: configuration.server.idleTimeoutSeconds,
            connectionLimit: configuration.server.connectionLimit)
    }

    var jsonBytes: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data("{}".utf8))
    }
}
