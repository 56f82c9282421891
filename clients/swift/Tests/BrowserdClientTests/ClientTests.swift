import Foundation
import OpenAPIRuntime
import TestSupport
import Testing

@testable import BrowserdClient

/// The client against a live browserd: operations, typed events, resume, problems.
@Suite(.serialized, .offThePool, .timeLimit(.minutes(1))) struct ClientTests {
    @Test func profileWindowAndTabsAsTypedEvents() async throws {
        let server = try await LiveServer()
        let client = BrowserdClient(server: server.url)
        let profile = try await client.api.createProfile(body: .json(.init(name: "client"))).created.body.json
        let window = try await client.api.createWindow(body: .json(.init(profileId: profile.id))).created.body.json

        var events = client.windowEvents(window.id).makeAsyncIterator()
        // The snapshot: every tab in order, then the live changes.
        guard case .tabsPopulate(let populate)? = try await events.next()?.payload else {
            Issue.record("the stream does not start with tabs.populate")
            return
        }
        #expect(populate.browserId == window.id && populate.items.isEmpty)

        let a = try await client.api.openTab(path: .init(browserId: window.id), body: .json(.init(url: "https://a.example/")))
            .created.body.json
        let inserted = try await next(&events) { event -> Components.Schemas.TabsInsertEvent? in
            if case .tabsInsert(let insert) = event { return insert }
            return nil
        }
        #expect(inserted.item.id == a.id && inserted.item.url == "https://a.example/" && inserted.index == 0)

        _ = try await client.api.updateTab(path: .init(tabId: a.id), body: .json(.init(title: "A"))).ok.body.json
        let updated = try await next(&events) { event -> Components.Schemas.TabsUpdateEvent? in
            if case .tabsUpdate(let update) = event { return update }
            return nil
        }
        #expect(updated.item.title == "A")

        _ = try await client.api.closeWindow(path: .init(browserId: window.id))
        let closed = try await next(&events) { event -> Components.Schemas.BrowserClosedEvent? in
            if case .browserClosed(let closed) = event { return closed }
            return nil
        }
        #expect(closed.browserId == window.id)
        #expect(try await events.next() == nil, "the stream ends after browser.closed")
    }

    @Test func aStreamResumesAfterTheServerRestarts() async throws {
        let server = try await LiveServer()
        let client = BrowserdClient(server: server.url)
        let profile = try await client.api.createProfile(body: .json(.init(name: "resume"))).created.body.json
        let window = try await client.api.createWindow(body: .json(.init(profileId: profile.id))).created.body.json
        _ = try await client.api.openTab(path: .init(browserId: window.id), body: .json(.init(url: "https://kept.example/")))

        var events = client.windowEvents(window.id, topics: ["tabs"]).makeAsyncIterator()
        guard case .tabsPopulate(let before)? = try await events.next()?.payload else {
            Issue.record("no tabs.populate")
            return
        }
        #expect(before.items.map(\.url) == ["https://kept.example/"])

        try await server.restart()
        // The same stream, reconnected with Last-Event-ID: an earlier run's position gets a reset with the state.
        let reset = try await next(&events) { event -> Components.Schemas.WindowResetEvent? in
            if case .reset(let reset) = event { return reset }
            return nil
        }
        #expect(reset.reason == .restarted)
        #expect(reset.tabs.items.map(\.url) == ["https://kept.example/"])

        // Live events go on after the reset.
        let b = try await client.api.openTab(path: .init(browserId: window.id), body: .json(.init(url: "https://b.example/")))
            .created.body.json
        let inserted = try await next(&events) { event -> Components.Schemas.TabsInsertEvent? in
            if case .tabsInsert(let insert) = event { return insert }
            return nil
        }
        #expect(inserted.item.id == b.id)
    }

    @Test func missedEventsAreReplayedFromLastEventID() async throws {
        let server = try await LiveServer()
        let client = BrowserdClient(server: server.url)
        let profile = try await client.api.createProfile(body: .json(.init(name: "replay"))).created.body.json
        let window = try await client.api.createWindow(body: .json(.init(profileId: profile.id))).created.body.json
        var first = client.windowEvents(window.id, topics: ["tabs"], resume: .never).makeAsyncIterator()
        let position = try #require(try await first.next()?.id)
        let a = try await client.api.openTab(path: .init(browserId: window.id), body: .json(.init(url: "https://a.example/")))
            .created.body.json
        // A new stream from the remembered position gets what it missed, not a new snapshot.
        var resumed = client.windowEvents(window.id, topics: ["tabs"], lastEventID: position, resume: .never).makeAsyncIterator()
        guard case .tabsInsert(let insert)? = try await resumed.next()?.payload else {
            Issue.record("the resumed stream does not replay tabs.insert first")
            return
        }
        #expect(insert.item.id == a.id)
    }

    @Test func problemsAreTypedErrors() async throws {
        let server = try await LiveServer()
        let client = BrowserdClient(server: server.url)
        do {
            _ = try await client.api.getWindow(path: .init(browserId: "b0000000000000000"))
            Issue.record("a window that does not exist was found")
        } catch {
            let problem = try #require(BrowserdProblem.from(error), "not a problem: \(error)")
            #expect(problem.status == 404 && problem.type.hasSuffix("not-found"))
        }
        let profile = try await client.api.createProfile(body: .json(.init(name: "p"))).created.body.json
        do {
            _ = try await client.api.createWindow(body: .json(.init(profileId: profile.id + "x")))
            Issue.record("a malformed profile id was accepted")
        } catch {
            let problem = try #require(BrowserdProblem.from(error))
            #expect((400..<500).contains(problem.status))
        }
        // A stream of a window that does not exist ends at once with the problem (retrying cannot help).
        do {
            for try await _ in client.windowEvents("b0000000000000000") {}
            Issue.record("a stream of no window yielded")
        } catch {
            #expect(BrowserdProblem.from(error)?.status == 404)
        }
    }

    @Test func idempotencyKeysAndIfMatch() async throws {
        let server = try await LiveServer()
        let client = BrowserdClient(server: server.url)
        let profile = try await client.api.createProfile(body: .json(.init(name: "p"))).created.body.json
        let key = Idempotency.newKey()
        let window = try await client.api.createWindow(headers: .init(idempotencyKey: key), body: .json(.init(profileId: profile.id)))
            .created.body.json
        let again = try await client.api.createWindow(headers: .init(idempotencyKey: key), body: .json(.init(profileId: profile.id)))
            .created.body.json
        #expect(again.id == window.id, "the same key is answered once")

        let read = try await client.api.getWindow(path: .init(browserId: window.id)).ok
        let version = try #require(Idempotency.version(fromETag: read.headers.eTag))
        #expect(try version == read.body.json.version)
        _ = try await client.api.openTab(
            path: .init(browserId: window.id), headers: .init(ifMatch: Idempotency.ifMatch(version: version)),
            body: .json(.init(url: "https://a.example/")))
        do {
            _ = try await client.api.openTab(
                path: .init(browserId: window.id), headers: .init(ifMatch: Idempotency.ifMatch(version: version)),
                body: .json(.init(url: "https://b.example/")))
            Issue.record("a stale If-Match was accepted")
        } catch {
            #expect(BrowserdProblem.from(error)?.status == 412)
        }
    }

    /// The next event `match` picks out (others are skipped), within the suite's time limit.
    private func next<T>(
        _ events: inout AsyncThrowingStream<StreamEvent<WindowStreamEvent>, any Error>.Iterator,
        _ match: (WindowStreamEvent) -> T?
    ) async throws -> T {
        while let event = try await events.next() {
            if let found = match(event.payload) { return found }
        }
        throw Failure("the stream ended first")
    }
}
