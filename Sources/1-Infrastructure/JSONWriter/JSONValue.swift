/// A parsed JSON value. Objects keep their members in order; numbers keep whether they were written
/// as integers, so `1.5` is not silently taken for an index.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double, isInteger: Bool)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a, _), .number(let b, _)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// The value of member `key` of an object (nil for another kind of value or a missing member).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var string: String? { if case .string(let value) = self { value } else { nil } }
    public var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    public var double: Double? { if case .number(let value, _) = self { value } else { nil } }
    /// An integer written as one, within `Int`'s range.
    public var int: Int? {
        guard case .number(let value, true) = self, let exact = Int(exactly: value) else { return nil }
        return exact
    }
    public var array: [JSONValue]? { if case .array(let items) = self { items } else { nil } }

    /// The JSON type name, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number(_, let isInteger): isInteger ? "integer" : "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// The one JSON reader of browserd: a strict RFC 8259 parser (UTF-8 only, depth-limited, duplicate
/// keys refused) for request bodies and for everything instances send each other.
public struct JSONParser {
    public struct SyntaxError: Error, Sendable {
        public let message: String
        public let offset: Int
    }

    private let bytes: [UInt8]
    private var position = 0
    private let maxDepth: Int
    /// The top-level member whose array elements' byte ranges are recorded, and the ranges.
    private var spannedKey: String?
    /// Whether the spanned array's elements are kept in the value (else checked and left out).
    private var keepsSpanned = true
    private var currentTopKey: String?
    private var spans: [Range<Int>] = []

    /// Parses a whole document.
    /// - Throws: ``SyntaxError`` saying what is wrong and at which byte.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 32) throws -> JSONValue {
        try parse(bytes, maxDepth: maxDepth, spanning: nil).value
    }

    /// Parses a whole document, and says where each element of the array in top-level member `key`
    /// is written: so a list's items can be passed on as the bytes they are, without writing them again.
    /// - Returns: the value, and the elements' byte ranges in order (empty when there is no such array).
    /// - Parameter keepingSpanned: false leaves the spanned array's elements out of the value (each is
    ///   still checked whole): a large list is then read one element at a time from its span, and the
    ///   document is never held as one tree.
    public static func parse(
        _ bytes: [UInt8], maxDepth: Int = 32, spanning key: String?, keepingSpanned: Bool = true
    ) throws -> (value: JSONValue, spans: [Range<Int>]) {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        parser.spannedKey = key
        parser.keepsSpanned = keepingSpanned
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return (value, parser.spans)
    }

    private init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    private func error(_ message: String) -> SyntaxError { SyntaxError(message: message, offset: position) }

    private mutating func skipWhitespace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    private mutating func parseValue(depth: Int) throws -> JSONValue {
        guard depth <= maxDepth else { throw error("nested deeper than \(maxDepth) levels") }
        guard position < bytes.count else { throw error("unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ word: String) throws {
        let w = Array(word.utf8)
        guard position + w.count <= bytes.count, Array(bytes[position..<(position + w.count)]) == w else {
            throw error("invalid literal")
        }
        position += w.count
    }

    private mutating func parseObject(depth: Int) throws -> JSONValue {
        position += 1
        var members: [(key: String, value: JSONValue)] = []
        var seen = Set<String>()
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object([])
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try parseString()
            guard seen.insert(key).inserted else { throw error("member '\(key)' appears twice") }
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            skipWhitespace()
            if depth == 0 { currentTopKey = key }
            members.append((key, try parseValue(depth: depth + 1)))
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func parseArray(depth: Int) throws -> JSONValue {
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array([])
        }
        let spanned = depth == 1 && spannedKey != nil && currentTopKey == spannedKey
        while true {
            skipWhitespace()
            let start = position
            let item = try parseValue(depth: depth + 1)
            if !spanned || keepsSpanned { items.append(item) }
            if spanned { spans.append(start..<position) }
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(items)
            }
            throw error("expected ',' or ']'")
        }
    }

    private mutating func parseNumber() throws -> JSONValue {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        func digits() -> Int {
            let from = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            return position - from
        }
        let integerStart = position
        guard digits() > 0 else { throw error("invalid number") }
        if bytes[integerStart] == UInt8(ascii: "0"), position - integerStart > 1 { throw error("leading zeros are not allowed") }
        var isInteger = true
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            isInteger = false
            guard digits() > 0 else { throw error("invalid number") }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            isInteger = false
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard digits() > 0 else { throw error("invalid number") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw error("number out of range") }
        return .number(value, isInteger: isInteger)
    }

    private mutating func parseString() throws -> String {
        position += 1
        var out: [UInt8] = []
        while true {
            guard position < bytes.count else { throw error("unterminated string") }
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: out, as: UTF8.self) else { throw error("string is not valid UTF-8") }
                return string
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { throw error("unterminated escape") }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(34)
                case UInt8(ascii: "\\"): out.append(92)
                case UInt8(ascii: "/"): out.append(47)
                case UInt8(ascii: "b"): out.append(8)
                case UInt8(ascii: "f"): out.append(12)
                case UInt8(ascii: "n"): out.append(10)
                case UInt8(ascii: "r"): out.append(13)
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard position + 1 < bytes.count, bytes[position] == 92, bytes[position + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate")
                        }
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw error("unpaired surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape") }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default: throw error("invalid escape")
                }
            case 0..<0x20: throw error("control character in string")
            default: out.append(byte)
            }
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[position]
            position += 1
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - 48)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - 87)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - 55)
            default: throw error("invalid \\u escape")
            }
            value = value * 16 + digit
        }
        return value
    }
}
