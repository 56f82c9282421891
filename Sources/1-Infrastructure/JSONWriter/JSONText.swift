/// A small, fast JSON writer: objects, arrays, strings escaped per RFC 8259, numbers, booleans, null.
///
/// Callers write keys and values in order; the writer places commas. Faster than Foundation's
/// `JSONEncoder` for the server's answers, with no reflection: `JSONBench` measures both on a tab
/// (`make bench`).
public struct JSONText: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    // MARK: Structure

    public mutating func beginObject() {
        separator()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }
    public mutating func beginArray() {
        separator()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes a key; the next value or begin call is its value.
    public mutating func key(_ key: String) {
        separator()
        Self.appendString(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    // MARK: Values

    public mutating func value(_ value: String) {
        separator()
        Self.appendString(value, to: &bytes)
        needsComma = true
    }
    public mutating func value(_ value: Int) {
        separator()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }
    public mutating func value(_ value: Bool) {
        separator()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }
    public mutating func null() {
        separator()
        bytes.append(contentsOf: "null".utf8)
        needsComma = true
    }

    /// A finite number (integers without a fraction); non-finite values become null.
    public mutating func value(_ value: Double) {
        guard value.isFinite else {
            null()
            return
        }
        separator()
        if value == value.rounded(), abs(value) < 1e15 {
            bytes.append(contentsOf: String(Int64(value)).utf8)
        } else {
            bytes.append(contentsOf: String(value).utf8)
        }
        needsComma = true
    }

    /// Already-encoded JSON.
    public mutating func raw(_ json: [UInt8]) {
        separator()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    // MARK: Members

    public mutating func member(_ key: String, _ value: String) {
        self.key(key)
        self.value(value)
    }
    public mutating func member(_ key: String, _ value: Int) {
        self.key(key)
        self.value(value)
    }
    public mutating func member(_ key: String, _ value: Bool) {
        self.key(key)
        self.value(value)
    }
    public mutating func member(_ key: String, _ value: Double) {
        self.key(key)
        self.value(value)
    }
    public mutating func member(_ key: String, _ value: String?) {
        self.key(key)
        if let value { self.value(value) } else { null() }
    }

    private mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// Appends `string` as a JSON string literal: quotes, backslashes and control characters escaped.
    public static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (ids, URLs, keys) need no escape: copy their bytes in one go.
        let clean = string.utf8.withContiguousStorageIfAvailable { bytes in
            !bytes.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        }
        if clean == true {
            out.append(contentsOf: string.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        let hex: StaticString = "0123456789abcdef"
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
            case 0x0A: out.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<0x20:
                hex.withUTF8Buffer { digits in
                    out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, digits[Int(byte >> 4)], digits[Int(byte & 15)]])
                }
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
