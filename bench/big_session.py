#!/usr/bin/env python3
"""Big sessions: start-up time and memory follow the working set, not the stored state (issues 12, 26).

Seeds data directories with PersistenceBench (PROFILES × 10 windows × 1,000 tabs, 10 history entries
per tab, every URL distinct) and measures the release browserd on each, side by side in the same run:
  - lazy (the default: only the directory of profiles is read at start) against eager
    (`--preload-profiles true`, every profile restored before ready): time from exec to /readyz = 200
    and RSS once ready, for an empty store and each seeded one;
  - lazy: the first request to each cold 10,000-tab profile (a window's 1,000 tabs), p50/p99/max,
    and the same request once loaded;
  - RSS with every profile loaded, and per tab over the empty server; then with 1% of the tabs realized;
  - with `--profile-idle-seconds`: RSS after the profiles went idle and left memory, against the empty
    server's;
  - a second shape (issues 38, 54): 20 profiles × 10 windows × 500 tabs with ~110-byte URLs and ~55-byte
    titles (SEED_LONG=1), every window read once through the API, no tab realized: RSS per tab over the
    empty server, and the bytes of windows' answers kept (`--window-answer-cache-bytes`); first, the
    first request to each of its cold 5,000-tab profiles (issue 54: p50/p99/max, browserd's CPU per load).
Prints a table and writes bench/out/big_session.json and docs/big-session.svg.

Usage: bench/big_session.py --browserd PATH --seeder PATH [--profiles 10,100] [--idle-seconds 5]
       [--baseline-browserd PATH --baseline-seeder PATH [--rounds 3]]   (the second shape beside another build)
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_seconds, free_port, rss_kib  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
WINDOWS, TABS = 10, 1000


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=120) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError:
        return None, b""


def http(port, method, path):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=b"{}", method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def start(browserd, data, *extra):
    """Starts browserd on `data`; returns (seconds from exec to /readyz = 200, port, process)."""
    port = free_port()
    began = time.monotonic()
    server = subprocess.Popen([browserd, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning",
                               "--profile-write-bytes-per-second", "0", *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        status, _ = get(port, "/readyz")
        if status == 200:
            return time.monotonic() - began, port, server
        if server.poll() is not None:
            raise RuntimeError(f"browserd exited with {server.returncode} before it was ready")
        if time.monotonic() - began > 900:
            raise RuntimeError("not ready within 900 s")
        time.sleep(0.01)


def stop(server):
    server.terminate()
    server.wait(timeout=60)


def settle_rss(pid, seconds=1.0):
    time.sleep(seconds)
    return rss_kib([pid])


def anon_kib(pid):
    """The anonymous part of a process's RSS (heap and stacks; the rest is mapped code and data)."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssAnon:"))


def window(profile, index):
    return f"w{profile:08x}{index:08x}"


def timed_get(port, path):
    t0 = time.perf_counter()
    status, body = get(port, path)
    elapsed = time.perf_counter() - t0
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:200]!r}")
    return elapsed, body


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def chart(rows, path):
    """Two small panels side by side: RSS once ready (lazy: with every profile loaded too) and seconds from
    exec to ready, against the stored tabs, eager restore beside the lazy start."""
    sizes = sorted({r["tabs"] for r in rows})
    panel_w, height, left, bottom, top = 330, 340, 60, 60, 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * panel_w + 200}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{2 * panel_w + 200}" height="{height}" fill="white"/>',
           '<text x="10" y="18" font-size="14">browserd start-up and memory against stored tabs (10 history entries each)</text>']
    series = [
        ("eager: RSS at ready", "#d62728", lambda r: r["mode"] == "eager", lambda r: r["rss_mib"], 0),
        ("lazy: RSS at ready", "#1f77b4", lambda r: r["mode"] == "lazy", lambda r: r["rss_mib"], 0),
        ("lazy: every profile loaded", "#2ca02c", lambda r: r["mode"] == "lazy", lambda r: r.get("all_loaded_rss_mib", r["rss_mib"]), 0),
        ("eager: s to ready", "#d62728", lambda r: r["mode"] == "eager", lambda r: r["ready_s"], 1),
        ("lazy: s to ready", "#1f77b4", lambda r: r["mode"] == "lazy", lambda r: r["ready_s"], 1),
    ]
    for panel, (title, unit) in enumerate([("RSS (MiB)", "MiB"), ("time from exec to /readyz = 200 (s)", "s")]):
        x0 = 10 + panel * (panel_w + 10)
        values = [get(r) for _, _, keep, get, p in series if p == panel for r in rows if keep(r)]
        ymax = max(values) * 1.15 or 1

        def x(size):
            return x0 + left + sizes.index(size) / max(1, len(sizes) - 1) * (panel_w - left - 20)

        def y(v):
            return height - bottom - v / ymax * (height - bottom - top)
        out.append(f'<text x="{x0 + left}" y="{top - 8}">{title}</text>')
        out.append(f'<line x1="{x0 + left}" y1="{height - bottom}" x2="{x0 + panel_w - 20}" y2="{height - bottom}" stroke="black"/>')
        out.append(f'<line x1="{x0 + left}" y1="{top}" x2="{x0 + left}" y2="{height - bottom}" stroke="black"/>')
        for size in sizes:
            out.append(f'<text x="{x(size):.0f}" y="{height - bottom + 16}" text-anchor="middle">{size:,}</text>')
        out.append(f'<text x="{x0 + (left + panel_w) / 2:.0f}" y="{height - bottom + 34}" text-anchor="middle">stored tabs</text>')
        for i in range(5):
            v = ymax * i / 4
            out.append(f'<text x="{x0 + left - 6}" y="{y(v) + 4:.0f}" text-anchor="end">{v:.0f}</text>' if unit == "MiB"
                       else f'<text x="{x0 + left - 6}" y="{y(v) + 4:.0f}" text-anchor="end">{v:.1f}</text>')
            out.append(f'<line x1="{x0 + left}" y1="{y(v):.0f}" x2="{x0 + panel_w - 20}" y2="{y(v):.0f}" stroke="#ddd"/>')
        for name, colour, keep, get_value, p in series:
            if p != panel:
                continue
            points = sorted((r["tabs"], get_value(r)) for r in rows if keep(r))
            dash = ' stroke-dasharray="5,4"' if "loaded" in name else ""
            out.append(f'<polyline points="{" ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in points)}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            for a, b in points:
                out.append(f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="3" fill="{colour}"/>')
    for i, (label, colour) in enumerate([("eager restore", "#d62728"), ("lazy start", "#1f77b4"), ("lazy, every profile", "#2ca02c"),
                                         ("loaded (RSS)", "#2ca02c")]):
        out.append(f'<text x="{2 * panel_w + 30}" y="{top + 20 + 18 * i}" fill="{colour}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def long_shape(args, scratch, empty_rss):
    """Issue 38's second shape: smaller profiles, longer strings. RSS per loaded unrealized tab."""
    profiles, windows, tabs = args.long_profiles, 10, 500
    data = os.path.join(scratch, "long")
    subprocess.run([args.seeder, "seed", data, str(profiles), str(windows), str(tabs)], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "SEED_LONG": "1"})
    ready, port, server = start(args.browserd, data)
    try:
        # The integrity check browserd runs at start (its own thread) ends first: it is not a load's.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "bd-db-check" in thread_names(server.pid):
            time.sleep(0.1)
        # Issue 54's cold measure: the first request to each stored 5,000-tab profile (its first window).
        cold = []
        cpu_before = cpu_seconds([server.pid])
        for p in range(profiles):
            elapsed, body = timed_get(port, f"/v1/browsers/{window(p, 0)}")
            assert len(json.loads(body)["tabs"]) == tabs
            cold.append(elapsed)
        cpu_per_load = (cpu_seconds([server.pid]) - cpu_before) / profiles
        # Every window read once through the API (issue 54's shape): what reads leave behind counts.
        for p in range(profiles):
            for w in range(1, windows):
                _, body = timed_get(port, f"/v1/browsers/{window(p, w)}")
                assert len(json.loads(body)["tabs"]) == tabs
        rss = settle_rss(server.pid)
        metrics = get(port, "/metrics")[1].decode()
        cached = next((float(x.split()[-1]) for x in metrics.splitlines() if x.startswith("browserd_window_answers_bytes ")), 0.0)
    finally:
        stop(server)
        shutil.rmtree(data, ignore_errors=True)
    count = profiles * windows * tabs
    return {"tabs": count, "profiles": profiles, "tabs_per_window": tabs, "rss_mib": rss / 1024,
            "rss_per_tab_b": (rss - empty_rss) * 1024 / count, "answers_cached_mib": cached / 2**20,
            "cold_p50_ms": percentile(cold, 50) * 1e3, "cold_p99_ms": percentile(cold, 99) * 1e3,
            "cold_max_ms": max(cold) * 1e3, "cold_cpu_ms_per_load": cpu_per_load * 1e3}


def long_shape_pairs(args, scratch):
    """The second shape on the baseline build and on this one, alternated `--rounds` times, each on a
    store its own seeder wrote and over its own empty server's RSS: (baseline, this) per round."""
    import types
    builds = [("baseline", args.baseline_browserd, args.baseline_seeder or args.seeder), ("this", args.browserd, args.seeder)]
    empty = {}
    for name, browserd, _ in builds:
        directory = os.path.join(scratch, f"empty-{name}")
        _, _, server = start(browserd, directory)
        empty[name] = settle_rss(server.pid)
        stop(server)
    pairs = []
    for _ in range(args.rounds):
        pair = []
        for name, browserd, seeder in builds:
            run = types.SimpleNamespace(browserd=browserd, seeder=seeder, long_profiles=args.long_profiles)
            pair.append(long_shape(run, scratch, empty[name]))
        pairs.append(pair)
    return pairs


def thread_names(pid):
    names = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                names.add(f.read().strip())
        except OSError:
            pass
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--browserd", required=True)
    parser.add_argument("--seeder", required=True, help="the release PersistenceBench")
    parser.add_argument("--profiles", default=os.environ.get("BENCH_BIG_PROFILES", "10,100"),
                        help="comma-separated profile counts (each profile: 10 windows × 1,000 tabs)")
    parser.add_argument("--idle-seconds", type=int, default=5, help="--profile-idle-seconds for the eviction run")
    parser.add_argument("--long-profiles", type=int, default=20,
                        help="profiles of the second shape (10 windows × 500 tabs, long URLs and titles); 0: skip it")
    parser.add_argument("--chart-only", action="store_true", help="draw docs/big-session.svg from bench/out/big_session.json")
    parser.add_argument("--baseline-browserd", help="another build (e.g. an older commit's release browserd): its second shape "
                        "is measured beside this one's, alternated, in the same run")
    parser.add_argument("--baseline-seeder", help="the PersistenceBench built with --baseline-browserd (its own schema)")
    parser.add_argument("--rounds", type=int, default=3, help="baseline and this build alternated this many times (with --baseline-browserd)")
    args = parser.parse_args()
    if args.chart_only:
        with open(os.path.join(ROOT, "bench", "out", "big_session.json")) as f:
            chart(json.load(f)["rows"], os.path.join(ROOT, "docs", "big-session.svg"))
        return
    rows, loads = [], []
    scratch = tempfile.mkdtemp(prefix="browserd-big-", dir=os.environ.get("BENCH_DIR"))
    try:
        empty = os.path.join(scratch, "empty")
        os.makedirs(empty)
        base = {}
        for mode, extra in (("lazy", ()), ("eager", ("--preload-profiles", "true"))):
            ready, _, server = start(args.browserd, empty, *extra)
            base[mode] = settle_rss(server.pid)
            base[mode + "_anon"] = anon_kib(server.pid)
            stop(server)
            rows.append({"tabs": 0, "mode": mode, "ready_s": ready, "rss_mib": base[mode] / 1024})
        for profiles in [int(p) for p in args.profiles.split(",")]:
            data = os.path.join(scratch, f"p{profiles}")
            t0 = time.monotonic()
            subprocess.run([args.seeder, "seed", data, str(profiles), str(WINDOWS), str(TABS)], check=True,
                           stdout=subprocess.DEVNULL)
            seeded = time.monotonic() - t0
            tabs = profiles * WINDOWS * TABS
            size = os.path.getsize(os.path.join(data, "browserd.sqlite"))

            # Eager: everything restored before ready (what every start did before).
            ready, port, server = start(args.browserd, data, "--preload-profiles", "true")
            try:
                rss = settle_rss(server.pid)
                served = len(json.loads(timed_get(port, f"/v1/browsers/{window(profiles - 1, 9)}/tabs")[1])["items"]) == TABS
                rows.append({"tabs": tabs, "mode": "eager", "ready_s": ready, "rss_mib": rss / 1024, "db_mib": size / 2**20,
                             "seed_s": seeded, "served": served,
                             "rss_per_tab_b": (rss - base["eager"]) * 1024 / tabs})
            finally:
                stop(server)

            # Lazy: ready from the directory; each profile loads on its first request.
            ready, port, server = start(args.browserd, data)
            try:
                ready_rss = settle_rss(server.pid, 0.5)
                cold, warm = [], []
                for p in range(profiles):
                    elapsed, body = timed_get(port, f"/v1/browsers/{window(p, p % WINDOWS)}/tabs")
                    assert len(json.loads(body)["items"]) == TABS
                    cold.append(elapsed)
                    warm.append(timed_get(port, f"/v1/browsers/{window(p, p % WINDOWS)}/tabs")[0])
                rss = settle_rss(server.pid)
                # 1% of the tabs realized (their histories read), spread over every profile and window.
                def realize(p):
                    for t in range(TABS * WINDOWS // 100):
                        status, _ = get(port, f"/v1/tabs/t{p:05x}{t % WINDOWS:05x}{t:05x}/history")
                        assert status == 200, status
                with concurrent.futures.ThreadPoolExecutor(4) as pool:
                    list(pool.map(realize, range(profiles)))
                realized_rss = settle_rss(server.pid)
                # Realizing one tab: its first back (reads its history, then goes back) against the
                # forward right after (realized already); both commit, so the difference is the read.
                first, second = [], []
                for t in range(200):
                    tab = f"t{0:05x}{1:05x}{t:05x}"
                    t0 = time.perf_counter()
                    status, _ = http(port, "POST", f"/v1/tabs/{tab}/back")
                    first.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    status2, _ = http(port, "POST", f"/v1/tabs/{tab}/forward")
                    second.append(time.perf_counter() - t0)
                    assert status == 200 and status2 == 200, (status, status2)
                realize_ms = (statistics.median(first) - statistics.median(second)) * 1e3
                rows.append({"tabs": tabs, "mode": "lazy", "ready_s": ready, "rss_mib": ready_rss / 1024, "db_mib": size / 2**20,
                             "all_loaded_rss_mib": rss / 1024, "rss_per_tab_b": (rss - base["lazy"]) * 1024 / tabs,
                             "realized_1pct_rss_mib": realized_rss / 1024})
                loads.append({"tabs": tabs, "profiles": profiles, "realize_ms": realize_ms,
                              "first_back_ms": statistics.median(first) * 1e3, "forward_ms": statistics.median(second) * 1e3,
                              "cold_p50_ms": percentile(cold, 50) * 1e3,
                              "cold_p99_ms": percentile(cold, 99) * 1e3, "cold_max_ms": max(cold) * 1e3,
                              "warm_p50_ms": statistics.median(warm) * 1e3})
            finally:
                stop(server)

            # Idle profiles leave: every profile loaded, then untouched for the idle time.
            ready, port, server = start(args.browserd, data, "--profile-idle-seconds", str(args.idle_seconds))
            try:
                for p in range(profiles):
                    timed_get(port, f"/v1/browsers/{window(p, 0)}")
                loaded_rss = settle_rss(server.pid, 0.5)
                deadline = time.monotonic() + args.idle_seconds * 3 + 30
                while time.monotonic() < deadline:
                    metrics = get(port, "/metrics")[1].decode()
                    line = next((x for x in metrics.splitlines() if x.startswith("browserd_profiles_loaded ")), "x 1")
                    if float(line.split()[-1]) == 0:
                        break
                    time.sleep(0.5)
                idle_rss = settle_rss(server.pid, 2)
                rows[-1].update({"idle_loaded_rss_mib": loaded_rss / 1024, "after_idle_rss_mib": idle_rss / 1024,
                                 "after_idle_vs_empty": idle_rss / base["lazy"],
                                 "after_idle_anon_mib": anon_kib(server.pid) / 1024, "empty_anon_mib": base["lazy_anon"] / 1024})
            finally:
                stop(server)
            shutil.rmtree(data, ignore_errors=True)
        long = long_shape(args, scratch, base["lazy"]) if args.long_profiles else None
        pairs = long_shape_pairs(args, scratch) if args.long_profiles and args.baseline_browserd else []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print("\nBig sessions: 10 windows × 1,000 tabs per profile, 10 history entries per tab (every URL distinct), one run")
    print(f"{'tabs':>9} {'mode':<6} {'DB MiB':>7} {'ready s':>8} {'RSS at ready':>13} {'RSS all loaded':>15} {'RSS/tab':>9} "
          f"{'RSS after idle':>15}")
    for r in rows:
        def mib(key):
            return f"{r[key]:>10.0f} MiB" if key in r else ""
        per = f"{r['rss_per_tab_b']:>7.0f} B" if "rss_per_tab_b" in r else ""
        db = f"{r['db_mib']:>7.0f}" if "db_mib" in r else ""
        loaded = mib("all_loaded_rss_mib") if r["mode"] == "lazy" else mib("rss_mib")
        idle = (f"{r['after_idle_rss_mib']:>6.1f} MiB ({r['after_idle_vs_empty']:.2f}× empty; "
                f"anonymous {r['after_idle_anon_mib']:.1f} against {r['empty_anon_mib']:.1f} MiB)"
                if "after_idle_rss_mib" in r else "")
        print(f"{r['tabs']:>9,} {r['mode']:<6} {db:>7} {r['ready_s']:>8.2f} {r['rss_mib']:>9.1f} MiB {loaded:>15} {per:>9} {idle}")
    for r in rows:
        if "realized_1pct_rss_mib" in r:
            print(f"  {r['tabs']:>9,} tabs, 1% of them realized (their histories read): RSS {r['realized_1pct_rss_mib']:.0f} MiB "
                  f"(all unrealized: {r['all_loaded_rss_mib']:.0f} MiB)")
    if long:
        print(f"\nSecond shape: {long['tabs']:,} tabs in {long['profiles']} profiles × 10 windows × {long['tabs_per_window']} tabs, "
              f"~110-byte URLs, ~55-byte titles, every profile loaded, no tab realized: RSS {long['rss_mib']:.0f} MiB, "
              f"{long['rss_per_tab_b']:.0f} B per tab over the empty server (aim: at most 1,200); every window read once, "
              f"{long['answers_cached_mib']:.1f} MiB of their answers kept")
        print(f"  Cold: the first request to each stored {long['tabs'] // long['profiles']:,}-tab profile "
              f"(its first window): p50 {long['cold_p50_ms']:.0f} ms, p99 {long['cold_p99_ms']:.0f} ms, max {long['cold_max_ms']:.0f} ms "
              f"(aim: p50 at most 60, p99 at most 100); browserd's CPU per load {long['cold_cpu_ms_per_load']:.0f} ms")
    if pairs:
        print(f"\nSecond shape, {args.baseline_browserd} (baseline) and this build alternated, {len(pairs)} rounds:")
        for i, (old, new) in enumerate(pairs, 1):
            def row(r):
                return (f"cold p50 {r['cold_p50_ms']:4.0f} ms, p99 {r['cold_p99_ms']:4.0f} ms, CPU/load {r['cold_cpu_ms_per_load']:4.0f} ms, "
                        f"{r['rss_per_tab_b']:5.0f} B/tab")
            print(f"  {i}: baseline {row(old)} | this {row(new)}")
    print("\nFirst request to a cold profile (its 10,000 tabs loaded; the answer is one window's 1,000 tabs), lazy:")
    for r in loads:
        print(f"  {r['tabs']:>9,} stored tabs, {r['profiles']} profiles: cold p50 {r['cold_p50_ms']:.0f} ms, "
              f"p99 {r['cold_p99_ms']:.0f} ms, max {r['cold_max_ms']:.0f} ms; the same request warm p50 {r['warm_p50_ms']:.1f} ms")
        print(f"    realizing one tab: first back {r['first_back_ms']:.2f} ms against the forward after it "
              f"{r['forward_ms']:.2f} ms (medians of 200): {r['realize_ms']:.2f} ms")
    os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "out", "big_session.json"), "w") as f:
        json.dump({"rows": rows, "loads": loads, "long_shape": long, "long_shape_pairs": pairs}, f, indent=2)
    chart(rows, os.path.join(ROOT, "docs", "big-session.svg"))
    print("chart: docs/big-session.svg")


if __name__ == "__main__":
    main()
