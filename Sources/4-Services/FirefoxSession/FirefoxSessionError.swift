/// Why a file is not a Firefox session browserd can read; each says what is wrong.
public enum FirefoxSessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The body does not start with `mozLz40\0` (and is not sent as JSON).
    case badMagic
    /// The header or the LZ4 block stops early, or the block is malformed.
    case truncated(String)
    /// The header claims more decoded bytes than accepted.
    case tooLarge(claimed: Int, limit: Int)
    /// The header's size and the block's disagree.
    case sizeMismatch(String)
    /// The decoded text is not JSON: what and at which byte.
    case json(String, offset: Int)
    /// The JSON is not a session's: where (`windows[0].tabs`) and what.
    case shape(at: String, String)

    public var description: String {
        switch self {
        case .badMagic: "the file does not start with Firefox's mozLz4 magic \"mozLz40\\0\" (send a .jsonlz4 file, or its JSON as application/json)"
        case .truncated(let detail): detail
        case .tooLarge(let claimed, let limit): "the header claims \(claimed) decoded bytes; at most \(limit) are accepted"
        case .sizeMismatch(let detail): detail
        case .json(let message, let offset): "the session is not JSON: \(message) at byte \(offset)"
        case .shape(let at, let detail): "\(at): \(detail)"
        }
    }
}
