import Foundation

/// A JSON value, as the DevTools protocol sends and takes them: Sendable, so messages cross tasks.
public enum JSONValue: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var int: Int? {
        if case .number(let value) = self, value.rounded() == value, abs(value) < 1e15 { return Int(value) }
        return nil
    }

    public var double: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

/// A JSON reader and writer for DevTools messages, faster than `JSONDecoder`/`JSONEncoder` through
/// `Codable` (which tries each type in turn, and throws for each miss): the gateway reads and writes
/// every command of its clients, the connection every message of Chromium's. Strict: one value, no
/// trailing bytes, strings of valid UTF-16 escapes, at most ``maximumDepth`` levels (a hostile
/// client's deeply nested message is refused, not a stack overflow).
extension JSONValue {
    public struct ParseError: Error, Equatable {
        public var offset: Int
    }

    public static let maximumDepth = 256

    /// The value `bytes` hold.
    public static func parse(_ bytes: some Collection<UInt8>) throws(ParseError) -> JSONValue {
        let bytes = Array(bytes)
        return try bytes.withUnsafeBufferPointer { buffer throws(ParseError) in
            var reader = Reader(bytes: buffer)
            let value = try reader.value(depth: 0)
            reader.skipSpace()
            guard reader.offset == buffer.count else { throw ParseError(offset: reader.offset) }
            return value
        }
    }

    /// The JSON text of the value (object members in order of their names: the same value is the same bytes).
    public var serialized: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(into: &out)
        return out
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .number(let number):
            if number.rounded() == number, abs(number) < 1e15 { out += Array(String(Int64(number)).utf8) } else { out += Array("\(number)".utf8) }
        case .string(let text): Self.write(text, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(key, into: &out)
                out.append(UInt8(ascii: ":"))
                members[key]!.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private static func write(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var offset = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while offset < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[offset]) { offset += 1 }
        }

        func fail() -> ParseError { ParseError(offset: offset) }

        mutating func value(depth: Int) throws(ParseError) -> JSONValue {
            guard depth < JSONValue.maximumDepth else { throw fail() }
            skipSpace()
            guard offset < bytes.count else { throw fail() }
            switch bytes[offset] {
            case UInt8(ascii: "{"):
                offset += 1
                var members: [String: JSONValue] = [:]
                skipSpace()
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
                    offset += 1
                    return .object(members)
                }
                while true {
                    skipSpace()
                    guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw fail() }
                    let key = try string()
                    skipSpace()
                    guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw fail() }
                    offset += 1
                    // A name twice is refused: what reads it later might take the other one.
                    guard members.updateValue(try value(depth: depth + 1), forKey: key) == nil else { throw fail() }
                    skipSpace()
                    guard offset < bytes.count else { throw fail() }
                    if bytes[offset] == UInt8(ascii: ",") {
                        offset += 1
                        continue
                    }
                    guard bytes[offset] == UInt8(ascii: "}") else { throw fail() }
                    offset += 1
                    return .object(members)
                }
            case UInt8(ascii: "["):
                offset += 1
                var items: [JSONValue] = []
                skipSpace()
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
                    offset += 1
                    return .array(items)
                }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard offset < bytes.count else { throw fail() }
                    if bytes[offset] == UInt8(ascii: ",") {
                        offset += 1
                        continue
                    }
                    guard bytes[offset] == UInt8(ascii: "]") else { throw fail() }
                    offset += 1
                    return .array(items)
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default: return try number()
            }
        }

        mutating func literal(_ text: StaticString, _ value: JSONValue) throws(ParseError) -> JSONValue {
            let count = text.utf8CodeUnitCount
            guard offset + count <= bytes.count else { throw fail() }
            for index in 0..<count where bytes[offset + index] != text.utf8Start[index] { throw fail() }
            offset += count
            return value
        }

        mutating func number() throws(ParseError) -> JSONValue {
            let start = offset
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            let digits = offset
            while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1 }
            guard offset > digits else { throw fail() }
            while offset < bytes.count,
                [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-")].contains(bytes[offset])
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset])
            {
                offset += 1
            }
            guard let number = Double(String(decoding: bytes[start..<offset], as: UTF8.self)), number.isFinite else { throw ParseError(offset: start) }
            return .number(number)
        }

        mutating func string() throws(ParseError) -> String {
            offset += 1  // the opening quote
            var scalars: [UInt8] = []
            var run = offset
            while offset < bytes.count {
                let byte = bytes[offset]
                if byte == UInt8(ascii: "\"") {
                    scalars += bytes[run..<offset]
                    offset += 1
                    guard let text = String(validating: scalars, as: UTF8.self) else { throw fail() }
                    return text
                }
                guard byte >= 0x20 else { throw fail() }
                if byte != UInt8(ascii: "\\") {
                    offset += 1
                    continue
                }
                scalars += bytes[run..<offset]
                offset += 1
                guard offset < bytes.count else { throw fail() }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var unit = try hex4()
                    if (0xD800..<0xDC00).contains(unit) {
                        guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else { throw fail() }
                        offset += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail() }
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(unit) {
                        throw fail()
                    }
                    guard let scalar = Unicode.Scalar(unit) else { throw fail() }
                    scalars += Array(String(Character(scalar)).utf8)
                default: throw fail()
                }
                run = offset
            }
            throw fail()
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard offset + 4 <= bytes.count else { throw fail() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[offset]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw fail()
                }
                value = value * 16 + digit
                offset += 1
            }
            return value
        }
    }
}
