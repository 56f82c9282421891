/// Refuses state-changing requests a browser marks as coming from another origin, as Go 1.25's
/// `http.CrossOriginProtection` does (Filippo Valsorda's "CSRF" design): a pure decision on a
/// request's method and headers, unit-tested apart from the server that carries it out.
///
/// - `GET`, `HEAD` and `OPTIONS` are safe: always allowed.
/// - `Sec-Fetch-Site` (sent by every current browser): `same-origin` and `none` (typed by the user)
///   are allowed; `cross-site` and `same-site` are refused unless their `Origin` is trusted.
/// - Without it, an `Origin` that names the request's own host, or a trusted origin, is allowed;
///   any other `Origin` is refused.
/// - A request with neither header did not come from a browser page (curl, SDKs, other servers):
///   allowed. So a bodyless `curl -X POST …/activate` works, and no web page can change state.
public struct CrossOriginProtection: Sendable {
    /// Origins another site may send from (those CORS allows): a browser UI on another origin.
    public var trusts: @Sendable (_ origin: String) -> Bool

    public init(trusting trusts: @escaping @Sendable (_ origin: String) -> Bool = { _ in false }) {
        self.trusts = trusts
    }

    /// What the protection decides for one request.
    public enum Verdict: Equatable, Sendable {
        case allowed
        /// Refused: why, said for the client.
        case refused(String)
    }

    /// Judges a request from its method, `Sec-Fetch-Site`, `Origin` and `Host`.
    public func judge(method: HTTPMethod, secFetchSite: String?, origin: String?, host: String?) -> Verdict {
        switch method {
        case .get, .head, .options: return .allowed
        default: break
        }
        if let site = secFetchSite?.lowercased() {
            if site == "same-origin" || site == "none" { return .allowed }
            if let origin, trusts(origin) { return .allowed }
            return .refused("The browser marked this request as sent from another site (Sec-Fetch-Site: \(site.prefix(32))).")
        }
        guard let origin else { return .allowed }
        if trusts(origin) || Self.host(of: origin) == host?.lowercased() { return .allowed }
        return .refused("The request was sent from another origin (\(origin.prefix(128))).")
    }

    /// The `host[:port]` of an origin (`scheme://host[:port]`), lowercased; nil for `null` or a malformed one.
    static func host(of origin: String) -> String? {
        guard let range = origin.range(of: "://") else { return nil }
        let rest = origin[range.upperBound...]
        guard !rest.isEmpty, !rest.contains("/") else { return nil }
        return rest.lowercased()
    }
}
