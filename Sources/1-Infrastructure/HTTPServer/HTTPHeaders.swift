/// An ordered list of header fields with case-insensitive lookup by name.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields in order, names as given.
    public private(set) var fields: [(name: String, value: String)]

    public init() { fields = [] }

    public init(_ fields: [(name: String, value: String)]) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of the field `name`, compared without regard to case.
    public subscript(name: String) -> String? {
        for field in fields where Self.equalsIgnoringCase(field.name, name) { return field.value }
        return nil
    }

    /// Every value of the field `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.equalsIgnoringCase($0.name, name) }.map(\.value)
    }

    /// Appends a field, keeping any earlier one of the same name.
    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name, value))
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { Self.equalsIgnoringCase($0.name, name) }
    }

    public var isEmpty: Bool { fields.isEmpty }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    /// ASCII case-insensitive comparison, the rule for field names (RFC 9110 §5.1).
    public static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        let a = a.utf8
        let b = b.utf8
        guard a.count == b.count else { return false }
        // Native strings (every name here) compare over their bytes, without iterators.
        if let equal = a.withContiguousStorageIfAvailable({ x in b.withContiguousStorageIfAvailable { y in equalsIgnoringCase(x, y) } }),
            let equal
        {
            return equal
        }
        for (x, y) in zip(a, b) where x != y && lowercased(x) != lowercased(y) { return false }
        return true
    }

    private static func equalsIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in 0..<a.count where a[index] != b[index] && lowercased(a[index]) != lowercased(b[index]) { return false }
        return true
    }

    @inline(__always) private static func lowercased(_ byte: UInt8) -> UInt8 { (byte >= 65 && byte <= 90) ? byte + 32 : byte }
}
