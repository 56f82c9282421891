import Foundation
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

@testable import HTTPServer

/// Reads enclosed in one request (`application/http`): each answered through the router as if it had
/// come on its own, all in one answer, in order; who may send one, and what a malformed one gets.
@Suite(.offThePool) struct EnclosedPipelineTests {
    static let pipelinePath = "/pipeline"

    /// The test router, a pipeline route admitting requests that say `X-Peer: yes`, a failure
    /// responder under `/e` that echoes the decoded path and query, and a stream.
    static func router(maxRequests: Int = 8) -> Router {
        testRouter { router in
            router.add(
                .post, pipelinePath,
                .enclosing(EnclosedPipeline.Policy(maxRequests: maxRequests) { $0.headers["X-Peer"] == "yes" }))
            router.onFailure(under: "/e") { request, _ in
                let query = request.query.map { "[\($0.name)]=[\($0.value)]" }.joined(separator: "&")
                return .text("path=[\(request.path)] query=\(query) auth=\(request.headers["Authorization"] ?? "-")")
            }
            router.add(
                .get, "/started",
                .adaptive { _ in
                    .started { complete in
                        Thread {
                            Thread.sleep(forTimeInterval: 0.05)
                            complete(.text("started"))
                        }.start()
                    }
                })
            router.get("/stream") { _ in HTTPResponse(status: 200, body: .stream(StreamBody { $0.finish() })) }
        }
    }

    /// One answer read off a pipeline's answer body.
    struct Enclosed {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    /// Splits a pipeline's answer body into its answers (framed by `Content-Length`; `heads` have none).
    static func answers(in body: [UInt8], heads: Set<Int> = []) throws -> [Enclosed] {
        var answers: [Enclosed] = []
        var rest = body[...]
        while !rest.isEmpty {
            let text = String(decoding: rest, as: UTF8.self)
            guard let blank = text.range(of: "\r\n\r\n") else { throw CancellationError() }
            let head = text[..<blank.lowerBound].components(separatedBy: "\r\n")
            let status = Int(head[0].split(separator: " ")[1])!
            var headers: [String: String] = [:]
            for line in head.dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
            }
            let headLength = text[..<blank.upperBound].utf8.count
            let length = heads.contains(answers.count) ? 0 : Int(headers["content-length"] ?? "0")!
            let bodyBytes = rest.dropFirst(headLength).prefix(length)
            answers.append(Enclosed(status: status, headers: headers, body: String(decoding: bodyBytes, as: UTF8.self)))
            rest = rest.dropFirst(headLength + length)
        }
        return answers
    }

    static func pipeline(_ requests: [String]) -> [UInt8] {
        Array(requests.joined().utf8)
    }

    static func read(_ target: String, method: String = "GET", headers: [String] = []) -> String {
        "\(method) \(target) HTTP/1.1\r\n" + headers.map { "\($0)\r\n" }.joined() + "\r\n"
    }

    static let peer = [("X-Peer", "yes"), ("Content-Type", EnclosedPipeline.requestType)]

    @Test func eachReadIsAnsweredAsOnItsOwnInOrder() async throws {
        try await withServer(router: Self.router()) { server, _ in
            let client = try connect(server)
            let body = Self.pipeline([
                Self.read("/hello"), Self.read("/slow"), Self.read("/items/7?q=x"), Self.read("/hello", method: "HEAD"),
                Self.read("/nowhere"), Self.read("/fail"), Self.read("/started"), Self.read("/echo"),
            ])
            let answer = try client.request("POST", Self.pipelinePath, headers: Self.peer, body: body)
            #expect(answer.status == 200)
            #expect(answer.header("Content-Type") == EnclosedPipeline.responseType)
            let answers = try Self.answers(in: answer.body, heads: [3])
            #expect(answers.map(\.status) == [200, 200, 200, 200, 404, 409, 200, 405])
            #expect(answers.map(\.body).prefix(4) == ["hello", "slow", "item 7 q=x", ""])
            // A HEAD's answer says the GET's length, without the body.
            #expect(answers[3].headers["content-length"] == "5")
            #expect(answers[4].headers["content-type"] == "application/problem+json")
            #expect(answers[5].body.contains("on purpose"))
            #expect(answers[6].body == "started")
            #expect(answers[7].headers["allow"] != nil)
            // The connection goes on.
            #expect(try client.request("GET", "/hello").text == "hello")
        }
    }

    /// Targets decode as libmicrohttpd decodes a request's own: the same path and query, whether a
    /// read comes on its own or enclosed.
    @Test func targetsDecodeAsOnTheWire() async throws {
        let targets = [
            "/e/plain", "/e/a%20b", "/e/a+b", "/e/a%2Fb%3Fc", "/e/%zz%4", "/e/%", "/e/x?a=1&b=2", "/e/x?a+b=c+d%2B",
            "/e/x?a&&b=", "/e/x?=v&k", "/e/x?a=%00b", "/e/%C3%A9?q=%C3%A9", "/e/x?a=1=2", "/e/x?", "/e/x?&", "/e/x?a=%zz",
        ]
        try await withServer(router: Self.router(maxRequests: 64)) { server, _ in
            let client = try connect(server)
            let direct = try targets.map { try client.request("GET", $0, headers: [("Authorization", "Bearer t")]).text }
            let answer = try client.request(
                "POST", Self.pipelinePath, headers: Self.peer,
                body: Self.pipeline(targets.map { Self.read($0, headers: ["Authorization: Bearer t"]) }))
            let enclosed = try Self.answers(in: answer.body).map(\.body)
            for (index, target) in targets.enumerated() {
                #expect(enclosed[index] == direct[index], "\(target)")
            }
        }
    }

    @Test func onlyAdmittedRequestsOfTheRightTypeAreAnswered() async throws {
        try await withServer(router: Self.router()) { server, _ in
            let client = try connect(server)
            let body = Self.pipeline([Self.read("/hello")])
            let stranger = try client.request("POST", Self.pipelinePath, headers: [("Content-Type", EnclosedPipeline.requestType)], body: body)
            #expect(stranger.status == 403)
            #expect(stranger.header("Content-Type") == "application/problem+json")
            let json = try client.request("POST", Self.pipelinePath, headers: [("X-Peer", "yes"), ("Content-Type", "application/json")], body: body)
            #expect(json.status == 415)
            #expect(try client.request("GET", Self.pipelinePath).status == 405)
        }
    }

    @Test func aMalformedPipelineIsRefusedSayingWhereAndWhat() async throws {
        let cases: [(body: String, says: String)] = [
            ("", "encloses no request"),
            ("GET /hello HTTP/1.1\r\n", "1: its head does not end"),
            (Self.read("/hello") + Self.read("/echo", method: "POST"), "2: only reads"),
            (Self.read("/hello", headers: ["Content-Length: 3"]) + "abc", "1: an enclosed read carries no body"),
            ("GET /hello HTTP/1.0\r\n\r\n", "1: the request line"),
            ("GET hello HTTP/1.1\r\n\r\n", "1: the target must be a path"),
            (Self.read("/hello", headers: ["No colon here"]), "1: a header line"),
            (Self.read("/hello", headers: ["Bad Name: x"]), "1: a header line"),
            (Self.read("/e/%00"), "1: the path holds a NUL"),
            (String(repeating: Self.read("/hello"), count: 9), "at most 8"),
            ("GET /hello HTTP/1.1\n\n", "1: its head does not end"),
        ]
        try await withServer(router: Self.router()) { server, _ in
            let client = try connect(server)
            for (body, says) in cases {
                let answer = try client.request("POST", Self.pipelinePath, headers: Self.peer, body: Array(body.utf8))
                #expect(answer.status == 400, "\(body.debugDescription)")
                #expect(answer.text.contains("/problems/malformed-pipeline"), "\(body.debugDescription)")
                #expect(answer.text.contains(says), "\(body.debugDescription): \(answer.text)")
            }
        }
    }

    @Test func neitherAPipelineNorAStreamCanBeEnclosed() async throws {
        try await withServer(router: Self.router()) { server, _ in
            let client = try connect(server)
            let answer = try client.request(
                "POST", Self.pipelinePath, headers: Self.peer, body: Self.pipeline([Self.read("/stream"), Self.read(Self.pipelinePath)]))
            let answers = try Self.answers(in: answer.body)
            #expect(answers.map(\.status) == [400, 405])
            #expect(answers[0].body.contains("not-enclosable"))
        }
    }

    @Test func theServersOwnHeadersComeWithEachAnswer() async throws {
        try await withServer({ $0.responseHeaders = ["X-Instance": "i1"] }, router: Self.router()) { server, _ in
            let client = try connect(server)
            let answer = try client.request("POST", Self.pipelinePath, headers: Self.peer, body: Self.pipeline([Self.read("/hello"), Self.read("/slow")]))
            #expect(try Self.answers(in: answer.body).map { $0.headers["x-instance"] } == ["i1", "i1"])
        }
    }
}
