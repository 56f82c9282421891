// A server for the stream benchmark (bench/streams.py): HTTPServer alone, with a `/stream` route
// whose writers are kept in a hub, `/broadcast` to send one event to every stream, and `/stats`.
// Usage: StreamBench PORT [CONNECTION_LIMIT] [CONNECTION_MEMORY_BYTES]
import HTTPServer
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

final class Hub: Sendable {
    let writers = Mutex<[Int: StreamWriter]>([:])
    let sequence = Atomic<Int>(0)

    func add(_ writer: StreamWriter) {
        writers.withLock { $0[writer.id] = writer }
        writer.onClose { [weak self] in _ = self?.writers.withLock { $0.removeValue(forKey: writer.id) } }
    }

    func broadcast() -> Int {
        let n = sequence.add(1, ordering: .relaxed).newValue
        let event = Array("id: \(n)\nevent: tick\ndata: {\"n\":\(n)}\n\n".utf8)
        let all = writers.withLock { Array($0.values) }
        for writer in all { writer.write(event) }
        return all.count
    }
}

let arguments = CommandLine.arguments
let port = arguments.count > 1 ? Int(arguments[1]) ?? 8090 : 8090
var configuration = ServerConfiguration(host: "127.0.0.1", port: port, threads: ServerConfiguration.coreCount)
configuration.perIPConnectionLimit = 0  // every watcher connects from 127.0.0.1
configuration.connectionLimit = arguments.count > 2 ? Int(arguments[2]) ?? 16_000 : 16_000
configuration.connectionMemoryBytes = arguments.count > 3 ? Int(arguments[3]) ?? 32_768 : 32_768
configuration.streamHeartbeatInterval = .seconds(15)

var limit = rlimit()
getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
limit.rlim_cur = limit.rlim_max
setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

let hub = Hub()
var router = Router()
router.get("/stream") { _ in
    HTTPResponse(
        status: 200, headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-store"],
        body: .stream(
            StreamBody(
                heartbeat: Array(": ping\n\n".utf8), maxBufferedBytes: 64 * 1024,
                preamble: Array(": connected\n\n".utf8)
            ) { hub.add($0) }))
}
router.add(.post, "/broadcast", .immediate { _ in .text("\(hub.broadcast())") })
router.get("/stats") { _ in .text("\(hub.writers.withLock { $0.count })") }

var logger = Logger(label: "stream-bench")
logger.logLevel = .warning
let server = HTTPServer(configuration: configuration, router: router, logger: logger)
try server.start()
print("listening on \(server.port)")
while true { sleep(3600) }
