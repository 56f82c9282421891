import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// What the gateway asks of the renderer: its one door to browserd (tickets, the model) and to Chromium.
public protocol AutomationHost: AnyObject, Sendable {
    /// Whether a client holding `ticket` may attach to `profile` (browserd redeems the ticket: single
    /// use, issued for that profile).
    func admit(profile: String, ticket: String) async -> AutomationAdmission
    /// The browser contexts `profile`'s clients may see (nil: the renderer does not serve it).
    func automationScope(of profile: String) -> AutomationFilter.Scope?
    /// Chromium's connection now (nil while it is not running).
    func automationConnection() -> DevToolsConnection?
    /// Carries out what the model decides for a client of `profile`; the command's `result`.
    func carryOut(_ interception: AutomationFilter.Interception, profile: String) async throws -> JSONValue
    /// WebDriver's Execute Script on the tab's page (nil: the tab has no live page here).
    func execute(_ request: ScriptRequest, inTab tab: String) async throws -> ScriptOutcome?
    /// A PNG of the tab's page as it shows, base64 (nil: no live page here).
    func screenshot(ofTab tab: String) async throws -> String?
}

public enum AutomationAdmission: Sendable, Equatable {
    case admitted
    /// Refused: the HTTP status and why.
    case refused(status: Int, message: String)
}

/// Why the model refused an interception (its text reaches the client as a DevTools error).
public struct AutomationRefusal: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One automation client attached to the renderer's Chromium, as Playwright's `CRSession` is one
/// target's: its browser session over the pipe (``AutomationFilter/root``), the sessions under it, its
/// socket. Its commands come from the socket's event loop (``received(_:)``), Chromium's messages for
/// its sessions from the pipe (``fromChromium(_:session:)``), on the same loop; both pass ``AutomationFilter``
/// under one lock, in order. When it goes, its browser session is detached (Chromium detaches every
/// session under it; a page waiting for its debugger runs on); its pages and tabs stay.
public final class AutomationClient: Sendable {
    public let profile: String
    let connection: DevToolsConnection
    private let filter: NIOLockedValueBox<AutomationFilter>
    private let channel: any Channel
    private let host: any AutomationHost
    private let logger: Logger
    /// Bytes written to the socket and not yet sent; past ``maximumQueuedBytes``, the client is too
    /// slow for its pages' messages and its connection ends.
    private let queued = NIOLockedValueBox(0)
    private let ended = NIOLockedValueBox(false)
    static let maximumQueuedBytes = 64 << 20
    /// How long a target may wait for this client's debugger before the gateway lets it run.
    static let debuggerGrace: Duration = .seconds(5)

    init(profile: String, root: String, connection: DevToolsConnection, channel: any Channel, host: any AutomationHost, logger: Logger) {
        self.profile = profile
        self.connection = connection
        self.channel = channel
        self.host = host
        self.logger = logger
        filter = NIOLockedValueBox(AutomationFilter(root: root))
        connection.route(root) { [weak self] bytes in self?.fromChromium(bytes, session: root) }
    }

    private var scope: AutomationFilter.Scope { host.automationScope(of: profile) ?? .incognito(nil) }

    /// One message of the client's (a text frame's bytes), on the socket's event loop.
    func received(_ bytes: [UInt8]) {
        let scope = scope
        let decision = filter.withLockedValue { $0.fromClient(bytes, scope: scope) }
        switch decision {
        case .forward(let message):
            if !connection.send(raw: message) { end(reason: "the browser's pipe is closed") }
        case .answer(let message): write(message)
        case .answerAndEnd(let message):
            write(message)
            end(reason: "Browser.close")
        case .intercept(let interception, let id, let session):
            let (host, profile, filter) = (host, profile, filter)
            Task {
                let answer: [UInt8]
                do {
                    let result = try await host.carryOut(interception, profile: profile)
                    answer = filter.withLockedValue { $0.answer(id: id, session: session, result: result) }
                } catch {
                    let message = (error as? AutomationRefusal)?.description ?? "browserd: \(error)"
                    answer = filter.withLockedValue { $0.refusal(id: id, session: session, code: -32000, message: message) }
                }
                self.write(answer)
            }
        }
    }

    /// One message of Chromium's for one of the client's sessions, on the pipe's event loop.
    func fromChromium(_ bytes: [UInt8], session: String) {
        let scope = scope
        let decision = filter.withLockedValue { $0.fromChromium(bytes, session: session, scope: scope) }
        for added in decision.added {
            connection.route(added) { [weak self] bytes in self?.fromChromium(bytes, session: added) }
        }
        for removed in decision.removed { connection.unroute(removed) }
        for waiting in decision.waiting {
            // A target waits for this client's debugger (its auto-attach asked for it): if the client
            // does not let it run within a while, the gateway does, so that no client holds the
            // profile's new pages (the model's) paused.
            Task { [weak self] in
                try? await Task.sleep(for: Self.debuggerGrace)
                guard let self, !self.ended.withLockedValue({ $0 }), let command = self.filter.withLockedValue({ $0.release(waiting) }) else { return }
                _ = self.connection.send(raw: command)
            }
        }
        for command in decision.send { _ = connection.send(raw: command) }
        if let deliver = decision.deliver { write(deliver) }
    }

    private func write(_ bytes: [UInt8]) {
        guard !ended.withLockedValue({ $0 }) else { return }
        let total = queued.withLockedValue {
            $0 += bytes.count
            return $0
        }
        guard total <= Self.maximumQueuedBytes else {
            logger.warning("automation client of profile \(profile): \(total) bytes wait for it; its connection ends")
            end(reason: "too slow")
            return
        }
        let frame = WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: bytes))
        let queued = queued
        channel.writeAndFlush(frame).whenComplete { _ in queued.withLockedValue { $0 -= bytes.count } }
    }

    /// Ends the client: its sessions are unrouted and its browser session detached (once), its
    /// socket closed.
    func end(reason: String) {
        guard
            ended.withLockedValue({ was in
                defer { was = true }
                return !was
            })
        else { return }
        logger.info("automation client of profile \(profile) leaves (\(reason))")
        let (sessions, detach) = filter.withLockedValue { ($0.ownSessions, $0.rootDetach) }
        for session in sessions { connection.unroute(session) }
        let connection = connection
        Task { _ = try? await connection.call("Target.detachFromTarget", detach, timeout: .seconds(5)) }
        var close = channel.allocator.buffer(capacity: 2)
        close.write(webSocketErrorCode: .normalClosure)
        let channel = channel
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: close)).whenComplete { _ in channel.close(promise: nil) }
    }
}
