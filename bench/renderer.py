#!/usr/bin/env python3
"""browserd-renderer with a real Chromium against a release browserd, pages served on loopback:

- Chromium's commit of a page's own navigation (its DevTools event arriving at the renderer) to that
  entry's event at a watcher of the window's stream, p50 and p99, reported from the page's list
  (before) and from the commit's step (now), beside the same path for a navigation a client sends
  (POST sent -> event: browserd's part alone), measured in the same run;
- CPU per navigation: the renderer's process (renderer and watcher), browserd's and Chromium's;
- Chromium's memory per live page;
- a page's reports alone (`renderer-bench --requests`): the renderer's CPU per request, its own way
  (`TabReports`) and through the generated client, in the same run.

Usage: bench/renderer.py [--navigations 200] [--live-pages 10] [--chromium-nice N] [--baseline PATH [--rounds 3]]   (builds what it runs, release)
"""
import argparse
import http.server
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_seconds, free_port, wait_http  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path, _, query = self.path.partition("?")
        args = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
        if path == "/chain":
            n, last = int(args.get("n", 0)), int(args.get("last", 0))
            script = "" if n >= last else f"addEventListener('load', () => location.href = '/chain?n={n + 1}&last={last}')"
            body = f"<!doctype html><title>Chain {n}</title><p>{n}</p><script>{script}</script>"
        elif path == "/static":
            body = "<!doctype html><title>Static</title>" + "<p>Lorem ipsum dolor sit amet.</p>" * 200
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--navigations", type=int, default=200)
    parser.add_argument("--live-pages", type=int, default=10)
    parser.add_argument("--baseline", help="another renderer-bench (e.g. an older commit's renderer, built with this "
                        "RendererBench.swift): run beside this one, alternated, on the same browserd build")
    parser.add_argument("--rounds", type=int, default=3, help="baseline and this bench alternated this many times (with --baseline)")
    parser.add_argument("--chromium-nice", type=int, default=None,
                        help="Chromium's niceness above the renderer's (default: browserd-renderer's own, 5)")
    args = parser.parse_args()
    subprocess.run(["swift", "build", "-c", "release", "--product", "browserd"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["swift", "build", "-c", "release", "--package-path", "clients/swift", "--product", "renderer-bench"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    server_bin = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.strip()
    bench_bin = subprocess.run(["swift", "build", "-c", "release", "--package-path", "clients/swift", "--show-bin-path"],
                               cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    try:
        if not args.baseline:
            run(f"{server_bin}/browserd", f"{bench_bin}/renderer-bench", pages, args, echo=True)
            reports(f"{server_bin}/browserd", f"{bench_bin}/renderer-bench")
            return
        rounds = []
        for _ in range(args.rounds):
            rounds.append([run(f"{server_bin}/browserd", bench, pages, args, echo=False)
                           for bench in (args.baseline, f"{bench_bin}/renderer-bench")])
        print(f"renderer bench, {args.baseline} (baseline) and this renderer alternated, {args.navigations} navigations, "
              "Chromium's commit -> the watcher's event, CPU per navigation:")
        for i, pair in enumerate(rounds, 1):
            print(f"  {i}: " + " | ".join(
                f"{name} failed" if r is None else
                f"{name} p50 {r['commit_p50_ms']:5.2f} ms p99 {r['commit_p99_ms']:6.2f} ms, renderer {r['cpu_ms_per_navigation']:5.2f} ms, "
                f"watcher {r.get('watcher_cpu_ms_per_navigation', float('nan')):4.2f} ms"
                for name, r in zip(("baseline", "this"), pair)))
    finally:
        pages.shutdown()


def bench_process(command, timeout):
    """Runs `command` in a session of its own and waits for it; past `timeout` seconds, or a minute
    after it ended while a process it spawned still holds its output (its watcher, when the bench died),
    the whole session is killed, so that a failed run never hangs this script."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + timeout
    while True:
        try:
            stdout, stderr = process.communicate(timeout=5)
            break
        except subprocess.TimeoutExpired:
            if process.poll() is not None:
                # Ended: what still holds its output (a Chromium it started, which exits once its pipe
                # ends) gets a minute more, its watcher none beyond that.
                deadline = min(deadline, time.monotonic() + 60)
            if time.monotonic() < deadline:
                continue
            kill_session(process.pid)
            stdout, stderr = process.communicate()
            break
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def kill_session(sid):
    """Kills every process of session `sid` (the bench's: it, its watcher and the Chromium it started, whatever
    process groups they made; an older bench's watcher had a group of its own and held the output for ever)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getsid(int(entry)) == sid:
                os.kill(int(entry), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # gone already


def run(browserd, bench, pages, args, echo):
    """One run of `bench` against a fresh browserd: its RESULT figures (printed whole with `echo`)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        server = subprocess.Popen([browserd, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning"])
        try:
            wait_http(port)
            before = cpu_seconds([server.pid])
            done = bench_process([bench, "--server", f"http://127.0.0.1:{port}",
                                  "--pages", f"http://127.0.0.1:{pages.server_address[1]}",
                                  "--navigations", str(args.navigations), "--live-pages", str(args.live_pages)]
                                 + ([] if args.chromium_nice is None else ["--chromium-nice", str(args.chromium_nice)]),
                                 timeout=args.navigations + 300)
            if echo:
                sys.stdout.write(done.stdout)
            if done.returncode != 0:
                # Its error first (a Swift error is the first line), then the end of what it wrote.
                first = [line for line in done.stderr.splitlines() if "error" in line.lower()][:3]
                sys.stderr.write("\n".join(first) + "\n" + done.stderr[-2000:] + "\n")
                if echo:
                    sys.exit(f"renderer bench failed ({done.returncode})")
                # Beside a baseline, one failed run is reported and the others still count.
                print(f"  {bench}: failed ({done.returncode}): {first[0] if first else 'no error line'}")
                return None
            spent = cpu_seconds([server.pid]) - before
            if echo:
                # browserd's CPU over the run: both paths (2 x navigations) and the live pages' loads.
                print(f"  browserd CPU over the run: {spent * 1000:.0f} ms, {spent * 1000 / (2 * args.navigations):.2f} ms per navigation "
                      "(either path; page-state reports included)")
            line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), "RESULT")
            return {k: float(v) for k, v in (part.split("=", 1) for part in line.split()[1:])}
        finally:
            server.terminate()
            server.wait(timeout=10)


def reports(browserd, bench, count=1000):
    """A page's two reports per navigation alone (its commit, then its state) through the renderer's
    client, against a fresh browserd: the renderer's CPU per request, what a navigation's reports cost."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        server = subprocess.Popen([browserd, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning",
                                   "--profile-write-bytes-per-second", "0"])
        try:
            wait_http(port)
            done = subprocess.run([bench, "--server", f"http://127.0.0.1:{port}", "--requests", str(count)],
                                  capture_output=True, text=True, check=True)
            for line in done.stdout.splitlines()[:2]:  # the renderer's way, then the generated client's
                print("  " + line)
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
