/// A minimal JSON writer for the server's own answers (problems): strings escaped per RFC 8259.
public struct JSONText: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init() { bytes.reserveCapacity(256) }

    public mutating func beginObject() { separator(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }

    public mutating func member(_ key: String, _ value: String) {
        writeKey(key)
        Self.appendString(value, to: &bytes)
        needsComma = true
    }

    public mutating func member(_ key: String, _ value: Int) {
        writeKey(key)
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    private mutating func writeKey(_ key: String) {
        separator()
        Self.appendString(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// Appends `string` as a JSON string literal: quotes, backslashes and control characters escaped.
    public static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
            case 0x0A: out.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
