"""Event-stream delivery: W watchers on one window while a client mutates it at R mutations/s.

Reports, per scenario, the delivery latency (mutation acknowledged -> event received by every
watcher; p50/p99), events delivered vs expected, server CPU, server RSS per idle watcher and the load
client's own CPU. Each scenario runs twice in the same run: with browserd's default tick (events
gathered for 20 ms, one wake-up per stream per tick) and, as the baseline, with a 1 ms tick (about
one wake-up per event, what an uncoalesced server does). The watchers are one asyncio event loop in
this process (no thread per watcher); they share the 2 cores with the server.

Usage: bench/sse.py --browserd PATH [--scenarios 1000x100,10000x2] [--seconds 10]
"""
import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import subprocess
import tempfile
import time

from common import cpu_seconds, free_port, rss_kib, wait_http

parser = argparse.ArgumentParser()
parser.add_argument("--browserd", required=True)
parser.add_argument("--scenarios", default="1000x100,10000x2,200x300")
parser.add_argument("--seconds", type=float, default=10)
parser.add_argument("--ticks", default="20,1")
args = parser.parse_args()

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

MARK = re.compile(rb'"title":"bench-(\d+)"')


async def request(reader, writer, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(data)}\r\n"
    if body is not None:
        head += "Content-Type: application/json\r\n"
    writer.write(head.encode() + b"\r\n" + data)
    await writer.drain()
    status_line = await reader.readline()
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    payload = await reader.readexactly(length) if length else b""
    return int(status_line.split()[1]), payload


class Watcher(asyncio.Protocol):
    """One stream, as a protocol (data_received callbacks: no coroutine per read)."""

    def __init__(self, path, ready):
        self.path = path
        self.ready = ready
        self.arrivals = {}
        self.last = -1
        self.tail = b""
        self.started = False
        self.head = b""
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())

    def data_received(self, data):
        if not self.started:
            self.head += data
            if b"location.update" in self.head:
                self.started = True
                self.ready.append(1)
                self.head = b""
            return
        now = time.monotonic()
        text = self.tail + data
        for match in MARK.finditer(text):
            i = int(match.group(1))
            if i > self.last:
                self.last = i
                self.arrivals[i] = now
        self.tail = text[-48:]


async def scenario(watchers, rate, tick):
    data = tempfile.mkdtemp(prefix="browserd-sse-bench-")
    port = free_port()
    server = subprocess.Popen([args.browserd, "--port", str(port), "--data-dir", data, "--log-level", "warning",
                               "--event-tick-ms", str(tick), "--max-streams", str(watchers + 100),
                               "--max-streams-per-profile", str(watchers + 100), "--connection-limit", str(watchers + 1000),
                               "--per-ip-connection-limit", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(port, "/readyz")
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        _, body = await request(reader, writer, "POST", "/v1/profiles", {"name": "bench"})
        profile = json.loads(body)["id"]
        _, body = await request(reader, writer, "POST", "/v1/browsers", {"profileId": profile})
        window = json.loads(body)["id"]
        _, body = await request(reader, writer, "POST", f"/v1/browsers/{window}/tabs", {"url": "https://bench.example/"})
        tab = json.loads(body)["id"]
        rss_before = rss_kib([server.pid])
        ready = []
        started = time.time()
        loop = asyncio.get_running_loop()
        states = []
        for index in range(watchers):
            _, protocol = await loop.create_connection(lambda: Watcher(f"/v1/browsers/{window}/events", ready), "127.0.0.1", port)
            states.append(protocol)
        while len(ready) < watchers:
            await asyncio.sleep(0.05)
            if time.time() - started > 120:
                raise RuntimeError(f"only {len(ready)} of {watchers} watchers connected")
        connect_seconds = time.time() - started
        await asyncio.sleep(1.0)
        rss_idle = rss_kib([server.pid])
        cpu_server_before = cpu_seconds([server.pid])
        cpu_client_before = time.process_time()
        acks = {}
        interval = 1.0 / rate
        count = int(args.seconds * rate)
        begin = loop.time()
        for i in range(count):
            target = begin + i * interval
            delay = target - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            status, _ = await request(reader, writer, "PATCH", f"/v1/tabs/{tab}", {"title": f"bench-{i}"})
            if status != 200:
                raise RuntimeError(f"PATCH answered {status}")
            acks[i] = time.monotonic()
        # Let the last events arrive.
        deadline = loop.time() + 10
        while loop.time() < deadline and not all(s.last >= count - 1 for s in states):
            await asyncio.sleep(0.05)
        elapsed = loop.time() - begin
        cpu_server = cpu_seconds([server.pid]) - cpu_server_before
        cpu_client = time.process_time() - cpu_client_before
        for state in states:
            state.transport.close()
        writer.close()
        # Latency of mutation i: the last watcher's arrival minus the acknowledgement (0 if the event
        # arrived before the answer did).
        latencies = []
        delivered = 0
        for i in range(count):
            times = [s.arrivals.get(i) for s in states]
            got = [t for t in times if t is not None]
            delivered += len(got)
            if len(got) == len(states):
                latencies.append(max(0.0, max(got) - acks[i]) * 1000)
        # A watcher may skip a superseded title within one tick: what matters is that it saw the last.
        saw_last = sum(1 for s in states if s.last == count - 1)
        latencies.sort()
        def pct(p):
            return latencies[min(len(latencies) - 1, int(len(latencies) * p))] if latencies else float("nan")
        return {
            "watchers": watchers, "rate": rate, "tick_ms": tick, "mutations": count,
            "p50_ms": pct(0.50), "p99_ms": pct(0.99), "max_ms": latencies[-1] if latencies else float("nan"),
            "delivered": delivered, "expected": count * watchers, "saw_last": saw_last,
            "server_cpu_pct": cpu_server / elapsed * 100, "client_cpu_pct": cpu_client / elapsed * 100,
            "rss_per_watcher_kib": (rss_idle - rss_before) / watchers, "connect_s": connect_seconds,
        }
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)


async def main():
    rows = []
    for spec in args.scenarios.split(","):
        watchers, rate = (int(x) for x in spec.split("x"))
        for tick in (int(t) for t in args.ticks.split(",")):
            rows.append(await scenario(watchers, rate, tick))
    print(f"\nSSE delivery: watchers on one window, PATCH title at a fixed rate for {args.seconds:.0f} s; "
          f"latency = ack -> event at every watcher. Baseline: the same server with a 1 ms tick (no coalescing).")
    print(f"{'watchers':>8} {'mut/s':>6} {'tick':>5} | {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} | {'delivered':>19} "
          f"{'saw last':>9} | {'server CPU':>10} {'client CPU':>10} | {'RSS/watcher':>11} {'connect':>8}")
    for r in rows:
        print(f"{r['watchers']:>8} {r['rate']:>6} {r['tick_ms']:>3}ms | {r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f} {r['max_ms']:>7.1f} | "
              f"{r['delivered']:>9}/{r['expected']:<9} {r['saw_last']:>9} | {r['server_cpu_pct']:>9.0f}% {r['client_cpu_pct']:>9.0f}% | "
              f"{r['rss_per_watcher_kib']:>8.1f} KiB {r['connect_s']:>7.1f}s")
    os.makedirs("bench/out", exist_ok=True)
    with open("bench/out/sse.json", "w") as f:
        json.dump(rows, f, indent=2)


asyncio.run(main())
