import BrowserdApp
import Foundation
import TestSupport
import Testing

/// Export and import of whole profiles (`GET /v1/profiles/{id}/export`, `POST /v1/profiles/import`):
/// the document round-trips a profile exactly, in this deployment and another; every bad document is
/// a 4xx that leaves nothing behind.
@Suite(.serialized, .offThePool) struct ProfileTransferTests {
    static func export(_ api: APIClient, _ profile: String) throws -> [UInt8] {
        let reply = try api.get("/v1/profiles/\(profile)/export")
        #expect(reply.status == 200, "\(String(decoding: reply.body.prefix(300), as: UTF8.self))")
        #expect(reply.header("content-type") == "application/json")
        return reply.body
    }

    @Test func exportThenImportRoundTripsAProfileExactly() async throws {
        let data = WorkingSetTests.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await WorkingSetTests.seed(data)
        let profile = seeded.profiles[0]
        let document: [UInt8] = try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let document = try Self.export(api, profile)
            let parsed = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
            #expect(parsed["format"] as? String == "browserd-profile" && parsed["version"] as? Int == 1)
            #expect((parsed["windows"] as? [Any])?.count == 2 && (parsed["recentlyClosed"] as? [Any])?.count == 2)
            // Deleted, then imported back: the same profile, ids and all.
            #expect(try api.send("DELETE", "/v1/profiles/\(profile)").status == 204)
            let imported = try api.send("POST", "/v1/profiles/import", raw: document)
            #expect(imported.status == 201, "\(String(decoding: imported.body, as: UTF8.self))")
            #expect(imported.id == profile && imported.header("location") == "/v1/profiles/\(profile)")
            #expect(try Self.export(api, profile) == document, "the second export is the first, byte for byte")
            for (path, before) in seeded.answers where !path.hasPrefix("/v1/profiles") || path.contains(profile) {
                guard !path.contains(seeded.profiles[1]) else { continue }
                let after = try api.get(path)
                if path == "/v1/profiles" { continue }
                #expect(after.body == before, "\(path) differs after export and import")
            }
            return document
        }
        // Durable: after a restart it is there as imported.
        try await withApplication(dataDirectory: data) { app in
            let again = try Self.export(try APIClient(app), profile)
            #expect(again == document)
        }
        // Into another deployment: the same document again.
        try await withApplication { app in
            let api = try APIClient(app)
            #expect(try api.send("POST", "/v1/profiles/import", raw: document).status == 201)
            #expect(try Self.export(api, profile) == document)
            #expect(try api.get("/v1/browsers/\(seeded.windows[0])").body == seeded.answers["/v1/browsers/\(seeded.windows[0])"])
            // Imported twice: its ids are taken.
            let again = try api.send("POST", "/v1/profiles/import", raw: document)
            #expect(again.status == 409 && again.problemType == "/problems/id-taken")
        }
    }

    @Test func badDocumentsAreRefusedAndLeaveNothing() async throws {
        let data = WorkingSetTests.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await WorkingSetTests.seed(data)
        try await withApplication(dataDirectory: data) { app in
            let api = try APIClient(app)
            let document = try Self.export(api, seeded.profiles[1])
            var text = String(decoding: document, as: UTF8.self)
            let fresh = "p" + String(repeating: "a", count: 16)
            text = text.replacingOccurrences(of: seeded.profiles[1], with: fresh)
            func attempt(_ body: String) throws -> APIClient.Reply { try api.send("POST", "/v1/profiles/import", raw: Array(body.utf8)) }
            // Not JSON: 400 with where.
            let cut = try attempt(String(text.prefix(text.count / 2)))
            #expect(cut.status == 400 && cut.problemType == "/problems/malformed-json" && (cut.json["detail"] as? String ?? "").contains("at byte"))
            // Not a profile document.
            #expect(try attempt("{\"format\":\"other\",\"version\":1}").status == 422)
            #expect(try attempt(text.replacingOccurrences(of: "\"version\":1", with: "\"version\":2")).json["field"] as? String == "version")
            // Its windows' ids are taken (the original profile still has them).
            let taken = try attempt(text)
            #expect(taken.status == 409 && taken.problemType == "/problems/id-taken", "\(taken.json)")
            // A window that would not load as written: an active index past its tabs.
            let past = text.replacingOccurrences(of: "\"activeIndex\":1", with: "\"activeIndex\":9")
            #expect(past != text)
            let refused = try attempt(past)
            #expect(refused.status == 422 && (refused.json["field"] as? String ?? "").hasPrefix("windows["), "\(refused.json)")
            // A member that is not in the format.
            let extra = try attempt(text.replacingOccurrences(of: "\"pinnedCount\":", with: "\"pinned\":true,\"pinnedCount\":"))
            #expect(extra.status == 422 && (extra.json["field"] as? String ?? "").hasSuffix(".pinned"))
            // Nothing of any of them exists.
            #expect(try api.get("/v1/profiles/\(fresh)").status == 404)
            #expect((try api.get("/v1/profiles")["items"] as? [Any])?.count == 2)
            // Exports: an unknown profile is 404, an incognito one 422.
            #expect(try api.get("/v1/profiles/p0000000000000000/export").status == 404)
            let incognito = try api.post("/v1/profiles/\(seeded.profiles[0])/incognito", [:]).id
            #expect(try api.get("/v1/profiles/\(incognito)/export").status == 422)
        }
        // Larger than --max-import-bytes: 413 before the body is read.
        try await withApplication(dataDirectory: data, { $0.maxImportBytes = 1 << 20 }) { app in
            let reply = try APIClient(app).send("POST", "/v1/profiles/import", raw: [UInt8](repeating: 0x20, count: (1 << 20) + 1))
            #expect(reply.status == 413)
        }
    }

    @Test func anImportedProfileIsAnnouncedAndLoadsOnFirstUse() async throws {
        let data = WorkingSetTests.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let seeded = try await WorkingSetTests.seed(data)
        let document: [UInt8] = try await withApplication(dataDirectory: data) { app in try Self.export(try APIClient(app), seeded.profiles[0]) }
        try await withApplication { app in
            let api = try APIClient(app)
            let directory = try SSEClient(app, "/v1/events")
            defer { directory.close() }
            _ = try directory.until("profiles.populate")
            #expect(try api.send("POST", "/v1/profiles/import", raw: document).status == 201)
            let added = try directory.until("profiles.add")
            #expect(added.last?.json["profile"].map { ($0 as? [String: Any])?["id"] as? String } == seeded.profiles[0])
            #expect(app.service.heldProfiles.isEmpty, "stored, not loaded")
            #expect(try api.get("/v1/tabs/\(seeded.tabs[0])/history").body == seeded.answers["/v1/tabs/\(seeded.tabs[0])/history"])
            #expect(app.service.heldProfiles.count == 1)
        }
    }
}
