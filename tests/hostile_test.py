#!/usr/bin/env python3
"""Hostile tenants and hostile clients against a real browserd process over real sockets: each
single-instance finding of the hostile-tenants review, as an attacker would try it, and what the
other tenants see meanwhile. (The cluster's findings are in tests/cluster_test.py.)

Usage: tests/hostile_test.py PATH_TO_BROWSERD
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ADMIN = "hostile-test-admin-token-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One browserd process on a free loopback port."""

    def __init__(self, binary, data, *options, admin=True, log_level="info"):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        env.pop("BROWSERD_ADMIN_TOKEN", None)
        if admin:
            env["BROWSERD_ADMIN_TOKEN"] = ADMIN
        os.makedirs(data, exist_ok=True)
        self.log = open(f"{data}-{self.port}.log", "w+")
        self.process = subprocess.Popen(
            [binary, "serve", "--port", str(self.port), "--data-dir", data, "--log-level", log_level, *options],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.admin = {"Authorization": "Bearer " + ADMIN} if admin else {}
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if self.call("GET", "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("browserd did not become ready")

    def call(self, method, path, body=None, headers=None, raw=None, content_type="application/json", timeout=10):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        all_headers = dict(headers if headers is not None else self.admin)
        if method == "POST" or data is not None:
            all_headers.setdefault("Content-Type", content_type)
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                text = reply.read()
                return reply.status, dict(reply.headers), (json.loads(text) if text and reply.headers.get("Content-Type", "").find("json") >= 0 else text)
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                return error.code, dict(error.headers), json.loads(text)
            except ValueError:
                return error.code, dict(error.headers), text

    def rss_kib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))

    def logged(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as log:
            return log.read()

    def stop(self, kill=False):
        if kill:
            self.process.kill()
        else:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=20)
        self.log.close()


def raw_exchange(port, data, source="127.0.0.1", wait=2.0):
    """Sends bytes on a fresh connection and returns everything read until close or `wait`."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait, source_address=(source, 0)) as s:
        s.sendall(data)
        received = b""
        deadline = time.time() + wait
        while time.time() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break  # an answer that closes the connection may end with a reset after it
            if not chunk:
                break
            received += chunk
        return received


def tenant(server, name):
    """A profile with a token of its own: (profile id, headers)."""
    status, _, profile = server.call("POST", "/v1/profiles", {"name": name})
    assert status == 201, profile
    status, _, token = server.call("POST", f"/v1/profiles/{profile['id']}/tokens")
    assert status == 201, token
    return profile["id"], {"Authorization": "Bearer " + token["token"], "Content-Type": "application/json"}, token["id"]


def window_with_tab(server, profile, headers):
    status, _, window = server.call("POST", "/v1/browsers", {"profileId": profile}, headers=headers)
    assert status == 201, window
    status, _, tab = server.call("POST", f"/v1/browsers/{window['id']}/tabs", {"url": "https://example.com/"}, headers=headers)
    assert status == 201, tab
    return window["id"], tab["id"]


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"  ok  {name}")


def finding_1_nul_is_refused_and_text_round_trips(binary, work):
    data = os.path.join(work, "f1")
    server = Server(binary, data)
    profile, headers, _ = tenant(server, "one")
    window, tab = window_with_tab(server, profile, headers)
    status, _, problem = server.call("PATCH", f"/v1/tabs/{tab}", {"title": "before\u0000after"}, headers=headers)
    check("1: a NUL in a tab title is 422 naming the field", status == 422 and problem.get("field") == "title", problem)
    status, _, group = server.call("POST", f"/v1/browsers/{window}/groups", {"tabIds": [tab], "title": "g"}, headers=headers)
    assert status == 201, group
    status, _, problem = server.call("PATCH", f"/v1/groups/{group['id']}", {"title": "a\u0000b"}, headers=headers)
    check("1: a NUL in a group title is 422 naming the field", status == 422 and problem.get("field") == "title", problem)
    exact = "tab\u0001\u001f\u007f \u2028 \U0001F600 end"
    status, _, _ = server.call("PATCH", f"/v1/tabs/{tab}", {"title": exact}, headers=headers)
    assert status == 200
    server.stop(kill=True)
    server = Server(binary, data)
    status, _, read = server.call("GET", f"/v1/tabs/{tab}", headers=headers)
    check("1: accepted text is stored exactly (memory = disk after kill -9)", status == 200 and read["title"] == exact, read)
    server.stop()


def finding_2_unknown_methods(binary, work):
    server = Server(binary, os.path.join(work, "f2"), admin=False)
    before = server.rss_kib()
    statuses = set()
    for index in range(3000):
        reply = raw_exchange(server.port, f"M{index:05d}X /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode(), wait=1)
        statuses.add(reply.split(b" ", 2)[1] if reply else b"none")
    grown = server.rss_kib() - before
    metrics = server.call("GET", "/metrics", headers={})[2].decode()
    labels = set(re.findall(r'browserd_http_requests_total\{[^}]*method="([^"]+)"', metrics))
    check("2: 3,000 unknown methods are all 501", statuses == {b"501"}, statuses)
    check("2: metrics keep only the closed set of method labels", labels <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "QUERY", "other"}, labels)
    check("2: memory does not grow with them", grown < 8 * 1024, f"{grown} KiB")
    server.stop()


def healthz_while_one_address_holds(server, count):
    """Opens `count` connections from 127.0.0.2 with half-sent heads, then asks /healthz from
    127.0.0.1: (its status, seconds it took)."""
    held = []
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", server.port), timeout=2, source_address=("127.0.0.2", 0))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0")
            held.append(s)
        except OSError:
            pass
    started = time.time()
    status = server.call("GET", "/healthz", headers={}, timeout=2)[0]
    elapsed = time.time() - started
    for s in held:
        s.close()
    return status, elapsed


def finding_3_slow_clients(binary, work):
    server = Server(binary, os.path.join(work, "f3"), "--per-ip-connection-limit", "64", "--idle-timeout", "3",
                    "--request-head-timeout", "2", admin=False)
    status, elapsed = healthz_while_one_address_holds(server, 400)
    check("3: /healthz answers another address while one holds 400 half-sent heads", status == 200 and elapsed < 1.0)
    trickle = socket.create_connection(("127.0.0.1", server.port), timeout=1)
    trickle.sendall(b"GET /healthz HTTP/1.1\r\n")
    started = time.time()
    closed_after = None
    for index in range(20):
        time.sleep(0.5)
        try:
            trickle.sendall(f"X-{index}: 1\r\n".encode())
            trickle.setblocking(False)
            try:
                if trickle.recv(1) == b"":
                    raise ConnectionResetError
            except BlockingIOError:
                pass
            trickle.setblocking(True)
        except OSError:
            closed_after = time.time() - started
            break
    check("3: a head trickling a byte now and then is ended at its deadline", closed_after is not None and closed_after < 5, closed_after)
    server.stop()


def finding_3b_one_address_never_holds_every_connection(binary, work):
    # With --connection-limit 100 and no per-address limit given, one address holds at most 25.
    server = Server(binary, os.path.join(work, "f3b"), "--connection-limit", "100", "--idle-timeout", "5",
                    "--request-head-timeout", "5", admin=False)
    status, elapsed = healthz_while_one_address_holds(server, 150)
    check("3b: /healthz answers another address while one tries to hold every connection", status == 200 and elapsed < 1.0, f"{status}")
    server.stop()
    # A per-address limit at or above the server's own is refused at start, saying why.
    data = os.path.join(work, "f3b-refused")
    os.makedirs(data, exist_ok=True)
    result = subprocess.run([binary, "serve", "--port", "0", "--data-dir", data, "--connection-limit", "1000",
                             "--per-ip-connection-limit", "1024"], capture_output=True, text=True, timeout=30)
    check("3b: --per-ip-connection-limit above --connection-limit is refused at start",
          result.returncode != 0 and "--per-ip-connection-limit must be below --connection-limit (1000)" in result.stderr + result.stdout,
          (result.returncode, result.stderr[-300:]))


def finding_4_pools(binary, work):
    server = Server(binary, os.path.join(work, "f4"), "--webdriver-sessions-per-profile", "3", "--webdriver-session-timeout", "2",
                    "--idempotency-keys-per-principal", "100")
    a, a_headers, _ = tenant(server, "a")
    b, b_headers, _ = tenant(server, "b")
    a_window, a_tab = window_with_tab(server, a, a_headers)
    b_window, _ = window_with_tab(server, b, b_headers)
    # (a) stream tickets
    codes = [server.call("POST", "/v1/stream-tickets", {"path": f"/v1/browsers/{a_window}/events"}, headers=a_headers)[0] for _ in range(70)]
    check("4a: one tenant gets 64 tickets, then 429", codes[:64] == [201] * 64 and set(codes[64:]) == {429}, codes)
    check("4a: another tenant still gets its ticket",
          server.call("POST", "/v1/stream-tickets", {"path": f"/v1/browsers/{b_window}/events"}, headers=b_headers)[0] == 201)
    check("4a: the administrator still gets its ticket",
          server.call("POST", "/v1/stream-tickets", {"path": "/v1/events"})[0] == 201)
    # (b) WebDriver sessions
    caps = {"capabilities": {"alwaysMatch": {"browserd:profileId": a}}}
    made = [server.call("POST", "/webdriver/session", caps, headers=a_headers) for _ in range(4)]
    check("4b: a profile opens 3 sessions, the 4th is refused", [m[0] for m in made] == [200, 200, 200, 500]
          and made[3][2]["value"]["error"] == "session not created", [m[0] for m in made])
    other = server.call("POST", "/webdriver/session", {"capabilities": {"alwaysMatch": {"browserd:profileId": b}}}, headers=b_headers)
    check("4b: another profile still opens one", other[0] == 200, other)
    first = made[0][2]["value"]["sessionId"]
    time.sleep(3.5)
    gone = server.call("GET", f"/webdriver/session/{first}/url", headers=a_headers)
    check("4b: an unused session expires (invalid session id)", gone[0] == 404 and gone[2]["value"]["error"] == "invalid session id", gone)
    again = server.call("POST", "/webdriver/session", caps, headers=a_headers)
    check("4b: the expired sessions' room is free again", again[0] == 200, again)
    # (c) idempotency keys: B's key survives A's flood; B's retry replays
    body = {"url": "https://b.example/"}
    key = {"Idempotency-Key": "b-first", **b_headers}
    first_b = server.call("POST", f"/v1/browsers/{b_window}/tabs", body, headers=key)
    assert first_b[0] == 201, first_b
    for index in range(400):
        server.call("PATCH", f"/v1/tabs/{a_tab}", {"nope": 1}, headers={"Idempotency-Key": f"a-{index}", **a_headers})
    retry = server.call("POST", f"/v1/browsers/{b_window}/tabs", body, headers=key)
    tabs = server.call("GET", f"/v1/browsers/{b_window}/tabs", headers=b_headers)[2]["items"]
    check("4c: another tenant's flood of keys does not evict B's key (replayed, no second tab)",
          retry[0] == 201 and retry[1].get("Idempotent-Replayed") == "true" and len(tabs) == 2, (retry[0], len(tabs)))
    # (d) stored failure answers do not echo unbounded input
    before = server.rss_kib()
    for index in range(60):
        reply = server.call("PATCH", f"/v1/tabs/{a_tab}", None, raw=json.dumps({"x" * 500_000: 1}).encode(),
                            headers={"Idempotency-Key": f"big-{index}", **a_headers})
        assert reply[0] == 422
    check("4d: a 422 names a long member in at most 128 characters", len(reply[2]["field"]) <= 128, len(reply[2]["field"]))
    grown = server.rss_kib() - before
    check("4d: 60 keyed 500 KB member names keep no 30 MB", grown < 16 * 1024, f"{grown} KiB")
    server.stop()


def finding_5_byte_budget(binary, work):
    data = os.path.join(work, "f5")
    server = Server(binary, data, "--profile-max-bytes", str(2 << 20))
    a, a_headers, _ = tenant(server, "a")
    b, b_headers, _ = tenant(server, "b")
    _, a_tab = window_with_tab(server, a, a_headers)
    _, b_tab = window_with_tab(server, b, b_headers)
    url = "https://a.example/" + "x" * (200 * 1024)
    codes = []
    for index in range(20):
        codes.append(server.call("POST", f"/v1/tabs/{a_tab}/navigate", {"url": f"{url}{index}"}, headers=a_headers)[0])
    refused = [c for c in codes if c == 507]
    check("5: navigations past the profile's byte budget are 507", codes[0] == 200 and len(refused) >= 9, codes)
    problem = server.call("POST", f"/v1/tabs/{a_tab}/navigate", {"url": url + "z"}, headers=a_headers)[2]
    check("5: the 507 says what is full", problem["type"] == "/problems/profile-storage-full", problem)
    check("5: another tenant is unaffected", server.call("PATCH", f"/v1/tabs/{b_tab}", {"title": "fine"}, headers=b_headers)[0] == 200)
    size = sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data) if f.startswith("browserd.sqlite"))
    check("5: the database stays within a few budgets", size < 16 * (1 << 20), size)
    server.stop()
    # The one writer every tenant shares: a profile writing faster than its quota waits (429), alone.
    server = Server(binary, data + "-quota", "--profile-write-bytes-per-second", "65536")
    a, a_headers, _ = tenant(server, "a")
    b, b_headers, _ = tenant(server, "b")
    _, a_tab = window_with_tab(server, a, a_headers)
    _, b_tab = window_with_tab(server, b, b_headers)
    codes = [server.call("POST", f"/v1/tabs/{a_tab}/navigate", {"url": f"{url}{index}"}, headers=a_headers) for index in range(12)]
    limited = [reply for reply in codes if reply[0] == 429]
    check("5: a profile past its write quota gets 429 with Retry-After",
          codes[0][0] == 200 and limited and limited[0][2]["type"] == "/problems/write-rate-exceeded" and int(limited[0][1]["Retry-After"]) >= 1,
          [reply[0] for reply in codes])
    check("5: another profile writes meanwhile", server.call("PATCH", f"/v1/tabs/{b_tab}", {"title": "mine"}, headers=b_headers)[0] == 200)
    server.stop()


def finding_7_browser_borne_requests(binary, work):
    data = os.path.join(work, "f7")
    server = Server(binary, data, admin=False)
    reply = raw_exchange(server.port, b"GET /v1/profiles HTTP/1.1\r\nHost: rebind.attacker.example\r\n\r\n")
    check("7: a rebound Host gets 421", reply.startswith(b"HTTP/1.1 421"), reply[:40])
    reply = raw_exchange(server.port, f"GET /v1/profiles HTTP/1.1\r\nHost: localhost:{server.port}\r\n\r\n".encode())
    check("7: a loopback Host is answered", reply.startswith(b"HTTP/1.1 200"), reply[:40])
    # What a browser sends with a form or fetch() from another site (Go 1.25's CrossOriginProtection rules).
    page = {"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"}
    text = server.call("POST", "/webdriver/session", None, raw=json.dumps({"capabilities": {}}).encode(), headers=dict(page),
                       content_type="text/plain")
    check("7: a cross-site text/plain POST (a form) cannot create a WebDriver session",
          text[0] == 403 and text[2].get("type") == "/problems/cross-origin-request", text[0])
    empty = server.call("POST", "/v1/admin/backup", None, headers={"Content-Type": "text/plain", "Origin": "https://attacker.example"})
    check("7: a simple cross-origin POST (Origin only, an older browser) cannot write a backup", empty[0] == 403, empty[0])
    same_site = server.call("DELETE", "/v1/profiles/x", None, headers={"Sec-Fetch-Site": "same-site"})
    check("7: a same-site page (another port or subdomain) cannot delete", same_site[0] == 403, same_site[0])
    # curl and SDKs send neither header: a bodyless POST needs no Content-Type (auth off).
    profile = server.call("POST", "/v1/profiles", {"name": "curl"}, headers={})[2]["id"]
    window = server.call("POST", "/v1/browsers", {"profileId": profile}, headers={})[2]["id"]
    tab = server.call("POST", f"/v1/browsers/{window}/tabs", {"url": "https://curl.example/"}, headers={})[2]["id"]
    bare = urllib.request.Request(f"{server.base}/v1/tabs/{tab}/activate", data=b"", method="POST")
    with urllib.request.urlopen(bare, timeout=10) as reply:
        check("7: a bodyless curl -X POST .../activate works with auth off", reply.status == 200, reply.status)
    own = server.call("POST", f"/v1/tabs/{tab}/reload", None, headers={"Origin": f"http://localhost:{server.port}",
                                                                        "Sec-Fetch-Site": "same-origin", "Host": f"localhost:{server.port}"})
    check("7: a same-origin page (the inspector) may change state", own[0] == 200, own[0])
    for _ in range(8):
        assert server.call("POST", "/v1/admin/backup", headers={})[0] == 201
    backups = [f for f in os.listdir(data) if "-backup-" in f]
    check("7: backups are kept to --backup-keep (5)", len(backups) == 5, backups)
    server.stop()


def finding_8_revocation(binary, work):
    server = Server(binary, os.path.join(work, "f8"))
    profile, headers, token_id = tenant(server, "a")
    window, tab = window_with_tab(server, profile, headers)
    ticket = server.call("POST", "/v1/stream-tickets", {"path": f"/v1/browsers/{window}/events"}, headers=headers)[2]
    stream = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    stream.sendall(f"GET /v1/browsers/{window}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {headers['Authorization']}\r\n\r\n".encode())
    head = stream.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    status = server.call("DELETE", f"/v1/profiles/{profile}/tokens/{token_id}")[0]
    assert status == 204
    started = time.time()
    ended = False
    stream.settimeout(0.2)
    while time.time() - started < 3:
        try:
            chunk = stream.recv(65536)
            if not chunk or chunk.endswith(b"0\r\n\r\n"):
                ended = True
                break
        except socket.timeout:
            pass
    check("8: a revoked token's open stream ends within a second", ended and time.time() - started < 1.0, time.time() - started)
    used = server.call("GET", ticket["url"], headers={})
    check("8: a ticket issued before revocation opens nothing", used[0] == 401, used[0])
    server.stop()


def finding_9_log_injection(binary, work):
    server = Server(binary, os.path.join(work, "f9"), admin=False, log_level="debug")
    raw_exchange(server.port, b"GET /v1/x%0d%0a2026-01-01T00:00:00+0000%20critical%20browserd:%20forged HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    time.sleep(0.3)
    forged = [line for line in server.logged().splitlines() if "forged" in line]
    check("9: a CR LF in a path never starts a log line", forged and all(not line.startswith("2026-01-01") for line in forged), forged)
    server.stop()


def finding_11_smuggling(binary, work):
    server = Server(binary, os.path.join(work, "f11"), admin=False)
    reply = raw_exchange(server.port, b"POST /v1/profiles HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                      b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                                      b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    check("11: Content-Length with Transfer-Encoding is 400", reply.startswith(b"HTTP/1.1 400"), reply[:40])
    check("11: the connection closes: the request after it is never answered", reply.count(b"HTTP/1.1") == 1, reply.count(b"HTTP/1.1"))
    server.stop()


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="browserd-hostile-") as work:
        for test in (finding_1_nul_is_refused_and_text_round_trips, finding_2_unknown_methods, finding_3_slow_clients,
                     finding_3b_one_address_never_holds_every_connection,
                     finding_4_pools, finding_5_byte_budget, finding_7_browser_borne_requests, finding_8_revocation,
                     finding_9_log_injection, finding_11_smuggling):
            print(test.__name__)
            test(binary, work)
    print("hostile tenants: every single-instance finding holds")


if __name__ == "__main__":
    main()
