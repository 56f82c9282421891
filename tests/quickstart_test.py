#!/usr/bin/env python3
"""Runs README.md's quickstart exactly as written, so it never goes stale.

The quickstart (between `<!-- quickstart:start` and `<!-- quickstart:end -->`) has four `sh` blocks:
start browserd (`make run`), make a profile and a window, watch the window's events, then open three
tabs, close one and follow a route. This test starts the already built binary itself (what `make
run` does after building) on a free port, then runs the three other blocks in one bash process, as
written, with two differences a second terminal makes: `B=` names the test's port, and the watch
block runs in the background with its output kept. It checks what each step prints against the
README's own sample answers (ids aside) and the events the watcher received.

Usage: tests/quickstart_test.py PATH_TO_BROWSERD
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def blocks():
    text = open(os.path.join(ROOT, "README.md")).read()
    start = text.index("<!-- quickstart:start")
    section = text[start:text.index("<!-- quickstart:end -->", start)]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def main():
    binary = sys.argv[1]
    run, setup, watch, steps = blocks()
    assert run.strip() == "make run", f"the first quickstart block must start browserd with `make run`, not {run!r}"
    assert "B=http://127.0.0.1:8080" in setup, "the setup block names the server as B=http://127.0.0.1:8080"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp()
    server = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", os.path.join(data, "data"),
                               "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        watch_log = os.path.join(data, "watch.log")
        script = "\n".join([
            "set -euo pipefail",
            setup.replace("B=http://127.0.0.1:8080", f"B=http://127.0.0.1:{port}"),
            f"({watch.strip()}) > {watch_log} &",
            "WATCH=$!",
            # The watcher's snapshot arrives before the steps begin.
            f"for _ in $(seq 50); do grep -q '^event: ui.tree' {watch_log} 2>/dev/null && break; sleep 0.1; done",
            steps,
            f"for _ in $(seq 50); do grep -q '^event: ui.pushed' {watch_log} && break; sleep 0.1; done",
            "kill $WATCH",
        ])
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
        out = done.stdout
        print(out)
        assert done.returncode == 0, f"the quickstart failed (exit {done.returncode}):\n{done.stderr}"
        lines = out.splitlines()
        assert lines[0] == '{"status":"ok"}', lines[0]
        assert re.fullmatch(r"profile p[0-9a-f]{16}, window w[0-9a-f]{16}", lines[1]), lines[1]
        urls = ["https://example.com/", "https://swift.org/", "https://www.chromium.org/"]
        for index, (line, url) in enumerate(zip(lines[2:5], urls)):
            assert re.match(r'\{"id":"t[0-9a-f]{16}","browserId":"w[0-9a-f]{16}","index":%d,"url":"%s"' % (index, re.escape(url)), line), line
        assert lines[5] == "204", lines[5]
        assert '"changes":[{"op":"presented","nodeId":"u4","kind":"settings"},{"op":"pushed","nodeId":"u5","kind":"settings.page"}]' in lines[6], lines[6]
        assert '"kind":"settings"' in lines[7] and lines[7].startswith('{"id":"u0","kind":"browser"'), lines[7]

        # The Firefox import example of docs/api.md, as written (run from the checkout).
        text = open(os.path.join(ROOT, "docs", "api.md")).read()
        marker = text.index("<!-- firefox-import")
        block = re.search(r"```sh\n(.*?)```", text[marker:], re.S).group(1)
        imported = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block.replace("B=http://127.0.0.1:8080", f"B=http://127.0.0.1:{port}")],
                                  capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert imported.returncode == 0, imported.stderr
        answer = json.loads(imported.stdout)
        assert answer["profile"]["name"] == "Laptop" and answer["profile"]["windowCount"] == 2, answer
        assert answer["tabCount"] == 11 and answer["closedCount"] == 3 and answer["warnings"] == [], answer

        events = re.findall(r"^event: (\S+)$", open(watch_log).read(), re.M)
        assert events[:2] == ["tabs.populate", "ui.tree"], events
        live = [e for e in events[2:] if e in ("tabs.insert", "tabs.remove", "ui.presented", "ui.pushed")]
        assert live == ["tabs.insert"] * 3 + ["tabs.remove", "ui.presented", "ui.pushed"], events
        print(f"quickstart: {len(lines)} answers as the README shows them, {len(events)} events watched")
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
