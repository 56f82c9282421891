import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// One event of the DevTools protocol: its method, parameters, and the session (target) it came from.
public struct DevToolsEvent: Sendable {
    public var method: String
    public var params: JSONValue
    /// The attached target's session (flat mode); nil for the browser's own events.
    public var sessionID: String?
}

public enum DevToolsError: Error, Equatable, CustomStringConvertible {
    /// The pipe is closed: the browser exited or was stopped.
    case closed
    /// No answer within the call's timeout.
    case timedOut(method: String)
    /// The browser answered with an error.
    case failed(method: String, code: Int, message: String)
    /// The session's target detached (closed, crashed away, or its session ended) before it answered.
    case detached(method: String)

    public var description: String {
        switch self {
        case .closed: "the browser's DevTools pipe is closed"
        case .timedOut(let method): "\(method): no answer in time"
        case .failed(let method, let code, let message): "\(method): \(message) (\(code))"
        case .detached(let method): "\(method): the target detached"
        }
    }
}

/// The DevTools protocol over a browser's pipe (`--remote-debugging-pipe`): commands written to the
/// browser's fd 3 (our `commandFD`), answers and events read from its fd 4 (our `eventFD`) on an event
/// loop (``DevToolsConnection/loop``: the one the automation gateway's sockets live on, so a message
/// for a client goes from the pipe to its socket on one thread, with no hand-off). Every call has a
/// timeout; when the pipe ends, every waiting call fails with ``DevToolsError/closed`` and ``events``
/// finishes.
public final class DevToolsConnection: @unchecked Sendable {
    // `@unchecked Sendable`: `waiters`, `nextID` and `closed` are read and written only under `lock`;
    // `commandFD` is written to and closed only under `writeLock`, which `commandOpen` says (so no
    // write reaches the number once closed and perhaps reused); `eventFD` is the reading channel's
    // (``DevToolsPipeReader``), which closes it.
    private let commandFD: Int32
    private let eventFD: Int32
    private let lock = NSLock()
    private let writeLock = NSLock()
    private var waiters: [Int: CheckedContinuation<JSONValue, any Error>] = [:]
    private var methods: [Int: String] = [:]
    /// The sessions whose events go to a handler of their own (``DevToolsSession``), and their calls
    /// still waiting.
    private var sessionRoutes: [String: (deliver: @Sendable (DevToolsEvent) -> Void, events: [[UInt8]]?, pending: Set<Int>)] = [:]
    /// The session of each waiting call that has one.
    private var callSessions: [Int: String] = [:]
    /// Sessions whose messages go undecoded to a handler (an automation client's: ``AutomationClient``),
    /// called on ``loop`` in the order Chromium sent them.
    private var rawRoutes: [String: @Sendable ([UInt8]) -> Void] = [:]
    private var nextID = 1
    private var closed = false
    private var commandOpen = true
    private let continuation: AsyncStream<DevToolsEvent>.Continuation
    /// Every event of the browser and of sessions without a ``DevToolsSession``, in the order the
    /// browser sent them; finishes when the pipe ends.
    public let events: AsyncStream<DevToolsEvent>
    /// Messages skipped for their size (``DevToolsFraming/maximumMessageBytes``).
    public var oversizedMessages: Int { lock.withLock { skippedMessages } }
    private var skippedMessages = 0

    /// The event loop every browser's pipe is read on, and the automation gateway's sockets live on
    /// (``DevToolsGateway``): one of NIO's shared loops, which also run the renderer's tasks
    /// (``RendererExecutor``), so that a page's event resumes its task without waking a thread.
    public static let loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()

    /// Takes ownership of both descriptors (closed by ``close()`` or when the pipe ends); reads on
    /// `loop`.
    public init(commandFD: Int32, eventFD: Int32, loop: any EventLoop = DevToolsConnection.loop) {
        self.commandFD = commandFD
        self.eventFD = eventFD
        (events, continuation) = AsyncStream.makeStream(of: DevToolsEvent.self, bufferingPolicy: .unbounded)
        NIOPipeBootstrap(group: loop)
            .channelOption(.maxMessagesPerRead, value: 16)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DevToolsPipeReader(connection: self)) }
            }
            .takingOwnershipOfDescriptor(input: eventFD)
            // Not read at all (never seen): the connection ends. The descriptor is left as it is rather
            // than closed here, since the bootstrap may have closed it already (a number closed twice
            // may be another's by then).
            .whenFailure { [self] _ in ended() }
    }

    /// Sends `method` and waits for its answer's `result`.
    /// - Throws: ``DevToolsError``: the browser's error, no answer within `timeout`, or the pipe closed;
    ///   `CancellationError` at once when the calling task is cancelled (before or while it waits).
    @discardableResult
    public func call(
        _ method: String, _ params: JSONValue = [:], session: String? = nil, timeout: Duration = .seconds(10)
    ) async throws -> JSONValue {
        try Task.checkCancellation()
        let id: Int = try lock.withLock {
            guard !closed else { throw DevToolsError.closed }
            defer { nextID += 1 }
            return nextID
        }
        var message: [String: JSONValue] = ["id": .number(Double(id)), "method": .string(method), "params": params]
        if let session { message["sessionId"] = .string(session) }
        let bytes = DevToolsFraming.frame(JSONValue.object(message).serialized)
        // Armed once the waiter is in place (armed before, a timeout due first found no one to fail,
        // and the call then waited for an answer that might never come).
        var timer: Scheduled<Void>?
        defer { timer?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let accepted = lock.withLock {
                    guard !closed else { return false }
                    waiters[id] = continuation
                    methods[id] = method
                    if let session {
                        callSessions[id] = session
                        sessionRoutes[session]?.pending.insert(id)
                    }
                    return true
                }
                guard accepted else { return continuation.resume(throwing: DevToolsError.closed) }
                timer = LoopTimer.after(timeout) { [weak self] in self?.resume(id, with: .failure(DevToolsError.timedOut(method: method))) }
                // Cancelled before the waiter was in place: the handler found nothing to fail.
                guard !Task.isCancelled else { return resume(id, with: .failure(CancellationError())) }
                guard write(bytes) else { return resume(id, with: .failure(DevToolsError.closed)) }
            }
        } onCancel: {
            resume(id, with: .failure(CancellationError()))
        }
    }

    /// Routes the session's events to `deliver` (called on ``loop``, in order: keep it
    /// short) from now on, until its target detaches or ``DevToolsSession/end()``.
    /// - Parameter events: the methods `deliver` takes; the session's other events are dropped as
    ///   read, before they are decoded (nil: every event). A page's load brings some thirty events,
    ///   and a page can make more (execution contexts, frames): what no one acts on costs no decoding.
    public func session(_ id: String, events: Set<String>? = nil, deliver: @escaping @Sendable (DevToolsEvent) -> Void) -> DevToolsSession {
        let methods = events.map { $0.map { Array($0.utf8) } }
        lock.withLock { sessionRoutes[id] = (deliver, methods, []) }
        return DevToolsSession(id: id, connection: self)
    }

    func routes(_ session: String) -> Bool { lock.withLock { sessionRoutes[session] != nil } }

    /// Sends every message of `session` from now on, as Chromium wrote it (never decoded), to
    /// `deliver` on ``loop``, until ``unroute(_:)``: a message routed so is seen before the
    /// next one is read, so a handler that routes a session Chromium just announced gets all of it.
    public func route(_ session: String, to deliver: @escaping @Sendable ([UInt8]) -> Void) {
        lock.withLock { rawRoutes[session] = deliver }
    }

    public func unroute(_ session: String) { _ = lock.withLock { rawRoutes.removeValue(forKey: session) } }

    /// Writes one message as it is (a client's command, already checked): false once the pipe is closed.
    public func send(raw message: [UInt8]) -> Bool {
        guard lock.withLock({ !closed }) else { return false }
        return write(DevToolsFraming.frame(message))
    }

    func endSession(_ id: String) {
        let pending = lock.withLock { sessionRoutes.removeValue(forKey: id)?.pending ?? [] }
        for call in pending { failDetached(call) }
    }

    private func failDetached(_ id: Int) {
        let (waiter, method) = lock.withLock { () -> (CheckedContinuation<JSONValue, any Error>?, String?) in
            callSessions[id] = nil
            return (waiters.removeValue(forKey: id), methods.removeValue(forKey: id))
        }
        waiter?.resume(throwing: DevToolsError.detached(method: method ?? "?"))
    }

    /// Closes both pipes: waiting calls fail, ``events`` ends.
    public func close() {
        let wasOpen = lock.withLock {
            defer { closed = true }
            return !closed
        }
        guard wasOpen else { return }
        // The browser reads EOF on its fd 3 and exits; its fd 4 ends then, which closes the reading channel.
        // Under `writeLock`: no write can be under way on the number as it is closed (and reused).
        closeCommands()
        failAll()
    }

    private func resume(_ id: Int, with result: Result<JSONValue, any Error>) {
        let waiter = lock.withLock { () -> CheckedContinuation<JSONValue, any Error>? in
            methods[id] = nil
            if let session = callSessions.removeValue(forKey: id) { sessionRoutes[session]?.pending.remove(id) }
            return waiters.removeValue(forKey: id)
        }
        waiter?.resume(with: result)
    }

    /// An event: to its session's handler if it has one (a detach ends that session: the handler sees
    /// it, then its waiting calls fail), else to ``events``.
    private func dispatch(_ event: DevToolsEvent) {
        if let session = event.sessionID, let deliver = lock.withLock({ sessionRoutes[session]?.deliver }) {
            return deliver(event)
        }
        if event.method == "Target.detachedFromTarget", let session = event.params["sessionId"]?.string,
            let route = lock.withLock({ sessionRoutes.removeValue(forKey: session) })
        {
            // The session's handler sees the detach before its waiting calls fail: a caller that sees
            // its call fail finds the session ended.
            route.deliver(event)
            for call in route.pending { failDetached(call) }
            return
        }
        continuation.yield(event)
    }

    private func failAll() {
        let all = lock.withLock {
            defer {
                waiters = [:]
                methods = [:]
                sessionRoutes = [:]
                callSessions = [:]
                rawRoutes = [:]
            }
            return waiters
        }
        for waiter in all.values { waiter.resume(throwing: DevToolsError.closed) }
    }

    private func closeCommands() {
        writeLock.withLock {
            guard commandOpen else { return }
            commandOpen = false
            _ = Glibc.close(commandFD)
        }
    }

    private func write(_ bytes: [UInt8]) -> Bool {
        writeLock.withLock {
            guard commandOpen else { return false }
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { Glibc.write(commandFD, $0.baseAddress, $0.count) }
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    /// Chromium's messages, as the pipe gave them (in order, on ``loop``).
    fileprivate func received(_ messages: [[UInt8]], skipped: Int) {
        if skipped > 0 { lock.withLock { skippedMessages = skipped } }
        for message in messages {
            if let session = DevToolsMessage.trailingSessionID(message) {
                let (raw, events) = lock.withLock { (rawRoutes[session], sessionRoutes[session]?.events) }
                if let raw {
                    raw(message)
                    continue
                }
                // An event its session's handler does not take: dropped undecoded.
                if let events, let method = DevToolsMessage.eventMethod(message), !events.contains(where: { $0.elementsEqual(method) }) {
                    continue
                }
            }
            guard let value = try? JSONValue.parse(message) else { continue }
            if let id = value["id"]?.int {
                if let error = value["error"] {
                    let method = lock.withLock { methods[id] } ?? "?"
                    resume(
                        id,
                        with: .failure(
                            DevToolsError.failed(method: method, code: error["code"]?.int ?? 0, message: error["message"]?.string ?? "")))
                } else {
                    resume(id, with: .success(value["result"] ?? [:]))
                }
            } else if let method = value["method"]?.string {
                dispatch(DevToolsEvent(method: method, params: value["params"] ?? [:], sessionID: value["sessionId"]?.string))
            }
        }
    }

    /// The pipe ended (the browser exited, or ``close()``): waiting calls fail, ``events`` finishes.
    fileprivate func ended() {
        let wasOpen = lock.withLock {
            defer { closed = true }
            return !closed
        }
        if wasOpen { closeCommands() }
        failAll()
        continuation.finish()
    }
}

/// Reads a browser's pipe on its event loop: frames its messages and hands them to the connection.
private final class DevToolsPipeReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let connection: DevToolsConnection
    private var framing = DevToolsFraming()

    init(connection: DevToolsConnection) { self.connection = connection }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let messages = framing.append(buffer.readableBytesView)
        connection.received(messages, skipped: framing.skippedMessages)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.ended()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
