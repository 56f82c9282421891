import Foundation

/// The DevTools pipe's framing (`--remote-debugging-pipe`): each message is one JSON text followed by
/// a NUL byte. Bytes come in as the pipe gives them; whole messages come out, in order.
public struct DevToolsFraming: Sendable {
    private var pending: [UInt8] = []
    /// The largest message kept whole (a 1280×800 PNG screenshot is ~70 KB of base64; a message past
    /// this is a fault of the other side, and the connection ends).
    public let maximumMessageBytes: Int

    public init(maximumMessageBytes: Int = 64 << 20) { self.maximumMessageBytes = maximumMessageBytes }

    public enum Failure: Error, Equatable { case messageTooLarge(Int) }

    /// Takes the next bytes read; returns every message they complete.
    public mutating func append(_ bytes: some Collection<UInt8>) throws(Failure) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        for byte in bytes {
            if byte == 0 {
                messages.append(pending)
                pending.removeAll(keepingCapacity: true)
            } else {
                pending.append(byte)
                if pending.count > maximumMessageBytes { throw .messageTooLarge(pending.count) }
            }
        }
        return messages
    }

    /// One message as written to the pipe: the JSON text and its NUL.
    public static func frame(_ json: [UInt8]) -> [UInt8] { json + [0] }
}
