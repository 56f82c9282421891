#!/usr/bin/env python3
"""The embedded build (the default, without the PostgreSQL trait): given --database-url (or
BROWSERD_DATABASE_URL) it exits at once, with one line that says how to build with PostgreSQL, and
touches no database; without it, it serves on SQLite as usual.

Usage: tests/embedded_build_test.py PATH_TO_BROWSERD (make test runs it on the default build).
"""
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def fail(message):
    sys.exit("embedded_build_test: FAIL: " + message)


def main():
    binary = sys.argv[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERD_")}
    for how, extra_env, args in (
        ("flag", {}, ["--database-url", "postgres://browserd@127.0.0.1:1/browserd"]),
        ("environment", {"BROWSERD_DATABASE_URL": "postgres://browserd@127.0.0.1:1/browserd"}, []),
    ):
        started = time.monotonic()
        done = subprocess.run([binary, "serve", "--port", "0", *args], env=dict(env, **extra_env),
                              capture_output=True, text=True, timeout=30)
        took = time.monotonic() - started
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if done.returncode == 0:
            fail("%s: --database-url was accepted by a build without PostgreSQL" % how)
        if len(lines) != 1 or "--traits PostgreSQL" not in lines[0] or "make release-postgres" not in lines[0]:
            fail("%s: not one clear line saying how to build with PostgreSQL: %r" % (how, done.stderr))
        if took > 5:
            fail("%s: took %.1f s to refuse (it must exit at once)" % (how, took))
    # Without it: SQLite under --data-dir, as always.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as data:
        server = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", data, "--log-level", "error"], env=env,
                                  stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=1) as reply:
                        if reply.status == 200:
                            break
                except OSError:
                    time.sleep(0.1)
            else:
                fail("the embedded build did not become ready on SQLite")
        finally:
            server.terminate()
            server.wait(20)
    print("embedded build: --database-url (flag or environment) refused at once in one line naming the PostgreSQL build; "
          "SQLite served as usual")


if __name__ == "__main__":
    main()
