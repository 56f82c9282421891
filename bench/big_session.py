#!/usr/bin/env python3
"""Big sessions: restore time and memory of a running browserd holding many tabs (issue 12).

Seeds a data directory with PersistenceBench (PROFILES × 10 windows × 1,000 tabs, 10 history entries
per tab, every URL distinct), starts the release browserd on it and measures, side by side with an
empty server started the same way in the same run:
  - restore time: from exec to /readyz = 200 (the 503 body's progress is sampled meanwhile);
  - RSS once ready, and RSS per tab over the empty server's;
  - that the state is really there (a window's tabs answer) and a write still costs little.
Prints a table and writes bench/out/big_session.json.

Usage: bench/big_session.py --browserd PATH --seeder PATH [--profiles 100,10]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import free_port, rss_kib  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError:
        return None, b""


def run(browserd, data):
    """Starts browserd on `data`; returns (seconds to ready, RSS KiB when ready, progress samples, port, process)."""
    port = free_port()
    start = time.monotonic()
    server = subprocess.Popen([browserd, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning",
                               "--profile-write-bytes-per-second", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = []
    while True:
        status, body = get(port, "/readyz")
        if status == 200:
            break
        if server.poll() is not None:
            raise RuntimeError(f"browserd exited with {server.returncode} before it was ready")
        if status == 503 and body and (not samples or time.monotonic() - samples[-1][0] - start > 1):
            samples.append((time.monotonic() - start, body.decode(errors="replace")[:200]))
        if time.monotonic() - start > 600:
            raise RuntimeError("not ready within 600 s")
        time.sleep(0.05)
    ready = time.monotonic() - start
    time.sleep(1)  # let the restore's transient buffers go
    return ready, rss_kib([server.pid]), samples, port, server


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--browserd", required=True)
    parser.add_argument("--seeder", required=True, help="the release PersistenceBench")
    parser.add_argument("--profiles", default=os.environ.get("BENCH_BIG_PROFILES", "10,100"),
                        help="comma-separated profile counts (each profile: 10 windows × 1,000 tabs)")
    args = parser.parse_args()
    results = []
    scratch = tempfile.mkdtemp(prefix="browserd-big-", dir=os.environ.get("BENCH_DIR"))
    try:
        empty = os.path.join(scratch, "empty")
        os.makedirs(empty)
        ready, base_rss, _, _, server = run(args.browserd, empty)
        server.terminate()
        server.wait(timeout=30)
        results.append({"shape": "empty server", "tabs": 0, "ready_s": ready, "rss_mib": base_rss / 1024})
        for profiles in [int(p) for p in args.profiles.split(",")]:
            data = os.path.join(scratch, f"p{profiles}")
            t0 = time.monotonic()
            subprocess.run([args.seeder, "seed", data, str(profiles), "10", "1000"], check=True, stdout=subprocess.DEVNULL)
            seeded = time.monotonic() - t0
            size = os.path.getsize(os.path.join(data, "browserd.sqlite"))
            ready, rss, samples, port, server = run(args.browserd, data)
            try:
                status, body = get(port, f"/v1/browsers/w{profiles - 1:08x}{9:08x}/tabs")
                served = status == 200 and len(json.loads(body)["items"]) == 1000
                tabs = profiles * 10 * 1000
                results.append({"shape": f"{profiles} profiles × 10 windows × 1,000 tabs", "tabs": tabs, "ready_s": ready,
                                "rss_mib": rss / 1024, "rss_per_tab_b": (rss - base_rss) * 1024 / tabs, "db_mib": size / 2**20,
                                "seed_s": seeded, "window_served": served, "progress": samples[-3:]})
            finally:
                server.terminate()
                server.wait(timeout=60)
            shutil.rmtree(data, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print("\nBig sessions: browserd restored from disk, 10 history entries per tab (every URL distinct), one run")
    print(f"{'shape':<40} {'tabs':>9} {'DB MiB':>7} {'ready s':>8} {'RSS MiB':>8} {'RSS/tab':>9}  window served")
    for r in results:
        per = f"{r['rss_per_tab_b']:>7.0f} B" if r.get("rss_per_tab_b") else f"{'':>9}"
        db = f"{r['db_mib']:>7.0f}" if r.get("db_mib") else f"{'':>7}"
        print(f"{r['shape']:<40} {r['tabs']:>9,} {db} {r['ready_s']:>8.2f} {r['rss_mib']:>8.0f} {per}  {r.get('window_served', '')}")
    for r in results:
        for at, body in r.get("progress", []):
            print(f"  {r['tabs']:,} tabs, /readyz at {at:.1f} s: {body}")
    os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "out", "big_session.json"), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
