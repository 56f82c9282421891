/// Media types as the server reads them from `Content-Type`.
public enum MediaType {
    /// Whether a `Content-Type` value names JSON: `application/json` or `application/…+json`, any
    /// case, with or without parameters (`; charset=utf-8`) and spaces around the media type.
    public static func isJSON(_ contentType: String) -> Bool {
        let lower = essence(contentType)
        let prefix = Array("application/".utf8)
        guard lower.starts(with: prefix) else { return false }
        return lower.count == prefix.count + 4 && lower.suffix(4).elementsEqual("json".utf8)
            || lower.count > prefix.count + 5 && lower.suffix(5).elementsEqual("+json".utf8)
    }

    /// Whether a `Content-Type` value is `application/octet-stream` (an uploaded file), as ``isJSON(_:)``
    /// reads it.
    public static func isOctetStream(_ contentType: String) -> Bool {
        essence(contentType).elementsEqual("application/octet-stream".utf8)
    }

    /// Whether a `Content-Type` value is `application/http` (HTTP messages, ``EnclosedPipeline``), any
    /// parameters (`msgtype=request`) aside.
    public static func isHTTP(_ contentType: String) -> Bool {
        essence(contentType).elementsEqual("application/http".utf8)
    }

    /// The type without parameters and surrounding spaces, in lower case.
    private static func essence(_ contentType: String) -> [UInt8] {
        var bytes = Substring(contentType).utf8
        if let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) { bytes = bytes[..<semicolon] }
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = bytes.first, isSpace(first) { bytes = bytes.dropFirst() }
        while let last = bytes.last, isSpace(last) { bytes = bytes.dropLast() }
        return bytes.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
    }
}
