import BrowserAPI
import BrowserModel
import Foundation
import HTTPServer
import MiniHTTPClient
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// ``RendererControl`` over HTTP: browserd's WebDriver calls to the renderer that holds a profile
/// (`POST <gateway>/browserd/v1/tabs/{id}/execute|screenshot`, with the key of its lease). Each call
/// is a blocking exchange on a thread of its own (never the server's threads or the cooperative
/// pool), bounded by the script's timeout and by ``maximumCalls`` at once.
final class HTTPRendererControl: RendererControl {
    /// Calls to renderers under way at once, in all (past it, a call fails at once).
    static let maximumCalls = 16
    private let underWay = Mutex(0)

    func execute(_ script: RendererScript, tab: TabID, lease: RendererLeases.Lease) async throws -> RendererScriptOutcome {
        let answer = try await call(
            lease, path: "/browserd/v1/tabs/\(tab.rawValue)/execute", body: script.body,
            timeout: .milliseconds(script.timeoutMilliseconds) + .seconds(5))
        if answer.status == 404 { return .noPage }
        guard answer.status == 200, case .object(let members) = try? JSONParser.parse(answer.body) else {
            throw RendererControlError("the renderer answered \(answer.status)")
        }
        if let value = members.first(where: { $0.key == "value" })?.value { return .value(value) }
        if case .object(let error)? = members.first(where: { $0.key == "error" })?.value,
            case .string(let name)? = error.first(where: { $0.key == "error" })?.value
        {
            let message = error.first(where: { $0.key == "message" }).flatMap { if case .string(let text) = $0.value { text } else { nil } }
            return .error(name: name, message: message ?? name)
        }
        throw RendererControlError("the renderer's answer has neither a value nor an error")
    }

    func screenshot(tab: TabID, lease: RendererLeases.Lease) async throws -> String? {
        let answer = try await call(lease, path: "/browserd/v1/tabs/\(tab.rawValue)/screenshot", body: [], timeout: .seconds(30))
        if answer.status == 404 { return nil }
        guard answer.status == 200, case .object(let members) = try? JSONParser.parse(answer.body),
            case .string(let data)? = members.first(where: { $0.key == "data" })?.value
        else {
            throw RendererControlError("the renderer answered \(answer.status)")
        }
        return data
    }

    private func call(_ lease: RendererLeases.Lease, path: String, body: [UInt8], timeout: Duration) async throws -> HTTPClientConnection.Response {
        guard lease.controlURL.hasPrefix("http://") else {
            throw RendererControlError("the renderer's gateway is wss:// (TLS): browserd calls renderers over plain ws:// only")
        }
        let (host, port, prefix) = try Self.address(lease.controlURL)
        let admitted = underWay.withLock { count -> Bool in
            guard count < Self.maximumCalls else { return false }
            count += 1
            return true
        }
        guard admitted else { throw RendererControlError("\(Self.maximumCalls) calls to renderers are under way; retry shortly") }
        defer { underWay.withLock { $0 -= 1 } }
        let key = lease.controlKey
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                do {
                    let connection = try HTTPClientConnection(host: try Self.resolve(host), port: port, timeout: timeout)
                    defer { connection.close() }
                    let response = try connection.request(
                        "POST", prefix + path, headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")], body: body)
                    continuation.resume(returning: response)
                } catch {
                    continuation.resume(throwing: RendererControlError("\(error)"))
                }
            }
            thread.name = "renderer-call"
            thread.start()
        }
    }

    /// Host, port and path prefix of `http://host[:port][/prefix]`.
    static func address(_ url: String) throws -> (host: String, port: Int, prefix: String) {
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        let prefix = String(rest.dropFirst(authority.count))
        var host = String(authority)
        var port = 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { port = Int(after.dropFirst()) ?? -1 }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = Int(authority[authority.index(after: colon)...]) ?? -1
        }
        guard (1...65535).contains(port), !host.isEmpty else { throw RendererControlError("the renderer's address \(url) has no usable host and port") }
        return (host, port, prefix)
    }

    /// An address literal for `host` (a name is looked up; on this call's own thread).
    static func resolve(_ host: String) throws -> String {
        if host == "localhost" { return "127.0.0.1" }
        var probe = in6_addr()
        if inet_pton(AF_INET, host, &probe) == 1 || inet_pton(AF_INET6, host, &probe) == 1 { return host }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &found) == 0, let first = found else { throw RendererControlError("\(host) did not resolve") }
        defer { freeaddrinfo(found) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if first.pointee.ai_family == AF_INET {
            var address = first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
        } else {
            var address = first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
