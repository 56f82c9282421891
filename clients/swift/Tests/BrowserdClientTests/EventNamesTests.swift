import Foundation
import TestSupport
import Testing

@testable import BrowserdClient

/// Every event name the contract lists is decoded as its own type (none falls to `.unknown`).
@Suite(.computing) struct EventNamesTests {
    @Test func windowEventsMatchTheContract() throws {
        #expect(try Self.contractNames(of: "WindowEvent") == WindowStreamEvent.names)
    }

    @Test func profileEventsMatchTheContract() throws {
        #expect(try Self.contractNames(of: "ProfileEvent") == ProfileStreamEvent.names)
    }

    @Test func anUnknownEventIsKeptWhole() throws {
        guard case .unknown(let name, let data) = try WindowStreamEvent.decode(name: "tabs.future", data: "{}") else {
            Issue.record("not unknown")
            return
        }
        #expect(name == "tabs.future" && data == "{}")
    }

    @Test func aMalformedEventIsAnError() {
        #expect(throws: DecodingError.self) { try WindowStreamEvent.decode(name: "tabs.insert", data: "{\"browserId\": 1}") }
    }

    /// The `const:` event names of one schema's `oneOf` in the server's `openapi.yaml`.
    static func contractNames(of schema: String) throws -> Set<String> {
        var contract = URL(fileURLWithPath: #filePath)
        for _ in 0..<5 { contract.deleteLastPathComponent() }
        contract.appendPathComponent("openapi.yaml")
        let lines = try String(contentsOf: contract, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: Substring("    \(schema):")) else { throw Failure("no schema \(schema)") }
        var names: Set<String> = []
        for line in lines[(start + 1)...] {
            if line.hasPrefix("    "), !line.hasPrefix("     ") { break }  // the next schema
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("const: ") { names.insert(String(text.dropFirst("const: ".count))) }
        }
        return names
    }
}
