public import BrowserModel
public import BrowserRecords
import Crypto
public import Foundation
import Synchronization

/// API tokens: the admin token and per-profile tokens. Only SHA-256 hashes are kept; a token is shown
/// once, when it is created. Lookups compare hashes in constant time.
public final class TokenStore: Sendable {
    /// A profile token as stored.
    public struct Record: Sendable, Equatable {
        public let id: String
        public let profileID: ProfileID
        public let hash: [UInt8]
        public let createdAt: Date

        public init(id: String, profileID: ProfileID, hash: [UInt8], createdAt: Date) {
            self.id = id
            self.profileID = profileID
            self.hash = hash
            self.createdAt = createdAt
        }

        /// A token as stored (the one conversion between the store's record and this one).
        public init(_ stored: TokenRecord) {
            self.init(id: stored.id, profileID: ProfileID(rawValue: stored.profileID), hash: stored.hash, createdAt: stored.createdAt)
        }

        /// The token as it is stored.
        public var stored: TokenRecord {
            TokenRecord(id: id, profileID: profileID.rawValue, hash: hash, createdAt: createdAt)
        }
    }

    private let adminHash: [UInt8]?
    private let records = Mutex<[String: Record]>([:])

    /// - Parameter adminToken: the administrator's token; nil turns authentication off.
    public init(adminToken: String?) {
        adminHash = adminToken.map { Self.hash($0) }
    }

    /// Whether requests must carry a token.
    public var isEnabled: Bool { adminHash != nil }

    static func hash(_ token: String) -> [UInt8] { Array(SHA256.hash(data: Array(token.utf8))) }

    /// Whether two byte strings are equal, in time that depends on their length only (for secrets).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// Who `token` belongs to, or nil.
    public func principal(for token: String) -> Principal? { identify(token)?.principal }

    /// Who `token` belongs to and, for a profile token, its id (what revoking it names); nil when unknown.
    public func identify(_ token: String) -> (principal: Principal, tokenID: String?)? {
        if token.hasPrefix(Self.rendererTokenPrefix) {
            guard let name = renderer(of: token) else { return nil }
            return (.renderer(name, holds: rendererHolds.withLock { $0 }?(name) ?? []), nil)
        }
        let hash = Self.hash(token)
        if let adminHash, Self.constantTimeEquals(hash, adminHash) { return (.admin, nil) }
        let all = records.withLock { Array($0.values) }
        var found: (Principal, String?)?
        for record in all where Self.constantTimeEquals(hash, record.hash) { found = (.profile(record.profileID), record.id) }
        return found
    }

    // MARK: Renderer tokens

    /// A renderer's token: `brt_<name>.<HMAC-SHA256 of its name, keyed by the admin token's hash>`.
    /// Derived, never stored: every instance that shares the admin token knows it, and rotating the
    /// admin token revokes them all. It reaches its own registration and the profiles its renderer holds.
    static let rendererTokenPrefix = "brt_"
    private let rendererHolds = Mutex<(@Sendable (String) -> Set<ProfileID>)?>(nil)

    /// Where a renderer token's principal learns which profiles its renderer holds.
    public func holdsOfRenderer(_ holds: @escaping @Sendable (String) -> Set<ProfileID>) { rendererHolds.withLock { $0 = holds } }

    /// The token of the renderer `name` (nil while authentication is off: none is needed).
    public func rendererToken(for name: String) -> String? {
        guard let adminHash else { return nil }
        let code = HMAC<SHA256>.authenticationCode(for: Array("browserd renderer token\n\(name)".utf8), using: SymmetricKey(data: adminHash))
        return Self.rendererTokenPrefix + name + "." + code.map { String(format: "%02x", $0) }.joined()
    }

    /// The renderer a renderer token names, when it is genuine.
    func renderer(of token: String) -> String? {
        let body = token.dropFirst(Self.rendererTokenPrefix.count)
        guard let dot = body.lastIndex(of: "."), dot != body.startIndex, let expected = rendererToken(for: String(body[..<dot])) else { return nil }
        return Self.constantTimeEquals(Array(token.utf8), Array(expected.utf8)) ? String(body[..<dot]) : nil
    }

    /// Told of the ids of tokens that stop being valid (revoked here or elsewhere, or their profile
    /// deleted), so what they opened — streams, tickets — ends with them.
    private let revocationObservers = Mutex<[@Sendable ([String]) -> Void]>([])

    /// Calls `observer` with the ids of tokens each time some stop being valid.
    public func onRevoked(_ observer: @escaping @Sendable ([String]) -> Void) {
        revocationObservers.withLock { $0.append(observer) }
    }

    private func revoked(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        for observer in revocationObservers.withLock({ $0 }) { observer(ids) }
    }

    /// Creates a token for a profile.
    /// - Returns: the record and the token itself (shown once).
    public func create(for profile: ProfileID) -> (record: Record, token: String) {
        var bytes = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = generator.next() }
        let token =
            "bd_"
            + Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let record = Record(id: ModelIdentifier.make("k"), profileID: profile, hash: Self.hash(token), createdAt: Date())
        records.withLock { $0[record.id] = record }
        return (record, token)
    }

    /// The stored record of token `id`.
    public func record(_ id: String) -> Record? { records.withLock { $0[id] } }

    /// Revokes a token of a profile.
    /// - Returns: whether it existed.
    @discardableResult
    public func revoke(_ id: String, of profile: ProfileID) -> Bool {
        let done = records.withLock { records in
            guard records[id]?.profileID == profile else { return false }
            records[id] = nil
            return true
        }
        if done { revoked([id]) }
        return done
    }

    /// Revokes every token of a profile (when it is deleted).
    public func revokeAll(of profile: ProfileID) {
        let ids = records.withLock { records -> [String] in
            let gone = records.values.filter { $0.profileID == profile }.map(\.id)
            for id in gone { records[id] = nil }
            return gone
        }
        revoked(ids)
    }

    /// Forgets a token revoked elsewhere (another instance).
    public func forget(_ id: String) {
        if records.withLock({ $0.removeValue(forKey: id) }) != nil { revoked([id]) }
    }

    /// Takes exactly these records (all tokens stored, read again after missed news of changes).
    public func replaceAll(_ saved: [Record]) {
        let gone = records.withLock { records -> [String] in
            let kept = Dictionary(saved.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
            let gone = records.keys.filter { kept[$0] == nil }
            records = kept
            return gone
        }
        revoked(gone)
    }

    /// Restores stored records.
    public func restore(_ saved: [Record]) {
        records.withLock { records in for record in saved { records[record.id] = record } }
    }
}
