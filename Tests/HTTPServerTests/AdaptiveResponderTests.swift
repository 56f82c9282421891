import Foundation
import HTTPServer
import MiniHTTPClient
import Synchronization
import TestSupport
import Testing

/// An adaptive handler answers at once, in a task, or through a completion called from any thread;
/// keep-alive holds across all three, and a throw is a problem like any handler's.
@Suite(.offThePool) struct AdaptiveResponderTests {
    static func router() -> Router {
        var router = Router()
        router.add(.get, "/now", .adaptive { _ in .answer(.text("now")) })
        router.add(
            .get, "/later",
            .adaptive { _ in
                .later {
                    try await Task.sleep(for: .milliseconds(5))
                    return .text("later")
                }
            })
        router.add(
            .get, "/started/{how}",
            .adaptive { request in
                let how = request.pathParameters["how"] ?? ""
                return .started { complete in
                    if how == "inline" {
                        complete(.text("inline"))  // before `start` even returns
                    } else {
                        Thread {
                            usleep(5_000)
                            complete(.text("thread"))
                        }.start()
                    }
                }
            })
        router.add(.get, "/refused", .adaptive { _ in throw HTTPError(409, kind: "conflict-test", title: "Conflict", detail: "on purpose") })
        return router
    }

    @Test func everyOutcomeAnswersOnOneKeptConnection() async throws {
        try await withServer(router: Self.router()) { server, observer in
            let client = try connect(server)
            for _ in 0..<20 {
                for (path, text) in [("/now", "now"), ("/later", "later"), ("/started/inline", "inline"), ("/started/thread", "thread")] {
                    let answer = try client.request("GET", path)
                    #expect(answer.status == 200 && answer.text == text, "\(path)")
                }
            }
            let refused = try client.request("GET", "/refused")
            #expect(refused.status == 409 && refused.header("content-type") == "application/problem+json")
            #expect(observer.connectionsOpened.load(ordering: .relaxed) == 1)
            // A request leaves the count once libmicrohttpd has sent its answer (just after the client read it).
            #expect(waitUntil { server.inFlightRequests == 0 })
        }
    }
}
