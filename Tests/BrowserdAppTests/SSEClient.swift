import BrowserdApp
import Foundation
import MiniHTTPClient

/// A server-sent events client over a real socket, for tests: it reads the chunked body as it
/// arrives and parses events as WHATWG HTML §9.2 says (comments skipped, events without data not
/// dispatched).
final class SSEClient {
    struct Event: CustomStringConvertible {
        var id: String?
        var name: String
        var data: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:] }
        var description: String { "\(id ?? "-") \(name) \(data)" }
    }

    let connection: HTTPClientConnection
    let response: HTTPClientConnection.Response
    private var pending: [UInt8] = []
    private(set) var ended = false
    /// The `retry:` value last seen.
    private(set) var retry: Int?

    init(port: Int, path: String, headers: [(String, String)] = [], timeout: Duration = .seconds(5), receiveBufferSize: Int? = nil) throws {
        connection = try HTTPClientConnection(host: "127.0.0.1", port: port, timeout: timeout, receiveBufferSize: receiveBufferSize)
        try connection.send("GET", path, headers: [("Accept", "text/event-stream")] + headers)
        response = try connection.readResponse(headOnly: true)
    }

    convenience init(
        _ app: Application, _ path: String, headers: [(String, String)] = [], timeout: Duration = .seconds(5),
        receiveBufferSize: Int? = nil
    ) throws {
        try self.init(port: app.port, path: path, headers: headers, timeout: timeout, receiveBufferSize: receiveBufferSize)
    }

    var status: Int { response.status }

    /// The next event, or nil once the stream has ended. Throws on timeout.
    func next() throws -> Event? {
        while true {
            if let event = parseOne() { return event }
            if ended { return nil }
            guard let chunk = try connection.readChunk() else {
                ended = true
                continue
            }
            pending += chunk
        }
    }

    /// Events up to and including the first named `name`.
    func until(_ name: String) throws -> [Event] {
        var events: [Event] = []
        while let event = try next() {
            events.append(event)
            if event.name == name { return events }
        }
        throw SSEError.endedBefore(name, events)
    }

    /// The next `count` events.
    func take(_ count: Int) throws -> [Event] {
        var events: [Event] = []
        while events.count < count, let event = try next() { events.append(event) }
        return events
    }

    /// Whether nothing arrives within `timeout` (heartbeats aside).
    func isQuiet(for timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if parseOne() != nil { return false }
            // A short read timeout is set per client; a timeout here means quiet.
            guard let chunk = try? connection.readChunk() else { return true }
            pending += chunk
        }
        return parseOne() == nil
    }

    func close() { connection.close() }

    private func parseOne() -> Event? {
        while true {
            guard let end = blockEnd() else { return nil }
            let block = String(decoding: pending[..<end.start], as: UTF8.self)
            pending.removeFirst(end.next)
            var event = Event(id: nil, name: "message", data: "")
            var hasData = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") || line.isEmpty { continue }
                let (field, value): (Substring, Substring)
                if let colon = line.firstIndex(of: ":") {
                    field = line[..<colon]
                    var rest = line[line.index(after: colon)...]
                    if rest.hasPrefix(" ") { rest = rest.dropFirst() }
                    value = rest
                } else {
                    (field, value) = (line, "")
                }
                switch field {
                case "id": event.id = String(value)
                case "event": event.name = String(value)
                case "data":
                    event.data += (hasData ? "\n" : "") + value
                    hasData = true
                case "retry": retry = Int(value)
                default: break
                }
            }
            if hasData { return event }
        }
    }

    private func blockEnd() -> (start: Int, next: Int)? {
        guard pending.count >= 2 else { return nil }
        for i in 0..<(pending.count - 1) where pending[i] == 10 && pending[i + 1] == 10 { return (i, i + 2) }
        return nil
    }
}

enum SSEError: Error {
    case endedBefore(String, [SSEClient.Event])
}
