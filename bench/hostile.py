#!/usr/bin/env python3
"""One tenant floods each pool a caller can fill while another tenant works: the quiet tenant's
keyed PATCH latency beside its own quiet baseline (same run), and the server's RSS.

Pools flooded, each by its own attacker processes for the same duration while the quiet tenant
measures: stream tickets, WebDriver sessions, idempotency keys (keyed 422s with long member names),
history bytes (navigations with 256 KiB URLs up to the byte budget and past it), and half-open
connections (request heads that never finish, from another loopback address). Floor (hostile-tenants
issue): the quiet tenant's p99 within 1.5x of its quiet p99 under every flood, and RSS bounded.

Usage: bench/hostile.py --browserd PATH [--requests N] [--attackers N]
"""
import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import free_port, rss_kib, wait_http  # noqa: E402

ADMIN = "bench-hostile-admin-token-0123456789"


class Client:
    """A keep-alive HTTP/1.1 client with a token."""

    def __init__(self, port, token, source="127.0.0.1"):
        self.port, self.token, self.source = port, token, source
        self.connection = None

    def call(self, method, path, body=None, raw=None, headers=None):
        for attempt in range(3):
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30, source_address=(self.source, 0))
            data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"" if method == "POST" else None)
            all_headers = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json", **(headers or {})}
            try:
                self.connection.request(method, path, body=data, headers=all_headers)
                reply = self.connection.getresponse()
                text = reply.read()
                if reply.getheader("Connection", "").lower() == "close":
                    self.connection.close()
                    self.connection = None
                return reply.status, text
            except (http.client.HTTPException, OSError):
                self.connection.close()
                self.connection = None
                if attempt == 2:
                    raise


def admin_call(port, method, path, body=None):
    return Client(port, ADMIN).call(method, path, body)


def tenant(port, name):
    status, text = admin_call(port, "POST", "/v1/profiles", {"name": name})
    profile = json.loads(text)["id"]
    token = json.loads(admin_call(port, "POST", f"/v1/profiles/{profile}/tokens")[1])["token"]
    client = Client(port, token)
    window = json.loads(client.call("POST", "/v1/browsers", {"profileId": profile})[1])["id"]
    tab = json.loads(client.call("POST", f"/v1/browsers/{window}/tabs", {"url": "https://quiet.example/"})[1])["id"]
    return profile, token, window, tab


def measure(port, token, tab, count, label):
    client = Client(port, token)
    latencies = []
    for index in range(count):
        started = time.perf_counter()
        status, _ = client.call("PATCH", f"/v1/tabs/{tab}", {"title": f"quiet {label} {index}"},
                                headers={"Idempotency-Key": f"quiet-{label}-{index}"})
        latencies.append((time.perf_counter() - started) * 1000)
        assert status == 200, status
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]


def flood(kind, port, token, profile, window, tab, stop_file, counter, rate=0):
    """One attacker process: floods `kind` until `stop_file` exists, at most `rate` requests a second
    (0: as fast as it can)."""
    started = time.time()
    client = Client(port, token, source="127.0.0.2" if kind == "connections" else "127.0.0.1")
    done = 0
    statuses = {}
    held = []
    max_held = 0
    long_url = "https://flood.example/" + "x" * (256 * 1024)
    while (done % 20 != 0 and kind != "connections") or not os.path.exists(stop_file):
        if kind == "tickets":
            status, _ = client.call("POST", "/v1/stream-tickets", {"path": f"/v1/browsers/{window}/events"})
        elif kind == "sessions":
            status, text = client.call("POST", "/webdriver/session", {"capabilities": {"alwaysMatch": {"browserd:profileId": profile}}})
        elif kind == "keys":
            status, _ = client.call("PATCH", f"/v1/tabs/{tab}", raw=json.dumps({"m" * 4096: 1}).encode(),
                                    headers={"Idempotency-Key": f"flood-{os.getpid()}-{done}"})
        elif kind == "history":
            status, _ = client.call("POST", f"/v1/tabs/{tab}/navigate", {"url": f"{long_url}{done}"})
        elif kind == "connections":
            # Slowloris from another address: keep as many request heads open as the server lets us,
            # each sent a byte at a time, reopening what the server closed.
            alive = []
            for s in held:
                try:
                    s.sendall(b"X")
                    alive.append(s)
                except OSError:
                    s.close()
            held = alive
            opened = 0
            while len(held) < 3000 and opened < 500:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=("127.0.0.2", 0))
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0")
                    held.append(s)
                except OSError:
                    break
                opened += 1
            status = f"open≤{len(held)}"
            time.sleep(0.5)
        statuses[status] = statuses.get(status, 0) + 1
        if rate and kind != "connections":
            ahead = started + (done + 1) / rate - time.time()
            if ahead > 0:
                time.sleep(ahead)
        if kind == "connections":
            max_held = max(max_held, len(held))
        done += 1
    for s in held:
        s.close()
    if kind == "connections":
        statuses = {f"heads held, most at once (open or not yet seen closed)": max_held}
    counter.put((kind, done, statuses))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--browserd", required=True)
    parser.add_argument("--requests", type=int, default=3000, help="keyed PATCHes the quiet tenant times per phase")
    parser.add_argument("--attackers", type=int, default=1, help="attacker processes per flood")
    parser.add_argument("--floods", default="tickets,sessions,keys,history,connections")
    parser.add_argument("--rates", default="500,0",
                        help="attacker requests a second, one run each (0: as fast as one process can); 500/s keeps every "
                             "pool full, while the unbounded run shows the CPU two cores share besides")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="browserd-hostile-bench-")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERD_")}
    env["BROWSERD_ADMIN_TOKEN"] = ADMIN
    server = subprocess.Popen([args.browserd, "serve", "--port", str(port), "--data-dir", os.path.join(work, "data"),
                               "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(port, "/readyz")
        _, quiet_token, _, quiet_tab = tenant(port, "quiet")
        attacker = tenant(port, "attacker")
        measure(port, quiet_token, quiet_tab, 300, "warm")
        for rate in [int(r) for r in args.rates.split(",")]:
            base_p50, base_p99 = measure(port, quiet_token, quiet_tab, args.requests, f"quiet-{rate}")
            run_floods(args, port, server, work, quiet_token, quiet_tab, attacker, base_p50, base_p99, rate)
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)


def run_floods(args, port, server, work, quiet_token, quiet_tab, attacker, base_p50, base_p99, rate):
    if True:
        print(f"hostile tenants: the quiet tenant's keyed PATCH, {args.requests} sequential requests per phase; "
              f"{args.attackers} attacker process(es) per flood, " + (f"each at {rate} requests/s" if rate else "each as fast as it can"), flush=True)
        print(f"{'phase':<12} | {'p50 ms':>7} {'p99 ms':>7} {'p99 / quiet':>11} | {'server RSS':>10} | attacker requests (answers)")
        print(f"{'quiet':<12} | {base_p50:>7.2f} {base_p99:>7.2f} {1.0:>10.2f}x | {rss_kib([server.pid]) / 1024:>7.1f} MiB |")
        worst = 1.0
        for kind in args.floods.split(","):
            queue = multiprocessing.Queue()
            procs = []
            # Attackers run for as long as the measurement does: started first, stopped after it.
            stop_file = os.path.join(work, f"stop-{kind}-{rate}")
            for _ in range(args.attackers):
                p = multiprocessing.Process(target=flood_until_file, args=(kind, port, attacker, stop_file, queue, rate))
                p.start()
                procs.append(p)
            time.sleep(1.0)  # the flood reaches its steady state (pools full, budget reached)
            p50, p99 = measure(port, quiet_token, quiet_tab, args.requests, kind)
            rss = rss_kib([server.pid]) / 1024
            open(stop_file, "w").close()
            results = [queue.get(timeout=60) for _ in procs]
            for p in procs:
                p.join()
            done = sum(r[1] for r in results)
            answers = {}
            for _, _, statuses in results:
                for status, count in statuses.items():
                    answers[status] = answers.get(status, 0) + count
            ratio = p99 / base_p99
            worst = max(worst, ratio)
            summary = ", ".join(f"{k}: {v}" for k, v in sorted(answers.items(), key=lambda kv: -kv[1]))
            print(f"{kind:<12} | {p50:>7.2f} {p99:>7.2f} {ratio:>10.2f}x | {rss:>7.1f} MiB | {done} ({summary})", flush=True)
        print(f"worst p99 under a flood: {worst:.2f}x the quiet p99 (floor: 1.5x)", flush=True)


def flood_until_file(kind, port, attacker, stop_file, queue, rate):
    profile, token, window, tab = attacker
    flood(kind, port, token, profile, window, tab, stop_file, queue, rate)


if __name__ == "__main__":
    main()
