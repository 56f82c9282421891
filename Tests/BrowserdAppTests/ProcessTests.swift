import Foundation
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

/// A `browserd` process started from the built executable, its stderr collected.
final class BrowserdProcess: Sendable {
    let process: ChildProcess
    private let output = OutputBuffer()

    /// The executable next to the test bundle (both are products of the same build).
    static var executable: URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0])
        var directory = testBinary.deletingLastPathComponent()
        if directory.lastPathComponent == "MacOS" { directory = directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }
        return directory.appendingPathComponent("browserd")
    }

    /// Starts browserd with `arguments`, this process's environment (without its `BROWSERD_` settings)
    /// and `environment`; its output (standard output and error) is collected (``log``).
    init(arguments: [String], environment: [String: String] = [:]) throws {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BROWSERD_") }
        env.merge(environment) { $1 }
        let output = self.output
        process = try ChildProcess(
            executable: Self.executable.path, arguments: arguments, environment: env,
            output: .pipe { bytes in output.text.withLock { $0 += String(decoding: bytes, as: UTF8.self) } })
    }

    /// Runs browserd with `arguments` and `environment` (exactly) to its end, its output discarded.
    /// - Returns: its exit status.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Int32 {
        let child = try ChildProcess(executable: executable.path, arguments: arguments, environment: environment, output: .discarded)
        child.waitUntilExit()
        return child.terminationStatus
    }

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

    /// Waits for the server's listening line (logged before start-up work is done) and returns its port.
    func waitForListening(timeout: Duration = .seconds(20)) throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let range = log.range(of: "http server listening"), let port = Self.port(in: String(log[..<range.upperBound]), line: "http server listening") {
                return port
            }
            if !process.isRunning { break }
            usleep(1_000)
        }
        throw CancellationError()
    }

    private static func port(in text: String, line marker: String = "browserd started") -> Int? {
        guard let line = text.split(separator: "\n").last(where: { $0.contains(marker) }),
            let address = line.split(separator: " ").first(where: { $0.hasPrefix("address=") }),
            let port = address.split(separator: ":").last
        else { return nil }
        return Int(port)
    }

    func signal(_ signal: Int32) { process.signal(signal) }

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
        let tool = try ChildProcess(
            executable: "/usr/bin/prlimit", arguments: ["--pid", String(process.pid), "--fsize=\(value)"], environment: [:], output: .discarded)
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
            process.signal(SIGTERM)
            return nil
        }
        // Its last words may still be in the pipe when its exit is seen.
        process.waitForOutputEnd()
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
            #expect(try BrowserdProcess.run(["healthcheck"], environment: ["BROWSERD_HOST": "0.0.0.0", "BROWSERD_PORT": String(port)]) == 0)
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

    /// `/readyz` 200 means changes are taken: a client that polls it from the server's first moment and
    /// then creates a profile gets 201, never a 503 for a store not yet open (on PostgreSQL the server
    /// answers while it joins the cluster; a write then was refused as "could not be saved", and
    /// before the sink refused it, the model had already changed). Three starts a store: the window
    /// was hit in about one start of four.
    @Test(arguments: TestStore.available)
    func readyMeansWritesAreTaken(_ store: TestStore) async throws {
        try await store.withArguments { arguments in
            for start in 0..<3 {
                let server = try BrowserdProcess(arguments: ["--port", "0", "--log-level", "debug"] + arguments)
                let port = try server.waitForListening()
                let status = try await blocking { () -> Int in
                    let client = try HTTPClientConnection(host: "127.0.0.1", port: port)
                    let deadline = Date().addingTimeInterval(20)
                    while (try? client.request("GET", "/readyz"))?.status != 200 {
                        guard Date() < deadline else { return 0 }
                    }
                    let body = Array(#"{"name":"ready \#(start)"}"#.utf8)
                    return try client.request("POST", "/v1/profiles", headers: crashJSONHeaders, body: body).status
                }
                server.signal(SIGTERM)
                _ = server.waitForExit()
                #expect(status == 201, "start \(start): the first write after /readyz 200 got \(status); log:\n\(server.log)")
            }
        }
    }

    @Test func healthcheckFailsWhenNothingListens() throws {
        #expect(try BrowserdProcess.run(["healthcheck", "--port", "1", "--timeout", "1"]) != 0)
    }
}
