import BrowserdApp
import Foundation
import MiniHTTPClient
import Testing

/// A JSON client for API tests over one keep-alive connection.
final class APIClient {
    struct Reply {
        let status: Int
        let headers: [(name: String, value: String)]
        let body: [UInt8]

        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        var problemType: String? { json["type"] as? String }
        func header(_ name: String) -> String? { headers.first { $0.name == name.lowercased() }?.value }
        var etagVersion: Int? { header("etag").flatMap { Int($0.dropFirst(2).dropLast()) } }
        subscript(key: String) -> Any? { json[key] }
        var id: String { json["id"] as? String ?? "" }
    }

    let connection: HTTPClientConnection

    init(_ app: Application) throws {
        connection = try HTTPClientConnection(host: "127.0.0.1", port: app.port)
    }

    @discardableResult
    func send(
        _ method: String, _ path: String, _ body: Any? = nil, headers: [(String, String)] = [],
        raw: [UInt8]? = nil, contentType: String = "application/json"
    ) throws -> Reply {
        var all = headers
        var bytes: [UInt8]? = raw
        if let body { bytes = Array(try JSONSerialization.data(withJSONObject: body, options: [.fragmentsAllowed])) }
        // A POST always says it is JSON, empty or not, as browserd asks of unauthenticated POSTs (CSRF).
        if bytes != nil || method == "POST", !all.contains(where: { $0.0.lowercased() == "content-type" }) {
            all.append(("Content-Type", contentType))
        }
        let response = try connection.request(method, path, headers: all, body: bytes)
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }

    func get(_ path: String) throws -> Reply { try send("GET", path) }
    func post(_ path: String, _ body: Any? = nil, headers: [(String, String)] = []) throws -> Reply {
        try send("POST", path, body, headers: headers)
    }

    // Builders

    func profile(_ name: String = "Work") throws -> String {
        let reply = try post("/v1/profiles", ["name": name])
        #expect(reply.status == 201)
        return reply.id
    }

    func window(_ profile: String) throws -> String {
        let reply = try post("/v1/browsers", ["profileId": profile])
        #expect(reply.status == 201)
        return reply.id
    }

    func tab(_ window: String, _ url: String = "https://example.com/", _ extra: [String: Any] = [:]) throws -> String {
        var body: [String: Any] = ["url": url]
        body.merge(extra) { $1 }
        let reply = try post("/v1/browsers/\(window)/tabs", body)
        #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
        return reply.id
    }

    /// The window's tab ids in order, the active one marked with `*`.
    func layout(_ window: String, names: [String: String]) throws -> String {
        let json = try get("/v1/browsers/\(window)").json
        let tabs = json["tabs"] as? [[String: Any]] ?? []
        let pinned = json["pinnedCount"] as? Int ?? 0
        var tokens: [String] = []
        for (index, tab) in tabs.enumerated() {
            if index == pinned { tokens.append("|") }
            let name = names[tab["id"] as? String ?? ""] ?? "?"
            tokens.append(name + ((tab["active"] as? Bool) == true ? "*" : ""))
        }
        if pinned == tabs.count { tokens.append("|") }
        return tokens.joined(separator: " ")
    }
}
