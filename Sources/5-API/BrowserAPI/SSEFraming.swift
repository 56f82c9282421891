public import BrowserServices

/// The server-sent events wire format (WHATWG HTML §9.2): one `id`, one `event` and one `data` line
/// of JSON per event, a blank line after. The event channels frame each event once with it and share
/// the bytes between every watcher; they know nothing of the format.
public struct SSEFraming: EventFraming {
    public init() {}

    public func frame(id: String, event: String, json: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(json.count + event.utf8.count + id.utf8.count + 24)
        bytes.append(contentsOf: "id: ".utf8)
        bytes.append(contentsOf: id.utf8)
        bytes.append(contentsOf: "\nevent: ".utf8)
        bytes.append(contentsOf: event.utf8)
        bytes.append(contentsOf: "\ndata: ".utf8)
        bytes.append(contentsOf: json)
        bytes.append(contentsOf: "\n\n".utf8)
        return bytes
    }
}
