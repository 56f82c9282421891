/// Server-sent events framing (WHATWG HTML §9.2): one `id`, one `event`, one `data` line of JSON.
enum SSEFrame {
    static func event(id: String, name: String, json: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(json.count + name.utf8.count + id.utf8.count + 24)
        bytes.append(contentsOf: "id: ".utf8)
        bytes.append(contentsOf: id.utf8)
        bytes.append(contentsOf: "\nevent: ".utf8)
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: "\ndata: ".utf8)
        bytes.append(contentsOf: json)
        bytes.append(contentsOf: "\n\n".utf8)
        return bytes
    }
}
