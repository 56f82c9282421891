import Crypto
import Foundation

/// Proves that a forwarded request comes from an instance that knows the cluster's shared secret,
/// without sending the secret: an HMAC-SHA256 of what the request is (its method, path and body, the
/// forwarding instance and the time), keyed by the secret, in `X-Browserd-Cluster-Proof`.
///
/// Someone who reads the traffic between instances learns no secret; a proof is valid for one
/// request's method, path and body, within ``window`` of its time (so a captured one replays at most
/// that same request as a peer's, briefly). A pure value: tested apart from the sockets.
struct PeerProof: Sendable {
    static let header = "X-Browserd-Cluster-Proof"
    /// How far a proof's time may be from the receiver's clock.
    static let window = 60

    /// The secret's bytes (a `SymmetricKey` is made per use: Crypto's key is not `Sendable`).
    private let secret: [UInt8]

    init(secret: [UInt8]) { self.secret = secret }

    private var key: SymmetricKey { SymmetricKey(data: secret) }

    /// The header's value: `t=<unix seconds>,s=<hex HMAC>`.
    func make(method: String, path: String, body: [UInt8], from instance: String, at seconds: Int) -> String {
        "t=\(seconds),s=" + Self.hex(mac(method: method, path: path, body: body, from: instance, at: seconds))
    }

    /// Whether `value` proves this request (compared in constant time), made within ``window`` of `now`.
    func verify(_ value: String, method: String, path: String, body: [UInt8], from instance: String, now: Int) -> Bool {
        let parts = value.split(separator: ",", maxSplits: 1)
        guard parts.count == 2, parts[0].hasPrefix("t="), parts[1].hasPrefix("s="), let seconds = Int(parts[0].dropFirst(2)),
            abs(now - seconds) <= Self.window, let given = Self.bytes(hex: parts[1].dropFirst(2))
        else {
            return false
        }
        return HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: message(method, path, body, instance, seconds), using: key)
    }

    private func mac(method: String, path: String, body: [UInt8], from instance: String, at seconds: Int) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message(method, path, body, instance, seconds), using: key))
    }

    /// What is signed: every part on a line of its own (none can hold a line break: the method and path
    /// are a request line's, the instance id is `i` and hex), then the body.
    private func message(_ method: String, _ path: String, _ body: [UInt8], _ instance: String, _ seconds: Int) -> [UInt8] {
        var message = Array("browserd-peer-1\n\(seconds)\n\(instance)\n\(method)\n\(path)\n".utf8)
        message.append(contentsOf: body)
        return message
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func bytes(hex: Substring) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
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
