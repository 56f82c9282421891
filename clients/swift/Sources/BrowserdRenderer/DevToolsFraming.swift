import Foundation

/// The DevTools pipe's framing (`--remote-debugging-pipe`): each message is one JSON text followed by
/// a NUL byte. Bytes come in as the pipe gives them; whole messages come out, in order.
public struct DevToolsFraming: Sendable {
    private var pending: [UInt8] = []
    /// Skipping the rest of a message past the limit.
    private var skipping = false
    /// The largest message kept whole (a 1280×800 PNG screenshot is ~70 KB of base64). A longer one is
    /// skipped to its end, and counted: a page can make Chromium send one (a console message, a
    /// binding's payload of its own making), and one page must not end the connection of every page.
    public let maximumMessageBytes: Int
    /// How many messages were skipped for their size.
    public private(set) var skippedMessages = 0

    public init(maximumMessageBytes: Int = 64 << 20) { self.maximumMessageBytes = maximumMessageBytes }

    /// Takes the next bytes read; returns every message they complete.
    public mutating func append(_ bytes: some Collection<UInt8>) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        for byte in bytes {
            if byte == 0 {
                if !skipping { messages.append(pending) }
                skipping = false
                pending.removeAll(keepingCapacity: true)
            } else if !skipping {
                pending.append(byte)
                if pending.count > maximumMessageBytes {
                    skipping = true
                    skippedMessages += 1
                    pending = []
                }
            }
        }
        return messages
    }

    /// One message as written to the pipe: the JSON text and its NUL.
    public static func frame(_ json: [UInt8]) -> [UInt8] { json + [0] }
}
