#!/usr/bin/env python3
"""What a hostile session file costs the server (issue "Hostile files", finding 4), side by side with
a benign file of the same size in the same run:

1. Peak RSS per decoded MiB: a Firefox session of tiny entries (the worst shape: a JSON value per
   few bytes) against an ordinary one (few long entries), at several decoded sizes; each import on
   a fresh server, its VmHWM over the idle server's. This is what --max-import-bytes' default rests on.
2. Groups x tabs: 10,000 groups and 10,000 tabs (a window's most) against the same tabs with 10
   groups (32,000 of each took 0.91 s against 0.09 s before: quadratic; now more than a window
   holds is refused while reading).

Usage: bench/hostile_import.py PATH_TO_BROWSERD [--sizes 4,16,64]
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from hostile_test import Server  # noqa: E402


def hwm_kib(server):
    with open(f"/proc/{server.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def tiny_entries(size):
    """Tabs of 900 entries each of Firefox's own pages (each left out with a warning): tiny values."""
    entry = '{"url":"about:x"}'
    tab = '{"entries":[' + ",".join([entry] * 900) + "]}"
    count = max(1, size // len(tab))
    windows = []
    while count > 0:
        take = min(count, 10_000)
        windows.append('{"tabs":[' + ",".join([tab] * take) + "]}")
        count -= take
    return ('{"windows":[' + ",".join(windows) + "]}").encode()


def ordinary(size):
    """Tabs of ten entries with 100-byte URLs and 50-character titles: what a real session holds."""
    def tab(i):
        entries = [{"url": f"https://site{i % 97}.example/{'p' * 70}/{i}/{n}", "title": f"{'T' * 45} {n}"} for n in range(10)]
        return json.dumps({"entries": entries, "index": 10})
    sample = tab(0)
    count = max(1, size // (len(sample) + 1))
    tabs = [tab(i) for i in range(count)]
    windows = [tabs[i:i + 5_000] for i in range(0, len(tabs), 5_000)]
    return ('{"windows":[' + ",".join('{"tabs":[' + ",".join(w) + "]}" for w in windows) + "]}").encode()


def import_once(binary, work, body, limit):
    server = Server(binary, tempfile.mkdtemp(dir=work), "--max-import-bytes", str(limit), "--profile-max-bytes", str(1 << 30))
    idle = hwm_kib(server)
    started = time.time()
    status, _, answer = server.call("POST", "/v1/profiles/import?format=firefox", raw=body, timeout=600)
    elapsed = time.time() - started
    peak = hwm_kib(server)
    warnings = len(answer.get("warnings", [])) if isinstance(answer, dict) else 0
    server.stop()
    return status, (peak - idle) / 1024, elapsed, warnings


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--sizes", default="4,16,64")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="browserd-hostile-import-") as work:
        print("decoded MiB | shape | status | peak RSS over idle (MiB) | MiB per decoded MiB | seconds | warnings listed")
        for size in [int(s) for s in args.sizes.split(",")]:
            for name, make in (("tiny entries", tiny_entries), ("ordinary", ordinary)):
                body = make(size << 20)
                status, peak, elapsed, warnings = import_once(args.binary, work, body, max(len(body), 1 << 20) + 1024)
                decoded = len(body) / (1 << 20)
                print(f"{decoded:11.1f} | {name:12} | {status} | {peak:8.1f} | {peak / decoded:6.1f} | {elapsed:6.2f} | {warnings}")
        print()
        print("groups x tabs (10,000 tabs of one entry)")
        tabs = ",".join(f'{{"entries":[{{"url":"https://t.example/{i}"}}],"groupId":"g{i % 10_000}"}}' for i in range(10_000))
        for groups in (10, 10_000):
            declared = ",".join(f'{{"id":"g{i}","name":"G{i}"}}' for i in range(groups))
            body = f'{{"windows":[{{"tabs":[{tabs}],"groups":[{declared}]}}]}}'.encode()
            status, peak, elapsed, warnings = import_once(args.binary, work, body, 64 << 20)
            print(f"  {groups:6} groups: {status} in {elapsed:.2f} s, peak +{peak:.1f} MiB")


if __name__ == "__main__":
    main()
