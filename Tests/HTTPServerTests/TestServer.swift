import Foundation
import HTTPServer
import Logging
import MiniHTTPClient
import Synchronization

/// Counts what the server reports, for assertions.
final class CountingObserver: HTTPServerObserver {
    let connectionsOpened = Atomic<Int>(0)
    let connections = Atomic<Int>(0)
    let streams = Atomic<Int>(0)
    let completed = Mutex<[(route: String?, status: Int)]>([])
    let methodsSeen = Mutex<Set<String>>([])

    func requestCompleted(method: HTTPMethod, route: String?, status: Int, duration: Duration, isStream: Bool) {
        completed.withLock { $0.append((route, status)) }
        methodsSeen.withLock { _ = $0.insert(method.rawValue) }
    }

    func connectionCountChanged(by delta: Int) {
        if delta > 0 { connectionsOpened.add(delta, ordering: .relaxed) }
        connections.add(delta, ordering: .relaxed)
    }

    func streamCountChanged(by delta: Int) { streams.add(delta, ordering: .relaxed) }
}

/// Runs `body` against a live server on 127.0.0.1 with an ephemeral port, then shuts it down.
///
/// `body` runs on its own thread (see ``blocking(_:)``), so it may use the blocking client freely.
func withServer<T: Sendable>(
    _ configure: (inout ServerConfiguration) -> Void = { _ in },
    router: Router,
    _ body: @escaping @Sendable (HTTPServer, CountingObserver) throws -> T
) async throws -> T {
    var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, threads: 2)
    configuration.shutdownGracePeriod = .seconds(2)
    configure(&configuration)
    let observer = CountingObserver()
    var logger = Logger(label: "test")
    logger.logLevel = .warning
    let server = HTTPServer(configuration: configuration, router: router, logger: logger, observer: observer)
    try server.start()
    do {
        let result = try await blocking { try body(server, observer) }
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}

func connect(_ server: HTTPServer, timeout: Duration = .seconds(5)) throws -> HTTPClientConnection {
    try HTTPClientConnection(host: "127.0.0.1", port: server.port, timeout: timeout)
}

/// A router with the routes the server tests use.
func testRouter(extra: (inout Router) -> Void = { _ in }) -> Router {
    var router = Router()
    router.get("/hello") { _ in .text("hello") }
    router.add(
        .post, "/echo",
        .immediate { request in
            HTTPResponse(status: 200, contentType: "application/octet-stream", body: request.body)
        })
    router.add(.delete, "/hello", .immediate { _ in .noContent })
    router.get("/items/{id}") { request in .text("item \(request.parameter("id")) q=\(request.queryValue("q") ?? "-")") }
    router.add(
        .get, "/slow",
        .deferred { _ in
            try await Task.sleep(for: .milliseconds(100))
            return .text("slow")
        })
    router.get("/fail") { _ in throw HTTPError(409, kind: "conflict-test", title: "Conflict", detail: "on purpose") }
    router.get("/crash") { _ in throw CancellationError() }
    extra(&router)
    return router
}

/// Runs blocking client code on its own thread, so it never holds one of the few threads of
/// Swift's cooperative pool that the server's deferred handlers and timers need.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.start()
    }
}

/// Polls `condition` on the calling thread until it holds or `timeout` passes.
func waitUntil(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}
