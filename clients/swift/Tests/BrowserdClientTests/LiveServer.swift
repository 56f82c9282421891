import Foundation
import TestSupport
import Testing

@testable import BrowserdClient

#if canImport(Glibc)
    import Glibc
#endif

/// A browserd process for one test: the built binary (`BROWSERD_BIN`, else the server package's
/// `.build/debug/browserd`), a fresh data directory, a free loopback port; stopped (SIGTERM) at the end.
final class LiveServer: @unchecked Sendable {
    // `@unchecked Sendable`: `process` is replaced only by `restart()`, which the test calls from
    // its one task.
    let port: Int
    let dataDirectory: URL
    let binary: String
    /// Spawned without Foundation's `Process` (TestSupport's `ChildProcess` says why).
    private(set) var process: ChildProcess?
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    static var binaryPath: String {
        if let path = ProcessInfo.processInfo.environment["BROWSERD_BIN"], !path.isEmpty { return path }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return package.appendingPathComponent("../../.build/debug/browserd").standardized.path
    }

    init(arguments: [String] = []) async throws {
        binary = Self.binaryPath
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw Failure("no browserd binary at \(binary): build the server first (make build) or set BROWSERD_BIN")
        }
        port = try Self.freePort()
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        self.arguments = arguments
        try await start()
    }

    private let arguments: [String]

    private func start() async throws {
        let process = try ChildProcess(
            executable: binary, arguments: ["--port", "\(port)", "--data-dir", dataDirectory.path, "--log-level", "warning"] + arguments,
            environment: ProcessInfo.processInfo.environment, output: .errorsShown)
        self.process = process
        for _ in 0..<400 {
            if try await Self.isReady(url) { return }
            guard process.isRunning else { throw Failure("browserd exited (\(process.terminationStatus)) before it was ready") }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw Failure("browserd was not ready within 10 s")
    }

    /// Stops the process (SIGTERM, as an operator would) and starts it again on the same port and data.
    func restart() async throws {
        stop()
        try await start()
    }

    func stop() {
        guard let process, process.isRunning else { return }
        process.signal(SIGTERM)
        process.waitUntilExit()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    private static func isReady(_ url: URL) async throws -> Bool {
        let client = BrowserdClient(server: url)
        do {
            if case .ok = try await client.api.getReadiness() { return true }
            return false
        } catch {
            return false
        }
    }

    /// A port nothing listens on now (bound to 0, read back, closed).
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
