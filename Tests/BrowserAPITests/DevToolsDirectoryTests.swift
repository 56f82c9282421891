import BrowserAccess
import BrowserModel
import BrowserServices
import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import BrowserAPI

/// Renderer leases and each profile's DevTools directory through the router: who may put and read a
/// lease, what a lease must hold, Chromium's /json/* answers, and the single-use tickets the renderer's
/// gateway redeems.
@Suite(.offThePool) struct DevToolsDirectoryTests {
    static let admin = "admin-token-0123456789"
    let auth = [("Authorization", "Bearer \(Self.admin)")]
    static let key = String(repeating: "k", count: 40)

    struct Setup {
        let api: InProcessAPI
        let profile: String
        let tab: String
        let token: String
        let tokenID: String
        let otherToken: String
    }

    private func setup(leases: RendererLeases = RendererLeases()) async -> Setup {
        let api = InProcessAPI(tokens: TokenStore(adminToken: Self.admin), leases: leases)
        let profile = await api.send(.post, "/v1/profiles", body: #"{"name":"p"}"#, headers: auth).id
        let other = await api.send(.post, "/v1/profiles", body: #"{"name":"q"}"#, headers: auth).id
        let window = await api.send(.post, "/v1/browsers", body: #"{"profileId":"\#(profile)"}"#, headers: auth).id
        let tab = await api.send(.post, "/v1/browsers/\(window)/tabs", body: #"{"url":"https://a.example/"}"#, headers: auth).id
        let issued = await api.send(.post, "/v1/profiles/\(profile)/tokens", headers: auth).json
        let token = issued["token"] as? String ?? ""
        let otherToken = await api.send(.post, "/v1/profiles/\(other)/tokens", headers: auth).json["token"] as? String ?? ""
        return Setup(api: api, profile: profile, tab: tab, token: token, tokenID: issued["id"] as? String ?? "", otherToken: otherToken)
    }

    static func announcement(tab: String, url: String = "ws://127.0.0.1:9222", key: String = key, extra: String = "") -> String {
        #"{"name":"r1","devtoolsUrl":"\#(url)","controlKey":"\#(key)","browser":{"product":"Chrome/156","protocolVersion":"1.3","userAgent":"UA","v8Version":"15","webkitVersion":"@1"},"pages":[{"tabId":"\#(tab)","targetId":"T1"}]\#(extra)}"#
    }

    @Test func aLeaseIsPutReadAndGivenUp() async throws {
        let s = await setup()
        let bearer = [("Authorization", "Bearer \(s.token)")]
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/renderer", headers: bearer).status == 404)
        // A lease names the gateway browserd calls: the operator's renderers (the admin token) only.
        #expect(await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: Self.announcement(tab: s.tab), headers: bearer).status == 403)
        let put = await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: Self.announcement(tab: s.tab), headers: auth)
        #expect(put.status == 200)
        #expect(put.json["leaseSeconds"] as? Int == 15)
        #expect(put.json["controlKey"] == nil, "the key is never answered")
        let read = await s.api.send(.get, "/v1/profiles/\(s.profile)/renderer", headers: bearer)
        #expect(read.json["devtoolsUrl"] as? String == "ws://127.0.0.1:9222")
        #expect(!String(decoding: read.body, as: UTF8.self).contains(Self.key))
        // The mapping is visible on the tab and the renderer on the profile.
        #expect(await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: bearer).json["targetId"] as? String == "T1")
        #expect((await s.api.send(.get, "/v1/profiles/\(s.profile)", headers: bearer).json["renderer"] as? [String: Any])?["name"] as? String == "r1")
        // Another profile's token reaches none of it.
        let other = [("Authorization", "Bearer \(s.otherToken)")]
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/renderer", headers: other).status == 404)
        #expect(await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: Self.announcement(tab: s.tab), headers: other).status == 403)
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/renderer").status == 401)
        #expect(await s.api.send(.delete, "/v1/profiles/\(s.profile)/renderer", headers: bearer).status == 403)
        #expect(await s.api.send(.post, "/v1/profiles/\(s.profile)/devtools/redemptions", body: #"{"ticket":"st_x"}"#, headers: bearer).status == 403)
        #expect(await s.api.send(.delete, "/v1/profiles/\(s.profile)/renderer", headers: auth).status == 204)
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/renderer", headers: bearer).status == 404)
        #expect(await s.api.send(.get, "/v1/tabs/\(s.tab)", headers: bearer).json["targetId"] == nil)
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json/version", headers: bearer).status == 503)
    }

    @Test func badAnnouncementsAre422NamingTheMember() async {
        let s = await setup()
        let cases: [(String, String)] = [
            (Self.announcement(tab: s.tab, url: "http://127.0.0.1:9222"), "devtoolsUrl"),
            (Self.announcement(tab: s.tab, url: "ws://127.0.0.1:9222/"), "devtoolsUrl"),
            (Self.announcement(tab: s.tab, url: "ws://h/?x=1"), "devtoolsUrl"),
            (Self.announcement(tab: s.tab, key: "short"), "controlKey"),
            (Self.announcement(tab: s.tab, key: String(repeating: "k", count: 39) + "!"), "controlKey"),
            (Self.announcement(tab: s.tab, extra: #","more":1"#), "more"),
            (Self.announcement(tab: s.tab).replacingOccurrences(of: #""targetId":"T1""#, with: #""targetId":"T 1""#), "pages[0].targetId"),
            (Self.announcement(tab: s.tab).replacingOccurrences(of: #""v8Version":"15","#, with: ""), "browser.v8Version"),
            (Self.announcement(tab: s.tab).replacingOccurrences(of: #""name":"r1""#, with: #""name":"""#), "name"),
        ]
        for (body, field) in cases {
            let answer = await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: body, headers: auth)
            #expect(answer.status == 422, "\(field)")
            #expect(answer.json["field"] as? String == field, "\(String(decoding: answer.body, as: UTF8.self))")
        }
        let many = (0..<4097).map { #"{"tabId":"t\#($0)","targetId":"T"}"# }.joined(separator: ",")
        let tooMany = Self.announcement(tab: s.tab).replacingOccurrences(of: #"[{"tabId":"\#(s.tab)","targetId":"T1"}]"#, with: "[\(many)]")
        #expect(await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: tooMany, headers: auth).status == 422)
        #expect(await s.api.send(.put, "/v1/profiles/p0000000000000000/renderer", body: Self.announcement(tab: s.tab), headers: auth).status == 404)
    }

    @Test func theDirectoryAnswersAsChromiumsAndItsTicketsOpenOnce() async throws {
        let s = await setup()
        let bearer = [("Authorization", "Bearer \(s.token)")]
        for path in ["/json/version", "/json/version/", "/json/list", "/json/list/", "/json", "/json/"] {
            let none = await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools\(path)", headers: bearer)
            #expect(none.status == 503, "\(path)")
            #expect(none.header("Retry-After") == "5")
            #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools\(path)").status == 401)
            #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools\(path)", headers: [("Authorization", "Bearer \(s.otherToken)")]).status == 404)
        }
        _ = await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: Self.announcement(tab: s.tab), headers: auth)
        let version = await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json/version/", headers: bearer)
        #expect(version.json["Browser"] as? String == "Chrome/156")
        #expect(version.json["Protocol-Version"] as? String == "1.3")
        let socket = version.json["webSocketDebuggerUrl"] as? String ?? ""
        #expect(socket.hasPrefix("ws://127.0.0.1:9222/devtools/browser/\(s.profile)?ticket=st_"))
        let ticket = String(socket.split(separator: "=").last ?? "")
        let list = try JSONSerialization.jsonObject(with: Data(await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json", headers: bearer).body))
        let entries = list as? [[String: Any]] ?? []
        #expect(entries.count == 1)
        #expect(entries.first?["id"] as? String == "T1")
        #expect(entries.first?["browserdTabId"] as? String == s.tab)
        #expect(entries.first?["url"] as? String == "https://a.example/")
        // The gateway redeems it once, for this profile only; a stream will not take it either.
        let redeem = { (profile: String, ticket: String) in
            await s.api.send(.post, "/v1/profiles/\(profile)/devtools/redemptions", body: #"{"ticket":"\#(ticket)"}"#, headers: self.auth)
        }
        #expect(await redeem(s.profile, ticket).json["profileId"] as? String == s.profile)
        #expect(await redeem(s.profile, ticket).status == 404, "single use")
        let another =
            (await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json/version", headers: bearer).json["webSocketDebuggerUrl"] as? String ?? "")
            .split(separator: "=").last.map(String.init) ?? ""
        let q = await s.api.send(.post, "/v1/profiles", body: #"{"name":"z"}"#, headers: auth).id
        #expect(await redeem(q, another).status == 404, "another profile's redemption uses it up")
        #expect(await redeem(s.profile, another).status == 404)
        let stream =
            (await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json/version", headers: bearer).json["webSocketDebuggerUrl"] as? String ?? "")
            .split(separator: "=").last.map(String.init) ?? ""
        #expect(await s.api.send(.get, "/v1/events?profileId=\(s.profile)&ticket=\(stream)").status == 401)
        // A ticket of a token revoked since opens nothing.
        let revoked =
            (await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json/version", headers: bearer).json["webSocketDebuggerUrl"] as? String ?? "")
            .split(separator: "=").last.map(String.init) ?? ""
        #expect(await s.api.send(.delete, "/v1/profiles/\(s.profile)/tokens/\(s.tokenID)", headers: auth).status == 204)
        #expect(await redeem(s.profile, revoked).status == 404)
    }

    /// A HEAD of the directory answers as its GET does but takes no ticket (the caller's bound of unused
    /// tickets is not spent by probes); a deleted profile's lease goes with it.
    @Test func aHeadTakesNoTicketAndADeletedProfileTakesItsLease() async throws {
        let leases = RendererLeases()
        let s = await setup(leases: leases)
        _ = await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: Self.announcement(tab: s.tab), headers: auth)
        let bearer = [("Authorization", "Bearer \(s.token)")]
        for _ in 0...StreamTicketStore.defaultPerPrincipalLimit {
            #expect(await s.api.send(.head, "/v1/profiles/\(s.profile)/devtools/json/version", headers: bearer).status == 200)
        }
        // Had each HEAD taken one, the bound of unused tickets would refuse this GET.
        let url = await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json/version", headers: bearer).json["webSocketDebuggerUrl"] as? String
        #expect(url?.contains("?ticket=st_") == true)
        #expect(await s.api.send(.delete, "/v1/profiles/\(s.profile)", headers: auth).status == 204)
        #expect(leases.lease(of: ProfileID(rawValue: s.profile)) == nil)
    }

    @Test func aLeaseRunsOut() async throws {
        let clock = TestClock()
        let s = await setup(leases: RendererLeases(now: clock.read))
        _ = await s.api.send(.put, "/v1/profiles/\(s.profile)/renderer", body: Self.announcement(tab: s.tab), headers: auth)
        clock.advance(by: .seconds(14))
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json/list", headers: auth).status == 200)
        clock.advance(by: .seconds(2))
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/devtools/json/list", headers: auth).status == 503)
        #expect(await s.api.send(.get, "/v1/profiles/\(s.profile)/renderer", headers: auth).status == 404)
    }
}
