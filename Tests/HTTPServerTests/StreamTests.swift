import Foundation
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

@testable import HTTPServer

/// Keeps the writers the stream route opens, so tests can feed them from other threads.
final class WriterBox: Sendable {
    let writers = Mutex<[StreamWriter]>([])
    var count: Int { writers.withLock { $0.count } }
    var all: [StreamWriter] { writers.withLock { $0 } }
}

func streamRouter(_ box: WriterBox, heartbeat: [UInt8]? = Array(": ping\n\n".utf8), maxBuffered: Int = 1 << 20) -> Router {
    testRouter { router in
        router.get("/stream") { _ in
            var headers = HTTPHeaders()
            headers.set("Content-Type", "text/event-stream")
            return HTTPResponse(
                status: 200, headers: headers,
                body: .stream(
                    StreamBody(
                        heartbeat: heartbeat, maxBufferedBytes: maxBuffered, preamble: Array(": connected\n\n".utf8)
                    ) { writer in box.writers.withLock { $0.append(writer) } }))
        }
    }
}

@Suite(.offThePool) struct StreamTests {
    @Test func streamIsWokenFromAnotherThread() async throws {
        let box = WriterBox()
        try await withServer(router: streamRouter(box)) { server, observer in
            let client = try connect(server)
            try client.send("GET", "/stream")
            let head = try client.readResponse(headOnly: true)
            #expect(head.status == 200)
            #expect(head.header("content-type") == "text/event-stream")
            #expect(try client.readChunk().map { String(decoding: $0, as: UTF8.self) } == ": connected\n\n")
            #expect(waitUntil { box.count == 1 })
            let writer = box.all[0]
            let thread = Thread {
                Thread.sleep(forTimeInterval: 0.05)
                writer.write(Array("data: one\n\n".utf8))
            }
            thread.start()
            #expect(try client.readChunk().map { String(decoding: $0, as: UTF8.self) } == "data: one\n\n")
            #expect(observer.streams.load(ordering: .relaxed) == 1)
            writer.finish()
            #expect(try client.readChunk() == nil)
            // The connection stays usable after a finished stream.
            #expect(try client.request("GET", "/hello").status == 200)
            #expect(waitUntil { observer.streams.load(ordering: .relaxed) == 0 })
        }
    }

    @Test func heartbeatReachesIdleStreams() async throws {
        let box = WriterBox()
        try await withServer({ $0.streamHeartbeatInterval = .milliseconds(100) }, router: streamRouter(box)) { server, _ in
            let client = try connect(server)
            try client.send("GET", "/stream")
            _ = try client.readResponse(headOnly: true)
            _ = try client.readChunk()
            let beat = try client.readChunk().map { String(decoding: $0, as: UTF8.self) }
            #expect(beat == ": ping\n\n")
        }
    }

    /// Without any heartbeat, a client that hangs up is noticed at once (its socket is watched for
    /// the hang-up while the stream is idle).
    @Test func clientThatHangsUpIsNoticedWithoutHeartbeats() async throws {
        let box = WriterBox()
        try await withServer(router: streamRouter(box, heartbeat: nil)) { server, observer in
            let client = try connect(server)
            try client.send("GET", "/stream")
            _ = try client.readResponse(headOnly: true)
            #expect(waitUntil { box.count == 1 })
            let closed = Atomic<Bool>(false)
            box.all[0].onClose { closed.store(true, ordering: .relaxed) }
            client.close()
            #expect(waitUntil(timeout: .seconds(1)) { closed.load(ordering: .relaxed) })
            #expect(box.all[0].write([1]) == .closed)
            #expect(waitUntil { observer.streams.load(ordering: .relaxed) == 0 && server.openStreams == 0 })
        }
    }

    /// A client that reads slowly gets every byte, in order, whole: writes queue while its socket is
    /// full and go out as it drains (chunk framing intact across partial writes).
    @Test func slowReaderGetsEveryByteInOrder() async throws {
        let box = WriterBox()
        try await withServer(router: streamRouter(box, heartbeat: nil, maxBuffered: 32 << 20)) { server, _ in
            let client = try HTTPClientConnection(host: "127.0.0.1", port: server.port, timeout: .seconds(10), receiveBufferSize: 4096)
            try client.send("GET", "/stream")
            _ = try client.readResponse(headOnly: true)
            #expect(try client.readChunk().map { String(decoding: $0, as: UTF8.self) } == ": connected\n\n")
            #expect(waitUntil { box.count == 1 })
            let writer = box.all[0]
            var expected: [UInt8] = []
            // More than loopback's socket buffers hold (several MB), so some of it must wait.
            for index in 0..<400 {
                let piece = [UInt8](repeating: UInt8(65 + index % 26), count: 20_000 + index * 37)
                expected += piece
                #expect(writer.write(piece) == .written)
            }
            #expect(writer.bufferedByteCount > 0, "the socket filled up, so bytes wait in the writer")
            var received: [UInt8] = []
            while received.count < expected.count, let chunk = try client.readChunk() { received += chunk }
            #expect(received == expected)
            #expect(waitUntil { writer.bufferedByteCount == 0 })
            writer.finish()
            #expect(try client.readChunk() == nil)
        }
    }

    /// An idle stream holds no connection of libmicrohttpd's: its socket was taken over, and the
    /// server's connection count does not include it.
    @Test func streamsLeaveLibmicrohttpdsConnections() async throws {
        let box = WriterBox()
        try await withServer(router: streamRouter(box, heartbeat: nil)) { server, observer in
            var clients: [HTTPClientConnection] = []
            for _ in 0..<20 {
                let client = try connect(server)
                try client.send("GET", "/stream")
                _ = try client.readResponse(headOnly: true)
                clients.append(client)
            }
            #expect(waitUntil { server.openStreams == 20 })
            #expect(waitUntil { observer.connections.load(ordering: .relaxed) == 0 })
            withExtendedLifetime(clients) {}
        }
    }

    /// An HTTP/1.0 client gets the stream without chunks, ended by the connection's close.
    @Test func http10ClientGetsAnUnchunkedStream() async throws {
        let box = WriterBox()
        try await withServer(router: streamRouter(box, heartbeat: nil)) { server, _ in
            let client = try connect(server)
            try client.sendRaw(Array("GET /stream HTTP/1.0\r\nHost: x\r\n\r\n".utf8))
            #expect(waitUntil { box.count == 1 })
            box.all[0].write(Array("data: one\n\n".utf8))
            box.all[0].finish()
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.header("transfer-encoding") == nil)
            #expect(response.header("connection") == "close")
            #expect(String(decoding: response.body, as: UTF8.self) == ": connected\n\ndata: one\n\n")
        }
    }

    @Test func slowReaderOverflowsItsBoundedBuffer() async throws {
        let box = WriterBox()
        try await withServer(router: streamRouter(box, heartbeat: nil, maxBuffered: 64 * 1024)) { server, _ in
            let client = try connect(server)
            try client.send("GET", "/stream")
            _ = try client.readResponse(headOnly: true)
            #expect(waitUntil { box.count == 1 })
            let writer = box.all[0]
            let chunk = [UInt8](repeating: 120, count: 16 * 1024)
            var overflowed = false
            for _ in 0..<2_000 where writer.write(chunk) == .overflow {
                overflowed = true
                break
            }
            #expect(overflowed)
            #expect(writer.bufferedByteCount <= 64 * 1024)
            writer.abort()
        }
    }

    @Test func holdsManyIdleStreams() async throws {
        let box = WriterBox()
        let count = 500
        try await withServer(router: streamRouter(box, heartbeat: nil)) { server, observer in
            var clients: [HTTPClientConnection] = []
            for _ in 0..<count {
                let client = try connect(server)
                try client.send("GET", "/stream")
                clients.append(client)
            }
            for client in clients {
                _ = try client.readResponse(headOnly: true)
                _ = try client.readChunk()
            }
            #expect(waitUntil { observer.streams.load(ordering: .relaxed) == count })
            for writer in box.all { writer.write(Array("data: all\n\n".utf8)) }
            for client in clients {
                #expect(try client.readChunk().map { String(decoding: $0, as: UTF8.self) } == "data: all\n\n")
            }
        }
    }

    @Test func gracefulShutdownAnswersInFlightAndEndsStreams() async throws {
        let box = WriterBox()
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, threads: 2)
        configuration.shutdownGracePeriod = .seconds(5)
        let server = HTTPServer(configuration: configuration, router: streamRouter(box), logger: .init(label: "t"))
        try server.start()
        let (streamClient, slowClient) = try await blocking { () -> (SendableClient, SendableClient) in
            let streamClient = try connect(server)
            try streamClient.send("GET", "/stream")
            _ = try streamClient.readResponse(headOnly: true)
            _ = try streamClient.readChunk()
            let slowClient = try connect(server)
            try slowClient.send("GET", "/slow")
            #expect(waitUntil { server.inFlightRequests == 1 && server.openStreams == 1 })
            return (SendableClient(streamClient), SendableClient(slowClient))
        }
        await server.shutdown()
        try await blocking {
            let streamClient = streamClient.client
            let slowClient = slowClient.client
            let slow = try slowClient.readResponse()
            #expect(slow.status == 200)
            #expect(slow.text == "slow")
            #expect(try streamClient.readChunk() == nil)
            #expect(throws: (any Error).self) { _ = try HTTPClientConnection(host: "127.0.0.1", port: server.port).request("GET", "/hello") }
        }
    }
}

extension StreamTests {
    /// While a stopping server waits for a request in flight, new connections are refused at once
    /// (the listening socket leaves the listen state), and the request in flight still gets its answer.
    @Test func aStoppingServerRefusesNewConnectionsAndAnswersInFlight() async throws {
        let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
        var router = Router()
        router.add(
            .get, "/held",
            .deferred { _ in
                await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
                return .text("held")
            })
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, threads: 2)
        configuration.shutdownGracePeriod = .seconds(10)
        let server = HTTPServer(configuration: configuration, router: router, logger: .init(label: "t"))
        try server.start()
        let held = try await blocking { () -> SendableClient in
            let client = try connect(server)
            try client.send("GET", "/held")
            #expect(waitUntil { gate.withLock { $0 != nil } })
            return SendableClient(client)
        }
        let stopping = Task { await server.shutdown() }
        try await blocking {
            #expect(waitUntil { server.stopping.load(ordering: .relaxed) })
            Thread.sleep(forTimeInterval: 0.05)
            let started = ContinuousClock.now
            #expect(throws: HTTPClientConnection.ClientError.self) {
                _ = try HTTPClientConnection(host: "127.0.0.1", port: server.port, timeout: .seconds(5)).request("GET", "/held")
            }
            #expect(ContinuousClock.now - started < .seconds(2), "refused at once, not left waiting")
            gate.withLock { $0?.resume() }
            let answer = try held.client.readResponse()
            #expect(answer.status == 200 && answer.text == "held")
        }
        await stopping.value
    }
}

/// Hands a client from one test thread to the next.
///
/// `@unchecked Sendable`: the test uses the client on one thread at a time, handing it over only
/// after the previous thread has finished with it.
struct SendableClient: @unchecked Sendable {
    let client: HTTPClientConnection
    init(_ client: HTTPClientConnection) { self.client = client }
}
