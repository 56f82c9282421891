/// How an instance carries requests to the instance that holds their profile: on its own keep-alive
/// relay (the default), or all through async-http-client (swift-nio), which otherwise carries only event
/// streams and `https` owners. The second exists so that `bench/scale_out.py --hop-only` measures both
/// in one run (`BROWSERD_FORWARD_THROUGH=async-http-client`): the benchmark that keeps the relay.
public enum ForwardingPath: String, Sendable, CaseIterable {
    case relay
    case asyncHTTPClient = "async-http-client"
}
