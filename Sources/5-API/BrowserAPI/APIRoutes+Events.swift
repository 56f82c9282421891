import BrowserAccess
import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

// Server-sent event streams: a window's consumer updates, and a profile's window list. The handler
// checks the request, takes a place under the stream caps and answers 200 with a stream; the
// service's channel fills it (snapshot first, or the missed events, or a reset).
extension APIRoutes {
    /// A ticket for `target`, issued to the caller of the request being handled (its scope, its token).
    /// - Throws: 429 when the caller holds its most unused tickets, 503 when everyone together does.
    static func issueTicket(_ tickets: StreamTicketStore, target: String) throws -> (ticket: String, expiresAt: Date) {
        do {
            return try tickets.issue(for: Principal.current, tokenID: Principal.tokenID, target: target)
        } catch StreamTicketStore.Refusal.principalLimit {
            throw HTTPError(
                429, kind: "too-many-tickets", title: "Too Many Stream Tickets",
                detail: "You hold \(tickets.perPrincipalLimit) unused stream tickets; use or let some expire first.",
                headers: ["Retry-After": "\(tickets.lifetime.components.seconds)"])
        } catch {
            throw HTTPError(
                503, kind: "tickets-unavailable", title: "Stream Tickets Unavailable",
                detail: "The server holds as many stream tickets as it keeps; retry shortly.",
                headers: ["Retry-After": "5"])
        }
    }

    func registerEvents(in router: inout Router) {
        let tickets = self.tickets
        router.add(
            .post, "/v1/stream-tickets",
            deferred { request in
                let body = try RequestBody(request, allowed: ["path"])
                let path = try body.requiredString("path", maxLength: 200)
                let target = try Self.streamTicketTarget(path, service: service)
                let (ticket, expiresAt) = try Self.issueTicket(tickets, target: target)
                return Self.json(
                    APIEncoding.bytes { json in
                        json.beginObject()
                        json.member("ticket", ticket)
                        json.member("path", target)
                        json.member("url", target + (target.contains("?") ? "&" : "?") + "ticket=" + ticket)
                        json.member("expiresAt", JSONText.timestamp(expiresAt))
                        json.endObject()
                    }, status: 201)
            })

        router.add(
            .get, "/v1/browsers/{browserId}/events",
            immediate { request in
                let id = BrowserID(rawValue: request.pathParameters["browserId"] ?? "")
                guard let root = service.rootProfile(ofWindow: id) else { throw APIProblem.windowNotFound(id.rawValue) }
                guard let filter = TopicFilter.parse(request.queryValue("topics")) else {
                    throw APIProblem.invalidQuery("topics", "must be a comma-separated list of tabs, groups, toolbar, location, ui, actions, broadcasts")
                }
                let lastEventID = try Self.lastEventID(request)
                try Self.checkTicketSyntax(request)
                let reservation = try service.events.reserveStream(root: root)
                return stream(reservation, watching: root, request: request) { sink in
                    if service.watchWindow(id, sink: sink, lastEventID: lastEventID, filter: filter) == nil { sink.finish() }
                }
            })

        router.add(
            .get, "/v1/events",
            immediate { request in
                guard let raw = request.queryValue("profileId") else {
                    // The profile directory: the administrator's view of every profile.
                    guard Principal.current == .admin else {
                        throw HTTPError(
                            403, kind: "forbidden", title: "Forbidden",
                            detail: "Only the administrator may watch every profile; give profileId to watch one of yours.")
                    }
                    let lastEventID = try Self.lastEventID(request)
                    try Self.checkTicketSyntax(request)
                    let reservation = try service.events.reserveStream(root: EventHub.directoryKey)
                    return stream(reservation) { sink in _ = service.watchDirectory(sink: sink, lastEventID: lastEventID) }
                }
                guard !raw.isEmpty else { throw APIProblem.invalidQuery("profileId", "must name a profile (or be left out: every profile)") }
                let id = ProfileID(rawValue: raw)
                guard service.profile(id) != nil, let root = service.rootProfile(of: id), Principal.current.reaches(root) else {
                    throw APIProblem.profileNotFound(raw)
                }
                let lastEventID = try Self.lastEventID(request)
                try Self.checkTicketSyntax(request)
                let reservation = try service.events.reserveStream(root: root)
                return stream(reservation, watching: root, request: request) { sink in
                    if service.watchProfile(id, sink: sink, lastEventID: lastEventID) == nil { sink.finish() }
                }
            })
    }

    /// The stream a ticket request names, checked as the caller's own request for it would be: a
    /// window or profile the caller cannot reach is 404, anything but a stream path is 422.
    static func streamTicketTarget(_ path: String, service: BrowserService) throws -> String {
        let parts = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let segments = parts[0].split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 1, segments.count == 5, segments[0].isEmpty, segments[1] == "v1", segments[2] == "browsers", segments[4] == "events",
            !segments[3].isEmpty
        {
            let id = String(segments[3])
            guard let root = service.rootProfile(ofWindow: BrowserID(rawValue: id)), Principal.current.reaches(root) else {
                throw APIProblem.windowNotFound(id)
            }
            return "/v1/browsers/\(id)/events"
        }
        if parts.count == 2, parts[0] == "/v1/events", parts[1].hasPrefix("profileId="), !parts[1].contains("&"),
            parts[1].count > "profileId=".count
        {
            let id = String(parts[1].dropFirst("profileId=".count))
            guard service.profile(ProfileID(rawValue: id)) != nil, let root = service.rootProfile(of: ProfileID(rawValue: id)),
                Principal.current.reaches(root)
            else {
                throw APIProblem.profileNotFound(id)
            }
            return "/v1/events?profileId=\(id)"
        }
        if path == "/v1/events" {
            guard Principal.current == .admin else {
                throw HTTPError(403, kind: "forbidden", title: "Forbidden", detail: "Only the administrator may watch every profile.")
            }
            return "/v1/events"
        }
        throw APIProblem.invalidField("path", "must name an event stream: /v1/browsers/{browserId}/events, /v1/events?profileId={profileId} or /v1/events")
    }

    /// A `ticket` that cannot be one is 400 whether or not it is used (authentication off, or an
    /// `Authorization` header sent): bad input is said, not ignored.
    static func checkTicketSyntax(_ request: HTTPRequest) throws {
        guard let ticket = request.queryValue("ticket") else { return }
        guard ticket.utf8.count == 67, ticket.hasPrefix("st_"),
            ticket.utf8.dropFirst(3).allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) })
        else {
            throw APIProblem.invalidQuery("ticket", "must be a stream ticket from POST /v1/stream-tickets (st_ and 64 hex digits)")
        }
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
            throw HTTPError(
                400, kind: "invalid-header", title: "Invalid Header", detail: "Last-Event-ID must be at most 128 characters.",
                extensions: ["header": "Last-Event-ID"])
        }
        return header ?? query
    }

    /// A `text/event-stream` answer whose writer is handed to `open` as an ``EventSink``.
    /// - Parameter watching: the regular profile the stream watches, counted as watched while it is
    ///   open (``ProfileAttention``) unless a renderer opened it.
    func stream(
        _ reservation: StreamReservation, watching root: ProfileID? = nil, request: HTTPRequest? = nil,
        open: @escaping @Sendable (any EventSink) -> Void
    ) -> HTTPResponse {
        let limits = service.events.limits
        let unwatch = root.flatMap { root in request?.headers[Self.rendererHeader] == nil ? attention.watch(root) : nil }
        let token = Principal.tokenID
        let body = StreamBody(
            heartbeat: Array(": ping\n\n".utf8),
            maxBufferedBytes: limits.queueBytes,
            preamble: Array(": browserd events\nretry: \(limits.retryMilliseconds)\n\n".utf8)
        ) { [revocations] writer in
            writer.onClose {
                reservation.end()
                unwatch?()
            }
            // A stream opened with a profile token ends when that token is revoked.
            if let token { revocations.add(writer, token: token) }
            open(StreamEventSink(writer: writer))
        }
        return HTTPResponse(
            status: 200,
            headers: [
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
