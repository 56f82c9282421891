#!/usr/bin/env python3
"""Flat cost: what one durable mutation costs as the state around it grows (issue 12).

Starts the release browserd on a fresh data directory and, for each shape, builds the state through
the API, then drives wrk -t2 -c64 against it:
  - open/close pairs (POST a tab, DELETE it) in the target window of each shape: a 20-tab window alone
    in its profile (the baseline), 2,000- and 9,900-tab windows (the cap is 10,000 and 64 clients open at once),
    and a 20-tab window in a profile of
    1,000 windows; plus the chart's series (10/100/1,000/9,900 tabs; 1/10/100/1,000 windows);
  - a page-state stream: PATCH of progress on random tabs of a 2,000-tab window.
Reports mutations/s, p50/p99 and server CPU per mutation (from /proc over the run), each shape beside
the baseline (a 20-tab window alone in its profile) measured just before it in the same server (the
heap and the database grow as shapes are built); every run follows a 2-s unmeasured warm-up. Writes bench/out/flat_cost.json and docs/flat-cost.svg.

Usage: bench/flat_cost.py --browserd PATH [--duration 6s] [--quick]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_seconds, free_port, parse_wrk, wait_http  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class API:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                text = reply.read()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"{method} {path}: {error.code} {error.read().decode(errors='replace')}") from None

    def profile(self):
        return self.call("POST", "/v1/profiles", {"name": "bench"})["id"]

    def window(self, profile, tabs):
        window = self.call("POST", "/v1/browsers", {"profileId": profile})["id"]
        ids = [self.call("POST", f"/v1/browsers/{window}/tabs", {"url": f"https://bench.example/{i}", "activate": False})["id"]
               for i in range(tabs)]
        return window, ids

    def trim(self, window, keep):
        """Closes the tabs of `window` that are not in `keep` (opens a cut-off run left behind). Requests
        of the run that were in flight when wrk stopped may still close some meanwhile: list again."""
        keep = set(keep)
        for attempt in range(10):
            time.sleep(0.2)
            extra = [t["id"] for t in self.call("GET", f"/v1/browsers/{window}/tabs")["items"] if t["id"] not in keep]
            if not extra:
                return
            try:
                self.call("POST", f"/v1/browsers/{window}/close-tabs", {"tabIds": extra})
                return
            except RuntimeError:
                continue
        raise RuntimeError(f"could not close the extra tabs of {window}")


def wrk(port, script, duration, env, pid, warm="2s", settle=None):
    """One measured run, after an unmeasured warm-up of the same load (the first shape would
    otherwise pay for the server's caches, allocator and page cache warming up). `settle` runs after
    each (it closes the tabs a cut-off run of open/close pairs left open)."""
    subprocess.run(["wrk", "-t2", "-c64", f"-d{warm}", "-s", script, f"http://127.0.0.1:{port}"],
                   capture_output=True, env=dict(os.environ, **env), cwd=ROOT)
    if settle:
        settle()
    before = cpu_seconds([pid])
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{duration}", "--latency", "-s", script, f"http://127.0.0.1:{port}"],
                         capture_output=True, text=True, env=dict(os.environ, **env), cwd=ROOT).stdout
    result = parse_wrk(out)
    result["cpu_us"] = (cpu_seconds([pid]) - before) / max(1, result["requests"]) * 1e6
    if settle:
        settle()
    return result


def svg(series, path):
    """A small line chart: CPU µs per mutation against the size of the state, one line per series."""
    width, height, left, bottom, top, right = 640, 360, 70, 50, 30, 170
    points = [p for s in series for p in s["points"]]
    ymax = max(p[1] for p in points) * 1.15
    xs = sorted({p[0] for p in points})
    import math
    def x(v):
        lo, hi = math.log10(min(xs)), math.log10(max(xs))
        return left + (math.log10(v) - lo) / ((hi - lo) or 1) * (width - left - right)
    def y(v):
        return height - bottom - v / ymax * (height - bottom - top)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="14">CPU per durable mutation (open/close pair halves), wrk -c64</text>',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>']
    for v in xs:
        out.append(f'<text x="{x(v):.0f}" y="{height - bottom + 16}" text-anchor="middle">{v:,}</text>')
    out.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 12}" text-anchor="middle">tabs per window / windows per profile</text>')
    for i in range(5):
        v = ymax * i / 4
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.0f}" text-anchor="end">{v:.0f}</text>')
        out.append(f'<line x1="{left}" y1="{y(v):.0f}" x2="{width - right}" y2="{y(v):.0f}" stroke="#ddd"/>')
    out.append(f'<text x="16" y="{(top + height - bottom) / 2:.0f}" transform="rotate(-90 16 {(top + height - bottom) / 2:.0f})" '
               'text-anchor="middle">µs CPU / mutation</text>')
    colours = ["#1f77b4", "#d62728", "#2ca02c"]
    for i, s in enumerate(series):
        c = colours[i % len(colours)]
        pts = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in s["points"])
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"/>')
        for a, b in s["points"]:
            out.append(f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="3" fill="{c}"/>')
        out.append(f'<text x="{width - right + 10}" y="{top + 20 + 18 * i}" fill="{c}">{s["name"]}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--browserd", required=True)
    parser.add_argument("--duration", default=os.environ.get("BENCH_DURATION", "6s"))
    parser.add_argument("--quick", action="store_true", help="only the four shapes of the floors")
    args = parser.parse_args()

    data = tempfile.mkdtemp(prefix="browserd-flat-")
    port = free_port()
    server = subprocess.Popen([args.browserd, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning",
                               "--profile-write-bytes-per-second", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(port)
        api = API(port)
        results = {}

        # The baseline: a 20-tab window alone in its profile. The server's heap and database grow as
        # the shapes are built, so each shape is compared with the baseline measured just before it.
        base_window, base_ids = api.window(api.profile(), 20)
        baselines = []

        def measure(name, script, env, settle=None):
            base = wrk(port, "bench/spread_pairs.lua", args.duration, {"WINDOWS": base_window}, server.pid,
                       settle=lambda: api.trim(base_window, base_ids))
            baselines.append(base)
            result = wrk(port, script, args.duration, env, server.pid, settle=settle)
            result["baseline_cpu_us"] = base["cpu_us"]
            result["baseline_rps"] = base["rps"]
            results[name] = result

        def pairs(name, window, ids):
            measure(name, "bench/spread_pairs.lua", {"WINDOWS": window}, settle=lambda: api.trim(window, ids))

        # Windows per profile: 1, 10, 100, 1,000; the target window has 20 tabs.
        profile = api.profile()
        target, target_ids = api.window(profile, 20)
        made = 1
        for count in ([1000] if args.quick else [1, 10, 100, 1000]):
            while made < count:
                api.window(profile, 2)
                made += 1
            pairs(f"20 tabs, {count} windows" if count > 1 else "20 tabs, 1 window", target, target_ids)
        # Tabs per window, each in a profile of its own.
        for count in ([2000, 9900] if args.quick else [10, 100, 1000, 2000, 9900]):
            window, ids = api.window(api.profile(), count)
            pairs(f"{count} tabs, 1 window", window, ids)
            if count == 2000:
                tabs_file = os.path.join(data, "tabs.txt")
                with open(tabs_file, "w") as f:
                    f.write("\n".join(ids) + "\n")
                measure("page state, 2000 tabs", "bench/page_state.lua", {"TABS_FILE": tabs_file})

        first = baselines[0]
        print(f"\nFlat cost: durable mutations through the API, wrk -t2 -c64 -d{args.duration}, one server, one run;")
        print("each shape beside the baseline (open/close pairs in a 20-tab window alone in its profile) measured just before it")
        print(f"{'shape':<24} {'mut/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs/mut':>11} {'baseline':>9} {'ratio':>6} {'non-2xx':>8}")
        print(f"{'baseline (first run)':<24} {first['rps']:>7.0f} {first['p50']:>7.2f} {first['p99']:>7.2f} {first['cpu_us']:>11.1f} {'':>9} {'':>6} {first['non2xx']:>8}")
        for name, r in results.items():
            print(f"{name:<24} {r['rps']:>7.0f} {r['p50']:>7.2f} {r['p99']:>7.2f} {r['cpu_us']:>11.1f} {r['baseline_cpu_us']:>9.1f} "
                  f"{r['cpu_us'] / r['baseline_cpu_us']:>5.2f}x {r['non2xx']:>8}")
        low = min(b["cpu_us"] for b in baselines)
        high = max(b["cpu_us"] for b in baselines)
        print(f"baseline over the run: {low:.1f} to {high:.1f} µs/mut, {min(b['rps'] for b in baselines):.0f} to {max(b['rps'] for b in baselines):.0f} mut/s")
        os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "out", "flat_cost.json"), "w") as f:
            json.dump(results, f, indent=2)
        if not args.quick:
            tabs = [(n, results[f"{n} tabs, 1 window"]["cpu_us"]) for n in (10, 100, 1000, 9900)]
            windows = [(n, results["20 tabs, 1 window" if n == 1 else f"20 tabs, {n} windows"]["cpu_us"]) for n in (1, 10, 100, 1000)]
            base = [(n, results[name]["baseline_cpu_us"]) for n, name in
                    ((10, "10 tabs, 1 window"), (100, "100 tabs, 1 window"), (1000, "1000 tabs, 1 window"), (9900, "9900 tabs, 1 window"))]
            svg([{"name": "tabs per window", "points": tabs}, {"name": "windows per profile", "points": windows},
                 {"name": "baseline, just before", "points": base}],
                os.path.join(ROOT, "docs", "flat-cost.svg"))
            print("chart: docs/flat-cost.svg")
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
