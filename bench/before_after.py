"""Two builds of browserd side by side, in one run: durable writes, window reads, a cold profile's first
request. For a change that should not move them (a refactoring: issue 53's), or one that should.

    bench/before_after.py --before OLD/browserd --after NEW/browserd [--rounds 3] [--duration 5s]

Each round runs both binaries in turn (A B, then B A, so neither always goes first), each on a fresh
data directory with the same state:
- durable writes: `wrk -t2 -c16` open/close pairs on one window (bench/spread_pairs.lua; every answer
  waits for its commit), requests per second and latency;
- window reads: `wrk -t2 -c64 GET /v1/browsers/{id}` of a 50-tab window;
- cold profile: PROFILES profiles of one 200-tab window each are made, the server restarted (profiles
  load on first use), and each profile's first `GET /v1/browsers/{id}` timed (its load included).
Prints each measure's median over the rounds per binary, and after/before.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request

from common import free_port, parse_wrk, wait_http

parser = argparse.ArgumentParser()
parser.add_argument("--before", required=True)
parser.add_argument("--after", required=True)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--duration", default="5s")
parser.add_argument("--profiles", type=int, default=40)
args = parser.parse_args()


def call(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read() or b"{}")


def start(binary, data):
    port = free_port()
    process = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning",
                                "--per-ip-connection-limit", "0", "--profile-write-bytes-per-second", "0"],
                               stdout=subprocess.DEVNULL)
    wait_http(port)
    return process, port


def stop(process):
    process.terminate()
    process.wait(timeout=30)


def wrk(port, connections, extra, path="", env=None):
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{args.duration}", "--latency", *extra,
                          f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, env=env).stdout
    return parse_wrk(out)


def measure(binary):
    work = tempfile.mkdtemp(prefix="browserd-ab-")
    try:
        process, port = start(binary, f"{work}/data")
        try:
            profile = call(port, "POST", "/v1/profiles", {"name": "bench"})["id"]
            window = call(port, "POST", "/v1/browsers", {"profileId": profile})["id"]
            for i in range(50):
                call(port, "POST", f"/v1/browsers/{window}/tabs", {"url": f"https://site{i}.example/a/{i}", "activate": i == 0})
            pairs_window = call(port, "POST", "/v1/browsers", {"profileId": profile})["id"]
            writes = wrk(port, 16, ["-s", "bench/spread_pairs.lua"], env=dict(os.environ, WINDOWS=pairs_window))
            subprocess.run(["wrk", "-t2", "-c64", "-d1s", f"http://127.0.0.1:{port}/v1/browsers/{window}"], capture_output=True)
            reads = wrk(port, 64, [], f"/v1/browsers/{window}")
            windows = []
            for p in range(args.profiles):
                pid = call(port, "POST", "/v1/profiles", {"name": f"cold {p}"})["id"]
                wid = call(port, "POST", "/v1/browsers", {"profileId": pid})["id"]
                for t in range(200):
                    call(port, "POST", f"/v1/browsers/{wid}/tabs", {"url": f"https://cold{p}.example/{t}", "activate": False})
                windows.append(wid)
        finally:
            stop(process)
        process, port = start(binary, f"{work}/data")
        try:
            firsts = []
            for wid in windows:
                began = time.perf_counter()
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/browsers/{wid}").read()
                firsts.append((time.perf_counter() - began) * 1000)
        finally:
            stop(process)
        firsts.sort()
        return {
            "writes rps": writes["rps"], "writes p50 ms": writes["p50"], "writes p99 ms": writes["p99"],
            "reads rps": reads["rps"], "reads p50 ms": reads["p50"], "reads p99 ms": reads["p99"],
            "cold p50 ms": statistics.median(firsts), "cold p99 ms": firsts[min(len(firsts) - 1, int(len(firsts) * 0.99))],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


results = {"before": [], "after": []}
for round in range(args.rounds):
    order = ["before", "after"] if round % 2 == 0 else ["after", "before"]
    for name in order:
        results[name].append(measure(getattr(args, name)))
        print(f"round {round + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in results[name][-1].items()), flush=True)

print(f"\nbefore/after: {args.rounds} rounds (medians), durable writes -c16, window reads -c64, "
      f"{args.profiles} cold profiles of 200 tabs")
print(f"{'measure':<14} {'before':>10} {'after':>10} {'after/before':>13}")
for key in results["before"][0]:
    b = statistics.median(r[key] for r in results["before"])
    a = statistics.median(r[key] for r in results["after"])
    print(f"{key:<14} {b:>10.2f} {a:>10.2f} {a / b if b else float('nan'):>13.2f}")
