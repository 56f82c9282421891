#!/usr/bin/env python3
"""Renderers at scale (issue 55), release builds, pages served on loopback:

- profiles assigned per second: N profiles with windows, one renderer registers (capacity N): the time
  of the one decision that gives it all of them; then a renewal's time with N assigned (each decision
  reads which profiles have windows), on SQLite (and PostgreSQL with --postgres, under
  scripts/with-postgres.sh);
- a profile's first window to its first page visible (its title at browserd), p50/p99: cold (a new
  profile: its renderer starts a Chromium for it) and warm (a new window of a profile whose Chromium runs);
- a renderer's memory with 1, 10 and 50 profiles (each a window with one page): the proportional set
  size (PSS) of the renderer and every Chromium process under it, so shared pages count once.

Usage: bench/renderers.py [--profiles 2000] [--pages 20] [--memory 1,10,50] [--postgres]
"""
import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import free_port, wait_http  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADMIN = "admin-token-for-the-renderers-bench"


def call(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {ADMIN}"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            text = reply.read()
            return reply.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


class Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        body = f"<!doctype html><title>page {path}</title><p>{'Lorem ipsum dolor sit amet. ' * 100}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def build(postgres):
    traits = ["--traits", "PostgreSQL"] if postgres else []
    subprocess.run(["swift", "build", "-c", "release", "--product", "browserd"] + traits, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["swift", "build", "-c", "release", "--package-path", "clients/swift", "--product", "browserd-renderer"], cwd=ROOT,
                   check=True, stdout=subprocess.DEVNULL)
    server = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"] + traits, cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    renderer = subprocess.run(["swift", "build", "-c", "release", "--package-path", "clients/swift", "--show-bin-path"], cwd=ROOT,
                              check=True, capture_output=True, text=True).stdout.strip()
    return f"{server}/browserd", f"{renderer}/browserd-renderer"


class Server:
    def __init__(self, binary, root, store_args):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [binary, "serve", "--port", str(self.port), "--log-level", "warning"] + store_args,
            env=dict(os.environ, BROWSERD_ADMIN_TOKEN=ADMIN), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http(self.port, "/readyz", timeout=60)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def postgres_args(root):
    admin = os.environ.get("BROWSERD_TEST_DATABASE_URL")
    if not admin:
        return None
    name = "renderers_bench_%d" % os.getpid()
    subprocess.run(["psql", admin, "-q", "-c", f"CREATE DATABASE {name}"], check=True, stdout=subprocess.DEVNULL)
    secret = os.path.join(root, "secret")
    with open(secret, "w") as f:
        f.write("renderers-bench-cluster-secret\n")
    parts = urllib.parse.urlsplit(admin)
    return ["--database-url", urllib.parse.urlunsplit(parts._replace(path="/" + name)), "--cluster-secret-file", secret]


def assignments(browserd, root, label, store_args, count):
    server = Server(browserd, root, store_args)
    try:
        for i in range(count):
            profile = call(server.base, "POST", "/v1/profiles", {"name": f"p{i}"})[1]["id"]
            call(server.base, "POST", "/v1/browsers", {"profileId": profile})
        start = time.perf_counter()
        status, body = call(server.base, "PUT", "/v1/renderers/r", {"capacity": count})
        took = time.perf_counter() - start
        assert status == 200 and len(body["profiles"]) == count, (status, body if status != 200 else len(body["profiles"]))
        renewals = []
        for _ in range(20):
            start = time.perf_counter()
            call(server.base, "PUT", "/v1/renderers/r", {"capacity": count})
            renewals.append((time.perf_counter() - start) * 1000)
        print(f"{label}: {count} profiles assigned in one decision in {took * 1000:.0f} ms ({count / took:,.0f} profiles/s); "
              f"a renewal with {count} held: p50 {statistics.median(renewals):.1f} ms, max {max(renewals):.1f} ms")
    finally:
        server.stop()


def pss_kib(pid):
    """PSS of `pid` and every process under it."""
    total = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
        out = subprocess.run(["pgrep", "-P", str(current)], capture_output=True, text=True).stdout
        todo += [int(x) for x in out.split()]
    return total


def visible(base, tab, title, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, body = call(base, "GET", f"/v1/tabs/{tab}")
        if status == 200 and body["title"] == title:
            return
        time.sleep(0.01)
    raise RuntimeError(f"tab {tab} never showed {title}")


def renderer_run(browserd, renderer, root, site, pages, memory_points):
    server = Server(browserd, root, ["--data-dir", os.path.join(root, "data")])
    most = max([pages] + memory_points)
    process = subprocess.Popen(
        [renderer, "--server", server.base, "--token", ADMIN, "--name", "bench", "--capacity", str(most), "--max-profiles", str(most),
         "--state-dir", os.path.join(root, "state"), "--allow-origin", site, "--devtools-listen", "off", "--status-listen", "off",
         "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while call(server.base, "GET", "/v1/renderers")[1]["items"] == []:
            time.sleep(0.05)
        cold, warm, made = [], [], []
        memory = {}
        for i in range(most):
            profile = call(server.base, "POST", "/v1/profiles", {"name": f"p{i}"})[1]["id"]
            start = time.perf_counter()
            window = call(server.base, "POST", "/v1/browsers", {"profileId": profile})[1]["id"]
            tab = call(server.base, "POST", f"/v1/browsers/{window}/tabs", {"url": f"{site}/cold-{i}"})[1]["id"]
            visible(server.base, tab, f"page /cold-{i}")
            cold.append((time.perf_counter() - start) * 1000)
            made.append(profile)
            if i < pages:
                # Warm: another window of the same profile, its Chromium running.
                start = time.perf_counter()
                window = call(server.base, "POST", "/v1/browsers", {"profileId": profile})[1]["id"]
                tab = call(server.base, "POST", f"/v1/browsers/{window}/tabs", {"url": f"{site}/warm-{i}"})[1]["id"]
                visible(server.base, tab, f"page /warm-{i}")
                warm.append((time.perf_counter() - start) * 1000)
            if i + 1 in memory_points:
                time.sleep(3)
                memory[i + 1] = pss_kib(process.pid)
        def p(values, q):
            values = sorted(values)
            return values[min(len(values) - 1, int(q * len(values)))]
        print(f"first window to first page visible: cold (placed at its first window, the renderer told on its stream; a Chromium started for it) p50 {p(cold, 0.5):.0f} ms, "
              f"p99 {p(cold, 0.99):.0f} ms ({len(cold)} profiles, one after the other, on a renderer already running)")
        print(f"first window to first page visible: warm (its profile's Chromium runs) p50 {p(warm, 0.5):.0f} ms, p99 {p(warm, 0.99):.0f} ms "
              f"({len(warm)} windows)")
        for count, kib in sorted(memory.items()):
            print(f"renderer memory with {count} profiles (a window and page each, 2 windows for the first {min(count, pages)}): "
                  f"PSS {kib / 1024:.0f} MiB ({kib / 1024 / count:.0f} MiB per profile)")
    finally:
        process.terminate()
        process.wait(timeout=60)
        server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--profiles", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--memory", default="1,10,50")
    parser.add_argument("--postgres", action="store_true",
                        help="also on PostgreSQL (a release build with the PostgreSQL trait; under scripts/with-postgres.sh)")
    args = parser.parse_args()
    browserd, renderer = build(args.postgres)
    root = tempfile.mkdtemp(prefix="browserd-renderers-bench-")
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{pages.server_address[1]}"
    try:
        assignments(browserd, root, "SQLite", ["--data-dir", os.path.join(root, "sqlite")], args.profiles)
        postgres = postgres_args(root) if args.postgres else None
        if postgres:
            assignments(browserd, root, "PostgreSQL", postgres, args.profiles)
        renderer_run(browserd, renderer, root, site, args.pages, [int(x) for x in args.memory.split(",")])
    finally:
        pages.shutdown()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
