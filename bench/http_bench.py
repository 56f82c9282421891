"""HTTP throughput of browserd against nginx answering the same bytes, in one run.

For each endpoint: 2 s warm-up, then `wrk -t2 -c64 -d10s --latency` (keep-alive), measuring the
server's CPU time (utime+stime from /proc) over the run. nginx (2 workers) answers the same bytes
with `return 200` from its own config on another loopback port. Client and servers share the cores.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from common import children, cpu_seconds, free_port, parse_wrk, wait_http

parser = argparse.ArgumentParser()
parser.add_argument("--browserd", required=True)
parser.add_argument("--duration", default=os.environ.get("BENCH_DURATION", "10s"))
parser.add_argument("--connections", type=int, default=64)
args = parser.parse_args()

work = tempfile.mkdtemp(prefix="browserd-bench-")
bd_port, ngx_port = free_port(), free_port()
browserd = subprocess.Popen([args.browserd, "serve", "--port", str(bd_port), "--data-dir", f"{work}/data",
                             "--log-level", "warning", "--per-ip-connection-limit", "0",
                             "--profile-write-bytes-per-second", "0"], stdout=subprocess.DEVNULL)
nginx = None
try:
    wait_http(bd_port)
    import json as _json

    def call(method, path, body=None):
        data = _json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{bd_port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        return _json.loads(urllib.request.urlopen(req).read() or b"{}")

    profile = call("POST", "/v1/profiles", {"name": "bench"})["id"]
    window = call("POST", "/v1/browsers", {"profileId": profile})["id"]
    for i in range(50):
        tab = call("POST", f"/v1/browsers/{window}/tabs", {"url": f"https://site{i}.example/articles/{i}?ref=bench", "activate": i == 0})
        call("PATCH", f"/v1/tabs/{tab['id']}", {"title": f"Article {i}: a reasonably long page title for the benchmark", "loading": False,
                                                 "faviconUrl": f"https://site{i}.example/favicon.ico"})
    pair_window = call("POST", "/v1/browsers", {"profileId": profile})["id"]
    paths = ["/healthz", "/v1", f"/v1/browsers/{window}"]
    bodies = {path: urllib.request.urlopen(f"http://127.0.0.1:{bd_port}{path}").read() for path in paths}

    def nginx_string(body):
        text = body.decode()
        assert "'" not in text and "$" not in text
        return "'" + text.replace("\\", "\\\\") + "'"

    conf = f"""
worker_processes 2;
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  sendfile on;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{ngx_port};
    default_type application/json;
    location = /healthz {{ return 200 {nginx_string(bodies['/healthz'])}; }}
    location = /v1 {{ return 200 {nginx_string(bodies['/v1'])}; }}
    location = /v1/browsers/{window} {{ alias {work}/window.json; }}
  }}
}}
"""
    # nginx's `return` takes at most ~4 KB: the window's bytes are served from a file instead.
    with open(f"{work}/window.json", "wb") as f:
        f.write(bodies[paths[2]])
    with open(f"{work}/nginx.conf", "w") as f:
        f.write(conf)
    check = subprocess.run(["nginx", "-t", "-c", f"{work}/nginx.conf", "-p", work], capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit(f"nginx refused the benchmark config: {check.stderr}")
    nginx = subprocess.Popen(["nginx", "-c", f"{work}/nginx.conf", "-p", work], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    wait_http(ngx_port)
    time.sleep(0.3)

    def run(port, path, pids):
        subprocess.run(["wrk", "-t2", f"-c{args.connections}", "-d2s", f"http://127.0.0.1:{port}{path}"],
                       capture_output=True)
        before = cpu_seconds(pids())
        out = subprocess.run(["wrk", "-t2", f"-c{args.connections}", f"-d{args.duration}", "--latency",
                              f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True).stdout
        used = cpu_seconds(pids()) - before
        result = parse_wrk(out)
        result["cpu_us"] = used / max(1, result["requests"]) * 1e6
        return result

    rows = []
    for path in paths:
        b = run(bd_port, path, lambda: [browserd.pid])
        n = run(ngx_port, path, lambda: [nginx.pid] + children(nginx.pid))
        rows.append(("/v1/browsers/{id}" if path == paths[2] else path, len(bodies[path]), b, n))

    env = dict(os.environ, WINDOWS=pair_window)
    before = cpu_seconds([browserd.pid])
    out = subprocess.run(["wrk", "-t2", f"-c{args.connections}", f"-d{args.duration}", "--latency", "-s", "bench/spread_pairs.lua",
                          f"http://127.0.0.1:{bd_port}"], capture_output=True, text=True, env=env).stdout
    pairs = parse_wrk(out)
    pairs["cpu_us"] = (cpu_seconds([browserd.pid]) - before) / max(1, pairs["requests"]) * 1e6

    print(f"\nHTTP: wrk -t2 -c{args.connections} -d{args.duration} keep-alive, same bytes from both servers, one run")
    print(f"{'endpoint':<18} {'bytes':>6} | {'browserd req/s':>14} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs/req':>10} | "
          f"{'nginx req/s':>11} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs/req':>10} | {'ratio':>5}")
    summary = []
    for path, size, b, n in rows:
        ratio = b["rps"] / n["rps"]
        print(f"{path:<18} {size:>6} | {b['rps']:>14.0f} {b['p50']:>7.2f} {b['p99']:>7.2f} {b['cpu_us']:>10.1f} | "
              f"{n['rps']:>11.0f} {n['p50']:>7.2f} {n['p99']:>7.2f} {n['cpu_us']:>10.1f} | {ratio:>5.2f}")
        if b["non2xx"]:
            print(f"  warning: browserd answered {b['non2xx']} non-2xx responses on {path}")
        summary.append({"endpoint": path, "bytes": size, "browserd": b, "nginx": n, "ratio": ratio})
    print(f"{'POST+DELETE tab':<18} | {pairs['rps']:>14.0f} req/s ({pairs['rps'] / 2:.0f} pairs/s) p50 {pairs['p50']:.2f} ms "
          f"p99 {pairs['p99']:.2f} ms, CPU {pairs['cpu_us']:.1f} µs/req, non-2xx {pairs['non2xx']} (durable: WAL, synchronous=FULL, group commit)")
    summary.append({"endpoint": "POST+DELETE tab", "browserd": pairs})
    os.makedirs("bench/out", exist_ok=True)
    with open("bench/out/http.json", "w") as f:
        json.dump(summary, f, indent=2)
finally:
    browserd.send_signal(signal.SIGTERM)
    if nginx:
        nginx.send_signal(signal.SIGQUIT)
    for p in [browserd, nginx]:
        if p:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
    if browserd.returncode not in (0, None):
        print(f"browserd exited with {browserd.returncode}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
