import Foundation

/// Parses and normalises the URLs tabs may show.
///
/// Absolute URLs only, with the schemes `http`, `https`, `about`, `data`, `file` and browserd's own
/// `browserd` (used by routes), at most ``ModelLimits/urlBytes`` long. Scheme and host are lowercased
/// and an empty http(s) path becomes `/`, as Chromium's canonicaliser does.
public enum URLNormalizer {
    public static let allowedSchemes: Set<String> = ["http", "https", "about", "data", "file", "browserd"]

    /// The normalised form of `string`.
    /// - Throws: ``ModelError/invalidURL(_:reason:)`` saying what is wrong.
    public static func normalize(_ string: String, maxBytes: Int = 2 * 1024 * 1024) throws -> String {
        guard !string.isEmpty else { throw ModelError.invalidURL(string, reason: "it is empty") }
        guard string.utf8.count <= maxBytes else {
            throw ModelError.invalidURL(string, reason: "it is longer than \(maxBytes) bytes")
        }
        guard !string.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == " " || $0.value == 0x7F }) else {
            throw ModelError.invalidURL(string, reason: "it contains spaces or control characters")
        }
        guard let colon = string.firstIndex(of: ":") else {
            throw ModelError.invalidURL(string, reason: "it is not absolute (no scheme)")
        }
        let scheme = string[..<colon].lowercased()
        guard let first = scheme.unicodeScalars.first, ("a"..."z").contains(first),
            scheme.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) })
        else { throw ModelError.invalidURL(string, reason: "the scheme is malformed") }
        guard allowedSchemes.contains(scheme) else {
            throw ModelError.invalidURL(string, reason: "scheme '\(scheme)' is not allowed (use \(allowedSchemes.sorted().joined(separator: ", ")))")
        }
        let rest = string[string.index(after: colon)...]
        switch scheme {
        case "about", "data":
            guard !rest.isEmpty else { throw ModelError.invalidURL(string, reason: "nothing follows '\(scheme):'") }
            return scheme + ":" + rest
        default:
            guard let components = URLComponents(string: scheme + ":" + rest) else {
                throw ModelError.invalidURL(string, reason: "it cannot be parsed")
            }
            var normalized = components
            if scheme == "http" || scheme == "https" {
                guard let host = components.host, !host.isEmpty else {
                    throw ModelError.invalidURL(string, reason: "it has no host")
                }
                normalized.host = host.lowercased()
                if normalized.percentEncodedPath.isEmpty { normalized.percentEncodedPath = "/" }
                if let port = components.port, !(1...65_535).contains(port) {
                    throw ModelError.invalidURL(string, reason: "port \(port) is out of range")
                }
            } else if scheme == "browserd" {
                guard let host = components.host, !host.isEmpty else {
                    throw ModelError.invalidURL(string, reason: "a browserd URL names a destination as its host")
                }
                normalized.host = host.lowercased()
            }
            guard let result = normalized.string else { throw ModelError.invalidURL(string, reason: "it cannot be parsed") }
            return result
        }
    }
}
