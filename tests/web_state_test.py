#!/usr/bin/env python3
"""A profile's web state lives in browserd (issue 52), with a real Chromium: a test site logs in with an
HttpOnly session cookie (plain http on loopback, so not Secure) and a localStorage token.

1. Log in through a browserd tab its renderer renders; kill -9 the renderer two seconds after the
   login; a renderer started with an empty state directory shows the tab logged in (cookie and
   localStorage both came from browserd).
2. A state written through the API while a renderer holds the profile reaches its Chromium: the tab,
   loaded again, shows the other user.
3. Playwright's `context.storage_state()` (attached over CDP to a bare Chromium, no browser download),
   after logging in there, round-trips through PUT/GET unchanged and logs a browserd tab in.
4. The session cookie's value is in no log line of browserd or the renderers, nor in /metrics.

Usage: tests/web_state_test.py PATH_TO_BROWSERD PATH_TO_BROWSERD_RENDERER
"""
import http.client
import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from test_stores import stores

from playwright.sync_api import sync_playwright

ADMIN = "admin-token-for-the-web-state-test"
USERS = {}  # session value -> user


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    headers = {"Authorization": f"Bearer {ADMIN}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=15) as reply:
            text = reply.read()
            return reply.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, json.loads(text) if text else None


def created(base, path, body):
    """The id of what a POST created; a clear failure with the server's answer otherwise."""
    status, answer = call(base, "POST", path, body)
    assert status == 201, f"POST {path} answered {status}: {answer}"
    return answer["id"]


def reachable(url):
    try:
        urllib.request.urlopen(url, timeout=1)
        return True
    except OSError:
        return False


def wait_for(predicate, what, timeout=30):
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}: last {value!r}")
        time.sleep(0.05)


class Site(http.server.BaseHTTPRequestHandler):
    """/login?user=NAME sets the session cookie (HttpOnly) and, from its script, a localStorage token,
    then goes to /; / says who is logged in: `user:NAME` (the cookie, read by the server) and
    `ls:ok` (the token, read by the page's script)."""

    def do_GET(self):
        path, _, query = self.path.partition("?")
        headers = []
        if path == "/login":
            user = query.partition("=")[2] or "alice"
            session = secrets.token_hex(16)
            USERS[session] = user
            headers.append(("Set-Cookie", f"session={session}; HttpOnly; Path=/; Max-Age=3600"))
            body = f"""<!doctype html><title>logging in</title><script>
                localStorage.setItem("token", "tok-{user}");
                setTimeout(() => location.replace("/"), 50);</script>"""
        else:
            cookies = dict(part.strip().split("=", 1) for part in (self.headers.get("Cookie") or "").split(";") if "=" in part)
            user = USERS.get(cookies.get("session", ""), "anonymous")
            body = f"""<!doctype html><title>user:{user}</title><script>
                document.title = document.title + (localStorage.getItem("token") ? " ls:" + localStorage.getItem("token") : " ls:none");
                </script><p>hello"""
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a load the browser gave up (another navigation replaced it)

    def log_message(self, *args):
        pass


def main():
    browserd, renderer = sys.argv[1], sys.argv[2]
    os.environ["no_proxy"] = "127.0.0.1"
    for label, store, drop in stores("web_state"):
        print(f"web state: on {label}")
        try:
            run(browserd, renderer, store)
        finally:
            drop()
    print("web state tests: ok")


def run(browserd, renderer, store):
    root = tempfile.mkdtemp(prefix="browserd-web-state-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    logs = []
    processes = []

    def start(argv, name):
        log_path = os.path.join(root, name + ".log")
        logs.append(log_path)
        process = subprocess.Popen(argv, stdout=open(log_path, "w"), stderr=subprocess.STDOUT, env=dict(os.environ, BROWSERD_ADMIN_TOKEN=ADMIN))
        processes.append(process)
        return process

    site_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=site_server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{site_server.server_address[1]}"

    def render(profile, state):
        return start([renderer, "--server", base, "--token", ADMIN, "--profile", profile, "--state-dir", os.path.join(root, state),
                      "--allow-origin", site, "--name", f"r-{state}", "--status-listen", "127.0.0.1:0", "--log-level", "debug"], f"renderer-{state}")

    def title(tab):
        return call(base, "GET", f"/v1/tabs/{tab}")[1].get("title", "")

    try:
        start([browserd, "serve", "--port", str(port), "--data-dir", os.path.join(root, "data"), "--log-level", "debug"] + (store or []), "browserd")
        wait_for(lambda: reachable(base + "/readyz"), "browserd", 20)
        profile = created(base, "/v1/profiles", {"name": "login"})
        window = created(base, "/v1/browsers", {"profileId": profile})
        tab = created(base, f"/v1/browsers/{window}/tabs", {"url": f"{site}/"})

        # 1. Log in through the page; kill -9 two seconds later; an empty state directory logs back in.
        first = render(profile, "a")
        wait_for(lambda: title(tab) == "user:anonymous ls:none", "the page, logged out", 60)
        call(base, "POST", f"/v1/tabs/{tab}/navigate", {"url": f"{site}/login?user=alice"})
        wait_for(lambda: title(tab) == "user:alice ls:tok-alice", "the page, logged in", 30)
        logged_in = time.time()
        # How far behind the page browserd's copy is: from the login seen at browserd to the cookie stored.
        wait_for(lambda: any(c["name"] == "session" for c in call(base, "GET", f"/v1/profiles/{profile}/storage-state")[1]["cookies"]),
                 "the session cookie at browserd", 10)
        behind = time.time() - logged_in
        time.sleep(2)
        first.send_signal(signal.SIGKILL)
        first.wait()
        stored = call(base, "GET", f"/v1/profiles/{profile}/storage-state")[1]
        session = [c for c in stored["cookies"] if c["name"] == "session"]
        assert len(session) == 1 and session[0]["httpOnly"] and not session[0]["secure"], stored
        secret = session[0]["value"]
        assert {"origin": site, "localStorage": [{"name": "token", "value": "tok-alice"}]} in stored["origins"], stored
        second = render(profile, "b")
        call(base, "POST", f"/v1/tabs/{tab}/navigate", {"url": f"{site}/"})
        started = time.time()
        wait_for(lambda: title(tab) == "user:alice ls:tok-alice", "the page logged in from browserd's state (empty state directory)", 60)
        print(f"web state: logged in, renderer killed 2 s after; a renderer with an empty state directory shows the tab logged in "
              f"{time.time() - started:.1f} s after its start (cookie HttpOnly, localStorage token); "
              f"the cookie was at browserd {behind * 1000:.0f} ms after the logged-in page's title")

        # 2. Written through the API while the renderer holds the profile: the next load sees it.
        USERS["bob-session"] = "bob"
        bob = {"cookies": [dict(session[0], value="bob-session")], "origins": [{"origin": site, "localStorage": [{"name": "token", "value": "tok-bob"}]}]}
        status, answer = call(base, "PUT", f"/v1/profiles/{profile}/storage-state", bob)
        assert status == 200, answer
        # Pages loaded after the renderer has loaded it see it (a load during it may see part of it):
        # the tab loads again until it shows bob, for at most 30 s.
        deadline = time.time() + 30
        attempt = 0
        while title(tab) != "user:bob ls:tok-bob":
            assert time.time() < deadline, f"the state written at browserd never reached the renderer's Chromium: {title(tab)!r}"
            attempt += 1
            call(base, "POST", f"/v1/tabs/{tab}/navigate", {"url": f"{site}/?again={attempt}"})
            try:
                wait_for(lambda: title(tab) == "user:bob ls:tok-bob", "bob", 3)
            except AssertionError:
                pass
        print(f"web state: a state PUT while the renderer holds the profile reached its Chromium (load {attempt} after it shows bob)")

        # 3. Playwright's storage_state from a bare Chromium round-trips and logs a browserd tab in.
        chromium_port = free_port()
        bare = start(["chromium", "--headless=new", "--no-sandbox", f"--remote-debugging-port={chromium_port}",
                      "--user-data-dir=" + os.path.join(root, "bare"), "about:blank"], "bare-chromium")
        wait_for(lambda: reachable(f"http://127.0.0.1:{chromium_port}/json/version"), "the bare Chromium", 30)
        with sync_playwright() as p:
            browser = p.chromium.connect_over_cdp(f"http://127.0.0.1:{chromium_port}")
            context = browser.contexts[0]
            page = context.new_page()
            page.goto(f"{site}/login?user=carol")
            page.wait_for_function("document.title === 'user:carol ls:tok-carol'")
            saved = os.path.join(root, "state.json")
            playwright_state = context.storage_state(path=saved)
            browser.close()
        bare.terminate()
        carol = created(base, "/v1/profiles", {"name": "carol"})
        # As `curl -T state.json` sends it: no Content-Type, and Expect: 100-continue.
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        body = open(saved, "rb").read()
        connection.request("PUT", f"/v1/profiles/{carol}/storage-state", body=body,
                           headers={"Authorization": f"Bearer {ADMIN}", "Expect": "100-continue", "Content-Length": str(len(body))})
        reply = connection.getresponse()
        assert reply.status == 200, reply.read()
        connection.close()
        got = call(base, "GET", f"/v1/profiles/{carol}/storage-state")[1]
        assert got == playwright_state, (got, playwright_state)
        carol_window = created(base, "/v1/browsers", {"profileId": carol})
        carol_tab = created(base, f"/v1/browsers/{carol_window}/tabs", {"url": f"{site}/"})
        render(carol, "c")
        wait_for(lambda: title(carol_tab) == "user:carol ls:tok-carol", "a browserd tab logged in by Playwright's storage state", 60)
        print(f"web state: Playwright's storage_state ({len(playwright_state['cookies'])} cookie, {len(playwright_state['origins'])} origin) "
              "round-tripped through PUT/GET unchanged and logged a browserd tab in")

        # 4. No value in a log line or /metrics.
        metrics = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
        assert secret not in metrics and "bob-session" not in metrics
        second.terminate()
        second.wait(timeout=20)
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        for path in logs:
            text = open(path, errors="replace").read()
            for value in (secret, "bob-session", "tok-alice", "tok-bob"):
                assert value not in text, f"{value} in {os.path.basename(path)}"
        print(f"web state: no cookie or localStorage value in {len(logs)} logs (debug level) or /metrics")
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
        site_server.shutdown()
        if not os.environ.get("KEEP"):
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept", root)


if __name__ == "__main__":
    main()
