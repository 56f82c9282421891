#if PostgreSQL
    import Foundation
    import Glibc
    import Synchronization
    import TestSupport
    import Testing

    @testable import BrowserCluster
    import ClusterCore
    import HTTPServer
    import Logging
    import Sockets

    /// The forwarding hop against a scripted owner on loopback: answers read whole, connections kept and
    /// reused, one the owner closed retried, `HEAD` without a body, a refused address an error.
    // Serialized, 64 reads at once: each read's task and each of the owner's connections is a thread
    // of its own, and a container's process limit (podman's 2048) was reached by three of these at
    // 200 reads beside the other suites' servers (they could not start their threads: "cannot listen").
    @Suite(.offThePool, .serialized) struct RelayTests {
        /// A one-thread TCP server that answers each request it reads with the next canned answer, and
        /// closes the connection after `closeAfter` answers on it.
        final class Owner: @unchecked Sendable {
            let port: Int
            private let listener: Int32
            let accepted = Atomic<Int>(0)

            init(answers: @escaping @Sendable (String) -> String, closeAfter: Int = .max) throws {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var one: Int32 = 1
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                listen(fd, 1024)  // many connects at once: none may wait for a SYN retransmission
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
                listener = fd
                port = Int(UInt16(bigEndian: address.sin_port))
                Thread { [self] in
                    while true {
                        let fd = accept(self.listener, nil, nil)
                        guard fd >= 0 else {
                            close(self.listener)
                            return
                        }
                        self.accepted.wrappingAdd(1, ordering: .relaxed)
                        Thread {
                            var served = 0
                            var buffer = [UInt8](repeating: 0, count: 65536)
                            var pending: [UInt8] = []
                            reading: while served < closeAfter {
                                let n = recv(fd, &buffer, buffer.count, 0)
                                guard n > 0 else { break }
                                pending += buffer[..<n]
                                // Each whole request (pipelined ones arrive together) gets its answer, in order.
                                while served < closeAfter, let request = Self.takeRequest(&pending) {
                                    let answer = Array(answers(request).utf8)
                                    _ = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                                    served += 1
                                }
                                if served >= closeAfter { break reading }
                            }
                            // As a server that closes a kept connection does: FIN, then whatever comes is
                            // read and dropped (a close with unread data would reset the connection instead).
                            shutdown(fd, Int32(SHUT_WR))
                            while recv(fd, &buffer, buffer.count, 0) > 0 {}
                            close(fd)
                        }.start()
                    }
                }.start()
            }

            private let stopped = Atomic<Bool>(false)

            /// The first whole request in `pending` (head and `Content-Length` body), taken off it.
            static func takeRequest(_ pending: inout [UInt8]) -> String? {
                let text = String(decoding: pending, as: UTF8.self)
                guard let headEnd = text.utf8.firstRange(of: "\r\n\r\n".utf8) else { return nil }
                let head = String(text[..<headEnd.lowerBound])
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                let total = text.utf8.distance(from: text.utf8.startIndex, to: headEnd.upperBound) + length
                guard pending.count >= total else { return nil }
                defer { pending.removeFirst(total) }
                return String(decoding: pending[..<total], as: UTF8.self)
            }

            /// Stops accepting (once): the accepting thread sees its `accept` fail and closes the socket
            /// itself, so its descriptor number is never reused under another test's feet.
            func stop() {
                guard !stopped.exchange(true, ordering: .relaxed) else { return }
                shutdown(listener, Int32(SHUT_RDWR))
            }
        }

        /// Generous deadlines: these tests may share a loaded machine.
        static let timing: ClusterTiming = {
            var timing = ClusterTiming()
            timing.forwardConnectTimeout = .seconds(10)
            return timing
        }()

        static func ok(_ body: String) -> String { "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)" }

        @Test func answersAreReadWholeAndConnectionsKept() async throws {
            let owner = try Owner(answers: { request in Self.ok(String(request.split(separator: " ")[1])) })
            defer { owner.stop() }
            let relay = Relay(timing: Self.timing)
            defer { relay.shutdown() }
            for path in ["/a", "/b/c", "/d?x=1"] {
                let answer = try await relay.exchange(
                    Array("GET \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".utf8),
                    host: "127.0.0.1", port: owner.port)
                #expect(answer.status == 200 && String(decoding: answer.body, as: UTF8.self) == path)
                #expect(answer.headers.contains { $0.name == "Content-Type" && $0.value == "text/plain" })
            }
            #expect(owner.accepted.load(ordering: .relaxed) == 1, "one kept connection served all three")
        }

        @Test func aConnectionTheOwnerClosedIsRetriedOnANewOne() async throws {
            let owner = try Owner(answers: { _ in Self.ok("fine") }, closeAfter: 1)
            defer { owner.stop() }
            let relay = Relay(timing: Self.timing)
            defer { relay.shutdown() }
            for _ in 0..<3 {
                let answer = try await relay.exchange(
                    Array("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}".utf8),
                    host: "127.0.0.1", port: owner.port)
                #expect(String(decoding: answer.body, as: UTF8.self) == "fine")
            }
            #expect(owner.accepted.load(ordering: .relaxed) == 3)
        }

        @Test func headHasNoBodyAndARefusedAddressFails() async throws {
            let owner = try Owner(answers: { _ in "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n" })
            defer { owner.stop() }
            let relay = Relay(timing: Self.timing)
            defer { relay.shutdown() }
            let head = try await relay.exchange(Array("HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n".utf8), isHead: true, host: "127.0.0.1", port: owner.port)
            #expect(head.status == 200 && head.body.isEmpty)
            owner.stop()
            await #expect(throws: Relay.Failure.self) {
                _ = try await relay.exchange(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), host: "127.0.0.1", port: 1)
            }
        }

        static let concurrent = Int(ProcessInfo.processInfo.environment["RELAY_N"] ?? "64") ?? 64

        /// ``concurrent`` reads at once, each of a path of its own, each checked to get its own answer.
        static func readConcurrently(through relay: Relay, from owner: Owner, pipelines: Bool) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<Self.concurrent {
                    group.addTask {
                        let answer = try await relay.exchange(
                            Array("GET /n/\(index) HTTP/1.1\r\nHost: x\r\n\r\n".utf8), pipelines: pipelines, host: "127.0.0.1", port: owner.port)
                        #expect(String(decoding: answer.body, as: UTF8.self) == "/n/\(index)", "pipelined: \(pipelines)")
                    }
                }
                try await group.waitForAll()
            }
        }

        @Test func manyExchangesAtOnceEachGetTheirOwnAnswer() async throws {
            let owner = try Owner(answers: { request in Self.ok(String(request.split(separator: " ")[1])) })
            defer { owner.stop() }
            let relay = Relay(timing: Self.timing)
            defer { relay.shutdown() }
            try await Self.readConcurrently(through: relay, from: owner, pipelines: false)
            // Kept connections are reused: far fewer than one per exchange.
            #expect(owner.accepted.load(ordering: .relaxed) <= Self.concurrent)
            let again = try await relay.exchange(Array("GET /again HTTP/1.1\r\nHost: x\r\n\r\n".utf8), host: "127.0.0.1", port: owner.port)
            #expect(String(decoding: again.body, as: UTF8.self) == "/again")
        }

        /// Reads share a few pipelined connections: each gets its own answer, in order, however many
        /// are in flight; fewer connections than reads; one the owner closes after some answers has
        /// the reads behind them sent again.
        @Test func readsArePipelined() async throws {
            for closeAfter in [Int.max, 40] {
                let owner = try Owner(answers: { request in Self.ok(String(request.split(separator: " ")[1])) }, closeAfter: closeAfter)
                defer { owner.stop() }
                let relay = Relay(timing: Self.timing)
                defer { relay.shutdown() }
                try await Self.readConcurrently(through: relay, from: owner, pipelines: true)
                let accepted = owner.accepted.load(ordering: .relaxed)
                #expect(accepted < Self.concurrent, "\(accepted) connections for \(Self.concurrent) reads")
                if closeAfter != .max { #expect(accepted >= Self.concurrent / closeAfter) }
            }
        }

        /// A read the owner is slow to answer (a cold profile's load) holds up no read that came after
        /// it: none queues behind a stalled connection, so all finish before it.
        @Test func aSlowReadHoldsUpNoOtherRead() async throws {
            // The owner holds the slow read until every other read was answered (at most 20 s): a read
            // queued behind it on its connection would be answered only after it.
            let slowArrived = Atomic<Bool>(false)
            let release = DispatchSemaphore(value: 0)
            let owner = try Owner(answers: { request in
                if request.hasPrefix("GET /slow ") {
                    slowArrived.store(true, ordering: .relaxed)
                    _ = release.wait(timeout: .now() + 20)
                }
                return Self.ok(String(request.split(separator: " ")[1]))
            })
            defer { owner.stop() }
            let relay = Relay(timing: Self.timing)
            defer { relay.shutdown() }
            let finished = Mutex<[String]>([])
            let slow = Task {
                _ = try await relay.exchange(Array("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n".utf8), pipelines: true, host: "127.0.0.1", port: owner.port)
                finished.withLock { $0.append("/slow") }
            }
            // In flight, and past the stall rule's 5 ms.
            while !slowArrived.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(5)) }
            try await Task.sleep(for: .milliseconds(20))
            try await Self.readConcurrently(through: relay, from: owner, pipelines: true)
            finished.withLock { $0.append("the others") }
            release.signal()
            try await slow.value
            #expect(finished.withLock { $0 } == ["the others", "/slow"])
        }

        /// Owners' addresses are resolved off the relay's loop, per owner: one whose name does not resolve
        /// (held until the others are answered, 20 s at most) holds up its own first request only, never
        /// the requests to another owner meanwhile.
        @Test func aSlowResolverHoldsUpOnlyItsOwnersRequests() async throws {
            let owner = try Owner(answers: { request in Self.ok(String(request.split(separator: " ")[1])) })
            defer { owner.stop() }
            let port = owner.port
            let resolving = Mutex<[String]>([])
            let release = DispatchSemaphore(value: 0)
            let forwarder = Forwarder(
                instanceID: "i-test", secret: "", timing: Self.timing, logger: Logger(label: "relay-test"),
                resolver: { host, port throws(SocketError) in
                    resolving.withLock { $0.append(host) }
                    if host == "slow.invalid" { _ = release.wait(timeout: .now() + 20) }
                    return try SocketAddress.resolve(host: "127.0.0.1", port: port)
                })
            defer { Task { await forwarder.shutdown() } }
            func get(_ path: String) -> HTTPRequest { HTTPRequest(method: .get, path: path, headers: HTTPHeaders()) }
            let slowBase = "http://slow.invalid:\(port)"
            #expect(forwarder.relayAtOnce(get("/x"), to: slowBase) == nil, "not resolved yet: the relay does not take it at once")
            let finished = Mutex<[String]>([])
            let slow = Task {
                let answer = try await forwarder.forward(get("/slow"), to: slowBase)
                finished.withLock { $0.append("slow") }
                return answer
            }
            while !resolving.withLock({ $0.contains("slow.invalid") }) { try await Task.sleep(for: .milliseconds(5)) }
            for index in 0..<20 {
                let answer = try await forwarder.forward(get("/fast/\(index)"), to: "http://fast.invalid:\(port)")
                #expect(answer.status == 200)
            }
            finished.withLock { $0.append("fast") }
            release.signal()
            #expect(try await slow.value.status == 200)
            #expect(finished.withLock { $0 } == ["fast", "slow"], "the other owner's 20 forwards went on while one name resolved")
            #expect(forwarder.relayAtOnce(get("/x"), to: slowBase) != nil, "resolved once: kept")
            #expect(resolving.withLock { $0.filter { $0 == "fast.invalid" }.count } == 1, "resolved once per owner")
        }

        /// The benchmark's other way (`BROWSERD_FORWARD_THROUGH=async-http-client`): every request goes
        /// through async-http-client, the relay never takes one, and the owner answers as through it.
        @Test func throughAsyncHTTPClientTheRelayTakesNothing() async throws {
            let owner = try Owner(answers: { request in Self.ok(String(request.split(separator: " ")[1])) })
            defer { owner.stop() }
            let forwarder = Forwarder(
                instanceID: "i-test", secret: "", timing: Self.timing, path: .asyncHTTPClient, logger: Logger(label: "relay-test"))
            defer { Task { await forwarder.shutdown() } }
            let base = "http://127.0.0.1:\(owner.port)"
            let request = HTTPRequest(method: .get, path: "/v1/browsers/w1", headers: HTTPHeaders())
            for _ in 0..<3 {
                let answer = try await forwarder.forward(request, to: base)
                #expect(answer.status == 200)
                guard case .bytes(let body) = answer.body else {
                    Issue.record("a whole answer expected")
                    return
                }
                #expect(String(decoding: body, as: UTF8.self) == "/v1/browsers/w1")
                #expect(forwarder.relayAtOnce(request, to: base) == nil, "the relay takes nothing on this path")
            }
        }

        /// Reads written together say that more follow (`X-Browserd-Pipelined: more`, just before the
        /// head's blank line) on all but the last, so the owner sends their answers together; a
        /// request with a body is never marked; every read still gets its own answer.
        @Test func pipelinedReadsSayMoreFollow() async throws {
            let seen = Mutex<[String]>([])
            let owner = try Owner(answers: { request in
                seen.withLock { $0.append(request) }
                return Self.ok(String(request.split(separator: " ")[1]))
            })
            defer { owner.stop() }
            let relay = Relay(timing: Self.timing)
            defer { relay.shutdown() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<Self.concurrent {
                    group.addTask {
                        let withBody = index % 10 == 0
                        let request = withBody ? "GET /n/\(index) HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}" : "GET /n/\(index) HTTP/1.1\r\nHost: x\r\n\r\n"
                        let answer = try await relay.exchange(
                            Array(request.utf8), pipelines: true, bodyless: !withBody, host: "127.0.0.1", port: owner.port)
                        #expect(String(decoding: answer.body, as: UTF8.self) == "/n/\(index)")
                    }
                }
                try await group.waitForAll()
            }
            let requests = seen.withLock { $0 }
            let marked = requests.filter { $0.contains("X-Browserd-Pipelined") }
            #expect(requests.count == Self.concurrent)
            #expect(!marked.isEmpty, "\(Self.concurrent) reads at once: some are written together")
            #expect(marked.count < requests.count)
            #expect(marked.allSatisfy { $0.hasSuffix("\r\nX-Browserd-Pipelined: more\r\n\r\n") })
            #expect(!marked.contains { $0.hasSuffix("{}") || $0.contains("Content-Length: 2") }, "a request with a body is left as it is")
        }

        /// Answers larger than a read (the buffer grows, then goes back to its size once empty), one
        /// split across reads, many in one: each is read whole and in order.
        @Test func largeAnswersAreReadWhole() async throws {
            @Sendable func body(_ size: Int) -> String { String((0..<size).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) }) }
            let owner = try Owner(answers: { request in Self.ok(body(Int(request.split(separator: " ")[1].dropFirst())!)) })
            defer { owner.stop() }
            let relay = Relay(timing: Self.timing)
            defer { relay.shutdown() }
            let sizes = [1, 20_000, 100_000, 1, 300_000, 16_384, 70_000, 0, 5]
            for pipelines in [false, true] {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for size in sizes + sizes {
                        group.addTask {
                            let answer = try await relay.exchange(
                                Array("GET /\(size) HTTP/1.1\r\nHost: x\r\n\r\n".utf8), pipelines: pipelines, bodyless: true,
                                host: "127.0.0.1", port: owner.port)
                            #expect(answer.body.count == size && String(decoding: answer.body, as: UTF8.self) == body(size))
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }

        /// The receive buffer: read into directly, answers taken off its front, room made by moving
        /// what is left or by growing, and back to its first size once emptied after growing large.
        @Test func theReceiveBufferKeepsWhatIsNotConsumed() throws {
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0)
            let reading = Socket(adopting: pair[0])
            defer { close(pair[1]) }
            let buffer = ReceiveBuffer()
            #expect(buffer.isEmpty && buffer.capacity == ReceiveBuffer.readSize)
            let sent = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            #expect(sent.withUnsafeBytes { send(pair[1], $0.baseAddress, $0.count, 0) } == sent.count)
            var full = true
            while full {
                let (n, wasFull) = buffer.receive(from: reading)
                #expect(n > 0)
                full = wasFull
            }
            #expect(buffer.count == sent.count && Array(buffer.bytes) == sent)
            buffer.consume(10_000)
            #expect(Array(buffer.bytes) == Array(sent[10_000...]))
            let (nothing, _) = buffer.receive(from: reading)
            #expect(nothing < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            #expect(Array(buffer.bytes) == Array(sent[10_000...]), "room was made by moving what is left")
            let more = [UInt8](repeating: 7, count: 300_000)
            var written = 0
            var received = 0
            while received < more.count {
                if written < more.count {
                    let n = more[written...].withUnsafeBytes { send(pair[1], $0.baseAddress, $0.count, 0) }
                    if n > 0 { written += n }
                }
                let (n, _) = buffer.receive(from: reading)
                if n > 0 { received += n }
            }
            #expect(buffer.count == 30_000 + more.count && Array(buffer.bytes.suffix(more.count)) == more)
            #expect(buffer.capacity > ReceiveBuffer.keptCapacity)
            buffer.consume(buffer.count)
            #expect(buffer.isEmpty && buffer.capacity == ReceiveBuffer.readSize)
            reading.close()
            let (closed, _) = buffer.receive(from: reading)
            #expect(closed < 0 && errno == EBADF, "a closed socket is never read through its old number")
        }

        @Test func anOwnerThatNeverAnswersTimesOutAndStoppingFailsWhatIsUnderWay() async throws {
            let owner = try Owner(answers: { _ in "" })
            defer { owner.stop() }
            var timing = Self.timing
            timing.forwardDeadline = .milliseconds(300)
            let relay = Relay(timing: timing)
            let started = ContinuousClock.now
            await #expect(throws: Relay.Failure.timedOut) {
                _ = try await relay.exchange(Array("GET /silent HTTP/1.1\r\nHost: x\r\n\r\n".utf8), host: "127.0.0.1", port: owner.port)
            }
            #expect(ContinuousClock.now - started < .seconds(20), "its own 300 ms deadline, not a default one (a loaded machine may be slow to say so)")
            var slow = Self.timing
            slow.forwardDeadline = .seconds(60)
            let stopping = Relay(timing: slow)
            let underWay = Task {
                try await stopping.exchange(Array("GET /silent HTTP/1.1\r\nHost: x\r\n\r\n".utf8), host: "127.0.0.1", port: owner.port)
            }
            try await Task.sleep(for: .milliseconds(100))
            stopping.shutdown()
            await #expect(throws: Relay.Failure.closed) { _ = try await underWay.value }
            relay.shutdown()
            await #expect(throws: Relay.Failure.closed) {
                _ = try await relay.exchange(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), host: "127.0.0.1", port: owner.port)
            }
        }

        @Test func answersAreReadFromTheBytesAlone() throws {
            func read(_ text: String, head: Bool = false, ended: Bool = false) throws(Relay.Failure) -> RelayAnswer.Reading {
                try RelayAnswer.read(Array(text.utf8), isHead: head, ended: ended)
            }
            func prefix(_ text: String, _ count: Int) -> String {
                String(decoding: Array(text.utf8).prefix(count), as: UTF8.self)
            }
            let whole = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
            guard case .complete(let answer, let keepAlive, let length) = try read(whole) else {
                Issue.record("whole")
                return
            }
            #expect(answer.status == 200 && answer.body == Array("hello".utf8) && keepAlive && length == whole.utf8.count)
            // Pipelined: the next answer's bytes follow, and are not this one's.
            guard case .complete(let first, true, whole.utf8.count) = try read(whole + "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n") else {
                Issue.record("pipelined")
                return
            }
            #expect(first == answer)
            #expect(answer.headers.map(\.name) == ["Content-Type"], "framing and hop-by-hop headers are the local server's own")
            for cut in [0, 10, whole.utf8.count - 6, whole.utf8.count - 1] {
                #expect(try read(prefix(whole, cut)) == .incomplete, "cut at \(cut)")
                #expect(throws: Relay.Failure.closed) { try read(prefix(whole, cut), ended: true) }
            }
            // Not kept: HTTP/1.0, Connection: close, the owner closed.
            for (text, ended) in [
                ("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false), ("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false),
                ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true), ("HTTP/1.1 200 OK\r\nCONNECTION: Close\r\ncontent-LENGTH: 0\r\n\r\n", false),
            ] {
                guard case .complete(_, let keepAlive, _) = try read(text, ended: ended) else {
                    Issue.record("\(text)")
                    continue
                }
                #expect(!keepAlive, "\(text)")
            }
            // No body: HEAD, 204, 304, whatever the length says.
            for (text, head) in [
                ("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true), ("HTTP/1.1 204 No Content\r\n\r\n", false),
                ("HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\n\r\n", false),
            ] {
                guard case .complete(let answer, _, _) = try read(text, head: head) else {
                    Issue.record("\(text)")
                    continue
                }
                #expect(answer.body.isEmpty)
            }
            // No length: to the connection's end.
            #expect(try read("HTTP/1.1 200 OK\r\n\r\npart") == .incomplete)
            guard case .complete(let rest, false, _) = try read("HTTP/1.1 200 OK\r\n\r\nall of it", ended: true) else {
                Issue.record("rest")
                return
            }
            #expect(rest.body == Array("all of it".utf8))
            // Refused: chunked, a bad length or status line, a head without end.
            for bad in [
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "SSH-2.0\r\n\r\n", "HTTP/1.1 2xx OK\r\n\r\n",
                "HTTP/1.1 200 OK\r\n" + String(repeating: "a", count: 70_000),
            ] {
                #expect(throws: Relay.Failure.self, "\(bad.prefix(40))") { try read(bad) }
            }
        }

        @Test func ownerAddressesAreParsedOnce() {
            #expect(Forwarder.address(of: "http://10.0.0.2:8080").map { "\($0.host) \($0.port) \($0.authority)" } == "10.0.0.2 8080 10.0.0.2:8080")
            #expect(Forwarder.address(of: "http://[::1]:9000").map { "\($0.host) \($0.port)" } == "::1 9000")
            #expect(Forwarder.address(of: "http://b").map(\.port) == 80)
            for bad in ["https://a:1", "http://a:1/path", "http://", "http://a:b", "ftp://a"] { #expect(Forwarder.address(of: bad) == nil, "\(bad)") }
        }

        /// An owner that answers pipelines (`POST /pipeline`: each enclosed read's answer, in order) or
        /// refuses them (404), and each read on its own; it counts the pipelines and reads it saw.
        final class Seen: Sendable {
            /// The size of each pipeline.
            let pipelines = Mutex<[Int]>([])
            /// Reads on their own.
            let single = Atomic<Int>(0)
        }

        static func pipelineOwner(refusing: Bool, seen: Seen) throws -> Owner {
            try Owner(answers: { request in
                guard request.hasPrefix("POST /pipeline ") else {
                    seen.single.wrappingAdd(1, ordering: .relaxed)
                    return Self.ok(String(request.split(separator: " ")[1]))
                }
                let body = request[request.range(of: "\r\n\r\n")!.upperBound...]
                let reads = body.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
                seen.pipelines.withLock { $0.append(reads.count) }
                if refusing { return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n" }
                let answers = reads.map { read in Self.ok(String(read.split(separator: " ")[1])) }.joined()
                return "HTTP/1.1 200 OK\r\nContent-Type: application/http\r\nContent-Length: \(answers.utf8.count)\r\n\r\n\(answers)"
            })
        }

        static func enclosingRelay() -> Relay {
            Relay(timing: Self.timing) { key, length in Array("POST /pipeline HTTP/1.1\r\nHost: \(key)\r\nContent-Length: \(length)\r\n\r\n".utf8) }
        }

        /// ``concurrent`` bodyless reads at once, each of a path of its own, each checked to get its own answer.
        static func readsAtOnce(through relay: Relay, from owner: Owner, round: Int) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<Self.concurrent {
                    group.addTask {
                        let answer = try await relay.exchange(
                            Array("GET /n/\(round)/\(index) HTTP/1.1\r\nHost: x\r\n\r\n".utf8), pipelines: true, bodyless: true, host: "127.0.0.1",
                            port: owner.port)
                        #expect(String(decoding: answer.body, as: UTF8.self) == "/n/\(round)/\(index)")
                    }
                }
                try await group.waitForAll()
            }
        }

        /// ``concurrent`` reads at once through an enclosing relay to a ``pipelineOwner(refusing:seen:)``,
        /// then `more` with the relay and owner still up; what the owner saw.
        static func readsAtOnce(
            toAnOwnerRefusingPipelines refusing: Bool,
            then more: (Seen, Relay, Owner) async throws -> Void = { _, _, _ in }
        ) async throws -> Seen {
            let seen = Seen()
            let owner = try Self.pipelineOwner(refusing: refusing, seen: seen)
            defer { owner.stop() }
            let relay = Self.enclosingRelay()
            defer { relay.shutdown() }
            try await Self.readsAtOnce(through: relay, from: owner, round: 0)
            try await more(seen, relay, owner)
            return seen
        }

        /// The reads to one owner that arrive together go as one pipeline (at most 16 each), and each
        /// still gets its own answer.
        @Test func readsArrivingTogetherGoAsOnePipeline() async throws {
            let seen = try await Self.readsAtOnce(toAnOwnerRefusingPipelines: false)
            let sizes = seen.pipelines.withLock { $0 }
            #expect(!sizes.isEmpty, "\(Self.concurrent) reads at once: some arrive together")
            #expect(sizes.allSatisfy { (2...RelayMachine.maxEnclosed).contains($0) }, "\(sizes)")
            #expect(sizes.reduce(0, +) + seen.single.load(ordering: .relaxed) == Self.concurrent)
        }

        /// An owner that refuses a pipeline (an older version) has those reads answered one by one, and
        /// gets no pipeline for a while.
        @Test func anOwnerThatRefusesPipelinesGetsItsReadsOneByOne() async throws {
            let seen = try await Self.readsAtOnce(toAnOwnerRefusingPipelines: true) { seen, relay, owner in
                #expect(seen.pipelines.withLock { $0.count } > 0)
                #expect(seen.single.load(ordering: .relaxed) == Self.concurrent, "every read answered on its own")
                let refused = seen.pipelines.withLock { $0.count }
                try await Self.readsAtOnce(through: relay, from: owner, round: 1)
                #expect(seen.pipelines.withLock { $0.count } == refused, "no pipeline once refused")
            }
            #expect(seen.single.load(ordering: .relaxed) == 2 * Self.concurrent)
        }

        @Test func aPipelinesAnswersAreReadFromItsBody() throws {
            let answers = Self.ok("a") + "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\n" + Self.ok("ccc")
            func enclosed(_ text: String, heads: [Bool]) throws(Relay.Failure) -> [Relay.Answer] {
                let bytes = Array(text.utf8)
                return try bytes.withUnsafeBufferPointer { buffer throws(Relay.Failure) in try RelayAnswer.enclosed(buffer, heads: heads) }
            }
            let read = try enclosed(answers, heads: [false, true, false])
            #expect(read.map(\.status) == [200, 404, 200])
            #expect(read.map { String(decoding: $0.body, as: UTF8.self) } == ["a", "", "ccc"])
            #expect(read[0].headers.map(\.name) == ["Content-Type"])
            #expect(throws: Relay.Failure.self) { try enclosed(answers, heads: [false, false, false]) }
            #expect(throws: Relay.Failure.self) { try enclosed(answers, heads: [false, true]) }
            #expect(throws: Relay.Failure.self) { try enclosed(String(answers.dropLast()), heads: [false, true, false]) }
        }
    }

    extension Relay {
        /// A test's exchange with `host:port` (resolved here, on the test's thread: the relay never resolves).
        func exchange(
            _ request: [UInt8], isHead: Bool = false, pipelines: Bool = false, bodyless: Bool = false, host: String, port: Int
        ) async throws -> Answer {
            try await exchange(request, isHead: isHead, pipelines: pipelines, bodyless: bodyless, to: SocketAddress.resolve(host: host, port: port))
        }
    }
#endif
