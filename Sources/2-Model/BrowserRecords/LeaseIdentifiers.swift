/// One running browserd among those sharing a database: leases, notifications and forwarded requests
/// name it (`i` and 16 hex digits, new at every start).
public struct InstanceID: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    /// A new id for this process.
    public static func random() -> InstanceID { InstanceID("i" + String(UInt64.random(in: 0...UInt64.max), radix: 16)) }

    public var description: String { rawValue }
}

/// A lease's epoch: it only grows (each new holder gets the next), and every commit of a profile's
/// changes is fenced by the epoch its writer holds.
public struct LeaseEpoch: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public let value: Int64

    public init(_ value: Int64) { self.value = value }
    public init(integerLiteral value: Int64) { self.value = value }

    public static func < (left: LeaseEpoch, right: LeaseEpoch) -> Bool { left.value < right.value }

    public var description: String { String(value) }
}
