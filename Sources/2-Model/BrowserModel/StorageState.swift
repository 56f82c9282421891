/// A profile's web state, as Playwright's `storageState` holds it (issue 52): its cookies (every
/// attribute Chromium keeps) and each origin's localStorage. A value of the profile (``BrowserState``):
/// durable with it, counted in its byte budget, moved and exported with it; the off-the-record
/// profile's is held in memory only. Its order is kept as given (a document round-trips unchanged).
///
/// ``check()`` holds it to Chromium's own limits (``Limits``), naming the first member past one.
public struct StorageState: Sendable, Equatable {
    public var cookies: [Cookie]
    public var origins: [Origin]

    public init(cookies: [Cookie] = [], origins: [Origin] = []) {
        self.cookies = cookies
        self.origins = origins
    }

    public static let empty = StorageState()
    public var isEmpty: Bool { cookies.isEmpty && origins.isEmpty }

    /// A cookie (Chromium's `CanonicalCookie`, in Playwright's names).
    public struct Cookie: Sendable, Equatable {
        public var name: String
        public var value: String
        /// A host (`example.com`: a host-only cookie) or a domain (`.example.com`).
        public var domain: String
        public var path: String
        /// Seconds since 1970 (-1: a session cookie).
        public var expires: Double
        public var httpOnly: Bool
        public var secure: Bool
        public var sameSite: SameSite
        /// The top-level site of a partitioned (CHIPS) cookie, e.g. `https://example.com`.
        public var partitionKey: String?
        /// Chromium's partition detail Playwright carries as `_crHasCrossSiteAncestor`.
        public var hasCrossSiteAncestor: Bool?

        public init(
            name: String, value: String, domain: String, path: String = "/", expires: Double = -1, httpOnly: Bool = false,
            secure: Bool = false, sameSite: SameSite = .lax, partitionKey: String? = nil, hasCrossSiteAncestor: Bool? = nil
        ) {
            self.name = name
            self.value = value
            self.domain = domain
            self.path = path
            self.expires = expires
            self.httpOnly = httpOnly
            self.secure = secure
            self.sameSite = sameSite
            self.partitionKey = partitionKey
            self.hasCrossSiteAncestor = hasCrossSiteAncestor
        }

        /// The registrable part Chromium counts cookies per (the domain without a leading dot).
        public var countedDomain: Substring { domain.hasPrefix(".") ? domain.dropFirst() : domain[...] }
    }

    public enum SameSite: String, Sendable, CaseIterable {
        case strict = "Strict"
        case lax = "Lax"
        case none = "None"
    }

    /// One origin's localStorage, its items in order.
    public struct Origin: Sendable, Equatable {
        /// A serialized origin: `http(s)://host[:port]`.
        public var origin: String
        public var localStorage: [Item]

        public init(origin: String, localStorage: [Item]) {
            self.origin = origin
            self.localStorage = localStorage
        }

        /// The bytes Chromium's quota counts: keys and values in UTF-16.
        public var quotaBytes: Int { localStorage.reduce(0) { $0 + 2 * ($1.name.utf16.count + $1.value.utf16.count) } }
    }

    public struct Item: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Chromium's limits on what a profile's web state may hold.
    public struct Limits: Sendable, Equatable {
        /// A cookie's name and value together (`kMaxCookieNamePlusValueSize`).
        public var cookieBytes = 4096
        /// A cookie's domain or path, or a partition key (`kMaxCookieAttributeValueSize`).
        public var attributeBytes = 1024
        /// Cookies per domain (`kDomainMaxCookies`).
        public var cookiesPerDomain = 180
        /// Cookies in all (`kMaxCookies`).
        public var cookies = 3300
        /// One origin's localStorage, keys and values in UTF-16 bytes (`kPerStorageAreaQuota`).
        public var localStorageBytes = 10 * 1024 * 1024
        /// Origins with localStorage (browserd's bound, not Chromium's: the byte budget bounds the rest).
        public var origins = 10_000

        public init() {}
    }

    /// About the bytes it holds: its text in UTF-8, and a little per cookie and item (what the
    /// profile's byte budget is charged).
    public var byteCount: Int {
        var bytes = 0
        for cookie in cookies {
            bytes +=
                48 + cookie.name.utf8.count + cookie.value.utf8.count + cookie.domain.utf8.count + cookie.path.utf8.count
                + (cookie.partitionKey?.utf8.count ?? 0)
        }
        for origin in origins {
            bytes += 16 + origin.origin.utf8.count
            for item in origin.localStorage { bytes += 8 + item.name.utf8.count + item.value.utf8.count }
        }
        return bytes
    }

    /// Holds it to `limits`. - Throws: ``ModelError/invalidStorageState(member:reason:)`` naming the
    /// first member (`cookies[3].value`, `origins[0].localStorage`) past a limit or malformed.
    public func check(_ limits: Limits = Limits()) throws {
        func fail(_ member: String, _ reason: String) -> ModelError { .invalidStorageState(member: member, reason: reason) }
        guard cookies.count <= limits.cookies else {
            throw fail("cookies", "holds \(cookies.count) cookies; Chromium keeps at most \(limits.cookies)")
        }
        var perDomain: [Substring: Int] = [:]
        var seen = Set<String>()
        for (index, cookie) in cookies.enumerated() {
            let at = "cookies[\(index)]"
            guard cookie.name.utf8.count + cookie.value.utf8.count <= limits.cookieBytes else {
                throw fail(
                    "\(at).value", "name and value hold \(cookie.name.utf8.count + cookie.value.utf8.count) bytes; Chromium keeps at most \(limits.cookieBytes)")
            }
            if let bad = Self.badCookieText(cookie.name) { throw fail("\(at).name", bad) }
            if let bad = Self.badCookieText(cookie.value) { throw fail("\(at).value", bad) }
            guard !(cookie.name.isEmpty && cookie.value.isEmpty) else { throw fail("\(at).name", "a cookie with neither a name nor a value is not kept") }
            guard !cookie.domain.isEmpty, cookie.domain.utf8.count <= limits.attributeBytes, Self.isDomain(cookie.domain) else {
                throw fail("\(at).domain", "must be a host or a .domain of at most \(limits.attributeBytes) bytes (letters, digits, '-', '.', ':' and [] for IPv6)")
            }
            guard cookie.path.hasPrefix("/"), cookie.path.utf8.count <= limits.attributeBytes, Self.badCookieText(cookie.path) == nil, !cookie.path.contains(";")
            else {
                throw fail("\(at).path", "must start with / and hold at most \(limits.attributeBytes) bytes, with no control character or ';'")
            }
            guard cookie.expires == -1 || (cookie.expires.isFinite && cookie.expires > 0) else {
                throw fail("\(at).expires", "must be -1 (a session cookie) or seconds since 1970")
            }
            if cookie.sameSite == .none && !cookie.secure {
                throw fail("\(at).sameSite", "None needs secure: true (Chromium refuses a SameSite=None cookie that is not Secure)")
            }
            if let key = cookie.partitionKey {
                guard key.utf8.count <= limits.attributeBytes, Self.isSite(key) else {
                    throw fail("\(at).partitionKey", "must be a top-level site (https://example.com) of at most \(limits.attributeBytes) bytes")
                }
                guard cookie.secure else { throw fail("\(at).partitionKey", "a partitioned cookie must be secure") }
            }
            let identity = "\(cookie.name)\u{0}\(cookie.domain)\u{0}\(cookie.path)\u{0}\(cookie.partitionKey ?? "")"
            guard seen.insert(identity).inserted else {
                throw fail(at, "repeats an earlier cookie's name, domain, path and partition (Chromium keeps one)")
            }
            perDomain[cookie.countedDomain, default: 0] += 1
            guard perDomain[cookie.countedDomain, default: 0] <= limits.cookiesPerDomain else {
                throw fail(at, "is cookie \(limits.cookiesPerDomain + 1) of domain \(cookie.countedDomain); Chromium keeps at most \(limits.cookiesPerDomain) per domain")
            }
        }
        guard origins.count <= limits.origins else {
            throw fail("origins", "holds \(origins.count) origins; browserd keeps at most \(limits.origins)")
        }
        var origins = Set<String>()
        for (index, origin) in self.origins.enumerated() {
            let at = "origins[\(index)]"
            guard Self.isSite(origin.origin), origin.origin.utf8.count <= limits.attributeBytes else {
                throw fail("\(at).origin", "must be a serialized origin: http(s)://host[:port], no path")
            }
            guard origins.insert(origin.origin).inserted else { throw fail("\(at).origin", "repeats an earlier origin") }
            guard origin.quotaBytes <= limits.localStorageBytes else {
                throw fail(
                    "\(at).localStorage", "holds \(origin.quotaBytes) bytes (UTF-16); Chromium's quota per origin is \(limits.localStorageBytes)")
            }
            var names = Set<String>()
            for (item, entry) in origin.localStorage.enumerated() where !names.insert(entry.name).inserted {
                throw fail("\(at).localStorage[\(item)].name", "repeats an earlier item's name")
            }
        }
    }

    /// Why `text` cannot be in a cookie's name, value or path (Chromium refuses control characters).
    static func badCookieText(_ text: String) -> String? {
        for scalar in text.unicodeScalars where scalar.value < 0x20 || scalar.value == 0x7F {
            return "holds a control character (U+\(String(scalar.value, radix: 16, uppercase: true))), which Chromium refuses"
        }
        return nil
    }

    static func isDomain(_ domain: String) -> Bool {
        let host = domain.hasPrefix(".") ? domain.dropFirst() : domain[...]
        guard !host.isEmpty else { return false }
        return host.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "-", ".", "_", ":", "[", "]": true
            default: false
            }
        }
    }

    /// Whether `text` is `http(s)://host[:port]` (a serialized origin or a top-level site).
    static func isSite(_ text: String) -> Bool {
        let rest: Substring
        if text.hasPrefix("https://") {
            rest = text.dropFirst(8)
        } else if text.hasPrefix("http://") {
            rest = text.dropFirst(7)
        } else {
            return false
        }
        guard !rest.isEmpty, !rest.contains("/") else { return false }
        var host = rest
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            let port = rest[rest.index(after: colon)...]
            guard let number = Int(port), (1...65_535).contains(number) else { return false }
            host = rest[..<colon]
        }
        return isDomain(String(host)) && !host.hasPrefix(".")
    }
}
