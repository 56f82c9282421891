import Crypto
import Foundation

/// Proves that a forwarded request comes from an instance that knows the cluster's shared secret,
/// without sending the secret: an HMAC-SHA256 of what the request is (its method, path and body, the
/// forwarding instance and the time), keyed by the secret, in `X-Browserd-Cluster-Proof`.
///
/// Someone who reads the traffic between instances learns no secret; a proof is valid for one
/// request's method, path and body, within ``window`` of its time (so a captured one replays at most
/// that same request as a peer's, briefly). A pure value: tested apart from the sockets.
public struct PeerProof: @unchecked Sendable {
    // `@unchecked Sendable`: `inner` and `outer` are set once and never mutated; each proof works on
    // copies of them (Crypto's hashers are copy-on-write: a copy takes a context of its own before its
    // first update), so threads never share a mutable state. Crypto's types do not declare `Sendable`.

    public static let header = "X-Browserd-Cluster-Proof"
    /// How far a proof's time may be from the receiver's clock.
    public static let window = 60

    /// HMAC-SHA256 (RFC 2104) keyed once: the hashers with the inner and outer padded keys already
    /// hashed. A proof copies them and hashes only its message, through `update(bufferPointer:)`:
    /// keying `HMAC<SHA256>` per request and feeding it through `DataProtocol`'s generic path cost
    /// some 4 µs on each instance per forwarded request (perf, `bench/scale_out.py --hop-only`: 17 %
    /// of an owner's CPU per forwarded `GET`). `PeerProofTests` checks it against Crypto's `HMAC`.
    private let inner: SHA256
    private let outer: SHA256

    public init(secret: [UInt8]) {
        let blockSize = 64
        var key = secret.count > blockSize ? Array(SHA256.hash(data: secret)) : secret
        key += [UInt8](repeating: 0, count: blockSize - key.count)
        var inner = SHA256()
        inner.update(data: key.map { $0 ^ 0x36 })
        var outer = SHA256()
        outer.update(data: key.map { $0 ^ 0x5c })
        self.inner = inner
        self.outer = outer
    }

    /// The header's value: `t=<unix seconds>,s=<hex HMAC>`.
    public func make(method: String, path: String, body: [UInt8], from instance: String, at seconds: Int) -> String {
        "t=\(seconds),s=" + Self.hex(mac(method: method, path: path, body: body, from: instance, at: seconds))
    }

    /// Whether `value` proves this request (compared in constant time), made within ``window`` of `now`.
    public func verify(_ value: String, method: String, path: String, body: [UInt8], from instance: String, now: Int) -> Bool {
        var value = value
        return value.withUTF8 { text in
            // "t=<digits>,s=<64 hex digits>"
            guard text.count > 2, text[0] == 116, text[1] == 61 else { return false }
            var index = 2
            var seconds = 0
            while index < text.count, index < 20, (48...57).contains(text[index]) {
                seconds = seconds * 10 + Int(text[index] - 48)
                index += 1
            }
            guard index > 2, index + 3 + 64 == text.count, text[index] == 44, text[index + 1] == 115, text[index + 2] == 61,
                abs(now - seconds) <= Self.window
            else {
                return false
            }
            let digest = mac(method: method, path: path, body: body, from: instance, at: seconds)
            return digest.withUnsafeBytes { expected in
                // Every byte compared, whatever differs first.
                var difference: UInt8 = 0
                var valid = true
                for offset in 0..<32 {
                    guard let high = Self.nibble(text[index + 3 + 2 * offset]), let low = Self.nibble(text[index + 4 + 2 * offset]) else {
                        valid = false
                        continue
                    }
                    difference |= (high << 4 | low) ^ expected[offset]
                }
                return valid && difference == 0
            }
        }
    }

    /// HMAC-SHA256 of `message` under `secret`, as a proof computes it (for tests).
    static func hmac(secret: [UInt8], message: [UInt8]) -> [UInt8] {
        Array(PeerProof(secret: secret).code(message, []))
    }

    /// The HMAC of `head` followed by `body`.
    private func code(_ head: [UInt8], _ body: [UInt8]) -> SHA256.Digest {
        var hasher = inner
        head.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        body.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        let innerDigest = hasher.finalize()
        var outer = outer
        innerDigest.withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize()
    }

    /// What is signed: every part on a line of its own (none can hold a line break: the method and path
    /// are a request line's, the instance id is `i` and hex), then the body.
    private func mac(method: String, path: String, body: [UInt8], from instance: String, at seconds: Int) -> SHA256.Digest {
        var message: [UInt8] = []
        message.reserveCapacity(48 + instance.utf8.count + method.utf8.count + path.utf8.count)
        message.append(contentsOf: "browserd-peer-1\n".utf8)
        message.append(contentsOf: String(seconds).utf8)
        message.append(10)
        message.append(contentsOf: instance.utf8)
        message.append(10)
        message.append(contentsOf: method.utf8)
        message.append(10)
        message.append(contentsOf: path.utf8)
        message.append(10)
        return code(message, body)
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 48 + nibble : 87 + nibble }
        return String(unsafeUninitializedCapacity: 2 * bytes.underestimatedCount + 64) { text in
            var index = 0
            for byte in bytes where index + 1 < text.count {
                text[index] = digit(byte >> 4)
                text[index + 1] = digit(byte & 15)
                index += 2
            }
            return index
        }
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 48...57: digit - 48
        case 97...102: digit - 87
        case 65...70: digit - 55
        default: nil
        }
    }
}
