import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import BrowserdApp

/// Reads the `paths` of openapi.yaml: each path with its methods (a small reader for this file's
/// layout: paths at two spaces, methods at four).
func contractOperations() throws -> Set<String> {
    let text = try String(contentsOf: repositoryRoot.appendingPathComponent("openapi.yaml"), encoding: .utf8)
    var operations = Set<String>()
    var inPaths = false
    var currentPath: String?
    let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        if line == "paths:" {
            inPaths = true
            continue
        }
        if inPaths, let first = line.first, first != " " { break }
        guard inPaths else { continue }
        if line.hasPrefix("  /") && !line.hasPrefix("   ") {
            currentPath = String(line.dropFirst(2).dropLast())
        } else if line.hasPrefix("    ") && !line.hasPrefix("     "), let path = currentPath {
            let key = line.dropFirst(4).split(separator: ":").first.map(String.init) ?? ""
            if methods.contains(key) { operations.insert("\(key.uppercased()) \(path)") }
        }
    }
    return operations
}

@Suite(.offThePool) struct ContractTests {
    @Test func everyRouteIsInTheContractAndBack() throws {
        var configuration = BrowserdConfiguration()
        configuration.server.port = 0
        let app = Application(configuration: configuration, logger: .init(label: "t"))
        // The WebDriver facade's paths are the W3C spec's (openapi.yaml points to it, with the base path).
        let served = Set(
            app.routes.filter { !$0.template.hasPrefix(configuration.webDriverBasePath ?? "-") }
                .map { "\($0.method.rawValue) \($0.template)" })
        let documented = try contractOperations()
        #expect(!documented.isEmpty)
        #expect(served.subtracting(documented).isEmpty, "routes missing from openapi.yaml: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "openapi.yaml documents routes the server lacks: \(documented.subtracting(served).sorted())")
    }
}
