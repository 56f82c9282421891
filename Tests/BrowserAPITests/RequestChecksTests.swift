import HTTPServer
import TestSupport
import Testing

@testable import BrowserAPI

/// The checks every request goes through before the model sees it: the body (media type, JSON,
/// members, types, ranges), `If-Match` and list paging. Called directly, and in process through the router.
@Suite(.computing) struct RequestChecksTests {
    private func request(
        _ body: String, contentType: String? = "application/json", ifMatch: String? = nil,
        query: [(name: String, value: String)] = []
    ) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let contentType { headers.set("Content-Type", contentType) }
        if let ifMatch { headers.set("If-Match", ifMatch) }
        return HTTPRequest(method: .post, path: "/x", query: query, headers: headers, body: Array(body.utf8))
    }

    private func status(_ body: () throws -> Void) -> Int? {
        do {
            try body()
            return nil
        } catch let error as HTTPError { return error.problem.status } catch { return -1 }
    }

    private func field(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as HTTPError { return error.problem.extensions["field"] } catch { return nil }
    }

    @Test func bodyMediaTypeAndShape() throws {
        #expect(status { _ = try RequestBody(request(""), allowed: []) } == nil, "an empty body is {}")
        #expect(status { _ = try RequestBody(request("{}", contentType: "application/merge-patch+json"), allowed: []) } == nil)
        #expect(status { _ = try RequestBody(request("{}", contentType: "text/plain"), allowed: []) } == 415)
        #expect(status { _ = try RequestBody(request("{}", contentType: nil), allowed: []) } == 415)
        #expect(status { _ = try RequestBody(request("{"), allowed: []) } == 400)
        #expect(status { _ = try RequestBody(request("[]"), allowed: []) } == 400)
        #expect(status { _ = try RequestBody(request(#"{"nope":1}"#), allowed: ["url"]) } == 422)
        #expect(field { _ = try RequestBody(request(#"{"nope":1}"#), allowed: ["url"]) } == "nope")
    }

    @Test(arguments: [
        ("application/json", true), ("Application/JSON", true), ("application/json; charset=utf-8", true),
        ("  application/json  ;charset=UTF-8", true), ("\tapplication/json", true), ("application/merge-patch+json", true),
        ("application/vnd.x+JSON", true), ("application/+json", false), ("application/jsonx", false),
        ("application/xjson", false), ("text/json", false), ("application/", false), ("json", false), ("", false),
        ("application/ json", false), ("application/json-seq", false),
    ])
    func jsonMediaTypes(contentType: String, isJSON: Bool) {
        #expect(RequestBody.isJSON(contentType) == isJSON, "\(contentType)")
    }

    @Test func membersAreTypedAndBounded() throws {
        let body = try RequestBody(
            request(#"{"s":"abc","i":3,"d":0.5,"b":true,"n":null,"l":["x","y"],"f":1.5,"big":1e300}"#),
            allowed: ["s", "i", "d", "b", "n", "l", "f", "big"])
        #expect(try body.string("s") == "abc")
        #expect(try body.int("i", range: 0...10) == 3)
        #expect(try body.double("d", range: 0...1) == 0.5)
        #expect(try body.bool("b") == true)
        #expect(try body.strings("l") == ["x", "y"])
        #expect(try body.string("missing") == nil)
        #expect(body.isNull("n") && body.has("n") && !body.has("missing"))
        #expect(status { _ = try body.string("missing", required: true) } == 422)
        #expect(status { _ = try body.string("s", maxLength: 2) } == 422)
        #expect(status { _ = try body.string("i") } == 422)
        #expect(status { _ = try body.string("n") } == 422, "null is not a string")
        #expect(status { _ = try body.int("i", range: 4...10) } == 422)
        #expect(status { _ = try body.int("f", range: 0...10) } == 422, "1.5 is not an integer")
        #expect(status { _ = try body.int("big", range: 0...Int.max) } == 422)
        #expect(status { _ = try body.double("d", range: 0.6...1) } == 422)
        #expect(status { _ = try body.bool("s") } == 422)
        #expect(status { _ = try body.strings("s") } == 422)
        #expect(status { _ = try body.strings("l", maxCount: 1) } == 422)
        #expect(field { _ = try body.int("i", range: 4...10) } == "i")
    }

    @Test func ifMatchParsing() throws {
        #expect(try APIRoutes.ifMatch(request("")) == nil)
        #expect(try APIRoutes.ifMatch(request("", ifMatch: "*")) == nil)
        #expect(try APIRoutes.ifMatch(request("", ifMatch: #""v12""#)) == 12)
        #expect(try APIRoutes.ifMatch(request("", ifMatch: #""x", "v7""#)) == 7)
        #expect(try APIRoutes.ifMatch(request("", ifMatch: #"W/"v7""#)) == -1, "a weak tag never matches (strong comparison)")
        #expect(try APIRoutes.ifMatch(request("", ifMatch: #""other""#)) == -1)
        for bad in ["v12", #""v12"x"#, #""v12", x"#, #"""#, "**"] {
            #expect(status { _ = try APIRoutes.ifMatch(request("", ifMatch: bad)) } == 400, "\(bad)")
        }
    }

    @Test func paging() throws {
        let items = (0..<250).map { "i\($0)" }
        let first = try APIRoutes.page(items, id: { $0 }, request: request(""))
        #expect(first.items.count == 100 && first.next == "i99")
        let second = try APIRoutes.page(items, id: { $0 }, request: request("", query: [("cursor", "i99"), ("limit", "200")]))
        #expect(second.items.first == "i100" && second.items.count == 150 && second.next == nil)
        for (name, value) in [("limit", "0"), ("limit", "1001"), ("limit", "x"), ("cursor", "gone")] {
            #expect(status { _ = try APIRoutes.page(items, id: { $0 }, request: request("", query: [(name, value)])) } == 400, "\(name)=\(value)")
        }
    }
}

/// The same checks as clients meet them: through the router, in process.
@Suite(.computing) struct RouterInProcessTests {
    @Test func bodiesHeadersAndPagingThroughTheRouter() async throws {
        let api = InProcessAPI()
        let window = await api.window(await api.profile())
        let tab = await api.tab(window)
        let created = await api.send(.get, "/v1/browsers/\(window)")
        let etag = try #require(created.header("ETag"))
        #expect(await api.send(.post, "/v1/browsers/\(window)/tabs", body: "{").status == 400)
        #expect(await api.send(.post, "/v1/browsers/\(window)/tabs", body: #"{"url":"https://b.example/"}"#, contentType: "text/plain").status == 415)
        let unknown = await api.send(.post, "/v1/browsers/\(window)/tabs", body: #"{"url":"https://b.example/","colour":1}"#)
        #expect(unknown.status == 422 && unknown.json["field"] as? String == "colour")
        #expect(await api.send(.patch, "/v1/tabs/\(tab)", body: #"{"progress":2}"#).status == 422)
        // If-Match: a stale version 412, a malformed header 400, the current version and * pass.
        #expect(await api.send(.post, "/v1/tabs/\(tab)/pin", headers: [("If-Match", #""v1""#)]).status == 412)
        #expect(await api.send(.post, "/v1/tabs/\(tab)/pin", headers: [("If-Match", "v1")]).status == 400)
        let pinned = await api.send(.post, "/v1/tabs/\(tab)/pin", headers: [("If-Match", etag)])
        #expect(pinned.status == 200 && pinned.header("ETag") != etag)
        #expect(await api.send(.post, "/v1/tabs/\(tab)/unpin", headers: [("If-Match", "*")]).status == 200)
        // Paging of a list and of the action log.
        for i in 0..<3 {
            _ = await api.profile()
            _ = i
        }
        let page = await api.send(.get, "/v1/profiles?limit=2")
        #expect((page.json["items"] as? [Any])?.count == 2 && page.json["nextCursor"] is String)
        #expect(await api.send(.get, "/v1/profiles?limit=0").status == 400)
        #expect(await api.send(.get, "/v1/browsers/\(window)/actions?limit=1001").status == 400)
        #expect(await api.send(.get, "/v1/browsers/\(window)/actions?after=-1").status == 400)
        let actions = await api.send(.get, "/v1/browsers/\(window)/actions?after=1&limit=1")
        #expect((actions.json["items"] as? [[String: Any]])?.first?["seq"] as? Int == 2)
        // Unknown paths and methods.
        #expect(await api.send(.get, "/v1/nope").status == 404)
        let wrong = await api.send(.put, "/v1/tabs/\(tab)")
        #expect(wrong.status == 405 && wrong.header("Allow")?.contains("PATCH") == true)
    }
}
