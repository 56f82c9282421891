import ClusterCore
import HTTPServer

/// The forwarder is placement's way to other instances.
extension Forwarder: PlacementForwarding {
    func relaysAtOnce(_ request: HTTPRequest, to url: String) -> Bool { relays(request, to: url) }

    func refusesConnections(_ url: String) async -> Bool {
        await Self.refusesConnectionsOffThePool(url, within: timing.refusalProbeTimeout)
    }
}
