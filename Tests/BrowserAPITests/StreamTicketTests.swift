import BrowserAccess
import BrowserServices
import HTTPServer
import TestSupport
import Testing

@testable import BrowserAPI

/// Stream tickets through the router: issued to a bearer-authenticated caller for one stream, with
/// the caller's scope; a ticket opens that stream once, within its lifetime, without a header.
@Suite(.offThePool) struct StreamTicketTests {
    static let admin = "admin-token-0123456789"
    let auth = [("Authorization", "Bearer \(Self.admin)")]

    private func api(lifetime: Duration = .seconds(60)) -> InProcessAPI {
        InProcessAPI(tokens: TokenStore(adminToken: Self.admin), tickets: StreamTicketStore(lifetime: lifetime))
    }

    private func setup(_ api: InProcessAPI) async -> (profile: String, window: String) {
        let profile = await api.send(.post, "/v1/profiles", body: #"{"name":"p"}"#, headers: auth).id
        let window = await api.send(.post, "/v1/browsers", body: #"{"profileId":"\#(profile)"}"#, headers: auth).id
        return (profile, window)
    }

    private func ticket(_ api: InProcessAPI, _ path: String, headers: [(String, String)]) async -> InProcessAPI.Answer {
        await api.send(.post, "/v1/stream-tickets", body: #"{"path":"\#(path)"}"#, headers: headers)
    }

    @Test func aTicketOpensItsStreamOnce() async throws {
        let api = api()
        let (profile, window) = await setup(api)
        #expect(await ticket(api, "/v1/browsers/\(window)/events", headers: []).status == 401, "asking needs a token")
        let issued = await ticket(api, "/v1/browsers/\(window)/events", headers: auth)
        #expect(issued.status == 201)
        let value = issued.json["ticket"] as? String ?? ""
        #expect(value.wholeMatch(of: /st_[0-9a-f]{64}/) != nil)
        #expect(issued.json["path"] as? String == "/v1/browsers/\(window)/events")
        #expect(issued.json["url"] as? String == "/v1/browsers/\(window)/events?ticket=\(value)")
        #expect(issued.header("Cache-Control") == "no-store")
        #expect(await api.send(.get, "/v1/browsers/\(window)/events").status == 401, "no token, no ticket")
        #expect(await api.send(.get, "/v1/browsers/\(window)/events?ticket=\(value)&topics=tabs").status == 200)
        #expect(await api.send(.get, "/v1/browsers/\(window)/events?ticket=\(value)").status == 401, "single use")
        // A profile's window-list stream, and a ticket used on another stream (which spends it).
        let list = await ticket(api, "/v1/events?profileId=\(profile)", headers: auth).json["ticket"] as? String ?? ""
        let other = await api.send(.post, "/v1/browsers", body: #"{"profileId":"\#(profile)"}"#, headers: auth).id
        #expect(await api.send(.get, "/v1/browsers/\(other)/events?ticket=\(list)").status == 401)
        #expect(await api.send(.get, "/v1/events?profileId=\(profile)&ticket=\(list)").status == 401)
        let fresh = await ticket(api, "/v1/events?profileId=\(profile)", headers: auth).json["ticket"] as? String ?? ""
        #expect(await api.send(.get, "/v1/events?profileId=\(profile)&ticket=\(fresh)").status == 200)
        // A ticket is no bearer token anywhere else.
        let stray = await ticket(api, "/v1/browsers/\(window)/events", headers: auth).json["ticket"] as? String ?? ""
        #expect(await api.send(.get, "/v1/browsers/\(window)?ticket=\(stray)").status == 401)
    }

    @Test func aMalformedTicketIs400EvenWhenNotNeeded() async {
        let api = InProcessAPI()
        let window = await api.window(await api.profile())
        #expect(await api.send(.get, "/v1/browsers/\(window)/events?ticket=%7B").status == 400)
        #expect(await api.send(.get, "/v1/events?ticket=st_abc").status == 400)
        #expect(await api.send(.get, "/v1/browsers/\(window)/events?ticket=st_\(String(repeating: "0", count: 64))").status == 200)
    }

    @Test func ticketsExpire() async throws {
        let api = api(lifetime: .milliseconds(50))
        let (_, window) = await setup(api)
        let value = await ticket(api, "/v1/browsers/\(window)/events", headers: auth).json["ticket"] as? String ?? ""
        try await Task.sleep(for: .milliseconds(120))
        #expect(await api.send(.get, "/v1/browsers/\(window)/events?ticket=\(value)").status == 401)
    }

    @Test func aProfileTokenGetsTicketsForItsOwnStreamsOnly() async throws {
        let api = api()
        let (mine, myWindow) = await setup(api)
        let (theirs, theirWindow) = await setup(api)
        let token = await api.send(.post, "/v1/profiles/\(mine)/tokens", headers: auth).json["token"] as? String ?? ""
        let bearer = [("Authorization", "Bearer \(token)")]
        #expect(await ticket(api, "/v1/browsers/\(theirWindow)/events", headers: bearer).status == 404)
        #expect(await ticket(api, "/v1/events?profileId=\(theirs)", headers: bearer).status == 404)
        let value = await ticket(api, "/v1/browsers/\(myWindow)/events", headers: bearer).json["ticket"] as? String ?? ""
        #expect(await api.send(.get, "/v1/browsers/\(myWindow)/events?ticket=\(value)").status == 200)
    }

    @Test(arguments: ["/v1/browsers/wnope/events", "/v1/events?profileId=pnope"])
    func unknownStreamsAre404(path: String) async {
        let api = api()
        _ = await setup(api)
        #expect(await ticket(api, path, headers: auth).status == 404)
    }

    @Test func theDirectoryStreamIsTheAdministrators() async throws {
        let api = api()
        let (profile, _) = await setup(api)
        let value = await ticket(api, "/v1/events", headers: auth).json["ticket"] as? String ?? ""
        #expect(await api.send(.get, "/v1/events?ticket=\(value)").status == 200)
        let token = await api.send(.post, "/v1/profiles/\(profile)/tokens", headers: auth).json["token"] as? String ?? ""
        let bearer = [("Authorization", "Bearer \(token)")]
        #expect(await ticket(api, "/v1/events", headers: bearer).status == 403)
        #expect(await api.send(.get, "/v1/events", headers: bearer).status == 403)
    }

    @Test(arguments: [
        "/v1/browsers", "/v1/event", "/v1/events?profileId=", "/v1/events?profileId=p1&topics=tabs", "/v1/browsers//events",
        "/v1/browsers/w1/events?topics=tabs", "/etc/passwd", "", "/v1/browsers/w1/events/x",
    ])
    func otherPathsAre422(path: String) async {
        let api = api()
        let answer = await ticket(api, path, headers: auth)
        #expect(answer.status == 422, "\(path)")
        #expect(answer.json["field"] as? String == "path")
    }
}
