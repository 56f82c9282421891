import BrowserAccess
import BrowserModel
import BrowserServices
import Foundation
import HTTPServer

extension APIRoutes {
    func registerProfiles(in router: inout Router) {
        let leases = self.leases
        let service = self.service

        router.add(
            .post, "/v1/profiles",
            deferred { request in
                let body = try RequestBody(request, allowed: ["name"])
                let name = try body.requiredString("name", maxLength: 200)
                guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { throw APIProblem.invalidField("name", "must not be blank") }
                let profile = try await service.createProfile(name: name)
                return Self.json(APIEncoding.bytes { APIEncoding.write(profile, to: &$0) }, status: 201, location: "/v1/profiles/\(profile.id)")
            })

        if let storedProfiles {
            // Several instances: the stored profiles (each as its owner last saved it), with those held
            // here (and their off-the-record profiles) as they are now, and the off-the-record
            // profiles other instances hold (as they announced them: the database never has them).
            router.add(
                .get, "/v1/profiles",
                deferred { request in
                    let caller = Principal.current
                    let here = service.profiles()
                    var known = Set(here.map(\.id))
                    let elsewhere = service.directoryProfiles().filter { $0.incognito && !known.contains($0.id) }
                    known.formUnion(elsewhere.map(\.id))
                    var linked: [ProfileID: ProfileID] = [:]
                    for profile in elsewhere { if let parent = profile.parentID { linked[parent] = profile.id } }
                    let stored = try await storedProfiles().filter { !known.contains($0.id) }.map { profile in
                        var profile = profile
                        profile.offTheRecordID = profile.offTheRecordID ?? linked[profile.id]
                        return profile
                    }
                    let all = (here + elsewhere + stored)
                        .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
                    let visible = all.filter { profile in caller.reaches(profile.incognito ? profile.parentID : profile.id) }
                    let (items, next) = try Self.page(visible, id: \.id.rawValue, request: request)
                    return Self.json(APIEncoding.list(items, paged: true, nextCursor: next) { APIEncoding.write($0, to: &$1) })
                })
        } else {
            router.add(
                .get, "/v1/profiles",
                immediate { request in
                    // The directory: the profiles in memory and those stored but not loaded yet.
                    let caller = Principal.current
                    let visible = service.directoryProfiles().filter { profile in caller.reaches(profile.incognito ? profile.parentID : profile.id) }
                    let (items, next) = try Self.page(visible, id: \.id.rawValue, request: request)
                    return Self.json(APIEncoding.list(items, paged: true, nextCursor: next) { APIEncoding.write($0, to: &$1) })
                })
        }

        router.add(
            .get, "/v1/profiles/{profileId}",
            immediate { request in
                let id = request.parameter("profileId")
                guard let profile = service.profile(ProfileID(rawValue: id)) else { throw APIProblem.profileNotFound(id) }
                let bytes = APIEncoding.bytes { APIEncoding.write(profile, to: &$0) }
                // The renderer that holds it, while one does (automation clients attach through it).
                guard let lease = leases.lease(of: profile.id) else { return Self.json(bytes) }
                let renderer = APIEncoding.bytes { json in
                    json.beginObject()
                    json.member("name", lease.name)
                    json.member("devtoolsUrl", lease.devtoolsURL)
                    json.member("expiresAt", JSONText.timestamp(lease.expiresAt))
                    json.endObject()
                }
                return Self.json(Self.appending("renderer", renderer, to: bytes))
            })

        let tokens = self.tokens
        router.add(
            .delete, "/v1/profiles/{profileId}",
            deferred { request in
                let id = ProfileID(rawValue: request.parameter("profileId"))
                switch Principal.current {
                case .profile(let mine) where mine == id:
                    throw HTTPError(403, kind: "forbidden", title: "Forbidden", detail: "Only the administrator may delete a regular profile.")
                case .renderer:
                    throw HTTPError(403, kind: "forbidden", title: "Forbidden", detail: "Only the administrator may delete a regular profile.")
                default: break
                }
                try await service.deleteProfile(id)
                tokens.revokeAll(of: id)
                // Its renderer's lease goes with it (a directory must not answer for a profile that is gone).
                leases.remove(id)
                return .noContent
            })

        router.add(
            .post, "/v1/profiles/{profileId}/incognito",
            deferred { request in
                try Self.noParameters(request)
                let (profile, created) = try await service.offTheRecordProfile(of: ProfileID(rawValue: request.parameter("profileId")))
                return Self.json(
                    APIEncoding.bytes { APIEncoding.write(profile, to: &$0) }, status: created ? 201 : 200,
                    location: "/v1/profiles/\(profile.id)")
            })

        router.add(
            .get, "/v1/profiles/{profileId}/recently-closed",
            deferred { request in
                let entries = try await service.recentlyClosed(profile: ProfileID(rawValue: request.parameter("profileId")))
                return Self.json(APIEncoding.list(entries) { APIEncoding.closedEntry($0, to: &$1) })
            })

        router.add(
            .post, "/v1/profiles/{profileId}/close-all",
            deferred { request in
                let (policy, undoSeconds) = try Self.closeAllOptions(request)
                let closing = try await service.closeAllTabs(
                    profile: ProfileID(rawValue: request.parameter("profileId")), window: nil,
                    policy: policy, undoSeconds: undoSeconds)
                return Self.json(APIEncoding.closing(closing))
            })

        // Undo or confirm a pending close-all (`TabsCloser::UndoCloseTabs`, `ConfirmDeletion`).
        for (action, perform) in [
            ("undo", service.undoCloseAll), ("confirm", service.confirmCloseAll),
        ] as [(String, @Sendable (ProfileID, ClosedTabID) async throws -> TabsClosingSnapshot)] {
            router.add(
                .post, "/v1/profiles/{profileId}/closings/{closingId}/\(action)",
                deferred { request in
                    try Self.noParameters(request)
                    let closing = try await perform(
                        ProfileID(rawValue: request.parameter("profileId")), ClosedTabID(rawValue: request.parameter("closingId")))
                    return Self.json(APIEncoding.closing(closing))
                })
        }

        router.add(
            .post, "/v1/profiles/{profileId}/recently-closed/{entryId}/restore",
            deferred { request in
                let activate = try RequestBody(request, allowed: ["activate"]).bool("activate") ?? true
                let (tab, version) = try await service.restoreClosedTab(
                    profile: ProfileID(rawValue: request.parameter("profileId")), entry: ClosedTabID(rawValue: request.parameter("entryId")),
                    activate: activate)
                return Self.tabResponse(tab, version: version, status: 201)
            })
    }

    /// A close-all's options: `policy` (`allTabs`, the default, or `regularTabs`) and `undoSeconds`
    /// (0…600, default 10: how long it stays undoable before it is confirmed by itself).
    static func closeAllOptions(_ request: HTTPRequest) throws -> (TabsClosePolicy, Int) {
        let body = try RequestBody(request, allowed: ["policy", "undoSeconds"])
        var policy = TabsClosePolicy.allTabs
        if let name = try body.string("policy", maxLength: 32) {
            guard let given = TabsClosePolicy(rawValue: name) else {
                throw APIProblem.invalidField("policy", "must be allTabs or regularTabs")
            }
            policy = given
        }
        return (policy, try body.int("undoSeconds", range: 0...600) ?? 10)
    }
}
