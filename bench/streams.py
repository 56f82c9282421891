"""Idle streams held by one server process: connect N streaming clients, broadcast events, report
connect time, delivery and server RSS per stream. The client is one asyncio event loop (no thread per
stream); it shares the cores with the server."""
import argparse
import asyncio
import resource
import subprocess
import time
import urllib.request

from common import cpu_seconds, free_port, rss_kib, wait_http

parser = argparse.ArgumentParser()
parser.add_argument("--server", required=True)
parser.add_argument("--streams", type=int, default=10000)
parser.add_argument("--events", type=int, default=5)
args = parser.parse_args()

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
if args.streams + 100 > hard:
    raise SystemExit(f"open-file limit {hard} is too low for {args.streams} streams")

port = free_port()
server = subprocess.Popen([args.server, str(port), str(args.streams + 1000)], stdout=subprocess.DEVNULL)


async def stream(received, ready):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    buffer = b""
    while b": connected" not in buffer:
        chunk = await reader.read(4096)
        if not chunk:
            return writer
        buffer += chunk
    ready.append(1)
    buffer = b""
    while True:
        chunk = await reader.read(4096)
        if not chunk:
            return writer
        buffer += chunk
        while b"event: tick" in buffer:
            received.append(1)
            buffer = buffer[buffer.index(b"event: tick") + 11:]


def post(path):
    return urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST")).read()


async def main():
    wait_http(port, "/stats")
    idle_rss = rss_kib([server.pid])
    received, ready = [], []
    start = time.time()
    tasks = []
    for i in range(args.streams):
        tasks.append(asyncio.create_task(stream(received, ready)))
        if i % 500 == 499:
            await asyncio.sleep(0.05)
    while len(ready) < args.streams and time.time() - start < 120:
        await asyncio.sleep(0.1)
    connect_s = time.time() - start
    await asyncio.sleep(1)
    held = int(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats").read())
    rss = rss_kib([server.pid])
    cpu0 = cpu_seconds([server.pid])
    await asyncio.sleep(3)
    idle_cpu = cpu_seconds([server.pid]) - cpu0
    publish = []
    for _ in range(args.events):
        t = time.time()
        await asyncio.get_running_loop().run_in_executor(None, post, "/broadcast")
        publish.append((time.time() - t) * 1000)
        await asyncio.sleep(1)
    deadline = time.time() + 30
    while len(received) < args.streams * args.events and time.time() < deadline:
        await asyncio.sleep(0.1)
    print(f"\nStreams: {args.streams} idle streaming responses on one server process (pool = cores, 32 KiB per connection)")
    print(f"  connected {len(ready)}/{args.streams} in {connect_s:.1f} s; server holds {held}")
    print(f"  server RSS {idle_rss / 1024:.1f} MiB idle -> {rss / 1024:.1f} MiB with streams "
          f"= {(rss - idle_rss) / max(1, held):.1f} KiB per stream")
    print(f"  server CPU while {held} streams idle for 3 s: {idle_cpu:.2f} s")
    print(f"  {args.events} broadcasts: delivered {len(received)}/{args.streams * args.events} events; "
          f"publish call median {sorted(publish)[len(publish) // 2]:.0f} ms")
    for t in tasks:
        t.cancel()


try:
    asyncio.run(main())
finally:
    server.terminate()
    server.wait()
