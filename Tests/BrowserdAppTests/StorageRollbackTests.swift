import Foundation
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

/// Issue 18: a change answered 503 never takes effect later. Several clients open and close tabs
/// while the disk fills up (a file-size limit on the real process); once space is back the server
/// recovers by itself. Then the tabs are exactly the acknowledged opens minus the acknowledged closes,
/// through REST, through an event stream that watched all along, and after a kill -9 and restart; and
/// retrying each 503'd open with its Idempotency-Key makes each tab exactly once.
@Suite(.serialized, .offThePool) struct StorageRollbackTests {
    /// What the clients were told.
    struct Ledger: Sendable {
        var opened: [String: String] = [:]  // Idempotency-Key → tab id, for 201s
        var refusedOpens: [String: String] = [:]  // Idempotency-Key → URL, for 503s
        var closed: Set<String> = []  // tab ids whose DELETE got 204
        var refusedCloses: Set<String> = []  // tab ids whose DELETE got 503
        var other: [Int] = []  // any other status

        mutating func merge(_ other: Ledger) {
            opened.merge(other.opened) { $1 }
            refusedOpens.merge(other.refusedOpens) { $1 }
            closed.formUnion(other.closed)
            refusedCloses.formUnion(other.refusedCloses)
            self.other += other.other
        }

        var expected: Set<String> { Set(opened.values).subtracting(closed) }
    }

    /// The tab ids of a window, as an event stream reconstructs them.
    final class StreamState: @unchecked Sendable {
        // @unchecked Sendable: `tabs` and `seen` are behind the Mutex; the client is used by one thread.
        private let state = Mutex<(tabs: Set<String>, seen: Set<String>)>(([], []))
        private let client: SSEClient

        init(port: Int, window: String) throws {
            client = try SSEClient(port: port, path: "/v1/browsers/\(window)/events?topics=tabs", timeout: .seconds(30))
            Thread { [self] in
                while let event = try? client.next() {
                    let json = event.json
                    state.withLock { state in
                        func ids(_ object: Any?) -> Set<String> {
                            Set(((object as? [String: Any])?["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
                        }
                        func itemID() -> String? { (json["item"] as? [String: Any])?["id"] as? String }
                        switch event.name {
                        case "tabs.populate": state.tabs = ids(json)
                        case "reset": state.tabs = ids(json["tabs"])
                        case "tabs.insert": if let id = itemID() { state.tabs.insert(id) }
                        case "tabs.remove": if let id = json["tabId"] as? String { state.tabs.remove(id) }
                        case "tabs.replace":
                            if let old = json["oldTabId"] as? String { state.tabs.remove(old) }
                            if let id = itemID() { state.tabs.insert(id) }
                        default: break
                        }
                        if let id = itemID() { state.seen.insert(id) }
                    }
                }
            }.start()
        }

        var tabs: Set<String> { state.withLock { $0.tabs } }
        func hasSeen(_ id: String) -> Bool { state.withLock { $0.seen.contains(id) } }
        func close() { client.close() }
    }

    static func json(_ reply: HTTPClientConnection.Response) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any] ?? [:]
    }

    static func tabs(port: Int, window: String) throws -> Set<String> {
        let reply = try HTTPClientConnection(host: "127.0.0.1", port: port).request("GET", "/v1/browsers/\(window)/tabs?limit=1000")
        return Set((json(reply)["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
    }

    @Test func a503dChangeNeverTakesEffect() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-rollback-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let port = try server.waitForPort()
        func prlimit(_ value: String) throws { try server.limitFileSize(value) }
        let (profile, window): (String, String) = try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
            let json = [("Content-Type", "application/json")]
            let profile = Self.json(try api.request("POST", "/v1/profiles", headers: json, body: Array(#"{"name":"rollback"}"#.utf8)))["id"] as! String
            return (profile, Self.json(try api.request("POST", "/v1/browsers", headers: json, body: Array("{\"profileId\":\"\(profile)\"}".utf8)))["id"] as! String)
        }
        let watcher = try StreamState(port: port, window: window)
        defer { watcher.close() }

        // Cap files a little above their size now: the WAL soon cannot grow.
        let sizes = try FileManager.default.contentsOfDirectory(atPath: data).compactMap {
            try FileManager.default.attributesOfItem(atPath: data + "/" + $0)[.size] as? Int
        }
        try prlimit(String((sizes.max() ?? 0) + 1024 * 1024) + ":unlimited")
        // Four clients open tabs (with keys) and close every third one they opened, until each has
        // seen a few 503s.
        var ledger = Ledger()
        try await withThrowingTaskGroup(of: Ledger.self) { group in
            for client in 0..<4 {
                group.addTask {
                    try await blocking {
                        let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
                        var mine = Ledger()
                        var refusals = 0
                        for i in 0..<600 where refusals < 4 {
                            let key = "c\(client)-\(i)"
                            let url = "https://full.example/\(key)/\(String(repeating: "x", count: 1500))"
                            let reply = try api.request(
                                "POST", "/v1/browsers/\(window)/tabs",
                                headers: [("Content-Type", "application/json"), ("Idempotency-Key", key)],
                                body: Array("{\"url\":\"\(url)\"}".utf8))
                            switch reply.status {
                            case 201: mine.opened[key] = Self.json(reply)["id"] as? String
                            case 503:
                                mine.refusedOpens[key] = url
                                refusals += 1
                            default: mine.other.append(reply.status)
                            }
                            // Other kinds of change ride along: a group, a title, a close-many. Their outcome is
                            // checked as a whole below (memory equals the disk after a restart).
                            if i % 5 == 4, let tab = mine.opened.values.filter({ !mine.closed.contains($0) }).max() {
                                let kind = i % 4
                                let reply: HTTPClientConnection.Response
                                if kind == 3 {
                                    // A window of its own, opened and closed again.
                                    let opened = try api.request(
                                        "POST", "/v1/browsers", headers: [("Content-Type", "application/json")],
                                        body: Array("{\"profileId\":\"\(profile)\"}".utf8))
                                    if opened.status == 201, let id = Self.json(opened)["id"] as? String {
                                        reply = try api.request("DELETE", "/v1/browsers/\(id)")
                                    } else {
                                        reply = opened
                                    }
                                } else if kind == 0 {
                                    reply = try api.request(
                                        "POST", "/v1/browsers/\(window)/groups", headers: [("Content-Type", "application/json")],
                                        body: Array("{\"tabIds\":[\"\(tab)\"],\"title\":\"g\(key)\"}".utf8))
                                } else if kind == 1 {
                                    reply = try api.request(
                                        "PATCH", "/v1/tabs/\(tab)", headers: [("Content-Type", "application/json")],
                                        body: Array("{\"title\":\"t\(key)\",\"progress\":0.5}".utf8))
                                } else {
                                    let pair = mine.opened.values.filter { !mine.closed.contains($0) }.sorted().prefix(2)
                                    reply = try api.request(
                                        "POST", "/v1/browsers/\(window)/close-tabs", headers: [("Content-Type", "application/json")],
                                        body: Array("{\"tabIds\":[\(pair.map { "\"\($0)\"" }.joined(separator: ","))]}".utf8))
                                    if reply.status == 200 { mine.closed.formUnion(pair) } else if reply.status == 503 { mine.refusedCloses.formUnion(pair) }
                                }
                                switch reply.status {
                                case 200, 201, 204: break
                                case 503: refusals += 1
                                case 404, 422: break  // another client closed or grouped it meanwhile
                                default: mine.other.append(reply.status)
                                }
                            }
                            if i % 3 == 2, let victim = mine.opened.values.filter({ !mine.closed.contains($0) }).min() {
                                let close = try api.request("DELETE", "/v1/tabs/\(victim)")
                                switch close.status {
                                case 204: mine.closed.insert(victim)
                                case 503:
                                    mine.refusedCloses.insert(victim)
                                    refusals += 1
                                default: mine.other.append(close.status)
                                }
                            }
                        }
                        return mine
                    }
                }
            }
            for try await part in group { ledger.merge(part) }
        }
        #expect(!ledger.refusedOpens.isEmpty, "the disk never filled up")
        #expect(ledger.other.isEmpty, "unexpected statuses: \(ledger.other)")

        // While the disk is still full, what was refused is already undone in memory (reads work).
        let expectedWhileFull = ledger.expected
        let undoneWhileFull: Bool = try await blocking {
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline {
                if (try? Self.tabs(port: port, window: window)) == expectedWhileFull { return true }
                usleep(50_000)
            }
            return false
        }
        #expect(undoneWhileFull, "the refused changes are still visible while the disk is full")

        // Space back: the server recovers by itself.
        try prlimit("unlimited:unlimited")
        let recovered = try await blocking { server.waitUntilReady(port: port, within: 15) }
        #expect(recovered, "log:\n\(server.log.suffix(3000))")

        // REST: exactly the acknowledged opens minus the acknowledged closes.
        let expected = ledger.expected
        let afterRecovery = try await blocking { try Self.tabs(port: port, window: window) }
        #expect(
            afterRecovery == expected,
            "503'd yet present: \(afterRecovery.subtracting(expected).count), acknowledged yet missing: \(expected.subtracting(afterRecovery).count)")

        // The stream that watched all along ends in the same state (a marker tab shows it caught up).
        let marker: String = try await blocking {
            Self.json(
                try HTTPClientConnection(host: "127.0.0.1", port: port).request(
                    "POST", "/v1/browsers/\(window)/tabs", headers: [("Content-Type", "application/json")],
                    body: Array(#"{"url":"https://marker.example/"}"#.utf8)))["id"] as? String ?? ""
        }
        let caughtUp: Bool = try await blocking {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, !watcher.hasSeen(marker) { usleep(20_000) }
            return watcher.hasSeen(marker)
        }
        #expect(caughtUp)
        #expect(watcher.tabs == expected.union([marker]), "the stream's state differs from the model's")

        // Retrying every 503'd open with its key makes each tab exactly once.
        let refusedOpens = ledger.refusedOpens
        let retried: [String: String] = try await blocking {
            let api = try HTTPClientConnection(host: "127.0.0.1", port: port)
            var made: [String: String] = [:]
            for (key, url) in refusedOpens {
                let headers = [("Content-Type", "application/json"), ("Idempotency-Key", key)]
                let first = try api.request("POST", "/v1/browsers/\(window)/tabs", headers: headers, body: Array("{\"url\":\"\(url)\"}".utf8))
                let again = try api.request("POST", "/v1/browsers/\(window)/tabs", headers: headers, body: Array("{\"url\":\"\(url)\"}".utf8))
                #expect(first.status == 201 && first.header("idempotent-replayed") == nil, "\(key): \(first.status)")
                #expect(again.status == 201 && again.header("idempotent-replayed") == "true")
                #expect(Self.json(first)["id"] as? String == Self.json(again)["id"] as? String)
                made[key] = Self.json(first)["id"] as? String
            }
            return made
        }
        let final = expected.union([marker]).union(retried.values)
        #expect(try await blocking { try Self.tabs(port: port, window: window) } == final)

        // The whole window (tabs, groups, titles, order, active tab) reads the same from memory as from
        // the disk after a crash.
        @Sendable func windowRead(_ port: Int) throws -> String {
            var json = Self.json(try HTTPClientConnection(host: "127.0.0.1", port: port).request("GET", "/v1/browsers/\(window)"))
            json["version"] = nil
            let windows = Self.json(try HTTPClientConnection(host: "127.0.0.1", port: port).request("GET", "/v1/browsers?profileId=\(profile)"))
            let ids = (windows["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }.sorted()
            return String(decoding: try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), as: UTF8.self)
                + " windows: \(ids)"
        }
        let inMemory = try await blocking { try windowRead(port) }
        // And after a crash, the disk says the same.
        server.signal(SIGKILL)
        _ = server.waitForExit()
        let again = try BrowserdProcess(arguments: ["--port", "0", "--data-dir", data])
        let againPort = try again.waitForPort()
        #expect(try await blocking { try Self.tabs(port: againPort, window: window) } == final)
        let fromDisk = try await blocking { try windowRead(againPort) }
        #expect(fromDisk == inMemory, "memory and disk differ:\n\(inMemory)\n\(fromDisk)")
        print(
            "rollback test: \(ledger.opened.count) opens and \(ledger.closed.count) closes acknowledged, "
                + "\(ledger.refusedOpens.count) opens and \(ledger.refusedCloses.count) closes refused with 503, "
                + "\(retried.count) retried by key")
        again.signal(SIGTERM)
        #expect(again.waitForExit() == 0)
    }
}
