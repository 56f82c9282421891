import HTTPServer
import Synchronization

/// The event streams open under each profile token, so that revoking a token ends them at once
/// (a revoked token must not go on receiving what it no longer may read).
final class TokenStreams: Sendable {
    private let streams = Mutex<[String: [ObjectIdentifier: StreamWriter]]>([:])

    /// Keeps `writer` under `token` until it closes.
    func add(_ writer: StreamWriter, token: String) {
        let key = ObjectIdentifier(writer)
        streams.withLock { $0[token, default: [:]][key] = writer }
        writer.onClose { [weak self] in
            self?.streams.withLock { streams in
                streams[token]?[key] = nil
                if streams[token]?.isEmpty == true { streams[token] = nil }
            }
        }
    }

    /// Ends every stream opened with one of these tokens.
    func end(tokens ids: [String]) {
        let writers = streams.withLock { streams in ids.flatMap { streams.removeValue(forKey: $0)?.values.map { $0 } ?? [] } }
        for writer in writers { writer.finish() }
    }
}
