/// Media types as the server reads them from `Content-Type`.
public enum MediaType {
    /// Whether a `Content-Type` value names JSON: `application/json` or `application/…+json`, any
    /// case, with or without parameters (`; charset=utf-8`) and spaces around the media type.
    public static func isJSON(_ contentType: String) -> Bool {
        var bytes = Substring(contentType).utf8
        if let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) { bytes = bytes[..<semicolon] }
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = bytes.first, isSpace(first) { bytes = bytes.dropFirst() }
        while let last = bytes.last, isSpace(last) { bytes = bytes.dropLast() }
        let lower = bytes.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        let prefix = Array("application/".utf8)
        guard lower.starts(with: prefix) else { return false }
        return lower.count == prefix.count + 4 && lower.suffix(4).elementsEqual("json".utf8)
            || lower.count > prefix.count + 5 && lower.suffix(5).elementsEqual("+json".utf8)
    }
}
