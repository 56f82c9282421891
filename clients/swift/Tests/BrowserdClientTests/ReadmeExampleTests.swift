import Foundation
import TestSupport
import Testing

@testable import BrowserdClient

/// docs/clients.md's example of the client, run against a live server; and a check that the page still
/// shows this code (each of its code lines appears here as written).
@Suite(.serialized, .offThePool, .timeLimit(.minutes(1))) struct ReadmeExampleTests {
    @Test func theExampleRuns() async throws {
        let server = try await LiveServer()
        var seen: [String] = []
        // -- as in docs/clients.md (the URL is the test server's) --
        let browserd = BrowserdClient(server: server.url, token: nil)
        let profile = try await browserd.api.createProfile(body: .json(.init(name: "demo"))).created.body.json
        let window = try await browserd.api.createWindow(body: .json(.init(profileId: profile.id))).created.body.json
        _ = try await browserd.api.openTab(
            path: .init(browserId: window.id), headers: .init(idempotencyKey: Idempotency.newKey()),
            body: .json(.init(url: "https://example.com/")))
        for try await event in browserd.windowEvents(window.id, topics: ["tabs"]) {
            if case .tabsInsert(let insert) = event.payload { print("tab", insert.item.url, "at", insert.index) }
            // -- end of docs/clients.md's lines --
            if case .tabsPopulate(let populate) = event.payload { seen += populate.items.map(\.url) }
            if !seen.isEmpty { break }
        }
        #expect(seen == ["https://example.com/"])
    }

    @Test func theReadmeShowsThisCode() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("docs/clients.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "## A Swift client for front ends"))
        let start = try #require(readme.range(of: "```swift\n", range: section.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        let test = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let lines = readme[start.upperBound..<end.lowerBound].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let code = lines.filter { !$0.isEmpty && !$0.hasPrefix("//") && !$0.hasPrefix("import ") && !$0.hasPrefix("let browserd =") && $0 != "}" }
        #expect(code.count >= 7)
        for line in code { #expect(test.contains(line), "docs/clients.md's line is not in the test: \(line)") }
    }
}
