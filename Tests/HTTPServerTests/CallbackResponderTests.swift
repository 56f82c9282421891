import Foundation
import HTTPServer
import MiniHTTPClient
import Testing

/// A `callback` responder answers from another thread, without a task: the connection waits, then
/// gets the answer (or the error's problem); the server-wide response headers go on every answer.
@Suite struct CallbackResponderTests {
    @Test func anAnswerFromAnotherThreadCompletesTheConnection() async throws {
        let router = testRouter { router in
            router.add(
                .get, "/later/{n}",
                .callback { request, respond in
                    let n = request.parameter("n")
                    Thread {
                        usleep(20_000)
                        if n == "bad" {
                            respond(.failure(HTTPError(409, kind: "later-conflict", title: "Conflict", detail: "on purpose")))
                        } else {
                            var answer = HTTPResponse.text("later \(n)")
                            answer.headers.set("X-Served-By", "the owner")
                            respond(.success(answer))
                        }
                    }.start()
                })
        }
        try await withServer({ $0.responseHeaders.set("X-Served-By", "this instance") }, router: router) { server, _ in
            let client = try connect(server)
            for n in 0..<3 {
                let answer = try client.request("GET", "/later/\(n)")
                #expect(answer.status == 200 && answer.text == "later \(n)")
                #expect(answer.header("x-served-by") == "the owner", "an answer's own header is kept")
            }
            let failed = try client.request("GET", "/later/bad")
            #expect(failed.status == 409 && failed.header("content-type") == "application/problem+json")
            #expect(try client.request("GET", "/hello").header("x-served-by") == "this instance")
        }
    }
}
