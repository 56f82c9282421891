import BrowserServices
import Synchronization

/// The open `GET /v1/renderers/{name}/events` streams, by renderer (issue 55): each is told when a
/// decision gives its renderer profiles or takes some away, so the renderer renews at once and learns
/// which (rather than at its next renewal). The event carries no holdings: the renewal's answer is
/// the only word on those, under its fences.
final class RendererWakeups: Sendable {
    /// Streams one renderer may hold open at once.
    static let perRenderer = 4

    private let streams = Mutex<[String: [any EventSink]]>([:])

    /// How many of `name`'s streams are open now.
    func openCount(_ name: String) -> Int {
        streams.withLock { streams in
            streams[name]?.removeAll { $0.isClosed }
            if streams[name]?.isEmpty == true { streams[name] = nil }
            return streams[name]?.count ?? 0
        }
    }

    /// Adds `sink` to `name`'s streams, and tells it once (a renderer that reconnects renews at once:
    /// it may have missed a change while it was away).
    func add(_ sink: any EventSink, for name: String) {
        streams.withLock { $0[name, default: []].append(sink) }
        _ = sink.write(Self.event(name), evenIfFull: true)
    }

    /// Tells every open stream of `names`.
    func wake(_ names: Set<String>) {
        let sinks = streams.withLock { streams in names.flatMap { name in (streams[name] ?? []).map { (name, $0) } } }
        for (name, sink) in sinks where !sink.isClosed {
            // A renderer that does not read its stream misses a wake-up, not its profiles (it renews anyway).
            _ = sink.write(Self.event(name), evenIfFull: false)
        }
    }

    static func event(_ name: String) -> [UInt8] {
        Array("event: assignments.changed\ndata: {\"renderer\":\"\(name)\"}\n\n".utf8)
    }
}
