import ArgumentParser
import MiniHTTPClient

/// Probes a running server's `/healthz`, for container health checks (no curl in the image).
struct Healthcheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Exit 0 when the server at BROWSERD_HOST:BROWSERD_PORT answers /healthz with 200.")

    @Option(help: "Address of the server [env: BROWSERD_HOST]; a wildcard bind address probes loopback.")
    var host: String?

    @Option(help: "Port of the server [env: BROWSERD_PORT] (default: 8080).")
    var port: Int?

    @Option(help: "Seconds to wait for the answer.")
    var timeout: Double = 3

    func run() throws {
        var address = try resolve(host, "BROWSERD_HOST", default: "127.0.0.1") { $0 }
        if address == "0.0.0.0" { address = "127.0.0.1" }
        if address == "::" { address = "::1" }
        let port = try resolve(port, "BROWSERD_PORT", default: 8080) { Int($0) }
        do {
            let client = try HTTPClientConnection(host: address, port: port, timeout: .milliseconds(Int64(timeout * 1000)))
            let response = try client.request("GET", "/healthz")
            guard response.status == 200 else {
                print("unhealthy: /healthz answered \(response.status)")
                throw ExitCode.failure
            }
            print("healthy")
        } catch let error as HTTPClientConnection.ClientError {
            print("unhealthy: \(error)")
            throw ExitCode.failure
        }
    }
}
