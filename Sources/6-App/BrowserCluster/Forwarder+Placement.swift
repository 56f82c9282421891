import ClusterCore

/// The forwarder is placement's way to other instances (``relayAtOnce(_:to:)`` and
/// ``forward(_:to:)`` are in Forwarder.swift).
extension Forwarder: PlacementForwarding {
    func refusesConnections(_ url: String) async -> Bool {
        await Self.refusesConnectionsOffThePool(url, within: timing.refusalProbeTimeout)
    }
}
