import AsyncHTTPClient
import BrowserAPI
import BrowserRecords
import ClusterCore
import Foundation
import HTTPServer
import Logging
import NIOCore
import NIOHTTP1
import Sockets
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Passes a request on to the instance that owns its profile, and its answer back: method, path,
/// query, the headers that matter, body; status, headers and body back, an event stream chunk by
/// chunk as it comes (never buffered whole).
///
/// A forwarded request carries `X-Browserd-Forwarded-By` and a proof that its sender knows the
/// cluster's shared secret (``PeerProof``: an HMAC of the request keyed by `--cluster-secret-file`'s
/// secret, which itself never travels); an instance never forwards such a request again (one hop at
/// most: a lease that moves meanwhile gives a 503 to retry, never a loop). A request that names itself
/// forwarded without a valid proof is a client's, and treated as one.
final class Forwarder: Sendable {
    static let forwardedHeader = "X-Browserd-Forwarded-By"
    static let instanceHeader = "X-Browserd-Instance"
    /// Request headers passed on; the others (hop-by-hop ones, Host, Content-Length) are the client's own.
    static let passedRequestHeaders: [String] = [
        "authorization", "content-type", "idempotency-key", "if-match", "last-event-id", "accept", "origin",
        // A renderer's fence: the owner checks it (issue 55).
        "browserd-renderer",
    ]
    /// Whether a request header is passed on.
    static func passes(_ name: String) -> Bool {
        passedRequestHeaders.contains { HTTPHeaders.equalsIgnoringCase($0, name) }
    }

    /// Answer headers not passed back (the local server sets its own framing; the relay drops the same,
    /// ``RelayAnswer/droppedHeaders``).
    static let droppedResponseHeaders: Set<String> = ["content-length", "transfer-encoding", "connection", "keep-alive", "date", "server"]

    /// Event streams (long-lived, chunk by chunk) and `https` owners.
    private let client: HTTPClient
    /// Everything else: the thin keep-alive relay.
    private let relay: Relay
    /// Each owner's address, parsed once (nil: not one the relay carries) and, once ``resolve(_:)`` did
    /// it off every loop, resolved: what the relay connects to. One entry per owner, one lock.
    private let owners = Mutex<[String: OwnerAddress]>([:])
    /// Resolves an owner's host (blocking: `getaddrinfo`); run on a thread of Dispatch's, never on the
    /// relay's loop or the server's threads.
    private let resolver: @Sendable (_ host: String, _ port: Int) throws(SocketError) -> Sockets.SocketAddress
    private let instanceID: InstanceID
    private let proof: PeerProof?
    private let proofs = PeerProofMemo()
    private let logger: Logger
    /// Whether requests go on the relay (else all through async-http-client, for the benchmark).
    private let usesRelay: Bool

    let timing: ClusterTiming

    init(
        instanceID: InstanceID, secret: String, timing: ClusterTiming, path: ForwardingPath = .relay, logger: Logger,
        resolver: @escaping @Sendable (_ host: String, _ port: Int) throws(SocketError) -> Sockets.SocketAddress = Sockets.SocketAddress.resolve
    ) {
        self.resolver = resolver
        usesRelay = path == .relay
        self.instanceID = instanceID
        proof = secret.isEmpty ? nil : PeerProof(secret: Array(secret.utf8))
        self.logger = logger
        self.timing = timing
        // Runs of reads to one owner go as one pipeline, proved as a peer's (the enclosed reads carry
        // their own proofs, which the owner checks as it would on the wire).
        let (proof, proofs, sender) = (proof, proofs, instanceID.rawValue)
        relay = Relay(timing: timing) { authority, length in
            var head = "POST \(Self.pipelinePath) HTTP/1.1\r\nHost: \(authority)\r\nContent-Type: \(EnclosedPipeline.requestType)\r\n"
            if let proof {
                let now = Self.now()
                let value = proofs.proof(for: Self.pipelineProofKey(from: sender), at: now) {
                    proof.make(method: "POST", path: Self.pipelinePath, body: [], from: sender, at: now)
                }
                head += "\(Self.forwardedHeader): \(sender)\r\n\(PeerProof.header): \(value)\r\n"
            }
            head += "Content-Length: \(length)\r\n\r\n"
            return Array(head.utf8)
        }
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .init(timing.forwardConnectTimeout), read: .init(timing.forwardDeadline))
        configuration.connectionPool = .init(idleTimeout: .init(timing.forwardIdleTimeout), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Where another instance's relay sends a run of reads as one pipeline (``EnclosedPipeline``).
    public static let pipelinePath = APIRoutes.clusterPipelinePath

    private static func pipelineProofKey(from sender: String) -> String {
        PeerProofMemo.key(method: "POST", path: pipelinePath, from: sender)
    }

    /// Whether `request` came from another instance of this cluster: it names itself forwarded and
    /// carries a valid proof for itself (``PeerProof``).
    func isFromPeer(_ request: HTTPRequest) -> Bool {
        guard let proof, let from = request.headers[Self.forwardedHeader], let given = request.headers[PeerProof.header] else { return false }
        let now = Self.now()
        func check() -> Bool {
            proof.verify(given, method: request.method.rawValue, path: request.path, body: request.body, from: from, now: now)
        }
        guard request.body.isEmpty else { return check() }
        return proofs.isValid(given, for: PeerProofMemo.key(method: request.method.rawValue, path: request.path, from: from), at: now, check: check)
    }

    /// Whether a pipeline of reads came from another instance of this cluster. Its proof covers its
    /// method, path and sender, not its body: each enclosed read carries a proof of its own, checked as
    /// on the wire, so a pipeline whose body was changed on the way holds only requests that are then
    /// a client's (authenticated as such), never a peer's.
    func isPipelineFromPeer(_ request: HTTPRequest) -> Bool {
        guard let proof, request.method == .post, request.path == Self.pipelinePath, let from = request.headers[Self.forwardedHeader],
            let given = request.headers[PeerProof.header]
        else { return false }
        let now = Self.now()
        return proofs.isValid(given, for: Self.pipelineProofKey(from: from), at: now) {
            proof.verify(given, method: "POST", path: Self.pipelinePath, body: [], from: from, now: now)
        }
    }

    private static func now() -> Int { Int(Date().timeIntervalSince1970) }

    /// The proof header's value for `request` sent on by this instance.
    private func proofValue(for request: HTTPRequest, method: String? = nil, path: String? = nil, body: [UInt8]? = nil) -> String {
        guard let proof else { return "" }
        let (method, path, body, now) = (method ?? request.method.rawValue, path ?? request.path, body ?? request.body, Self.now())
        func make() -> String { proof.make(method: method, path: path, body: body, from: instanceID.rawValue, at: now) }
        guard body.isEmpty else { return make() }
        return proofs.proof(for: PeerProofMemo.key(method: method, path: path, from: instanceID.rawValue), at: now, make: make)
    }

    func shutdown() async {
        relay.shutdown()
        try? await client.shutdown()
    }

    /// An owner's `http://host:port` address (nil for anything else: `https`, a path).
    struct Address: Sendable {
        let host: String
        let port: Int
        /// The `Host` header's value.
        let authority: String
    }

    /// What the forwarder knows of an owner's address.
    struct OwnerAddress: Sendable {
        /// Parsed from its URL; nil for one the relay does not carry (`https`, a path).
        let parsed: Address?
        /// Resolved (nil until ``Forwarder/resolve(_:)`` did, or after a connection to it failed).
        var resolved: Sockets.SocketAddress?
    }

    static func address(of base: String) -> Address? {
        guard base.hasPrefix("http://") else { return nil }
        let authority = String(base.dropFirst(7))
        guard !authority.isEmpty, !authority.contains("/") else { return nil }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let rest = authority[authority.index(after: close)...]
            let port = rest.isEmpty ? 80 : (rest.hasPrefix(":") ? Int(rest.dropFirst()) : nil)
            return port.map { Address(host: host, port: $0, authority: authority) }
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let host = parts.first, !host.isEmpty else { return nil }
        let port = parts.count == 2 ? Int(parts[1]) : 80
        return port.map { Address(host: String(host), port: $0, authority: authority) }
    }

    /// `base`'s address as parsed and last resolved (parsed now if it is new).
    private func ownerAddress(_ base: String) -> OwnerAddress {
        if let known = owners.withLock({ $0[base] }) { return known }
        let entry = OwnerAddress(parsed: Self.address(of: base), resolved: nil)
        owners.withLock { cache in
            if cache.count > 1024 { cache.removeAll() }
            if cache[base] == nil { cache[base] = entry }
        }
        return entry
    }

    /// Resolves `base`'s host on a Dispatch thread (a slow DNS answer holds up only the requests to that
    /// owner, never the relay's loop) and keeps the address for the relay.
    func resolve(_ base: String) async throws -> Sockets.SocketAddress {
        let owner = ownerAddress(base)
        if let known = owner.resolved { return known }
        guard let address = owner.parsed else { throw Relay.Failure.connect("no relay to \(base)") }
        let resolver = self.resolver
        let found: Sockets.SocketAddress = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do throws(SocketError) {
                    continuation.resume(returning: try resolver(address.host, address.port))
                } catch {
                    continuation.resume(throwing: Relay.Failure.connect(error.description))
                }
            }
        }
        owners.withLock { cache in
            if cache.count > 1024 { cache.removeAll() }
            cache[base] = OwnerAddress(parsed: address, resolved: found)
        }
        return found
    }

    /// A request to `base` failed: if that says its address may be stale, it is resolved again next time.
    private func forgetAddress(_ base: String, after failure: Relay.Failure) {
        guard failure.addressMayBeStale else { return }
        owners.withLock { $0[base]?.resolved = nil }
    }

    /// The request as bytes for the owner: its method and target as the client sent them, the headers
    /// that matter, the forwarding marks, its body.
    private func wire(_ request: HTTPRequest, target: String, authority: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + target.utf8.count + request.body.count)
        func append(_ text: String) { bytes.append(contentsOf: text.utf8) }
        append(request.method.rawValue)
        append(" ")
        append(target)
        append(" HTTP/1.1\r\nHost: ")
        append(authority)
        append("\r\n")
        for field in request.headers where Self.passes(field.name) {
            append(field.name)
            append(": ")
            append(field.value)
            append("\r\n")
        }
        append(Self.forwardedHeader)
        append(": ")
        append(instanceID.rawValue)
        append("\r\n")
        append(PeerProof.header)
        append(": ")
        append(proofValue(for: request))
        append("\r\nContent-Length: ")
        append(String(request.body.count))
        append("\r\n\r\n")
        bytes.append(contentsOf: request.body)
        return bytes
    }

    /// The target as the client sent it, still percent-encoded: decoding it would turn an encoded `?`
    /// or `#` in a path segment into a query or a fragment on the owner.
    private static func target(of request: HTTPRequest) -> String {
        var target = request.rawTarget ?? request.path
        if request.rawTarget == nil, !request.query.isEmpty {
            var components = URLComponents()
            components.queryItems = request.query.map { URLQueryItem(name: $0.name, value: $0.value) }
            target += "?" + (components.percentEncodedQuery ?? "")
        }
        return target
    }

    /// Reads may share a pipelined connection to the owner: they change nothing, so one sent again
    /// after a connection broke is harmless.
    private static func pipelines(_ request: HTTPRequest) -> Bool { request.method == .get || request.method == .head }

    private static func isStream(_ request: HTTPRequest) -> Bool {
        request.headers["Accept"]?.contains("text/event-stream") == true || request.path.hasSuffix("/events")
    }

    /// The relay's answer as this server's response (its headers come without the dropped ones: the
    /// framing is this server's own).
    private static func response(of answer: Relay.Answer) -> HTTPResponse {
        HTTPResponse(status: answer.status, headers: HTTPHeaders(answer.headers), body: .bytes(answer.body))
    }

    /// The relay of `request` to `base`, ready to start without waiting (its owner's address looked up
    /// once, here), or nil when it is not one: an event stream or an `https` owner (``forward(_:to:)``
    /// takes those to async-http-client), or an address not resolved yet. Starting it calls its
    /// completion once, on a relay thread, with the owner's answer or why it could not be reached.
    func relayAtOnce(_ request: HTTPRequest, to base: String) -> PlacementRelay? {
        guard usesRelay, !Self.isStream(request) else { return nil }
        let owner = ownerAddress(base)
        guard let address = owner.parsed, let resolved = owner.resolved else { return nil }
        let bytes = wire(request, target: Self.target(of: request), authority: address.authority)
        let (isHead, pipelines, bodyless) = (request.method == .head, Self.pipelines(request), request.body.isEmpty)
        return { [self] completion in
            relay.start(bytes, isHead: isHead, pipelines: pipelines, bodyless: bodyless, to: resolved, key: address.authority) { result in
                if case .failure(let failure) = result { self.forgetAddress(base, after: failure) }
                completion(result.map(Self.response(of:)).mapError { $0 })
            }
        }
    }

    /// Forwards `request` to the instance at `base` (e.g. `http://10.0.0.2:8080`).
    /// - Throws: when the owner cannot be reached (the caller answers 503: retry).
    func forward(_ request: HTTPRequest, to base: String) async throws -> HTTPResponse {
        let isStream = Self.isStream(request)
        if usesRelay, !isStream, let address = ownerAddress(base).parsed {
            let resolved = try await resolve(base)
            do {
                let answer = try await relay.exchange(
                    wire(request, target: Self.target(of: request), authority: address.authority),
                    isHead: request.method == .head, pipelines: Self.pipelines(request), to: resolved, key: address.authority)
                return Self.response(of: answer)
            } catch let failure as Relay.Failure {
                forgetAddress(base, after: failure)
                throw failure
            }
        }
        let target = base + Self.target(of: request)
        var outgoing = HTTPClientRequest(url: target)
        outgoing.method = NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headers where Self.passes(field.name) {
            outgoing.headers.add(name: field.name, value: field.value)
        }
        outgoing.headers.add(name: Self.forwardedHeader, value: instanceID.rawValue)
        outgoing.headers.add(name: PeerProof.header, value: proofValue(for: request))
        if !request.body.isEmpty { outgoing.body = .bytes(ByteBuffer(bytes: request.body)) }
        let response = try await client.execute(outgoing, deadline: .now() + (isStream ? .hours(24 * 365) : .init(timing.forwardDeadline)), logger: logger)
        var headers = HTTPHeaders()
        for (name, value) in response.headers where !Self.droppedResponseHeaders.contains(name.lowercased()) {
            headers.add(name, value)
        }
        let status = Int(response.status.code)
        if headers["Content-Type"]?.hasPrefix("text/event-stream") == true {
            return HTTPResponse(status: status, headers: headers, body: .stream(Self.relay(response.body)))
        }
        let body = try await response.body.collect(upTo: 64 << 20)
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(body.readableBytesView)))
    }

    /// GETs `pathAndQuery` from the instance at `base` on behalf of `request`'s client (its headers
    /// that matter), marked forwarded, so that the instance answers from what it holds itself.
    func get(_ pathAndQuery: String, from base: String, for request: HTTPRequest) async throws -> (status: Int, body: [UInt8]) {
        var outgoing = HTTPClientRequest(url: base + pathAndQuery)
        for field in request.headers where Self.passes(field.name) {
            outgoing.headers.add(name: field.name, value: field.value)
        }
        outgoing.headers.add(name: Self.forwardedHeader, value: instanceID.rawValue)
        // The owner proves the request by its path, without the query, as its server decoded it.
        let path = String(pathAndQuery.prefix { $0 != "?" })
        outgoing.headers.add(
            name: PeerProof.header, value: proofValue(for: request, method: "GET", path: path.removingPercentEncoding ?? path, body: []))
        let response = try await client.execute(outgoing, deadline: .now() + .init(timing.forwardDeadline), logger: logger)
        let body = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), Array(body.readableBytesView))
    }

    /// ``refusesConnections(_:within:)`` on a thread of its own: it may wait up to `timeout`, which a task of
    /// the cooperative pool must not.
    static func refusesConnectionsOffThePool(_ base: String, within timeout: Duration) async -> Bool {
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: refusesConnections(base, within: milliseconds)) }.start()
        }
    }

    /// Whether nothing listens at `base`'s address (a TCP connection is refused within `milliseconds`): the
    /// instance that advertised it is gone.
    static func refusesConnections(_ base: String, within milliseconds: Int32) -> Bool {
        guard let components = URLComponents(string: base), let host = components.host else { return false }
        let port = components.port ?? (components.scheme == "https" ? 443 : 80)
        guard let address = try? Sockets.SocketAddress.resolve(host: host, port: port), let socket = try? Socket.tcp(family: address.family) else {
            return false
        }
        do {
            if try socket.startConnecting(to: address) { return false }
        } catch {
            return error == .system("connect", ECONNREFUSED)
        }
        let polled = try? socket.withDescriptor { fd in
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            return poll(&poller, 1, milliseconds)
        }
        guard polled == 1 else { return false }
        return socket.pendingError() == ECONNREFUSED
    }

    /// An event stream relayed as it comes; when the local client leaves, the upstream request ends.
    private static func relay(_ body: HTTPClientResponse.Body) -> StreamBody {
        StreamBody(maxBufferedBytes: 4 << 20) { writer in
            let task = Task {
                do {
                    for try await chunk in body {
                        // A client too slow for the relay's buffer is cut off, as a local stream's would be:
                        // it reconnects with Last-Event-ID and misses nothing.
                        guard writer.write(Array(chunk.readableBytesView), evenIfFull: true) == .written else {
                            writer.abort()
                            return
                        }
                    }
                } catch {}
                writer.finish()
            }
            writer.onClose { task.cancel() }
        }
    }
}
