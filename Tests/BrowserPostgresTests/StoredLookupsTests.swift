#if PostgreSQL
    import BrowserPostgres
    import BrowserRecords
    import Foundation
    import Synchronization
    import TestSupport
    import Testing

    /// What placement, lists and token following read of the stored state without loading it, and the
    /// messages instances send each other — against a real PostgreSQL.
    @Suite(.offThePool, .serialized) struct StoredLookupsTests {
        static var enabled: Bool { PostgresDatabase.available }

        static func date(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }

        /// Profile `id` with one window `w-<id>` holding tab `t-<id>` in group `g-<id>`.
        static func profile(_ id: String, name: String, createdAt: Double) -> ChangeSet {
            var change = ChangeSet()
            change.profileID = id
            change.profiles = [ProfileRecord(id: id, name: name, createdAt: date(createdAt))]
            change.windows = [
                WindowRecord(
                    id: "w-\(id)", profileID: id, version: 1, tabOrder: [], activeIndex: 0, pinnedCount: 0,
                    groups: [GroupRecord(id: "g-\(id)", title: "G", color: "blue", collapsed: false)],
                    createdAt: date(createdAt), lastActiveAt: date(createdAt))
            ]
            change.tabs = [
                (
                    "w-\(id)",
                    TabRecord(
                        id: "t-\(id)", groupID: "g-\(id)", openerID: nil, openerNavigationIndex: nil, title: "T", loading: false, progress: 1,
                        faviconURL: nil, createdAt: date(createdAt), lastActiveAt: date(createdAt), historyIndex: 0,
                        history: [HistoryEntryRecord(url: "https://example.com/", title: "T", transition: "typed", timestamp: date(createdAt))])
                )
            ]
            return change
        }

        @Test(.enabled(if: enabled)) func whatHoldsWhatAndTheOldestOfAName() async throws {
            try await PostgresDatabase.with { store in
                try await store.apply([
                    Self.profile("p2", name: "webdriver", createdAt: 20), Self.profile("p1", name: "webdriver", createdAt: 10),
                    Self.profile("p3", name: "other", createdAt: 5),
                ])
                let lookups = StoredLookups(store: store, logger: PostgresDatabase.logger)
                #expect(try await lookups.profile(ofWindow: "w-p2") == "p2")
                #expect(try await lookups.profile(ofTab: "t-p1") == "p1")
                #expect(try await lookups.profile(ofGroup: "g-p3") == "p3")
                #expect(try await lookups.profile(ofTab: "t-nothing") == nil)
                #expect(try await lookups.profileExists("p1"))
                #expect(try await !lookups.profileExists("p9"))
                #expect(try await lookups.oldestProfile(named: "webdriver") == "p1")
                #expect(try await lookups.oldestProfile(named: "nobody") == nil)
                let listed = try await lookups.storedProfiles()
                #expect(listed.map(\.record.id) == ["p3", "p1", "p2"], "oldest first")
                #expect(listed.map(\.windowCount) == [1, 1, 1])
            }
        }

        @Test(.enabled(if: enabled)) func storedTokensAreReadBackAsWritten() async throws {
            try await PostgresDatabase.with { store in
                var change = Self.profile("p1", name: "P", createdAt: 1)
                let first = TokenRecord(id: "k1", profileID: "p1", hash: Array(repeating: 7, count: 32), createdAt: Self.date(2))
                let second = TokenRecord(id: "k2", profileID: "p1", hash: Array(repeating: 9, count: 32), createdAt: Self.date(3))
                change.tokens = [second, first]
                try await store.apply([change])
                let lookups = StoredLookups(store: store, logger: PostgresDatabase.logger)
                #expect(try await lookups.storedTokens() == [first, second], "oldest first")
                #expect(try await lookups.storedToken("k2") == second)
                #expect(try await lookups.storedToken("k9") == nil)
            }
        }

        @Test(.enabled(if: enabled)) func notificationsArriveInOrderAfterListeningStarts() async throws {
            try await PostgresDatabase.with { store in
                let notifications = ClusterNotifications(store: store, logger: PostgresDatabase.logger)
                let received = Mutex<[String]>([])
                let (listening, listeningStarted) = AsyncStream.makeStream(of: Void.self)
                let watcher = Task {
                    await notifications.watch(
                        ClusterNotifications.tokenChannel, listening: { listeningStarted.yield() },
                        received: { payload in received.withLock { $0.append(payload) } })
                }
                var started = listening.makeAsyncIterator()
                _ = await started.next()
                try await notifications.notify(ClusterNotifications.tokenChannel, ["a", "b", "profile:p1"])
                try await notifications.notify(ClusterNotifications.leaseChannel, ["elsewhere"])
                let deadline = ContinuousClock.now + .seconds(10)
                while received.withLock({ $0.count }) < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
                watcher.cancel()
                #expect(received.withLock { $0 } == ["a", "b", "profile:p1"], "in order, and only this channel's")
            }
        }
    }
#endif
