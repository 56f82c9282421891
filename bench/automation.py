#!/usr/bin/env python3
"""Automation clients through browserd (issue 51), each figure beside its baseline in the same run,
against release builds of browserd and browserd-renderer with a real Chromium, pages on loopback:

- attach: Playwright's connect_over_cdp through browserd's endpoint until the pages are listed, p50/p99,
  beside connect_over_cdp to a bare Chromium's own --remote-debugging-port;
- a round trip (Runtime.evaluate "1" on a page's session) through the renderer's gateway, beside the same
  over a bare Chromium's DevTools pipe and over its own WebSocket (raw clients, no Playwright);
- a client's goto, from its commit (Playwright's framenavigated) to the entry's event at a watcher of the
  window's stream, p50/p99.

Usage: bench/automation.py [--attaches 30] [--round-trips 2000] [--navigations 100]
       [--browserd BIN --renderer BIN]   (default: builds both, release)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import websocket
from httpx_sse import connect_sse
from playwright.sync_api import sync_playwright

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
from automation_test import ADMIN, Setup, call, wait_for  # noqa: E402
from fence import Chromium  # noqa: E402

CHROMIUM = "/usr/lib/chromium/chromium"


def percentiles(samples):
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 3), "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3)}


def build():
    subprocess.run(["swift", "build", "-c", "release", "--product", "browserd"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["swift", "build", "-c", "release", "--package-path", "clients/swift", "--product", "browserd-renderer"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    server = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    client = subprocess.run(["swift", "build", "-c", "release", "--package-path", "clients/swift", "--show-bin-path"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout.strip()
    return os.path.join(server, "browserd"), os.path.join(client, "browserd-renderer")


def round_trips(ws, session, count):
    samples = []
    for n in range(count):
        started = time.perf_counter()
        ws.send(json.dumps({"id": n + 10, "method": "Runtime.evaluate", "params": {"expression": "1"}, "sessionId": session}))
        while json.loads(ws.recv()).get("id") != n + 10:
            pass
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def page_session(ws, target=None):
    """Attaches to `target` (default: the first page target) over a browser socket; its flat session id.
    (A page Chromium is closing may still be listed: its session would detach under the bench.)"""
    ws.send(json.dumps({"id": 1, "method": "Target.getTargets"}))
    while True:
        message = json.loads(ws.recv())
        if message.get("id") == 1:
            break
    target = target or next(t["targetId"] for t in message["result"]["targetInfos"] if t["type"] == "page")
    ws.send(json.dumps({"id": 2, "method": "Target.attachToTarget", "params": {"targetId": target, "flatten": True}}))
    while True:
        message = json.loads(ws.recv())
        if message.get("id") == 2:
            return message["result"]["sessionId"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attaches", type=int, default=30)
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--navigations", type=int, default=100)
    parser.add_argument("--browserd")
    parser.add_argument("--renderer")
    args = parser.parse_args()
    browserd, renderer = (args.browserd, args.renderer) if args.browserd and args.renderer else build()
    os.environ["no_proxy"] = "127.0.0.1"
    setup = Setup(browserd, renderer)
    figures = {}
    bare_dir = tempfile.mkdtemp(prefix="bench-automation-chromium-")
    port = subprocess.run([sys.executable, "-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"],
                          capture_output=True, text=True).stdout.strip()
    bare = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", f"--remote-debugging-port={port}", f"--user-data-dir={bare_dir}",
                             "--no-first-run", "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        profile, token, window, tab = setup.profile("bench")
        setup.render(profile)
        wait_for(lambda: call(setup.base, "GET", f"/v1/profiles/{profile}/devtools/json/list", token=token)[0] == 200
                 and call(setup.base, "GET", f"/v1/profiles/{profile}/devtools/json/list", token=token)[2], "the page", 60)
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{port}/json/version").status_code == 200, "the bare Chromium", 30)
        headers = {"Authorization": f"Bearer {token}"}

        with sync_playwright() as p:
            def attach(url, **kwargs):
                started = time.perf_counter()
                browser = p.chromium.connect_over_cdp(url, **kwargs)
                assert browser.contexts[0].pages
                took = (time.perf_counter() - started) * 1000
                browser.close()
                return took
            attach(setup.endpoint(profile), headers=headers)
            attach(f"http://127.0.0.1:{port}")
            figures["attach ms (browserd)"] = percentiles([attach(setup.endpoint(profile), headers=headers) for _ in range(args.attaches)])
            figures["attach ms (bare Chromium)"] = percentiles([attach(f"http://127.0.0.1:{port}") for _ in range(args.attaches)])

        # Round trips: the gateway, a bare Chromium's WebSocket, a bare Chromium's pipe.
        socket_url = call(setup.base, "GET", f"/v1/profiles/{profile}/devtools/json/version", token=token)[2]["webSocketDebuggerUrl"]
        through = websocket.create_connection(socket_url, timeout=10)
        own = websocket.create_connection(httpx.get(f"http://127.0.0.1:{port}/json/version").json()["webSocketDebuggerUrl"], timeout=10)
        pipe = Chromium(CHROMIUM, tempfile.mkdtemp(prefix="bench-automation-pipe-"), [])
        tab_target = call(setup.base, "GET", f"/v1/profiles/{profile}/devtools/json/list", token=token)[2][0]["id"]
        for ws in (through, own):
            session = page_session(ws, tab_target if ws is through else None)
            round_trips(ws, session, 200)
            samples = round_trips(ws, session, args.round_trips)
            figures["round trip ms (gateway)" if ws is through else "round trip ms (Chromium's WebSocket)"] = percentiles(samples)
        samples = []
        for _ in range(200 + args.round_trips):
            started = time.perf_counter()
            pipe.evaluate("1")
            samples.append((time.perf_counter() - started) * 1000)
        figures["round trip ms (Chromium's pipe)"] = percentiles(samples[200:])
        figures["gateway over pipe, p50 ms"] = round(figures["round trip ms (gateway)"]["p50"] - figures["round trip ms (Chromium's pipe)"]["p50"], 3)
        through.close()
        own.close()
        pipe.process.kill()

        # A client's goto: its commit to the watcher's event.
        arrived = {}
        ready = threading.Event()

        def watch():
            with httpx.Client(timeout=None, headers=headers) as client:
                with connect_sse(client, "GET", f"{setup.base}/v1/browsers/{window}/events?topics=tabs") as events:
                    ready.set()
                    for event in events.iter_sse():
                        if event.event == "tabs.update":
                            url = json.loads(event.data).get("item", {}).get("url", "")
                            arrived.setdefault(url, time.perf_counter())
        threading.Thread(target=watch, daemon=True).start()
        ready.wait(10)
        with sync_playwright() as p:
            browser = p.chromium.connect_over_cdp(setup.endpoint(profile), headers=headers)
            page = browser.contexts[0].pages[0]
            committed = {}
            page.on("framenavigated", lambda frame: committed.setdefault(frame.url, time.perf_counter()) if frame == page.main_frame else None)
            latencies = []
            starts = {}
            for n in range(args.navigations):
                url = f"{setup.site}/nav-{n}"
                starts[url] = time.perf_counter()
                page.goto(url)
                deadline = time.time() + 5
                while url not in arrived and time.time() < deadline:
                    page.wait_for_timeout(1)
                if url in arrived and url in committed:
                    latencies.append((arrived[url] - committed[url]) * 1000)
            figures["goto commit -> watcher ms"] = percentiles(latencies)
            if os.environ.get("BENCH_DETAIL"):
                print([(round((committed.get(u, 0) - starts[u]) * 1000), round((arrived.get(u, 0) - starts[u]) * 1000)) for u in starts], file=sys.stderr)
            figures["navigations seen"] = f"{len(latencies)}/{args.navigations}"
            browser.close()
        print(json.dumps(figures, indent=1))
    finally:
        bare.kill()
        setup.close()


if __name__ == "__main__":
    main()
