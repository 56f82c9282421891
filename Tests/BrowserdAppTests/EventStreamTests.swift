import BrowserServices
import BrowserdApp
import Foundation
import MiniHTTPClient
import TestSupport
import Testing

/// Server-sent event streams over real sockets: snapshot then updates, resume, reset, batches,
/// slow clients, filters, closing, caps and tenant isolation.
@Suite(.offThePool) struct EventStreamTests {
    /// The consumer topics, without the presentation tree and action log (their tests are elsewhere),
    /// so sequences here are exact.
    static let topics = "?topics=tabs,groups,toolbar,location,broadcasts"

    private func names(_ events: [SSEClient.Event]) -> [String] { events.map(\.name) }

    @Test func newStreamStartsWithTheSnapshotThenLiveUpdates() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let first = try api.tab(window, "https://a.example/")
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            #expect(stream.status == 200)
            #expect(stream.response.header("content-type") == "text/event-stream")
            #expect(stream.response.header("cache-control") == "no-store")
            #expect(stream.response.header("x-accel-buffering") == "no")
            let snapshot = try stream.until("location.update")
            #expect(names(snapshot) == ["tabs.populate", "groups.populate", "toolbar.update", "location.update"])
            #expect(stream.retry == 2000)
            #expect(Set(snapshot.map(\.id)).count == 1, "the snapshot stands for one position")
            let items = snapshot[0].json["items"] as? [[String: Any]] ?? []
            #expect(items.map { $0["id"] as? String } == [first])
            #expect(snapshot[0].json["selectedId"] as? String == first)
            #expect(snapshot[3].json["displayUrl"] as? String == "https://a.example/")
            #expect(snapshot[3].json["secure"] as? Bool == true)
            #expect(String(decoding: try app.get("/metrics").body, as: UTF8.self).contains("browserd_event_streams 1"))
            // Every broadcast property with a value comes in the snapshot too; none has one yet.
            let second = try api.tab(window, "http://b.example/")
            let live = try stream.until("location.update")
            #expect(names(live) == ["tabs.insert", "toolbar.update", "location.update"])
            #expect((live[0].json["item"] as? [String: Any])?["id"] as? String == second)
            #expect(live[0].json["index"] as? Int == 1)
            #expect(live[0].json["selectedId"] as? String == second)
            #expect(live[1].json["tabCount"] as? Int == 2)
            #expect(live[2].json["secure"] as? Bool == false)
            // Ids follow the snapshot's, one apart, with no gap.
            let base = Int(snapshot[0].id!.split(separator: "-")[1])!
            #expect(live.map { Int($0.id!.split(separator: "-")[1])! } == [base + 1, base + 2, base + 3])
        }
    }

    @Test func everyMutationKindShowsUpAsItsConsumerEvent() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let a = try api.tab(window, "https://a.example/")
            let b = try api.tab(window, "https://b.example/", ["activate": false])
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            _ = try stream.until("location.update")

            try api.send("PATCH", "/v1/tabs/\(a)", ["title": "Hello", "progress": 0.5])
            var events = try stream.until("toolbar.update")
            #expect(names(events) == ["tabs.update", "toolbar.update"])
            #expect((events[0].json["item"] as? [String: Any])?["title"] as? String == "Hello")
            #expect(events[1].json["progress"] as? Double == 0.5)

            #expect(try api.post("/v1/tabs/\(b)/activate").status == 200)
            events = try stream.until("location.update")
            #expect(names(events).suffix(3) == ["tabs.select", "toolbar.update", "location.update"])
            #expect(events.first { $0.name == "tabs.select" }?.json["tabId"] as? String == b)

            #expect(try api.post("/v1/tabs/\(b)/move", ["index": 0]).status == 200)
            events = try stream.take(1)
            #expect(names(events) == ["tabs.move"])
            #expect(events[0].json["tabId"] as? String == b && events[0].json["index"] as? Int == 0)

            #expect(try api.post("/v1/tabs/\(a)/pin").status == 200)
            events = try stream.take(2)
            #expect(names(events) == ["tabs.move", "tabs.update"], "\(events)")
            #expect((events[1].json["item"] as? [String: Any])?["pinned"] as? Bool == true)

            #expect(try api.post("/v1/tabs/\(b)/navigate", ["url": "https://b.example/next"]).status == 200)
            events = try stream.until("location.update")
            #expect(names(events) == ["tabs.update", "toolbar.update", "location.update"], "\(names(events))")
            #expect(events[1].json["canGoBack"] as? Bool == true)
            #expect(events[2].json["displayUrl"] as? String == "https://b.example/next")

            let group = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [b], "title": "Work", "color": "blue"]).id
            events = try stream.until("groups.membership")
            #expect(names(events).contains("groups.create"))
            #expect(events.last?.json["tabId"] as? String == b && events.last?.json["groupId"] as? String == group)
            try api.send("PATCH", "/v1/groups/\(group)", ["collapsed": true])
            events = try stream.take(1)
            #expect(names(events) == ["groups.update"])
            #expect((events[0].json["group"] as? [String: Any])?["collapsed"] as? Bool == true)

            // A second tab in a group of its own, moved before the first group, then deleted.
            let c = try api.tab(window, "https://grouped.example/")
            let other = try api.post("/v1/browsers/\(window)/groups", ["tabIds": [c]]).id
            events = try stream.until("groups.membership")
            #expect(events.contains { $0.name == "groups.create" && ($0.json["group"] as? [String: Any])?["id"] as? String == other })
            #expect(try api.post("/v1/groups/\(other)/move", ["beforeIndex": 1]).status == 200)
            events = try stream.until("groups.move")
            #expect((events.last?.json["group"] as? [String: Any])?["start"] as? Int == 1)
            #expect(try api.send("DELETE", "/v1/groups/\(other)").status == 204)
            events = try stream.until("groups.delete")
            #expect(events.last?.json["groupId"] as? String == other)
            #expect(events.contains { $0.name == "groups.membership" && $0.json["tabId"] as? String == c && $0.json["groupId"] is NSNull })
            let replaced = try api.post("/v1/tabs/\(b)/replace", ["url": "https://c.example/"]).id
            events = try stream.until("tabs.replace")
            #expect(events.last?.json["oldTabId"] as? String == b)
            #expect((events.last?.json["item"] as? [String: Any])?["id"] as? String == replaced)

            try api.send("PUT", "/v1/browsers/\(window)/broadcasts/toolbar.topHeight", ["value": 56])
            events = try stream.until("broadcast")
            #expect(events.last?.json["key"] as? String == "toolbar.topHeight")
            #expect(events.last?.json["value"] as? Double == 56)

            try api.send("DELETE", "/v1/tabs/\(a)")
            events = try stream.until("tabs.remove")
            #expect(events.last?.json["tabId"] as? String == a)
        }
    }

    /// An opener set, cleared, or lost when its tab closes reaches watchers as the child's `tabs.update`
    /// (issue 17: opener changes are notified), so a watcher's tab items equal a read of the window.
    @Test func openerChangesAreStreamed() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let a = try api.tab(window, "https://a.example/")
            let b = try api.tab(window, "https://b.example/")
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events?topics=tabs")
            _ = try stream.until("tabs.populate")
            func item(_ event: SSEClient.Event?) -> [String: Any] { event?.json["item"] as? [String: Any] ?? [:] }

            #expect(try api.send("PATCH", "/v1/tabs/\(b)", ["openerTabId": a]).status == 200)
            var events = try stream.until("tabs.update")
            #expect(item(events.last)["id"] as? String == b && item(events.last)["openerTabId"] as? String == a)
            #expect(try api.send("PATCH", "/v1/tabs/\(b)", ["openerTabId": NSNull()]).status == 200)
            events = try stream.until("tabs.update")
            #expect(item(events.last)["id"] as? String == b && item(events.last)["openerTabId"] is NSNull)

            #expect(try api.send("PATCH", "/v1/tabs/\(b)", ["openerTabId": a]).status == 200)
            _ = try stream.until("tabs.update")
            // A new watcher's first state carries it too.
            let late = try SSEClient(app, "/v1/browsers/\(window)/events?topics=tabs")
            let populate = try late.until("tabs.populate").last?.json["items"] as? [[String: Any]]
            #expect(populate?.first { $0["id"] as? String == b }?["openerTabId"] as? String == a)
            late.close()
            _ = try api.send("DELETE", "/v1/tabs/\(a)")
            events = try stream.until("tabs.remove")
            #expect(events.last?.json["tabId"] as? String == a)
            events = try stream.until("tabs.update")
            #expect(item(events.last)["id"] as? String == b && item(events.last)["openerTabId"] is NSNull)
            #expect((try api.get("/v1/tabs/\(b)"))["openerTabId"] is NSNull)
        }
    }

    @Test func resumeGivesExactlyTheMissedEvents() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let watcher = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            _ = try watcher.until("location.update")
            let tab = try api.tab(window, "https://a.example/")
            let seen = try watcher.until("location.update")
            let leftAt = seen.last!.id!
            watcher.close()
            // Meanwhile another watcher sees everything.
            let witness = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)", headers: [("Last-Event-ID", leftAt)])
            for i in 0..<3 { try api.send("PATCH", "/v1/tabs/\(tab)", ["title": "t\(i)"]) }
            try api.send("DELETE", "/v1/tabs/\(tab)")
            let missed = try witness.until("tabs.remove")
            let resumed = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)&lastEventId=\(leftAt)")
            let replay = try resumed.until("tabs.remove")
            #expect(replay.map(\.description) == missed.map(\.description))
            #expect(replay.first?.name == "tabs.update", "no snapshot, no duplicate of what was seen")
        }
    }

    @Test func anOverLongResumePositionIs400EvenWithANulInside() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let long = String(repeating: "a", count: 129)
            // A NUL (`%00`) early in the value must not cut it short: the whole value counts.
            for query in ["lastEventId=\(long)", "lastEventId=ab%00\(long)"] {
                let reply = try api.get("/v1/browsers/\(window)/events?\(query)")
                #expect(reply.status == 400, "\(query.prefix(20))")
                #expect(reply["parameter"] as? String == "lastEventId")
            }
            // The header wins, but a bad query value is still said, not ignored.
            let both = try api.send("GET", "/v1/events?profileId=\(profile)&lastEventId=%00\(long)", headers: [("Last-Event-ID", "x-1")])
            #expect(both.status == 400)
            let header = try api.send("GET", "/v1/browsers/\(window)/events", headers: [("Last-Event-ID", long)])
            #expect(header.status == 400)
            #expect(header["header"] as? String == "Last-Event-ID")
            // At the limit it is a position (an unknown one: a reset follows).
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events?lastEventId=\(long.dropLast())")
            #expect(try stream.next()?.name == "reset")
        }
    }

    @Test func staleOrUnknownIdsGetAResetWithTheWholeState() async throws {
        try await withApplication({ $0.events.replayEvents = 5 }) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let watcher = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            let start = try watcher.until("location.update").last!.id!
            let tab = try api.tab(window, "https://a.example/")
            for i in 0..<10 { try api.send("PATCH", "/v1/tabs/\(tab)", ["title": "t\(i)"]) }
            var title = "t9"
            for (id, reason) in [(start, "expired"), ("0badc0de-3", "restarted"), ("nonsense", "unknown-id")] {
                let stream = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)", headers: [("Last-Event-ID", id)])
                let reset = try #require(try stream.next())
                #expect(reset.name == "reset")
                #expect(reset.json["reason"] as? String == reason)
                let tabs = reset.json["tabs"] as? [String: Any]
                #expect((tabs?["items"] as? [[String: Any]])?.first?["title"] as? String == title)
                #expect((reset.json["toolbar"] as? [String: Any])?["tabCount"] as? Int == 1)
                // Live events follow the reset.
                title = "after-\(reason)"
                try api.send("PATCH", "/v1/tabs/\(tab)", ["title": title])
                #expect(try stream.next()?.name == "tabs.update")
            }
        }
    }

    @Test func anIdFromAnEarlierRunGetsAReset() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-sse-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (window, lastID) = try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            _ = try api.tab(window, "https://kept.example/")
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            return (window, try stream.until("location.update").last!.id!)
        }
        try await withApplication(dataDirectory: data) { app in
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)", headers: [("Last-Event-ID", lastID)])
            let reset = try #require(try stream.next())
            #expect(reset.name == "reset" && reset.json["reason"] as? String == "restarted")
            let items = (reset.json["tabs"] as? [String: Any])?["items"] as? [[String: Any]]
            #expect(items?.first?["url"] as? String == "https://kept.example/")
        }
    }

    @Test func twoWatchersSeeTheSameEventsAndABatchArrivesFramed() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            for i in 0..<5 { _ = try api.tab(window, "https://t\(i).example/") }
            let one = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            let two = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            _ = try one.until("location.update")
            _ = try two.until("location.update")
            let closed = try api.post("/v1/browsers/\(window)/close-tabs", ["all": true])
            #expect(closed.status == 200)
            let a = try one.until("batch.end")
            let b = try two.until("batch.end")
            #expect(a.map(\.description) == b.map(\.description))
            #expect(a.first?.name == "batch.begin")
            #expect(a.filter { $0.name == "tabs.remove" }.count == 5)
            #expect(a.last?.json["browserId"] as? String == window)
        }
    }

    @Test func topicsFilterWhatAStreamCarries() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events?topics=toolbar")
            #expect(try stream.next()?.name == "toolbar.update")
            let tab = try api.tab(window)
            try api.send("PATCH", "/v1/tabs/\(tab)", ["progress": 0.25])
            let events = try stream.take(2)
            #expect(names(events) == ["toolbar.update", "toolbar.update"])
            #expect(events[1].json["progress"] as? Double == 0.25)
            let bad = try SSEClient(app, "/v1/browsers/\(window)/events?topics=tabs,nope")
            #expect(bad.status == 400)
            #expect(bad.response.header("content-type") == "application/problem+json")
        }
    }

    @Test func closingTheWindowEndsItsStreamAfterBrowserClosed() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let window = try api.window(profile)
            let stream = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            let windows = try SSEClient(app, "/v1/events?profileId=\(profile)")
            let populate = try #require(try windows.next())
            #expect(populate.name == "browsers.populate")
            #expect((populate.json["browsers"] as? [[String: Any]])?.first?["id"] as? String == window)
            _ = try stream.until("location.update")
            #expect(try api.send("DELETE", "/v1/browsers/\(window)").status == 204)
            let tail = try stream.until("browser.closed")
            #expect(tail.count == 1, "events before browser.closed: \(tail.dropLast())")
            #expect(try stream.next() == nil, "the stream ends after browser.closed")
            let removed = try #require(try windows.next())
            #expect(removed.name == "browsers.remove" && removed.json["browserId"] as? String == window)
            let other = try api.window(profile)
            let added = try #require(try windows.next())
            #expect(added.name == "browsers.add")
            #expect((added.json["browser"] as? [String: Any])?["id"] as? String == other)
            #expect(try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)").status == 404)
            #expect(try SSEClient(app, "/v1/events?profileId=").status == 400)
            #expect(try SSEClient(app, "/v1/events?profileId=pnope").status == 404)
        }
    }

    /// A regular profile's stream says which incognito profile it has (`incognitoProfileId` in its
    /// first event, null while none) and `profile.incognito` when it comes or goes, so a renderer can
    /// follow its windows too; an incognito profile's own stream has no such member.
    @Test func aProfileStreamTellsItsIncognitoProfile() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let profile = try api.profile()
            let windows = try SSEClient(app, "/v1/events?profileId=\(profile)")
            let populate = try #require(try windows.next())
            #expect(populate.name == "browsers.populate" && populate.json["incognitoProfileId"] is NSNull)
            let incognito = try api.post("/v1/profiles/\(profile)/incognito").id
            let made = try #require(try windows.next())
            #expect(made.name == "profile.incognito" && made.json["incognitoProfileId"] as? String == incognito)
            #expect(made.json["profileId"] as? String == profile)
            // Asked again: it exists already, nothing is told.
            #expect(try api.post("/v1/profiles/\(profile)/incognito").status == 200)
            let later = try SSEClient(app, "/v1/events?profileId=\(profile)")
            #expect(try #require(try later.next()).json["incognitoProfileId"] as? String == incognito)
            let own = try #require(try SSEClient(app, "/v1/events?profileId=\(incognito)").next())
            #expect(own.name == "browsers.populate" && own.json["incognitoProfileId"] == nil)
            let window = try api.window(incognito)
            #expect(try api.send("DELETE", "/v1/profiles/\(incognito)").status == 204)
            let gone = try #require(try windows.next())
            #expect(gone.name == "profile.incognito" && gone.json["incognitoProfileId"] is NSNull, "\(gone.name)")
            // Made again by a command (an incognito tab asked for from a regular window): told too.
            let regular = try api.window(profile)
            #expect(try windows.next()?.name == "browsers.add")
            let opened = try api.post("/v1/browsers/\(regular)/commands/openNewTab", ["args": ["url": "https://example.com/", "incognito": true]])
            #expect(opened.status == 200, "\(String(decoding: opened.body, as: UTF8.self))")
            let again = try #require(try windows.until("profile.incognito").last)
            let remade = try #require(again.json["incognitoProfileId"] as? String)
            let listed = try api.get("/v1/profiles/\(profile)")["incognitoProfileId"] as? String
            #expect(remade != incognito && listed == remade)
            #expect(try api.get("/v1/browsers/\(window)").status == 404)
        }
    }

    /// The profile directory (no `profileId`): every profile, then each that comes, changes or goes.
    @Test func theDirectoryStreamFollowsProfiles() async throws {
        try await withApplication { app in
            let api = try APIClient(app)
            let first = try api.profile()
            let directory = try SSEClient(app, "/v1/events")
            let populate = try #require(try directory.next())
            #expect(populate.name == "profiles.populate")
            #expect((populate.json["items"] as? [[String: Any]])?.map { $0["id"] as? String } == [first])
            let second = try api.profile()
            let added = try #require(try directory.next())
            #expect(added.name == "profiles.add" && (added.json["profile"] as? [String: Any])?["id"] as? String == second)
            _ = try api.window(second)
            let updated = try #require(try directory.next())
            #expect(updated.name == "profiles.update")
            #expect((updated.json["profile"] as? [String: Any])?["windowCount"] as? Int == 1)
            #expect(try api.send("DELETE", "/v1/profiles/\(second)").status == 204)
            // Its windows go first (a profiles.update with windowCount 0 may come before), then the profile.
            let tail = try directory.until("profiles.remove")
            #expect(tail.last?.json["profileId"] as? String == second)
            #expect(tail.dropLast().allSatisfy { $0.name == "profiles.update" }, "\(tail.map(\.name))")
        }
    }

    @Test func aClientThatStopsReadingNeitherDelaysOthersNorGrowsItsQueue() async throws {
        try await withApplication({ $0.events.queueBytes = 32 * 1024 }) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile())
            let tab = try api.tab(window)
            let stuck = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)", receiveBufferSize: 4096)
            let reader = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            _ = try reader.until("location.update")
            let title = String(repeating: "x", count: 1000)
            for i in 0..<600 {
                #expect(try api.send("PATCH", "/v1/tabs/\(tab)", ["title": "\(i) \(title)"]).status == 200)
                if i % 100 == 99 {
                    // The reader keeps up while the stuck client holds its queue full.
                    #expect(try reader.untilTitle("\(i) \(title)") != nil)
                }
            }
            let buffered = app.server.streamBufferedBytes
            #expect(buffered.max() ?? 0 <= 32 * 1024, "a stream's queue stays within its bound: \(buffered)")
            // Once it reads again it catches up: through a reset if its queue overflowed (the usual
            // case; the kernel's socket buffers may absorb the burst), then live events.
            try api.send("PATCH", "/v1/tabs/\(tab)", ["title": "final"])
            var resets: [String] = []
            while let event = try stuck.next() {
                if event.name == "reset" { resets.append(event.json["reason"] as? String ?? "") }
                let items =
                    event.name == "reset"
                    ? ((event.json["tabs"] as? [String: Any])?["items"] as? [[String: Any]] ?? [])
                    : [(event.json["item"] as? [String: Any]) ?? [:]]
                if items.contains(where: { $0["title"] as? String == "final" }) { break }
            }
            #expect(resets.allSatisfy { $0 == "slow-consumer" })
        }
    }

    @Test func streamCapsAnswer429PerProfileAnd503InAll() async throws {
        try await withApplication({
            $0.events.maxStreamsPerProfile = 2
            $0.events.maxStreams = 3
            // A client that left is noticed at the next heartbeat.
            $0.server.streamHeartbeatInterval = .milliseconds(100)
        }) { app in
            let api = try APIClient(app)
            let window = try api.window(try api.profile("A"))
            let other = try api.window(try api.profile("B"))
            let open = try (0..<2).map { _ in try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)") }
            #expect(open.allSatisfy { $0.status == 200 })
            let third = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)")
            #expect(third.status == 429)
            #expect(third.response.header("retry-after") != nil)
            let fill = try SSEClient(app, "/v1/browsers/\(other)/events\(Self.topics)")
            #expect(fill.status == 200)
            #expect(try SSEClient(app, "/v1/browsers/\(other)/events\(Self.topics)").status == 503)
            withExtendedLifetime(fill) {}
            // A stream that ends gives its place back.
            open[0].close()
            var status = 0
            for _ in 0..<50 where status != 200 {
                Thread.sleep(forTimeInterval: 0.05)
                status = try SSEClient(app, "/v1/browsers/\(window)/events\(Self.topics)").status
            }
            #expect(status == 200)
        }
    }

    @Test func aProfileTokenWatchesOnlyItsOwnProfile() async throws {
        let admin = "admin-token-0123456789abcdef"
        try await withApplication({ $0.adminToken = admin }) { app in
            let api = try APIClient(app)
            let auth = [("Authorization", "Bearer \(admin)")]
            let mine = try api.post("/v1/profiles", ["name": "Mine"], headers: auth).id
            let theirs = try api.post("/v1/profiles", ["name": "Theirs"], headers: auth).id
            let myWindow = try api.post("/v1/browsers", ["profileId": mine], headers: auth).id
            let theirWindow = try api.post("/v1/browsers", ["profileId": theirs], headers: auth).id
            let token = try api.post("/v1/profiles/\(mine)/tokens", [String: Any](), headers: auth).json["token"] as? String ?? ""
            let bearer = [("Authorization", "Bearer \(token)")]
            #expect(try SSEClient(app, "/v1/browsers/\(myWindow)/events\(Self.topics)", headers: bearer).status == 200)
            #expect(try SSEClient(app, "/v1/events?profileId=\(mine)", headers: bearer).status == 200)
            #expect(try SSEClient(app, "/v1/browsers/\(theirWindow)/events\(Self.topics)", headers: bearer).status == 404)
            #expect(try SSEClient(app, "/v1/events?profileId=\(theirs)", headers: bearer).status == 404)
            #expect(try SSEClient(app, "/v1/browsers/\(myWindow)/events\(Self.topics)").status == 401)
        }
    }
}

extension SSEClient {
    /// Reads until a `tabs.update` whose item has `title`, or a `reset` whose state has it; nil if
    /// the stream ends first.
    func untilTitle(_ title: String) throws -> Event? {
        while let event = try next() {
            if event.name == "tabs.update", (event.json["item"] as? [String: Any])?["title"] as? String == title { return event }
            if event.name == "reset",
                ((event.json["tabs"] as? [String: Any])?["items"] as? [[String: Any]])?.contains(where: { $0["title"] as? String == title }) == true
            {
                return event
            }
        }
        return nil
    }
}

@Suite(.offThePool) struct EventStreamShutdownTests {
    /// SIGTERM with streams open: each stream ends cleanly (the chunked body's last chunk) and the
    /// process exits 0.
    @Test func serverShutdownEndsStreamsCleanly() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-sse-stop-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let port = try server.waitForPort()
        let ended = try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
            let profile = try crashJSON(api.request("POST", "/v1/profiles", headers: crashJSONHeaders, body: Array(#"{"name":"s"}"#.utf8)))["id"] as? String ?? ""
            let window =
                try crashJSON(
                    api.request(
                        "POST", "/v1/browsers", headers: crashJSONHeaders,
                        body: Array("{\"profileId\":\"\(profile)\"}".utf8)))["id"] as? String ?? ""
            let streams = try (0..<3).map { _ in try SSEClient(port: port, path: "/v1/browsers/\(window)/events\(EventStreamTests.topics)") }
            for stream in streams { _ = try stream.until("location.update") }
            server.signal(SIGTERM)
            return try streams.map { stream -> Bool in
                while try stream.next() != nil {}
                return stream.ended
            }
        }
        #expect(ended == [true, true, true])
        #expect(server.waitForExit() == 0)
    }
}
