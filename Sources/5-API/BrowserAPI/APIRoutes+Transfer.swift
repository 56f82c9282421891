import BrowserAccess
import BrowserModel
import BrowserServices
import FirefoxSession
import Foundation
import HTTPServer
import Synchronization

// A profile out and in whole: `GET /v1/profiles/{profileId}/export` streams its document as the store
// reads it; `POST /v1/profiles/import` (administrator) stores a document as a new profile.
extension APIRoutes {
    /// Exports at once, in all (each holds a thread and at most ``exportBufferBytes`` of the document).
    static let concurrentExports = 4
    static let exportBufferBytes = 1 << 20
    /// A client that reads nothing of its export for this long is cut off.
    static let exportStall: Duration = .seconds(60)
    private static let exportsRunning = Atomic<Int>(0)
    /// The callers with an export under way: one each (``Principal`` scopes).
    private static let exportingCallers = Mutex<Set<String>>([])

    func registerTransfer(in router: inout Router) {
        let transfer = self.transfer
        let service = self.service
        router.add(.get, "/v1/profiles/{profileId}/export", deferred { request in try await Self.export(request, transfer) })
        router.add(
            .post, "/v1/profiles/import",
            deferred { request in
                guard let transfer = transfer?.current else { throw Self.transferUnavailable }
                switch request.queryValue("format") ?? "browserd" {
                case "browserd": break
                case "firefox": return try await Self.importFirefox(request, transfer, limits: service.limits)
                case let other:
                    throw APIProblem.invalidField("format", "is \(other.debugDescription); the formats are \"browserd\" (default) and \"firefox\"")
                }
                if let type = request.headers["Content-Type"]?.lowercased(), !type.hasPrefix("application/json") {
                    throw APIProblem.unsupportedMediaType(type)
                }
                let profile = try await transfer.importDocument(request.body)
                return Self.json(APIEncoding.bytes { APIEncoding.write(profile, to: &$0) }, status: 201, location: "/v1/profiles/\(profile.id)")
            })
    }

    /// `POST /v1/profiles/import?format=firefox`: a Firefox session file (`.jsonlz4` as
    /// `application/octet-stream`, or its JSON as `application/json`) becomes a new profile.
    private static func importFirefox(_ request: HTTPRequest, _ transfer: any ProfileTransfer, limits: ModelLimits) async throws -> HTTPResponse {
        let type = (request.headers["Content-Type"] ?? "application/octet-stream").lowercased()
        let isJSON: Bool
        if type.hasPrefix("application/json") {
            isJSON = true
        } else if type.hasPrefix("application/octet-stream") {
            isJSON = false
        } else {
            throw HTTPError(
                415, kind: "unsupported-media-type", title: "Unsupported Media Type",
                detail: "A Firefox session is sent as application/octet-stream (the .jsonlz4 file) or application/json (its JSON); this one is \(APIProblem.echo(type)).")
        }
        let name = request.queryValue("name") ?? "Firefox session"
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 200, !name.utf8.contains(0) else {
            throw APIProblem.invalidField("name", "must be 1 to 200 characters, not blank")
        }
        let limit = transfer.maxDecodedBytes
        let result = try await transfer.importSession(name: name) {
            do throws(FirefoxSessionError) {
                return try FirefoxSessionReader.read(request.body, isJSON: isJSON, maxDecodedBytes: limit, limits: limits)
            } catch {
                throw Self.problem(error)
            }
        }
        let body = APIEncoding.bytes { json in
            json.beginObject()
            json.key("profile")
            APIEncoding.write(result.profile, to: &json)
            json.key("windowIds")
            json.beginArray()
            for id in result.windowIDs { json.value(id) }
            json.endArray()
            json.member("tabCount", result.tabCount)
            json.member("closedCount", result.closedCount)
            json.key("warnings")
            json.beginArray()
            for warning in result.warnings {
                json.beginObject()
                json.member("at", warning.at)
                json.member("detail", warning.detail)
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        return Self.json(body, status: 201, location: "/v1/profiles/\(result.profile.id)")
    }

    /// A file that is not a session browserd can read, as the problem that says what is wrong.
    static func problem(_ error: FirefoxSessionError) -> HTTPError {
        switch error {
        case .tooLarge:
            HTTPError(413, kind: "session-too-large", title: "Content Too Large", detail: "The session file: \(error).")
        case .badMagic, .truncated, .sizeMismatch, .json:
            HTTPError(422, kind: "invalid-session-file", title: "Unprocessable Content", detail: "The session file: \(error).")
        case .shape(let at, _):
            HTTPError(
                422, kind: "invalid-session-file", title: "Unprocessable Content", detail: "The session file: \(error).",
                extensions: ["field": APIProblem.echo(at)])
        }
    }

    static var transferUnavailable: HTTPError {
        HTTPError(
            501, kind: "transfer-unavailable", title: "Not Implemented",
            detail: "Export and import of profiles are offered by the embedded store (SQLite); this server keeps its state elsewhere.")
    }

    private static func export(_ request: HTTPRequest, _ slot: ProfileTransferSlot?) async throws -> HTTPResponse {
        guard let transfer = slot?.current else { throw transferUnavailable }
        let id = ProfileID(rawValue: request.parameter("profileId"))
        // One export at a time per caller, so no tenant holds every slot.
        let caller = Principal.current.scope
        guard exportingCallers.withLock({ $0.insert(caller).inserted }) else {
            throw HTTPError(
                429, kind: "export-under-way", title: "Too Many Requests",
                detail: "An export of yours is under way; one export at a time per caller. Retry once it ends.",
                headers: ["Retry-After": "1"])
        }
        let finished: @Sendable () -> Void = {
            Self.exportsRunning.subtract(1, ordering: .relaxed)
            _ = Self.exportingCallers.withLock { $0.remove(caller) }
        }
        guard Self.exportsRunning.add(1, ordering: .relaxed).newValue <= concurrentExports else {
            finished()
            throw HTTPError.unavailable("\(concurrentExports) exports are under way; retry.", retryAfter: 1)
        }
        let produce: ProfileExporter
        do {
            produce = try await transfer.exporter(for: id)
        } catch {
            finished()
            throw error
        }
        // The whole document within the transfer timeout: a slow reader holds a slot (and a read
        // transaction) no longer.
        let deadline = ContinuousClock.now + transfer.timeout
        var headers = HTTPHeaders()
        headers.set("Content-Type", "application/json")
        headers.set("Content-Disposition", "attachment; filename=\"\(id.rawValue).browserd-profile.json\"")
        headers.set("Cache-Control", "no-store")
        let body = StreamBody(maxBufferedBytes: exportBufferBytes * 2) { writer in
            // The slot is held until the stream ends — the client has the whole document (what is
            // buffered for it counts), or it was cut — and no longer than the deadline: a reader of the
            // last window's bytes that slows to a trickle is cut there too. No thread waits for that.
            let cut = Task {
                try? await Task.sleep(until: deadline, clock: .continuous)
                if !Task.isCancelled { writer.abort() }
            }
            writer.onClose {
                cut.cancel()
                finished()
            }
            let thread = Thread {
                Thread.current.name = "bd-export"
                do {
                    try produce { chunk in Self.send(chunk, to: writer, before: deadline) }
                    writer.finish()
                } catch {
                    writer.abort()
                }
            }
            thread.start()
        }
        return HTTPResponse(status: 200, headers: headers, body: .stream(body))
    }

    /// Writes `chunk` once the client has read what came before (at most ``exportBufferBytes`` wait
    /// for it); false when it left, read nothing for ``exportStall``, or `deadline` passed.
    private static func send(_ chunk: [UInt8], to writer: StreamWriter, before deadline: ContinuousClock.Instant) -> Bool {
        var lastProgress = ContinuousClock.now
        var buffered = writer.bufferedByteCount
        if lastProgress > deadline { return false }
        while buffered > exportBufferBytes {
            if writer.isClosed || ContinuousClock.now > deadline { return false }
            Thread.sleep(forTimeInterval: 0.002)
            let now = writer.bufferedByteCount
            if now < buffered { lastProgress = .now }
            if ContinuousClock.now - lastProgress > exportStall { return false }
            buffered = now
        }
        return writer.write(chunk, evenIfFull: true) == .written
    }
}
