import Foundation
import TestSupport
import Testing

/// The layers as the compiler sees them: every module a file imports is declared in `Package.swift`,
/// and `docs/architecture.md`'s import table lists exactly what `Package.swift` declares.
@Suite(.offThePool) struct ArchitectureTests {
    /// Modules every target may import without declaring them.
    static let system: Set<String> = ["Foundation", "Dispatch", "Synchronization", "Glibc", "Darwin", "Testing", "XCTest"]

    /// `Package.swift`'s target declarations, each with its name: the text from one declaration (at
    /// the targets' indentation) to the next.
    static func declarations() throws -> [(name: String, text: Substring)] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let starts = ["\n        .target(", "\n        .executableTarget(", "\n        .testTarget(", "\n        .systemLibrary("]
        var pieces: [Substring] = []
        var rest = text[...]
        while let next = starts.compactMap({ rest.range(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound }) {
            pieces.append(rest[..<next.lowerBound])
            rest = rest[next.upperBound...]
        }
        pieces.append(rest)
        return pieces.dropFirst().compactMap { piece in
            guard let name = piece.firstMatch(of: /^\s*name: "([^"]+)"/)?.1 else { return nil }
            return (String(name), piece)
        }
    }

    /// Each target of `Package.swift` with the names it depends on (targets and products).
    static func declaredDependencies() throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        for (name, piece) in try declarations() {
            var dependencies: Set<String> = []
            if let list = piece.firstMatch(of: /dependencies: \[([^\]]*)\]/)?.1 {
                let withoutPackages = list.replacing(/package: "[^"]+"/, with: "")
                for match in withoutPackages.matches(of: /"([^"]+)"/) { dependencies.insert(String(match.1)) }
            }
            result[name] = dependencies
        }
        return result
    }

    /// The folder of each target that names one (`path:`); the others live in `Sources/NAME` or `Tests/NAME`.
    static func declaredPaths() throws -> [String: String] {
        var result: [String: String] = [:]
        for (name, piece) in try declarations() {
            if let path = piece.firstMatch(of: /\bpath: "([^"]+)"/)?.1 { result[name] = String(path) }
        }
        return result
    }

    /// The modules the Swift files under `folder` import.
    static func imports(under folder: URL) throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return result }
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains("import ") {
                guard let match = line.firstMatch(of: /^(?:@_exported |@testable )?(?:public |internal |package )?import ([A-Za-z_][A-Za-z0-9_]*)/) else { continue }
                result[file.lastPathComponent, default: []].insert(String(match.1))
            }
        }
        return result
    }

    @Test func everyImportIsDeclaredInPackageSwift() throws {
        let declared = try Self.declaredDependencies()
        #expect(declared.count > 15, "Package.swift's targets were not found: \(declared.keys.sorted())")
        let paths = try Self.declaredPaths()
        #expect(paths["TestSupport"] == "Tests/TestSupport", "the shared test helpers are checked too")
        var undeclared: [String] = []
        for (target, dependencies) in declared {
            let folder = paths[target] ?? (target.hasSuffix("Tests") ? "Tests/\(target)" : "Sources/\(target)")
            let url = repositoryRoot.appendingPathComponent(folder)
            #expect(FileManager.default.fileExists(atPath: url.path), "\(target)'s folder \(folder) is not where the check looks")
            for (file, modules) in try Self.imports(under: url) {
                for module in modules.subtracting(dependencies).subtracting(Self.system).sorted() {
                    undeclared.append("\(target)/\(file) imports \(module)")
                }
            }
        }
        #expect(undeclared.isEmpty, "imports missing from Package.swift: \(undeclared.sorted())")
    }

    @Test func theDocumentedImportTableIsPackageSwift() throws {
        let declared = try Self.declaredDependencies()
        let doc = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        guard let tableStart = doc.range(of: "| module | depends on (exactly as in `Package.swift`) |") else {
            Issue.record("docs/architecture.md has no import table")
            return
        }
        var documented: [String: Set<String>] = [:]
        for line in doc[tableStart.upperBound...].split(separator: "\n").dropFirst() {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { continue }
            let modules = cells[1].matches(of: /`([^`]+)`/).map { String($0.1) }
            let dependencies = Set(cells[2].matches(of: /`([^`]+)`/).map { String($0.1) })
            for module in modules { documented[module] = dependencies }
        }
        let libraries = declared.filter { !$0.key.hasSuffix("Tests") }
        #expect(
            Set(documented.keys) == Set(libraries.keys),
            "targets missing from the table: \(Set(libraries.keys).subtracting(documented.keys).sorted()); not in Package.swift: \(Set(documented.keys).subtracting(libraries.keys).sorted())"
        )
        for (module, dependencies) in libraries {
            guard let row = documented[module] else { continue }
            #expect(row == dependencies, "\(module): the table says \(row.sorted()), Package.swift \(dependencies.sorted())")
        }
    }

    /// The modules that hold values only, and what none of them may reach, directly or through a module
    /// they depend on: no HTTP, no sockets, no event loops, no database. The cluster's decisions
    /// (`ClusterCore`) are a leaf that any store's build can run and test.
    static let valuesOnly = ["BrowserModel", "BrowserRecords", "BrowserAccess", "ClusterCore"]
    static let notForValues: Set<String> = [
        "HTTPServer", "BrowserAPI", "CMicroHTTPD", "Sockets", "CLinuxEvents", "MiniHTTPClient", "SQLite", "CSQLite", "BrowserPersistence",
        "BrowserPostgres", "PostgresNIO", "NIOCore", "NIOHTTP1", "AsyncHTTPClient", "BrowserServices", "BrowserResidency",
    ]

    @Test func theValueModulesReachNoIO() throws {
        let declared = try Self.declaredDependencies()
        for module in Self.valuesOnly {
            #expect(declared[module] != nil, "\(module) is not a target of Package.swift")
            var reached: Set<String> = []
            var next = declared[module] ?? []
            while let dependency = next.popFirst() {
                guard reached.insert(dependency).inserted else { continue }
                next.formUnion(declared[dependency] ?? [])
            }
            let forbidden = reached.intersection(Self.notForValues)
            #expect(forbidden.isEmpty, "\(module) reaches \(forbidden.sorted())")
        }
    }

    /// `Sources/` is the ladder (`Sources/0-C` … `Sources/6-App`): a module depends on modules of its
    /// own rung or lower ones, never higher, so `ls Sources` reads bottom to top.
    @Test func theLadderPointsDown() throws {
        let declared = try Self.declaredDependencies()
        let paths = try Self.declaredPaths()
        func rung(_ target: String) -> Int? {
            guard let path = paths[target], let match = path.firstMatch(of: /^Sources\/(\d+)-[^\/]+\/[^\/]+$/) else { return nil }
            return Int(match.1)
        }
        let placed = declared.keys.filter { rung($0) != nil }
        #expect(placed.count > 20, "the rungs of Sources/ were not found in Package.swift: \(paths)")
        var upward: [String] = []
        for target in placed {
            let mine = rung(target)!
            for dependency in declared[target] ?? [] {
                if let theirs = rung(dependency), theirs > mine { upward.append("\(target) (\(mine)) → \(dependency) (\(theirs))") }
            }
        }
        #expect(upward.isEmpty, "dependencies that climb the ladder: \(upward.sorted())")
        let folders = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("Sources").path)
        #expect(folders.allSatisfy { $0.firstMatch(of: /^\d+-/) != nil }, "Sources/ holds only rungs: \(folders.sorted())")
    }

    /// Every suite says what it does with a thread (`Tests/TestSupport/OffThePool.swift`): a suite on
    /// Swift's cooperative pool could hold one of its two threads on CI and stall the live servers.
    @Test func everySuiteRunsOffTheCooperativePool() throws {
        // The server's suites and the Swift client's (built and run in this package: see Package.swift).
        let folders = ["Tests", "clients/swift/Tests"].map { repositoryRoot.appendingPathComponent($0) }
        var unmarked: [String] = []
        var suites = 0
        let files = folders.flatMap { folder in
            (FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.allObjects ?? []).compactMap { $0 as? URL }
        }
        for file in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            guard text.contains("@Test") else { continue }
            for line in text.split(separator: "\n") {
                let code = line.drop { $0 == " " }
                if code.hasPrefix("@Suite") {
                    suites += 1
                    if !code.contains(".offThePool") && !code.contains(".computing") { unmarked.append("\(file.lastPathComponent): \(code)") }
                } else if code.firstMatch(of: /^(?:final class|struct|enum) \w+Tests\b/) != nil {
                    unmarked.append("\(file.lastPathComponent): \(code) (no @Suite)")
                }
            }
        }
        #expect(suites > 80)
        #expect(unmarked.isEmpty, "suites without .offThePool or .computing: \(unmarked)")
    }
}
