import BrowserdApp
import Foundation
import HTTPServer
import Logging
import MiniHTTPClient

/// Runs `body` against an in-process application on 127.0.0.1 with an ephemeral port.
/// `body` runs on its own thread, so the blocking client never holds the cooperative pool.
func withApplication<T: Sendable>(
    dataDirectory given: String? = nil,
    _ configure: (inout BrowserdConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (Application) throws -> T
) async throws -> T {
    let dataDirectory = given ?? FileManager.default.temporaryDirectory.appendingPathComponent("browserd-test-\(UUID())").path
    var configuration = BrowserdConfiguration(
        server: ServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), dataDirectory: dataDirectory)
    configuration.server.shutdownGracePeriod = .seconds(2)
    configure(&configuration)
    var logger = Logger(label: "browserd-test")
    logger.logLevel = .warning
    let application = Application(configuration: configuration, logger: logger)
    try await application.start()
    defer { if given == nil { try? FileManager.default.removeItem(atPath: dataDirectory) } }
    do {
        let result = try await blocking { try body(application) }
        await application.shutdown()
        return result
    } catch {
        await application.shutdown()
        throw error
    }
}

/// Runs blocking code on its own thread and awaits its result.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

extension Application {
    func client() throws -> HTTPClientConnection {
        try HTTPClientConnection(host: "127.0.0.1", port: port)
    }

    func get(_ path: String) throws -> HTTPClientConnection.Response {
        try client().request("GET", path)
    }
}

/// The repository's top folder, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

func jsonObject(_ bytes: [UInt8]) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
}
