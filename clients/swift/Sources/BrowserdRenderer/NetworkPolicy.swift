import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An IP address, v4 or v6, as the fence compares them (a value: parsed from text, never resolved).
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    /// Sixteen bytes, network order.
    case v6([UInt8])

    /// A literal address (`127.0.0.1`, `::1`, `[::1]`; `inet_pton`'s forms only, so `2130706433` or
    /// `0x7f.1` are no address: Chromium canonicalises those to dotted quads before they reach the proxy).
    public init?(_ text: String) {
        var literal = text
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        // A zone (`fe80::1%eth0`) names an interface, not another address.
        if let percent = literal.firstIndex(of: "%") { literal = String(literal[..<percent]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, literal, &v6) == 1 else { return nil }
        self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
    }

    /// The IPv4 address an IPv6 one carries for IPv4 (`::ffff:a.b.c.d` mapped, `::a.b.c.d` compatible,
    /// `64:ff9b::a.b.c.d` NAT64): the fence judges it as that IPv4 address.
    public var embeddedV4: UInt32? {
        guard case .v6(let bytes) = self else { return nil }
        let tail = bytes[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let head = bytes[0..<12]
        if head.elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) { return tail }
        if head.allSatisfy({ $0 == 0 }), tail > 1 { return tail }
        if head.elementsEqual([0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]) { return tail }
        // 6to4 (2002:a.b.c.d::/48).
        if bytes[0] == 0x20, bytes[1] == 0x02 { return bytes[2..<6].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        return nil
    }

    public var description: String {
        switch self {
        case .v4(let value): return "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
        case .v6(let bytes):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "?" }
            return "[" + String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "]"
        }
    }
}

/// A range of addresses (`10.0.0.0/8`, `fd00::/8`), as `--allow-network` gives them.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    public let address: IPAddress
    public let prefixLength: Int

    /// `ADDRESS/LENGTH`, or a bare address (a range of one).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let address = IPAddress(first) else { return nil }
        let maximum = if case .v4 = address { 32 } else { 128 }
        let length = parts.count == 2 ? Int(parts[1]) : maximum
        guard let length, (0...maximum).contains(length) else { return nil }
        self.address = address
        prefixLength = length
    }

    init(_ address: IPAddress, _ prefixLength: Int) {
        self.address = address
        self.prefixLength = prefixLength
    }

    public func contains(_ other: IPAddress) -> Bool {
        switch (address, other) {
        case (.v4(let network), .v4(let candidate)):
            guard prefixLength > 0 else { return true }
            let mask = UInt32.max << UInt32(32 - prefixLength)
            return network & mask == candidate & mask
        case (.v6(let network), .v6(let candidate)):
            var remaining = prefixLength
            for index in 0..<16 where remaining > 0 {
                let bits = min(remaining, 8)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                guard network[index] & mask == candidate[index] & mask else { return false }
                remaining -= bits
            }
            return true
        default:
            return false
        }
    }

    public var description: String { "\(address)/\(prefixLength)" }
}

/// What a page may reach, decided on the address a request really goes to (``FencingProxy`` resolves
/// each host once and connects to the address judged here, so no second lookup can differ): the
/// public internet; never this machine or its networks — loopback, unspecified, private, shared
/// (CGNAT), link-local, multicast and their IPv4-in-IPv6 forms — unless the destination's origin is
/// given with `--allow-origin` or its address lies in an `--allow-network` range.
public struct NetworkPolicy: Sendable, Equatable {
    /// A destination the fence lets through although its address is fenced: `host:port` as the
    /// origin names it (lower case, no trailing dot, an IPv6 literal in brackets).
    public var allowedDestinations: Set<String>
    public var allowedNetworks: [IPNetwork]

    public init(allowedOrigins: [String] = [], allowedNetworks: [IPNetwork] = []) {
        allowedDestinations = Set(allowedOrigins.compactMap(Self.destination(ofOrigin:)))
        self.allowedNetworks = allowedNetworks
    }

    /// The ranges no page reaches unless allowed (IPv4-in-IPv6 forms are judged as their IPv4 address).
    public static let fencedNetworks: [IPNetwork] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "168.63.129.16/32", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
        "224.0.0.0/4", "240.0.0.0/4",
        // Unspecified, loopback, IPv4-translated (SIIT), discard, local NAT64, Teredo, documentation,
        // unique local, link-local, site-local, multicast.
        "::/128", "::1/128", "::ffff:0:0:0/96", "100::/64", "64:ff9b:1::/48", "2001::/32", "2001:db8::/32", "fc00::/7", "fe80::/10",
        "fec0::/10", "ff00::/8",
    ].compactMap(IPNetwork.init)

    static let loopbackOrUnspecified: [IPNetwork] = ["127.0.0.0/8", "0.0.0.0/8", "::1/128", "::/128"].compactMap(IPNetwork.init)

    /// Whether `address` is this machine's or a private network's (before any allowance).
    public static func isFenced(_ address: IPAddress) -> Bool {
        if let v4 = address.embeddedV4 { return isFenced(.v4(v4)) }
        return fencedNetworks.contains { $0.contains(address) }
    }

    public enum Decision: Sendable, Equatable {
        /// Connect to these addresses, in this order, until one answers (those the host resolved to
        /// that the page may reach).
        case connect([IPAddress])
        /// Refuse the request; `reason` is for the log.
        case refuse(reason: String)
    }

    /// The decision for a request to `host:port` whose name resolved to `addresses` (in the resolver's
    /// order): the addresses the page may reach. An allowed origin lets every address of its host
    /// through; otherwise a fenced address is skipped (a name that resolves to a public and a private
    /// address reaches only the public one: no rebinding to the private one later).
    /// `localAddresses`: this machine's own interface addresses (a public one too: a service bound to
    /// every address is this machine's), fenced as loopback is. `ownPort`: the fence's own port on
    /// loopback, never reached whatever is allowed (no tunnel through itself).
    ///
    /// An allowed origin is matched by the name the request gives, never by the address a name
    /// resolved to: `--allow-origin http://127.0.0.1:9000` does not let `rebind.example:9000` through
    /// when that name resolves to 127.0.0.1 (DNS rebinding would give a page the service as its own
    /// origin). An `--allow-network` range is matched by address: any name that resolves into it.
    public func decide(
        host: String, port: Int, addresses: [IPAddress], localAddresses: Set<IPAddress> = [], ownPort: Int? = nil
    ) -> Decision {
        guard (1...65535).contains(port) else { return .refuse(reason: "port \(port)") }
        guard !addresses.isEmpty else { return .refuse(reason: "\(host) did not resolve") }
        let name = Self.normalised(host: host)
        func local(_ address: IPAddress) -> Bool {
            localAddresses.contains(address) || address.embeddedV4.map { localAddresses.contains(.v4($0)) } ?? false
        }
        func own(_ address: IPAddress) -> Bool {
            guard port == ownPort else { return false }
            let judged = address.embeddedV4.map { IPAddress.v4($0) } ?? address
            return local(address) || Self.loopbackOrUnspecified.contains { $0.contains(judged) }
        }
        if allowedDestinations.contains("\(name):\(port)") {
            let reachable = addresses.filter { !own($0) }
            return reachable.isEmpty ? .refuse(reason: "the fence's own port") : .connect(reachable)
        }
        let reachable = addresses.filter { address in
            guard !own(address) else { return false }
            return !(Self.isFenced(address) || local(address)) || allowedNetworks.contains(where: { $0.contains(address) })
        }
        if !reachable.isEmpty { return .connect(reachable) }
        return .refuse(reason: "\(name):\(port) is \(addresses.map(\.description).joined(separator: ", ")): this machine or a private network")
    }

    /// A host as the fence names it: lower case, without a trailing dot or brackets' doubt.
    public static func normalised(host: String) -> String {
        var name = host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        if let address = IPAddress(name) { return bracketed(address) }
        return name
    }

    static func bracketed(_ address: IPAddress) -> String { address.description }

    /// `host:port` of an origin (`http://127.0.0.1:8080`; the scheme's default port when none is given).
    static func destination(ofOrigin origin: String) -> String? {
        guard let components = URLComponents(string: origin), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else { return nil }
        let port = components.port ?? (scheme == "https" || scheme == "wss" ? 443 : 80)
        return "\(normalised(host: host)):\(port)"
    }
}
