import BrowserdClient
import Foundation
import HTTPTypes

/// A page's two reports of every navigation — its commit (`POST /v1/tabs/{id}/navigate` with
/// `committed`) and its state (`PATCH /v1/tabs/{id}`) — sent as bytes the renderer writes and reads
/// itself (``JSONValue``), through the client's middlewares and transport
/// (``BrowserdClient/send(_:_:json:operationID:expected:)``), not the generated client: its conversions
/// (the `Accept` header built from content types, the path template, Foundation's JSON both ways)
/// were a quarter of a report's CPU (docs/benchmarks.md, run 10). Bodies and answers keep to
/// `openapi.yaml`'s `NavigateTab`, `PatchTab` and `Tab` (checked against the generated types in
/// ReportAnswerTests, with a live browserd).
public struct TabReports: Sendable {
    let client: BrowserdClient

    public init(client: BrowserdClient) { self.client = client }

    /// A commit of the page's own navigation: a new entry (or the current one replaced).
    public func navigate(_ tab: String, url: String, transition: String, replace: Bool, sameDocument: Bool) async throws -> ModelTab {
        try await answer(
            .post, "/v1/tabs/\(Self.pathSegment(tab))/navigate", Self.navigateBody(url: url, transition: transition, replace: replace, sameDocument: sameDocument),
            "navigateTab")
    }

    /// The page's state: only the members given.
    public func update(_ tab: String, title: String?, loading: Bool?, progress: Double?, faviconURL: String?) async throws -> ModelTab {
        try await answer(
            .patch, "/v1/tabs/\(Self.pathSegment(tab))", Self.patchBody(title: title, loading: loading, progress: progress, faviconURL: faviconURL), "updateTab")
    }

    private func answer(_ method: HTTPRequest.Method, _ path: String, _ body: JSONValue, _ operation: String) async throws -> ModelTab {
        let bytes = try await client.send(method, path, json: body.serialized, operationID: operation)
        guard let tab = ModelTab(answer: try JSONValue.parse(bytes)) else { throw MalformedTabAnswer() }
        return tab
    }

    struct MalformedTabAnswer: Error, CustomStringConvertible {
        var description: String { "browserd's answer is not a tab" }
    }

    static func navigateBody(url: String, transition: String, replace: Bool, sameDocument: Bool) -> JSONValue {
        var body: [String: JSONValue] = ["url": .string(url), "transition": .string(transition), "replace": .bool(replace), "committed": true]
        if sameDocument { body["sameDocument"] = true }
        return .object(body)
    }

    static func patchBody(title: String?, loading: Bool?, progress: Double?, faviconURL: String?) -> JSONValue {
        var body: [String: JSONValue] = [:]
        if let title { body["title"] = .string(title) }
        if let loading { body["loading"] = .bool(loading) }
        if let progress { body["progress"] = .number(progress) }
        if let faviconURL { body["faviconUrl"] = .string(faviconURL) }
        return .object(body)
    }

    /// An id as one path segment (browserd's ids are letters and digits; anything else is escaped).
    static func pathSegment(_ id: String) -> String {
        // Foundation's escaping was a tenth of a page's own CPU; an id that needs none skips it.
        guard !id.utf8.allSatisfy(isUnreserved) else { return id }
        return id.addingPercentEncoding(withAllowedCharacters: unreserved) ?? id
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    private static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
}

extension ModelTab {
    /// From a tab answer of the REST API as JSON (`Tab`); nil when a member it needs is missing.
    init?(answer tab: JSONValue) {
        guard let id = tab["id"]?.string, let url = tab["url"]?.string, let title = tab["title"]?.string, let loading = tab["loading"]?.bool,
            let progress = tab["progress"]?.double, let historyIndex = tab["historyIndex"]?.int, let historyCount = tab["historyCount"]?.int,
            let crashed = tab["crashed"]?.bool
        else { return nil }
        var pending: Pending?
        if let item = tab["pending"], item != .null {
            guard let pendingID = item["id"]?.int, let pendingURL = item["url"]?.string else { return nil }
            pending = Pending(id: pendingID, url: pendingURL, index: item["historyIndex"]?.int)
        }
        self.init(
            id: id, url: url, title: title, loading: loading, progress: progress, faviconURL: tab["faviconUrl"]?.string,
            historyIndex: historyIndex, historyCount: historyCount, crashed: crashed, pending: pending)
    }
}
