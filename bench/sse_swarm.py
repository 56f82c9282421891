"""Event streams at scale, measured with a native client (bench/sse_swarm.c) that is not the bottleneck.

Scenarios (watchers x mutations/s), each on one window and spread over windows of 100 watchers
(events spread round-robin over the windows): 1,000 x 100, 10,000 x 10, 10,000 idle. Each runs
against browserd as configured (its event tick adapting: at once when calm, gathered under load) and,
side by side, against the same server with a fixed 20 ms tick (what it did before), and against the
floor (bench/sse_floor.c: a C server that only writes events of the same size to every watcher).

Reported per run: latency from a mutation's acknowledgement to its event at the last watcher of its
window (p50/p99/max over mutations) and per delivery, events delivered of expected, server CPU per
delivered event, server RSS per connected watcher (measured while idle), the client's own CPU.

Usage: bench/sse_swarm.py --browserd PATH [--scenarios 1000x100,10000x10,10000x0] [--seconds 10]
       [--modes adaptive,fixed20] [--spread 1,100]
"""
import argparse
import http.client
import json
import os
import shutil
import subprocess
import tempfile
import time

from common import cpu_seconds, free_port, rss_kib, wait_http

parser = argparse.ArgumentParser()
parser.add_argument("--browserd", required=True)
parser.add_argument("--scenarios", default="1000x100,10000x10,10000x0")
parser.add_argument("--spread", default="1,100", help="1: one window; N: windows of N watchers")
parser.add_argument("--modes", default="adaptive,fixed20,floor")
parser.add_argument("--seconds", type=float, default=10)
parser.add_argument("--client-threads", type=int, default=2,
                    help="watcher threads of the native client (one recv per watcher per event is its share of the work)")
parser.add_argument("--json", default="bench/out/sse_swarm.json")
args = parser.parse_args()

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SWARM = os.path.join(ROOT, "bench", "out", "sse_swarm")
FLOOR = os.path.join(ROOT, "bench", "out", "sse_floor")
# The floor: bench/sse_floor.c, a C server that only sends events of browserd's size (one encoding,
# one write per watcher, two sender threads): what the kernel and the client cost, which no server
# goes under on this machine.
EVENT_BYTES = int(os.environ.get("SSE_FLOOR_EVENT_BYTES", "530"))
MODES = {"adaptive": [], "fixed20": ["--event-tick-ms", "20", "--event-tick-adaptive", "false"]}


def build_swarm():
    os.makedirs(os.path.dirname(SWARM), exist_ok=True)
    for binary, name in ((SWARM, "sse_swarm.c"), (FLOOR, "sse_floor.c")):
        source = os.path.join(ROOT, "bench", name)
        if not os.path.exists(binary) or os.path.getmtime(binary) < os.path.getmtime(source):
            subprocess.run(["cc", "-O2", "-pthread", "-o", binary, source], check=True)


def call(port, method, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    reply = connection.getresponse()
    data = reply.read()
    connection.close()
    if reply.status >= 300:
        raise RuntimeError(f"{method} {path}: {reply.status} {data[:200]}")
    return json.loads(data) if data else None


def run(watchers, rate, per_window, mode):
    windows_wanted = 1 if per_window == 1 else max(1, watchers // per_window)
    data = tempfile.mkdtemp(prefix="browserd-swarm-")
    port = free_port()
    if mode == "floor":
        server = subprocess.Popen([FLOOR, str(port), str(EVENT_BYTES)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        server = subprocess.Popen([args.browserd, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning",
                                   "--max-streams", str(watchers + 100), "--max-streams-per-profile", str(watchers + 100),
                                   "--connection-limit", str(watchers + 1000), "--per-ip-connection-limit", "0"] + MODES[mode],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        windows, tabs = [], []
        if mode == "floor":
            time.sleep(0.3)
            windows = [f"w{i}" for i in range(windows_wanted)]
            tabs = [f"t{i}" for i in range(windows_wanted)]
        else:
            wait_http(port, "/readyz")
            profile = call(port, "POST", "/v1/profiles", {"name": "swarm"})["id"]
        for _ in range(windows_wanted if mode != "floor" else 0):
            window = call(port, "POST", "/v1/browsers", {"profileId": profile})["id"]
            windows.append(window)
            tabs.append(call(port, "POST", f"/v1/browsers/{window}/tabs", {"url": "https://bench.example/"})["id"])
        time.sleep(0.5)
        rss_before = rss_kib([server.pid])
        swarm = subprocess.Popen([SWARM, str(port), str(watchers), str(rate), str(args.seconds), ",".join(windows), ",".join(tabs), "2"],
                                 stdout=subprocess.PIPE, text=True, env=dict(os.environ, SWARM_THREADS=str(args.client_threads)))
        ready = json.loads(swarm.stdout.readline())
        time.sleep(1.5)  # idle, every watcher connected and past its snapshot
        rss_idle = rss_kib([server.pid])
        cpu_before = cpu_seconds([server.pid])
        started = time.time()
        result = json.loads(swarm.stdout.readline())
        elapsed = time.time() - started
        cpu = cpu_seconds([server.pid]) - cpu_before
        swarm.wait(30)
        result.update(mode=mode, per_window=per_window, connect_s=ready["connect_s"],
                      rss_per_watcher_kib=(rss_idle - rss_before) / watchers,
                      server_cpu_pct=cpu / elapsed * 100,
                      server_us_per_delivery=(cpu * 1e6 / result["delivered"]) if result["delivered"] else None)
        return result
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)


def main():
    build_swarm()
    rows = []
    for spec in args.scenarios.split(","):
        watchers, rate = (int(x) for x in spec.split("x"))
        for per_window in (int(x) for x in args.spread.split(",")):
            for mode in args.modes.split(","):
                row = run(watchers, rate, per_window, mode)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(f"\nEvent streams, native client (bench/sse_swarm.c, {args.client_threads} watcher threads): latency = acknowledgement -> event at the last watcher "
          "of the window (per mutation); 'each' = per delivery. Side by side: the adaptive tick, a fixed 20 ms tick, and the floor "
          "(a C server that only writes the events: what the kernel and this client cost).")
    print(f"{'watchers':>8} {'mut/s':>5} {'windows':>7} {'tick':>8} | {'p50':>6} {'p99':>6} {'max':>6} {'each p99':>8} ms | "
          f"{'delivered':>21} | {'server':>6} {'µs/event':>8} | {'RSS/watcher':>11} | {'client':>6}")
    for r in rows:
        windows = r["windows"]
        lat = (f"{r['p50_ms']:>6.1f} {r['p99_ms']:>6.1f} {r['max_ms']:>6.1f} {r['delivery_p99_ms']:>8.1f}"
               if r["mutations"] else f"{'idle':>6} {'':>6} {'':>6} {'':>8}")
        per = f"{r['server_us_per_delivery']:>8.2f}" if r["server_us_per_delivery"] else f"{'-':>8}"
        print(f"{r['watchers']:>8} {r['rate']:>5.0f} {windows:>7} {r['mode']:>8} | {lat} ms | "
              f"{r['delivered']:>10}/{r['expected']:<10} | {r['server_cpu_pct']:>5.0f}% {per} | "
              f"{r['rss_per_watcher_kib']:>7.2f} KiB | " + (f"{r['client_cpu_pct']:>5.0f}%" if r["mutations"] else f"{'-':>6}"))
    with open(args.json, "w") as f:
        json.dump(rows, f, indent=2)


main()
