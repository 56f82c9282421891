import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Test pages on loopback (python3's http.server, the standard library only): links, a late title, a
/// favicon, a server redirect, pushState, a popup and window.close().
final class PageServer: Sendable {
    let port: Int
    /// Spawned without Foundation's `Process` (TestSupport's `ChildProcess` says why).
    private let process: ChildProcess
    var origin: String { "http://127.0.0.1:\(port)" }

    static let script = #"""
        import http.server, sys

        PAGES = {
            "/a.html": "<!doctype html><title>Page A</title><link rel=icon href=/icon.png><a id=l href=/b.html>to b</a>",
            "/b.html": "<!doctype html><title>B early</title><script>setTimeout(() => document.title = 'B late', 300)</script>",
            "/c.html": "<!doctype html><title>Page C</title>",
            "/push.html": "<!doctype html><title>Push</title><script>addEventListener('load', () => setTimeout(() => history.pushState({}, '', '/push.html#pushed'), 100))</script>",
            "/opener.html": "<!doctype html><title>Opener</title><a id=p href=/popup.html target=_blank>popup</a>",
            "/popup.html": "<!doctype html><title>Popup</title>",
            "/closes.html": "<!doctype html><title>Closes</title>",
        }

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?")[0]
                if path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", "/c.html?from=redirect")
                    self.end_headers()
                    return
                if path == "/icon.png":
                    body = b"\x89PNG\r\n\x1a\n"
                    kind = "image/png"
                elif path in PAGES:
                    body = PAGES[path].encode()
                    kind = "text/html; charset=utf-8"
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    init() throws {
        let printed = CollectedOutput()
        process = try ChildProcess(
            executable: "/usr/bin/env", arguments: ["python3", "-c", Self.script], environment: ProcessInfo.processInfo.environment,
            output: .pipe { printed.append($0) })
        // Its first line is its port.
        let deadline = ContinuousClock.now + .seconds(10)
        var line: String?
        while line == nil, process.isRunning, ContinuousClock.now < deadline {
            line = printed.firstLine
            if line == nil { usleep(10_000) }
        }
        guard let line, let port = Int(line.trimmingCharacters(in: .whitespaces)) else {
            process.signal(SIGKILL)
            throw Failure("the page server did not start")
        }
        self.port = port
    }

    func url(_ path: String) -> String { origin + path }

    deinit {
        // SIGKILL: a test process may pass SIGTERM on as ignored, and python then never ends.
        if process.isRunning { process.signal(SIGKILL) }
        process.waitUntilExit()
    }
}
