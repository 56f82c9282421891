#!/usr/bin/env python3
"""What each setting of browserd's MemoryPolicy earns (issue 40): the release browserd on one seeded
store, once with the executable's policy (followsWorkingSet) and once with each setting turned off
(BROWSERD_MEMORY_POLICY_OFF), side by side in the same run:

  - the empty server's RSS (a data directory with nothing stored), started with the same policy;
  - RSS with every profile loaded (lazy start, each profile's first window read);
  - RSS after the profiles went idle and left memory (--profile-idle-seconds), and its ratio to the
    empty server's: what the policy is for;
  - eager restore (--preload-profiles true): RSS once ready.

Usage: bench/memory_policy.py --browserd PATH --seeder PATH [--profiles 10] [--idle-seconds 3]
(the release browserd and PersistenceBench: `swift build -c release --product browserd` and
`--product PersistenceBench`). Writes bench/out/memory_policy.json.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from big_session import anon_kib, get, stop, timed_get, window  # noqa: E402
from common import free_port, rss_kib  # noqa: E402

VARIANTS = [("followsWorkingSet (the server's)", ""), ("without trim-threshold", "trim-threshold"), ("without evictions", "evictions"),
            ("without trim-after-loads", "trim-after-loads"), ("untouched (all off)", "all")]
WINDOWS, TABS = 10, 1000


def start(browserd, data, off, *extra):
    port = free_port()
    env = {**os.environ}
    if off:
        env["BROWSERD_MEMORY_POLICY_OFF"] = off
    began = time.monotonic()
    server = subprocess.Popen([browserd, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning",
                               "--profile-write-bytes-per-second", "0", *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    while get(port, "/readyz")[0] != 200:
        if server.poll() is not None:
            raise RuntimeError(f"browserd exited with {server.returncode} (BROWSERD_MEMORY_POLICY_OFF={off!r})")
        if time.monotonic() - began > 600:
            raise RuntimeError("not ready within 600 s")
        time.sleep(0.01)
    return port, server


def settled(pid, seconds=1.0):
    time.sleep(seconds)
    return rss_kib([pid]), anon_kib(pid)


def measure(args, data, empty, off):
    row = {}
    port, server = start(args.browserd, empty, off)
    try:
        row["empty_rss_kib"], row["empty_anon_kib"] = settled(server.pid)
    finally:
        stop(server)
    port, server = start(args.browserd, data, off, "--profile-idle-seconds", str(args.idle_seconds))
    try:
        for p in range(args.profiles):
            timed_get(port, f"/v1/browsers/{window(p, 0)}/tabs")
        row["loaded_rss_kib"], row["loaded_anon_kib"] = settled(server.pid)
        # Every profile idle for --idle-seconds, then swept (the sweep runs every second or so).
        time.sleep(args.idle_seconds + 4)
        row["idle_rss_kib"], row["idle_anon_kib"] = settled(server.pid, 2.0)
    finally:
        stop(server)
    port, server = start(args.browserd, data, off, "--preload-profiles", "true")
    try:
        row["eager_rss_kib"], row["eager_anon_kib"] = settled(server.pid)
    finally:
        stop(server)
    row["idle_over_empty"] = row["idle_rss_kib"] / row["empty_rss_kib"]
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--browserd", required=True)
    parser.add_argument("--seeder", required=True, help="the release PersistenceBench")
    parser.add_argument("--profiles", type=int, default=10, help="profiles of 10 windows x 1,000 tabs each")
    parser.add_argument("--idle-seconds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="rounds over every variant (medians reported)")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="browserd-memory-policy-")
    try:
        data, empty = os.path.join(scratch, "data"), os.path.join(scratch, "empty")
        os.makedirs(empty)
        subprocess.run([args.seeder, "seed", data, str(args.profiles), str(WINDOWS), str(TABS)], check=True,
                       stdout=subprocess.DEVNULL)
        results = {name: [] for name, _ in VARIANTS}
        for _ in range(args.rounds):
            for name, off in VARIANTS:
                results[name].append(measure(args, data, empty, off))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    tabs = args.profiles * WINDOWS * TABS
    print(f"MemoryPolicy, {tabs:,} stored tabs in {args.profiles} profiles; medians of {args.rounds} rounds (MiB)")
    print(f"{'policy':36} {'empty':>7} {'loaded':>8} {'idle':>7} {'idle/empty':>10} {'eager':>8}")
    summary = {}
    for name, _ in VARIANTS:
        rows = results[name]

        def median(key, rows=rows):
            values = sorted(r[key] for r in rows)
            return values[len(values) // 2]
        summary[name] = {key: median(key) for key in rows[0]}
        s = summary[name]
        print(f"{name:36} {s['empty_rss_kib'] / 1024:7.1f} {s['loaded_rss_kib'] / 1024:8.1f} {s['idle_rss_kib'] / 1024:7.1f} "
              f"{s['idle_over_empty']:10.2f} {s['eager_rss_kib'] / 1024:8.1f}")
    os.makedirs(os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"), exist_ok=True)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "memory_policy.json"), "w") as f:
        json.dump({"tabs": tabs, "rounds": args.rounds, "variants": summary, "all": results}, f, indent=1)


if __name__ == "__main__":
    main()
