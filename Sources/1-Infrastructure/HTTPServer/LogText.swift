/// Client-supplied text made safe for a log line: control characters (C0, DEL, C1) and the Unicode
/// line and paragraph separators are written as `\u{…}` escapes, so no value can start a forged
/// line or rewrite a terminal.
public enum LogText {
    /// `text` with every control character escaped; the same string when there is none (no copy).
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029: true
        default: false
        }
    }
}
