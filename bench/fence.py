#!/usr/bin/env python3
"""What the renderer's fence (FencingProxy: every request of Chromium through a forward proxy that
judges the address) costs a page, measured beside no fence in the same run: one bare Chromium (new
headless, over its DevTools pipe) loads the same pages directly and through the fence
(`renderer-bench --fence ORIGIN`, `--proxy-server` and `--proxy-bypass-list=<-loopback>` as the
renderer starts it), alternately.

- a page with 100 images (each URL new: no cache): navigate -> load event, p50 and p99;
- 200 sequential fetch() of a small resource inside the page: the mean per request;
- the fence's CPU per request.

Usage: bench/fence.py [--loads 30]   (builds renderer-bench, release)
"""
import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_seconds, free_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5e6d9c50000000049454e44ae426082")


class Pages(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body written apart would wait on Nagle and delayed ACKs (40 ms a request).
    disable_nagle_algorithm = True

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/many":
            body = ("<!doctype html><title>Many</title>" + "".join(f"<img src='/i/{n}.png?{query}'>" for n in range(100))).encode()
            kind = "text/html"
        elif path.startswith("/i/"):
            body, kind = PNG, "image/png"
        elif path == "/small":
            body, kind = b"ok", "text/plain"
        else:
            body, kind = b"<!doctype html><title>Blank</title>", "text/html"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Chromium:
    """A bare Chromium over its DevTools pipe (fds 3 and 4), one page attached."""

    def __init__(self, chromium, profile, extra):
        commands_read, self.commands = os.pipe()
        self.events, events_write = os.pipe()

        def child():
            os.dup2(commands_read, 3)
            os.dup2(events_write, 4)

        arguments = [chromium, "--headless", "--remote-debugging-pipe", f"--user-data-dir={profile}", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--mute-audio", "about:blank"] + extra
        if os.getuid() == 0:
            arguments.append("--no-sandbox")
        self.process = subprocess.Popen(arguments, preexec_fn=child, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(events_write)
        self.buffer, self.next_id = b"", 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=self.session)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        return self.next_id

    def read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.events, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium ended")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method, params=None, session=None):
        sent = self.send(method, params, session)
        while True:
            message = self.read()
            if message.get("id") == sent:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def load(self, url):
        """navigate -> Page.loadEventFired, in milliseconds."""
        started = time.perf_counter()
        self.send("Page.navigate", {"url": url}, self.session)
        while self.read().get("method") != "Page.loadEventFired":
            pass
        return (time.perf_counter() - started) * 1000

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, self.session)
        return result["result"].get("value")

    def close(self):
        self.process.kill()
        self.process.wait()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loads", type=int, default=30)
    parser.add_argument("--chromium", default="/usr/lib/chromium/chromium")
    args = parser.parse_args()
    subprocess.run(["swift", "build", "-c", "release", "--package-path", "clients/swift", "--product", "renderer-bench"], cwd=ROOT, check=True)
    binary = subprocess.run(["swift", "build", "-c", "release", "--package-path", "clients/swift", "--show-bin-path"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip() + "/renderer-bench"

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{port}"
    fence = subprocess.Popen([binary, "--fence", origin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    fence_port = int(fence.stdout.readline())
    with tempfile.TemporaryDirectory() as scratch:
        direct = Chromium(args.chromium, os.path.join(scratch, "direct"), [])
        fenced = Chromium(args.chromium, os.path.join(scratch, "fenced"),
                          [f"--proxy-server=http://127.0.0.1:{fence_port}", "--proxy-bypass-list=<-loopback>"])
        loads = {"direct": [], "fenced": []}
        fetches = {"direct": [], "fenced": []}
        fence_cpu = 0.0
        requests_fenced = 0
        for n in range(args.loads):
            for name, browser in (("direct", direct), ("fenced", fenced)):
                before = cpu_seconds([fence.pid])
                loads[name].append(browser.load(f"{origin}/many?{name}-{n}"))
                mean = browser.evaluate("(async () => { const t = performance.now(); for (let i = 0; i < 200; i++)"
                                        " await (await fetch('/small?' + i + Math.random(), {cache: 'no-store'})).text();"
                                        " return (performance.now() - t) / 200; })()")
                fetches[name].append(mean)
                if name == "fenced":
                    fence_cpu += cpu_seconds([fence.pid]) - before
                    requests_fenced += 301
        refused = fenced.evaluate(f"fetch('http://localhost.:{port}/small').then(() => 'reached', () => 'refused')")
        direct.close()
        fenced.close()
    fence.stdin.close()
    fence.wait()
    print(f"fence bench: {args.loads} loads of a page with 100 images, each followed by 200 sequential fetches (same run, alternately)")
    for name in ("direct", "fenced"):
        print(f"  {name:7} page load p50 {percentile(loads[name], 50):7.1f} ms  p99 {percentile(loads[name], 99):7.1f} ms"
              f"   fetch mean {statistics.mean(fetches[name]):.3f} ms")
    print(f"  the fence's CPU per request {fence_cpu / requests_fenced * 1e6:.0f} us; localhost. through it: {refused}")


if __name__ == "__main__":
    main()
