import Foundation
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

/// A `browserd` process started from the built executable, its stderr collected.
final class BrowserdProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is configured before launch and only read afterwards; the
    // collected output is behind a Mutex.
    let process = Process()
    private let output = OutputBuffer()
    /// The child's output and errors (read by a Dispatch source until their end).
    private let pipe = Pipe()

    /// The executable next to the test bundle (both are products of the same build).
    static var executable: URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0])
        var directory = testBinary.deletingLastPathComponent()
        if directory.lastPathComponent == "MacOS" { directory = directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }
        return directory.appendingPathComponent("browserd")
    }

    init(arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = Self.executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BROWSERD_") }
        env.merge(environment) { $1 }
        process.environment = env
        process.standardError = pipe
        process.standardOutput = pipe
        let output = self.output
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            // At its end the handler is taken off (its Dispatch source cancelled), and at the latest when
            // this object goes: a source must not outlive its descriptor (swift-subprocess#47: libdispatch
            // crashes in `_dispatch_event_loop_drain`, as two suite runs here did).
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            output.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    deinit { pipe.fileHandleForReading.readabilityHandler = nil }

    var log: String { output.text.withLock { $0 } }

    /// Waits for the start-up line and returns the bound port.
    func waitForPort(timeout: Duration = .seconds(20)) throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let range = log.range(of: #"browserd started"#), let port = Self.port(in: String(log[..<range.upperBound])) {
                return port
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw CancellationError()
    }

    private static func port(in text: String) -> Int? {
        guard let line = text.split(separator: "\n").last(where: { $0.contains("browserd started") }),
            let address = line.split(separator: " ").first(where: { $0.hasPrefix("address=") }),
            let port = address.split(separator: ":").last
        else { return nil }
        return Int(port)
    }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Whether `/readyz` answers 200 within `seconds` (e.g. once storage has recovered).
    func waitUntilReady(port: Int, within seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? HTTPClientConnection(host: "127.0.0.1", port: port).request("GET", "/readyz"))?.status == 200 { return true }
            usleep(100_000)
        }
        return false
    }

    /// Sets the process's file-size limit (`prlimit --fsize`, e.g. "1048576:unlimited"): a soft limit
    /// makes its writes past that size fail, as a full disk would, and can be lifted again.
    func limitFileSize(_ value: String) throws {
        let tool = Process()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        tool.arguments = ["--pid", String(process.processIdentifier), "--fsize=\(value)"]
        try tool.run()
        tool.waitUntilExit()
    }

    /// Waits for the process to exit and returns its status.
    /// A crash and a restart: kills this server with SIGKILL and starts another with `arguments`.
    /// - Returns: the new server and its port.
    func crashAndRestart(arguments: [String]) throws -> (server: BrowserdProcess, port: Int) {
        signal(SIGKILL)
        _ = waitForExit()
        let server = try BrowserdProcess(arguments: arguments)
        return (server, try server.waitForPort())
    }

    /// Stops it with SIGTERM and waits for it to end.
    func stop() {
        signal(SIGTERM)
        _ = waitForExit()
    }

    func waitForExit(timeout: Duration = .seconds(15)) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            return nil
        }
        return process.terminationStatus
    }
}

/// Text a child process printed, appended from the pipe's reader thread.
final class OutputBuffer: Sendable {
    let text = Mutex<String>("")
}

@Suite(.serialized, .offThePool) struct ProcessTests {
    @Test func sigtermStopsGracefullyWithExitZero() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-proc-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let port = try server.waitForPort()
        let status: Int32? = try await blocking {
            let client = try HTTPClientConnection(host: "127.0.0.1", port: port)
            #expect(try client.request("GET", "/healthz").status == 200)
            #expect(try client.request("GET", "/readyz").status == 200)
            server.signal(SIGTERM)
            return server.waitForExit()
        }
        #expect(status == 0, "log:\n\(server.log)")
        #expect(server.log.contains("browserd stopped"))
    }

    @Test func environmentConfiguresTheServer() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-env-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try BrowserdProcess(
            arguments: [],
            environment: [
                "BROWSERD_PORT": "0", "BROWSERD_DATA_DIR": data, "BROWSERD_MAX_BODY_BYTES": "2048",
            ])
        let port = try server.waitForPort()
        try await blocking {
            let index = try HTTPClientConnection(host: "127.0.0.1", port: port).request("GET", "/v1")
            #expect((jsonObject(index.body)?["limits"] as? [String: Any])?["maxBodyBytes"] as? Int == 2048)
            #expect(FileManager.default.fileExists(atPath: data))
            let healthcheck = Process()
            healthcheck.executableURL = BrowserdProcess.executable
            healthcheck.arguments = ["healthcheck"]
            healthcheck.environment = ["BROWSERD_HOST": "0.0.0.0", "BROWSERD_PORT": String(port)]
            healthcheck.standardOutput = FileHandle.nullDevice
            try healthcheck.run()
            healthcheck.waitUntilExit()
            #expect(healthcheck.terminationStatus == 0)
        }
        server.signal(SIGINT)
        #expect(server.waitForExit() == 0)
    }

    @Test func badEnvironmentValueIsRefusedByName() throws {
        let server = try BrowserdProcess(arguments: [], environment: ["BROWSERD_PORT": "eighty"])
        let status = server.waitForExit()
        #expect(status != 0)
        #expect(server.log.contains("BROWSERD_PORT=eighty"))
    }

    @Test func healthcheckFailsWhenNothingListens() throws {
        let probe = Process()
        probe.executableURL = BrowserdProcess.executable
        probe.arguments = ["healthcheck", "--port", "1", "--timeout", "1"]
        probe.standardOutput = FileHandle.nullDevice
        try probe.run()
        probe.waitUntilExit()
        #expect(probe.terminationStatus != 0)
    }
}
