import Foundation

/// Helpers for the contract's `Idempotency-Key` and `If-Match` headers.
public enum Idempotency {
    /// A fresh key for one change: retrying the same change with the same key is answered once.
    public static func newKey() -> String { UUID().uuidString.lowercased() }

    /// The `If-Match` value for a window at `version` (its `version` member): `"v12"`.
    public static func ifMatch(version: Int) -> String { "\"v\(version)\"" }

    /// The window version an `ETag` names (`"v12"`), or nil.
    public static func version(fromETag etag: String?) -> Int? {
        guard var value = etag else { return nil }
        if value.hasPrefix("W/") { value.removeFirst(2) }
        value = value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        guard value.hasPrefix("v") else { return nil }
        return Int(value.dropFirst())
    }
}
