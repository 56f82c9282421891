import BrowserModel
import BrowserServices
import HTTPServer

// Server-sent event streams: a window's consumer updates, and a profile's window list. The handler
// checks the request, takes a place under the stream caps and answers 200 with a stream; the
// service's channel fills it (snapshot first, or the missed events, or a reset).
extension APIRoutes {
    func registerEvents(in router: inout Router) {
        router.add(.get, "/v1/browsers/{browserId}/events", immediate { request in
            let id = BrowserID(rawValue: request.pathParameters["browserId"] ?? "")
            guard let root = service.rootProfile(ofWindow: id) else { throw APIProblem.windowNotFound(id.rawValue) }
            guard let filter = TopicFilter.parse(request.queryValue("topics")) else {
                throw APIProblem.invalidQuery("topics", "must be a comma-separated list of tabs, groups, toolbar, location, ui, actions, broadcasts")
            }
            let lastEventID = try Self.lastEventID(request)
            let reservation = try service.events.reserveStream(root: root)
            return stream(reservation) { sink in
                if service.watchWindow(id, sink: sink, lastEventID: lastEventID, filter: filter) == nil { sink.finish() }
            }
        })

        router.add(.get, "/v1/events", immediate { request in
            guard let raw = request.queryValue("profileId"), !raw.isEmpty else {
                throw APIProblem.invalidQuery("profileId", "is required: the profile whose windows to watch")
            }
            let id = ProfileID(rawValue: raw)
            guard service.profile(id) != nil, let root = service.rootProfile(of: id), Principal.current.reaches(root) else {
                throw APIProblem.profileNotFound(raw)
            }
            let lastEventID = try Self.lastEventID(request)
            let reservation = try service.events.reserveStream(root: root)
            return stream(reservation) { sink in
                if service.watchProfile(id, sink: sink, lastEventID: lastEventID) == nil { sink.finish() }
            }
        })
    }

    /// The position a reconnecting client had: `Last-Event-ID`, or `lastEventId` for a browser's
    /// first request (which cannot set headers).
    /// The header wins, but each that is present must be valid (at most 128 characters, as the contract says).
    static func lastEventID(_ request: HTTPRequest) throws -> String? {
        let query = request.queryValue("lastEventId")
        if let query, query.unicodeScalars.count > 128 {
            throw APIProblem.invalidQuery("lastEventId", "must be at most 128 characters")
        }
        let header = request.headers["Last-Event-ID"]
        if let header, header.unicodeScalars.count > 128 {
            throw HTTPError(400, kind: "invalid-header", title: "Invalid Header", detail: "Last-Event-ID must be at most 128 characters.",
                            extensions: ["header": "Last-Event-ID"])
        }
        return header ?? query
    }

    /// A `text/event-stream` answer whose writer is handed to `open` as an ``EventSink``.
    func stream(_ reservation: StreamReservation, open: @escaping @Sendable (any EventSink) -> Void) -> HTTPResponse {
        let limits = service.events.limits
        let body = StreamBody(
            heartbeat: Array(": ping\n\n".utf8),
            maxBufferedBytes: limits.queueBytes,
            preamble: Array(": browserd events\nretry: \(limits.retryMilliseconds)\n\n".utf8)
        ) { writer in
            writer.onClose { reservation.end() }
            open(StreamEventSink(writer: writer))
        }
        return HTTPResponse(status: 200, headers: [
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        ], body: .stream(body))
    }
}

/// An event stream's end in the HTTP server: the stream writer of one response.
final class StreamEventSink: EventSink {
    let writer: StreamWriter

    init(writer: StreamWriter) { self.writer = writer }

    func write(_ bytes: [UInt8], evenIfFull: Bool) -> EventSinkWrite {
        switch writer.write(bytes, evenIfFull: evenIfFull) {
        case .written: .written
        case .overflow: .overflow
        case .closed: .closed
        }
    }

    var bufferedByteCount: Int { writer.bufferedByteCount }
    var isClosed: Bool { writer.isClosed }
    func finish() { writer.finish() }
}
