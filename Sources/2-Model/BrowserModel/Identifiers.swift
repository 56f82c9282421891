/// Makes the opaque identifiers of profiles, windows, tabs, groups and closed-tab entries.
///
/// Identifiers are a one-letter kind prefix and 16 random hex digits (`t3f9a…`). They are stable for
/// an object's life and are what the persistence layer stores.
public enum ModelIdentifier {
    /// A fresh identifier with the given kind prefix.
    public static func make(_ prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return prefix + String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// Declares a string-backed identifier type.
public protocol StringIdentifier: Hashable, Sendable, Comparable, CustomStringConvertible {
    var rawValue: String { get }
    init(rawValue: String)
}

extension StringIdentifier {
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Identifies a tab (`WebState`).
public struct TabID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static func make() -> TabID { TabID(rawValue: ModelIdentifier.make("t")) }
}

/// Identifies a window (`Browser`).
public struct BrowserID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static func make() -> BrowserID { BrowserID(rawValue: ModelIdentifier.make("w")) }
}

/// Identifies a profile (`BrowserState`), regular or off-the-record.
public struct ProfileID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static func make() -> ProfileID { ProfileID(rawValue: ModelIdentifier.make("p")) }
}

/// Identifies a tab group (Chromium's `tab_group_id`).
public struct TabGroupID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static func make() -> TabGroupID { TabGroupID(rawValue: ModelIdentifier.make("g")) }
}

/// Identifies an entry of the recently-closed list.
public struct ClosedTabID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static func make() -> ClosedTabID { ClosedTabID(rawValue: ModelIdentifier.make("c")) }
}
