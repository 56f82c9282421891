import Foundation

/// What the gateway reads of a message of Chromium's without decoding it: Chromium writes a flat
/// session's `sessionId` as the message's last member (`{"id":1,"result":{…},"sessionId":"…"}`,
/// `{"method":…,"params":{…},"sessionId":"…"}`), an answer's `id` first and an event's `method` first.
/// So a message is routed, and its root session's id taken off, by looking at its two ends: a
/// screenshot's megabytes are never decoded to be passed on.
public enum DevToolsMessage {
    private static let sessionKey = Array(#","sessionId":""#.utf8)

    /// The session a message of Chromium's belongs to (its last member), or nil (the browser's own).
    /// A string's own quotes are escaped (`\"`), so the pattern anchored at the message's last byte is
    /// the outer object's member, never text inside a value.
    public static func trailingSessionID(_ bytes: [UInt8]) -> String? {
        trailingSessionRange(bytes).map { String(decoding: bytes[$0.id], as: UTF8.self) }
    }

    /// The message without its trailing `sessionId` member (unchanged when it has none).
    public static func removingTrailingSessionID(_ bytes: [UInt8]) -> [UInt8] {
        guard let range = trailingSessionRange(bytes) else { return bytes }
        return Array(bytes[..<range.member]) + [UInt8(ascii: "}")]
    }

    /// The `id` of an answer (`{"id":N,…`), nil for an event.
    public static func leadingID(_ bytes: [UInt8]) -> Int? {
        let prefix = Array(#"{"id":"#.utf8)
        guard bytes.count > prefix.count, bytes.starts(with: prefix) else { return nil }
        var value = 0
        var index = prefix.count
        while index < bytes.count, index < prefix.count + 12, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        return index > prefix.count ? value : nil
    }

    /// Whether the message is the event `method` (`{"method":"<method>",…`).
    public static func isEvent(_ bytes: [UInt8], _ method: String) -> Bool {
        eventMethod(bytes)?.elementsEqual(method.utf8) == true
    }

    /// The method of an event (`{"method":"<method>",…`), as its bytes; nil for an answer. Method
    /// names are plain ASCII (`Domain.name`): a quote ends one, there is no escape to read.
    public static func eventMethod(_ bytes: [UInt8]) -> ArraySlice<UInt8>? {
        let prefix = eventPrefix
        guard bytes.count > prefix.count, bytes.starts(with: prefix) else { return nil }
        let start = prefix.count
        guard let end = bytes[start...].prefix(96).firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return bytes[start..<end]
    }
    private static let eventPrefix = Array(#"{"method":""#.utf8)

    /// `message` with `"sessionId":"<session>"` as its last member (a client's command to its
    /// browser session). `message` is an object this process encoded (``JSONValue``).
    public static func addingSessionID(_ session: String, to message: [UInt8]) -> [UInt8] {
        guard let close = message.lastIndex(of: UInt8(ascii: "}")) else { return message }
        let empty = message[..<close].last(where: { $0 != UInt8(ascii: " ") }) == UInt8(ascii: "{")
        return Array(message[..<close]) + (empty ? Array(sessionKey.dropFirst()) : sessionKey) + Array(session.utf8) + Array(#""}"#.utf8)
    }

    /// The range of the trailing member (from its comma) and of the id inside it.
    private static func trailingSessionRange(_ bytes: [UInt8]) -> (member: Int, id: Range<Int>)? {
        let end = bytes.count
        guard end > sessionKey.count + 3, bytes[end - 1] == UInt8(ascii: "}"), bytes[end - 2] == UInt8(ascii: "\"") else { return nil }
        var start = end - 2
        // Chromium's session ids are 32 hexadecimal digits; a browser target's are UUIDs.
        while start > 0, end - 2 - start < 64 {
            let byte = bytes[start - 1]
            let isID =
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "-")
            guard isID else { break }
            start -= 1
        }
        let member = start - sessionKey.count
        guard start < end - 2, member > 0, Array(bytes[member..<start]) == sessionKey else { return nil }
        return (member, start..<(end - 2))
    }
}
