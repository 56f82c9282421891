import Foundation

/// What a page may reach on this machine: loopback (browserd's API, a database, anything bound to
/// 127.0.0.1) only at the origins given with `--allow-origin`; everything else as a browser would.
public struct LoopbackPolicy: Sendable, Equatable {
    /// `scheme://host:port`, as `--allow-origin` gives them.
    public var allowedOrigins: Set<String>

    public init(allowedOrigins: [String]) {
        self.allowedOrigins = Set(allowedOrigins.compactMap(Self.origin(of:)))
    }

    /// The URL patterns whose requests the page holds for a decision (`Fetch.enable`); a request
    /// elsewhere is never held.
    public static let patterns: [String] = ["127.", "localhost", "[::1]", "0.0.0.0"].flatMap { host in
        ["http://\(host)*", "https://\(host)*", "ws://\(host)*", "wss://\(host)*"]
    }

    /// Whether a page may send this request.
    public func allows(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let host = components.host?.lowercased() else { return true }
        let loopback =
            host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || host == "[::1]" || host == "0.0.0.0"
            || host.hasPrefix("127.")
        guard loopback else { return true }
        guard let origin = Self.origin(of: url) else { return false }
        return allowedOrigins.contains(origin)
    }

    /// `scheme://host:port` with the scheme's default port spelled out.
    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased()
        else { return nil }
        let port = components.port ?? (scheme == "https" || scheme == "wss" ? 443 : 80)
        let plainHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme == "ws" ? "http" : scheme == "wss" ? "https" : scheme)://\(plainHost):\(port)"
    }
}
