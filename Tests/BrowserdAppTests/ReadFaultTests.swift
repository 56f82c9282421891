import Foundation
import MiniHTTPClient
import TestSupport
import Testing

/// Storage never lies (the issue: a failed read answered with a made-up one-entry history, and a
/// navigation then wrote it over the stored six). A real `browserd` runs with a shim around the reads
/// of its database file (`LD_PRELOAD`): while a flag file exists, every read of `browserd.sqlite*`
/// fails with EIO. Each place that reads lazily — a tab's history, a profile's load, an export, a
/// WebDriver command — answers 503 and changes nothing; once the disk is back the same requests
/// succeed, and after `kill -9` every acknowledged entry is there.
@Suite(.serialized, .offThePool) struct ReadFaultTests {
    /// `pread`, `pread64` and `read` fail with EIO on the database's files while `READFAULT_FLAG` exists.
    static let shimSource = #"""
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <errno.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/types.h>
        #include <unistd.h>

        static int faulty(int fd) {
            const char *flag = getenv("READFAULT_FLAG");
            if (!flag || access(flag, F_OK) != 0) return 0;
            char link[64], path[4096];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(link, path, sizeof path - 1);
            if (n <= 0) return 0;
            path[n] = 0;
            return strstr(path, "browserd.sqlite") != NULL;
        }

        ssize_t pread64(int fd, void *buf, size_t count, off_t offset) {
            static ssize_t (*real)(int, void *, size_t, off_t);
            if (!real) real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
            if (faulty(fd)) { errno = EIO; return -1; }
            return real(fd, buf, count, offset);
        }

        ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
            static ssize_t (*real)(int, void *, size_t, off_t);
            if (!real) real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
            if (faulty(fd)) { errno = EIO; return -1; }
            return real(fd, buf, count, offset);
        }

        ssize_t read(int fd, void *buf, size_t count) {
            static ssize_t (*real)(int, void *, size_t);
            if (!real) real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
            if (faulty(fd)) { errno = EIO; return -1; }
            return real(fd, buf, count);
        }
        """#

    /// Compiles the shim with the toolchain's C compiler into `folder`.
    static func buildShim(in folder: String) throws -> String {
        let source = folder + "/readfault.c"
        let library = folder + "/readfault.so"
        try shimSource.write(toFile: source, atomically: true, encoding: .utf8)
        let compiler = try ChildProcess(
            executable: "/usr/bin/env", arguments: ["clang", "-shared", "-fPIC", "-O2", "-o", library, source, "-ldl"],
            environment: ProcessInfo.processInfo.environment, output: .discarded)
        compiler.waitUntilExit()
        guard compiler.terminationStatus == 0 else { throw CancellationError() }
        return library
    }

    struct Reply {
        let status: Int
        let json: [String: Any]
        let retryAfter: String?
        let text: String
    }

    static func call(_ port: Int, _ method: String, _ path: String, _ body: String? = nil) throws -> Reply {
        let client = try HTTPClientConnection(host: "127.0.0.1", port: port)
        let reply = try client.request(
            method, path, headers: body == nil ? [] : [("Content-Type", "application/json")], body: body.map { Array($0.utf8) } ?? [])
        let json = ((try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any]) ?? [:]
        return Reply(status: reply.status, json: json, retryAfter: reply.header("retry-after"), text: reply.text)
    }

    static func urls(ofHistory reply: Reply) -> [String] {
        (reply.json["entries"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }
    }

    @Test func aFailedReadRefusesChangesNothingAndNeverInvents() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("browserd-readfault-\(UUID())").path
        let data = folder + "/data"
        let flag = folder + "/fault"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let shim = try Self.buildShim(in: folder)
        let arguments = ["--port", "0", "--data-dir", data]

        // Stored state: profile P (a window of three tabs, six entries each) and profile Q.
        let first = try BrowserdProcess(arguments: arguments)
        let firstPort = try first.waitForPort()
        let (profile, other, window, tabs): (String, String, String, [String]) = try await blocking {
            let profile = try Self.call(firstPort, "POST", "/v1/profiles", #"{"name":"P"}"#).json["id"] as? String ?? ""
            let other = try Self.call(firstPort, "POST", "/v1/profiles", #"{"name":"Q"}"#).json["id"] as? String ?? ""
            let window = try Self.call(firstPort, "POST", "/v1/browsers", "{\"profileId\":\"\(profile)\"}").json["id"] as? String ?? ""
            // Q's rows fill pages of their own, so loading P reads none of them (else Q's load would be
            // answered from the reader's cache: true, but no test of a failed load).
            let otherWindow = try Self.call(firstPort, "POST", "/v1/browsers", "{\"profileId\":\"\(other)\"}").json["id"] as? String ?? ""
            for t in 0..<40 {
                let url = "https://q.example/\(t)/" + String(repeating: "q", count: 2_000)
                #expect(try Self.call(firstPort, "POST", "/v1/browsers/\(otherWindow)/tabs", "{\"url\":\"\(url)\"}").status == 201)
            }
            var tabs: [String] = []
            for t in 0..<3 {
                let tab = try Self.call(firstPort, "POST", "/v1/browsers/\(window)/tabs", "{\"url\":\"https://t\(t).example/0\"}")
                #expect(tab.status == 201)
                let id = tab.json["id"] as? String ?? ""
                for entry in 1..<6 {
                    #expect(try Self.call(firstPort, "POST", "/v1/tabs/\(id)/navigate", "{\"url\":\"https://t\(t).example/\(entry)\"}").status == 200)
                }
                tabs.append(id)
            }
            return (profile, other, window, tabs)
        }
        first.signal(SIGTERM)
        #expect(first.waitForExit() == 0)
        let stored = (0..<3).map { t in (0..<6).map { "https://t\(t).example/\($0)" } }

        // Restarted with the shim: P loads (its tabs unrealized), then every read of the database fails.
        let faulty = try BrowserdProcess(arguments: arguments, environment: ["LD_PRELOAD": shim, "READFAULT_FLAG": flag])
        let port = try faulty.waitForPort()
        try await blocking {
            let listed = try Self.call(port, "GET", "/v1/browsers/\(window)")
            #expect(listed.status == 200)
            let version = listed.json["version"] as? Int
            let newSession = { (id: String) in "{\"capabilities\":{\"alwaysMatch\":{\"browserd:profileId\":\"\(id)\"}}}" }
            FileManager.default.createFile(atPath: flag, contents: nil)

            func refused(_ method: String, _ path: String, _ body: String? = nil) throws {
                let reply = try Self.call(port, method, path, body)
                #expect(reply.status == 503, "\(method) \(path): \(reply.status) \(reply.text)")
                #expect(reply.retryAfter != nil, "\(method) \(path): Retry-After")
                if !path.hasPrefix("/webdriver/") {
                    #expect(reply.json["type"] as? String == "/problems/storage-unavailable", "\(method) \(path): \(reply.text)")
                }
            }
            try refused("GET", "/v1/tabs/\(tabs[0])/history")
            try refused("POST", "/v1/tabs/\(tabs[0])/navigate", #"{"url":"https://during.example/"}"#)
            try refused("POST", "/v1/tabs/\(tabs[0])/back", "{}")
            try refused("POST", "/v1/tabs/\(tabs[0])/duplicate", "{}")
            try refused("PATCH", "/v1/tabs/\(tabs[1])", #"{"title":"during the fault"}"#)
            try refused("DELETE", "/v1/tabs/\(tabs[2])")
            try refused("DELETE", "/v1/browsers/\(window)")
            try refused("GET", "/v1/browsers?profileId=\(other)")
            try refused("GET", "/v1/profiles/\(profile)/export")
            // A WebDriver session on a profile not in memory loads it first (its own tabs are new ones).
            try refused("POST", "/webdriver/session", newSession(other))
            // What memory holds is still answered, and nothing changed.
            let after = try Self.call(port, "GET", "/v1/browsers/\(window)")
            #expect(after.status == 200 && after.json["version"] as? Int == version)
            let listing = try Self.call(port, "GET", "/v1/browsers/\(window)/tabs")
            let items = listing.json["items"] as? [[String: Any]] ?? []
            #expect(items.compactMap { $0["id"] as? String } == tabs)
            #expect(items.compactMap { $0["url"] as? String } == stored.map { $0[5] })

            // The disk is back: the same requests succeed, with the stored histories.
            try FileManager.default.removeItem(atPath: flag)
            #expect(faulty.waitUntilReady(port: port, within: 10), "log:\n\(faulty.log.suffix(2000))")
            #expect(Self.urls(ofHistory: try Self.call(port, "GET", "/v1/tabs/\(tabs[0])/history")) == stored[0])
            // The writer's connection may have seen the failed reads: the first commit after the fault can
            // still be refused (503, not acknowledged) while it reopens, as a client retrying on 503 sees.
            func accepted(_ method: String, _ path: String, _ body: String) throws -> Bool {
                let deadline = Date().addingTimeInterval(10)
                while true {
                    let reply = try Self.call(port, method, path, body)
                    if reply.status == 200 { return true }
                    guard reply.status == 503, Date() < deadline else { return false }
                    usleep(200_000)
                }
            }
            #expect(try accepted("POST", "/v1/tabs/\(tabs[0])/navigate", #"{"url":"https://after.example/"}"#))
            #expect(try accepted("PATCH", "/v1/tabs/\(tabs[1])", #"{"title":"after the fault"}"#))
            #expect(try Self.call(port, "GET", "/v1/browsers?profileId=\(other)").status == 200)
            #expect(try Self.call(port, "GET", "/v1/profiles/\(profile)/export").status == 200)
            #expect(try Self.call(port, "POST", "/webdriver/session", newSession(other)).status == 200)
        }
        faulty.signal(SIGKILL)
        _ = faulty.waitForExit()

        // After kill -9: every acknowledged entry, and nothing made up.
        let again = try BrowserdProcess(arguments: arguments)
        let againPort = try again.waitForPort()
        try await blocking {
            #expect(Self.urls(ofHistory: try Self.call(againPort, "GET", "/v1/tabs/\(tabs[0])/history")) == stored[0] + ["https://after.example/"])
            let titled = try Self.call(againPort, "GET", "/v1/tabs/\(tabs[1])/history")
            #expect(Self.urls(ofHistory: titled) == stored[1])
            #expect((titled.json["entries"] as? [[String: Any]])?.last?["title"] as? String == "after the fault")
            #expect(Self.urls(ofHistory: try Self.call(againPort, "GET", "/v1/tabs/\(tabs[2])/history")) == stored[2])
        }
        again.signal(SIGTERM)
        #expect(again.waitForExit() == 0)
    }
}
