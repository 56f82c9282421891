import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Test pages on loopback (python3's http.server, the standard library only): links, a late title, a
/// favicon, a server redirect, pushState, a popup and window.close(), no content, a download, a slow
/// answer, and an iframe.
final class PageServer: Sendable {
    let port: Int
    /// Spawned without Foundation's `Process` (TestSupport's `ChildProcess` says why).
    private let process: ChildProcess
    var origin: String { "http://127.0.0.1:\(port)" }

    static let script = #"""
        import base64, hashlib, http.server, sys, time

        # A worker script (dedicated, shared or service) and a frame try each URL they are given.
        ATTEMPT = ("async function attempt(urls) { const r = []; for (const u of urls) {"
            " try { await fetch(u, {mode: 'no-cors', cache: 'no-store'}); r.push('reached'); } catch (e) { r.push('refused'); } } return r; }")
        WORKER = ATTEMPT + """
        if (typeof ServiceWorkerGlobalScope !== 'undefined' && self instanceof ServiceWorkerGlobalScope) {
          self.addEventListener('install', () => self.skipWaiting());
          self.addEventListener('activate', e => e.waitUntil(self.clients.claim()));
          self.addEventListener('message', e => e.waitUntil(attempt(e.data).then(r => e.source.postMessage(r))));
        } else if (typeof SharedWorkerGlobalScope !== 'undefined' && self instanceof SharedWorkerGlobalScope) {
          self.onconnect = e => { const port = e.ports[0]; port.onmessage = m => attempt(m.data).then(r => port.postMessage(r)); };
        } else {
          self.onmessage = m => attempt(m.data).then(r => postMessage(r));
        }
        """

        PAGES = {
            "/a.html": "<!doctype html><title>Page A</title><link rel=icon href=/icon.png><a id=l href=/b.html>to b</a>",
            "/b.html": "<!doctype html><title>B early</title><script>setTimeout(() => document.title = 'B late', 300)</script>",
            "/c.html": "<!doctype html><title>Page C</title>",
            "/push.html": "<!doctype html><title>Push</title><script>addEventListener('load', () => setTimeout(() => history.pushState({}, '', '/push.html#pushed'), 100))</script>",
            "/opener.html": "<!doctype html><title>Opener</title><a id=p href=/popup.html target=_blank>popup</a>",
            "/popup.html": "<!doctype html><title>Popup</title>",
            "/closes.html": "<!doctype html><title>Closes</title>",
            # Hostile pages (RendererTests+Hostile.swift).
            "/fence.html": "<!doctype html><title>Fence</title><body>",
            "/frame.html": "<!doctype html><title>Frame</title><script>" + ATTEMPT
                + "attempt(JSON.parse(decodeURIComponent(location.hash.slice(1)))).then(r => parent.postMessage(r, '*'))</script>",
            "/storm.html": "<!doctype html><title>Storm</title><script>addEventListener('load', () => setTimeout(() => {"
                + " window.stormStarted = Date.now(); for (let i = 0; i < 2000; i++) history.pushState({}, '', '/storm.html#' + i);"
                + " window.stormEnded = Date.now(); document.title = 'Storm done'; }, 50))</script>",
            "/endless-storm.html": "<!doctype html><title>Endless</title><script>let i = 0;"
                + " setInterval(() => { for (let j = 0; j < 50; j++) history.pushState({}, '', '/endless-storm.html#' + i++);"
                + " document.title = 'Endless ' + i; }, 10)</script>",
            "/long-title.html": "<!doctype html><title>" + "L" * 3000 + "</title>",
            # Navigations that never commit, a slow one, and frames (RendererTests+History.swift).
            "/frames.html": "<!doctype html><title>Frames</title><iframe id=f src=/inner1.html></iframe>",
            "/inner1.html": "<!doctype html><title>Inner 1</title><a id=l href=/inner2.html>next</a>",
            "/inner2.html": "<!doctype html><title>Inner 2</title>",
            "/big-icon.html": "<!doctype html><title>Big icon</title><link rel=icon href='data:image/png;base64," + "A" * 1500000 + "'>",
        }

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?")[0]
                if path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", "/c.html?from=redirect")
                    self.end_headers()
                    return
                if path == "/204":
                    self.send_response(204)
                    self.end_headers()
                    return
                if path == "/download":
                    body = b"not a page"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Disposition", "attachment; filename=file.bin")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if path == "/slow.html":
                    time.sleep(3)
                    path = "/c.html"
                if path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
                    # A WebSocket's handshake (RFC 6455), then the connection is held a moment.
                    key = self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
                    accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
                    self.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
                    self.wfile.flush()
                    time.sleep(1)
                    self.close_connection = True
                    return
                if path == "/worker.js":
                    body = WORKER.encode()
                    kind = "text/javascript"
                elif path == "/icon.png":
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
        (process, port) = try Self.startPython(Self.script, output: CollectedOutput(), name: "the page server")
    }

    /// Runs a python3 script whose first line printed is the port it listens on; all it prints goes
    /// to `output`.
    static func startPython(_ script: String, output: CollectedOutput, name: String) throws -> (ChildProcess, Int) {
        let process = try ChildProcess(
            executable: "/usr/bin/env", arguments: ["python3", "-c", script], environment: ProcessInfo.processInfo.environment,
            output: .pipe { output.append($0) })
        let deadline = ContinuousClock.now + .seconds(10)
        var line: String?
        while line == nil, process.isRunning, ContinuousClock.now < deadline {
            line = output.firstLine
            if line == nil { usleep(10_000) }
        }
        guard let line, let port = Int(line.trimmingCharacters(in: .whitespaces)) else {
            process.signal(SIGKILL)
            throw Failure("\(name) did not start: \(output.text)")
        }
        return (process, port)
    }

    func url(_ path: String) -> String { origin + path }

    deinit {
        // SIGKILL: a test process may pass SIGTERM on as ignored, and python then never ends.
        if process.isRunning { process.signal(SIGKILL) }
        process.waitUntilExit()
    }
}
