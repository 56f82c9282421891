import Foundation
public import OpenAPIRuntime

/// One event as it came: its position (`id`, to resume from) and its typed payload.
public struct StreamEvent<Payload: Sendable>: Sendable {
    /// `<epoch>-<seq>`: the position after this event.
    public var id: String?
    public var payload: Payload
}

/// What an event stream does when its connection drops.
public struct ResumePolicy: Sendable {
    /// Whether to reconnect at all (with `Last-Event-ID`: the server sends what was missed, or a
    /// `reset` with the whole state when it cannot, e.g. after it restarted).
    public var resumes: Bool
    /// The first wait before reconnecting; it doubles on each failed attempt up to `maximumDelay`.
    public var initialDelay: Duration
    public var maximumDelay: Duration
    /// How many reconnections in a row may fail before the stream ends with the last error (nil: no limit).
    public var maximumAttempts: Int?

    public init(resumes: Bool = true, initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(5), maximumAttempts: Int? = nil) {
        self.resumes = resumes
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
    }

    public static let `default` = ResumePolicy()
    /// End with the first drop.
    public static let never = ResumePolicy(resumes: false)
}

extension BrowserdClient {
    /// A window's events (`GET /v1/browsers/{browserId}/events`) as typed values: the snapshot first,
    /// then live changes. A dropped connection is resumed from the last event's id (the server
    /// replays what was missed, or sends a `reset` with the whole state). The sequence ends when the
    /// server ends the stream for good (the window closed: `browser.closed`), throws a
    /// ``BrowserdProblem`` for an answer that retrying cannot change (404, 401, 403), and stops
    /// when the consuming task is cancelled.
    /// - Parameters:
    ///   - topics: only these topics (e.g. `["tabs", "groups"]`); nil: all.
    ///   - lastEventID: where to start from (an id seen before); nil: a fresh snapshot.
    public func windowEvents(
        _ browserID: String, topics: [String]? = nil, lastEventID: String? = nil, resume: ResumePolicy = .default
    ) -> AsyncThrowingStream<StreamEvent<WindowStreamEvent>, any Error> {
        let streams = self.streams
        let topicList = topics?.joined(separator: ",")
        return Self.resuming(from: lastEventID, resume: resume) { position in
            let output = try await streams.watchWindow(
                path: .init(browserId: browserID), query: .init(topics: topicList),
                headers: .init(lastEventID: position, accept: [.init(contentType: .textEventStream)]))
            return try output.ok.body.textEventStream
        } decode: { name, data in
            let event = try WindowStreamEvent.decode(name: name, data: data)
            if case .browserClosed = event { return (event, true) }
            return (event, false)
        }
    }

    /// A profile's window list (`profileID` given) or the profile directory (nil; administrator only)
    /// from `GET /v1/events`, typed and resumed like ``windowEvents(_:topics:lastEventID:resume:)``;
    /// it ends after `profile.deleted`.
    public func profileEvents(
        _ profileID: String?, lastEventID: String? = nil, resume: ResumePolicy = .default
    ) -> AsyncThrowingStream<StreamEvent<ProfileStreamEvent>, any Error> {
        let streams = self.streams
        return Self.resuming(from: lastEventID, resume: resume) { position in
            let output = try await streams.watchProfile(
                query: .init(profileId: profileID),
                headers: .init(lastEventID: position, accept: [.init(contentType: .textEventStream)]))
            return try output.ok.body.textEventStream
        } decode: { name, data in
            let event = try ProfileStreamEvent.decode(name: name, data: data)
            if case .profileDeleted = event { return (event, true) }
            return (event, false)
        }
    }

    /// A renderer's wake-ups (`GET /v1/renderers/{name}/events`, issue 55): an element when the stream
    /// opens (again) and each time browserd gave the renderer profiles or took some away; the renderer
    /// renews then and learns which from the answer. Reconnects after a drop like the other streams
    /// (there are no positions: it starts afresh); ends for good on 404 (not registered), 401, 403.
    public func rendererWakeups(_ name: String, resume: ResumePolicy = .default) -> AsyncThrowingStream<StreamEvent<String>, any Error> {
        let streams = self.streams
        return Self.resuming(from: nil, resume: resume) { _ in
            let output = try await streams.watchRenderer(
                path: .init(rendererName: name), headers: .init(accept: [.init(contentType: .textEventStream)]))
            return try output.ok.body.textEventStream
        } decode: { name, _ in
            (name, false)
        }
    }

    /// The reconnecting loop every stream shares: open at `position`, yield each decoded event and
    /// remember its id, and on a drop wait (backing off) and open again from the last id.
    static func resuming<Payload: Sendable>(
        from start: String?, resume: ResumePolicy,
        open: @escaping @Sendable (_ position: String?) async throws -> HTTPBody,
        decode: @escaping @Sendable (_ name: String, _ data: String) throws -> (Payload, last: Bool)
    ) -> AsyncThrowingStream<StreamEvent<Payload>, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var position = start
                var failures = 0
                var delay = resume.initialDelay
                while !Task.isCancelled {
                    var wait = delay
                    do {
                        let body = try await open(position)
                        failures = 0
                        delay = resume.initialDelay
                        wait = delay
                        for try await event in body.asDecodedServerSentEvents() {
                            guard let name = event.event, let data = event.data else { continue }
                            let (payload, last) = try decode(name, data)
                            if let id = event.id { position = id }
                            continuation.yield(StreamEvent(id: event.id, payload: payload))
                            if last { return continuation.finish() }
                        }
                        // The server ended the stream (it is stopping): resume like after a drop.
                    } catch is CancellationError {
                        break
                    } catch {
                        if let problem = BrowserdProblem.from(error) {
                            // Only a busy or moving server is worth retrying; 404, 401, 403 end the stream.
                            guard [408, 429, 502, 503, 504].contains(problem.status) else { return continuation.finish(throwing: problem) }
                            if let seconds = problem.retryAfter { wait = max(wait, .seconds(seconds)) }
                        }
                        if error is DecodingError { return continuation.finish(throwing: error) }
                        failures += 1
                        if !resume.resumes || (resume.maximumAttempts.map { failures > $0 } ?? false) {
                            return continuation.finish(throwing: error)
                        }
                    }
                    guard resume.resumes else { break }
                    try? await Task.sleep(for: wait)
                    delay = min(delay * 2, resume.maximumDelay)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
