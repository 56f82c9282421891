#!/usr/bin/env python3
"""Several browserd instances on one PostgreSQL database, as real processes.

Needs BROWSERD_TEST_DATABASE_URL (an admin URL) and BROWSERD_TEST_PG_CTL (pg_ctl of that cluster),
which scripts/with-postgres.sh sets (make test runs everything under it). Each scenario gets a
database of its own. Checks:
  1. create through A, read through B, watch through C (a real SSE client): C's stream shows A's
     changes; every answer names the instance that served it; lists agree on every instance;
  2. kill -9 the owner under load from several clients: within lease expiry + 2 s another instance
     serves the profile, with every acknowledged open present and every acknowledged close gone;
     a keyed open whose answer was lost is retried and never makes a second tab;
  3. SIGSTOP the owner past its lease: another takes the profile over and changes it; SIGCONT: the
     old owner's late write is refused (or, had it already learnt it lost the lease, forwarded):
     nothing lost, nothing doubled;
  4. PostgreSQL restarted under the instances: changes get 503 while it is down, then work again
     without restarting browserd, with everything acknowledged before still there;
  5. hostile tenants: a NUL, invalid tokens, an encoded target and a spoofed forwarded-by header
     take nothing from anyone.

Usage: tests/cluster_test.py PATH_TO_BROWSERD
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import httpx

LEASE = 2.0
JSON = {"Content-Type": "application/json"}
# The instances' shared secret (--cluster-secret-file), one file for every scenario.
SECRET = tempfile.NamedTemporaryFile("w", prefix="browserd-cluster-secret-", delete=False)
SECRET.write("cluster-test-secret-%d-%d\n" % (os.getpid(), int(time.time())))
SECRET.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(ok, message):
    if not ok:
        raise AssertionError(message)


class Database:
    """A database of its own on the test cluster, dropped at the end."""

    def __init__(self, admin):
        self.admin = admin
        self.name = "cluster_%d_%d" % (os.getpid(), int(time.time() * 1000) % 10**9)
        self.psql("CREATE DATABASE %s" % self.name)
        parts = urllib.parse.urlsplit(admin)
        self.url = urllib.parse.urlunsplit(parts._replace(path="/" + self.name))

    def psql(self, sql, url=None):
        subprocess.run(["psql", url or self.admin, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def drop(self):
        try:
            self.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.name)
        except subprocess.CalledProcessError:
            pass


class Instance:
    def __init__(self, binary, database, name, environment=None, headers=None, admin_token=None, extra=()):
        self.name = name
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.log = tempfile.NamedTemporaryFile(prefix="browserd-%s-" % name, suffix=".log", delete=False)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BROWSERD_")}
        env["BROWSERD_CLUSTER_SECRET_FILE"] = SECRET.name
        if environment is None:
            arguments = ["--port", str(self.port), "--database-url", database.url, "--lease-seconds", str(LEASE), "--log-level", "info"] + list(extra)
            if admin_token:
                env["BROWSERD_ADMIN_TOKEN"] = admin_token
                headers = {"Authorization": "Bearer " + admin_token}
        else:
            arguments = []
            env.update(environment, BROWSERD_PORT=str(self.port), BROWSERD_CLUSTER_SECRET_FILE=SECRET.name)
            if "BROWSERD_ADVERTISE_URL" in env:
                env["BROWSERD_ADVERTISE_URL"] = self.base
        self.process = subprocess.Popen([binary, "serve"] + arguments, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.client = httpx.Client(base_url=self.base, timeout=10, headers={"Content-Type": "application/json", **(headers or {})})
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if self.client.get("/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            check(self.process.poll() is None, "%s exited at start:\n%s" % (name, self.output()))
            time.sleep(0.05)
        self.id = self.client.get("/v1/profiles").headers.get("X-Browserd-Instance")

    def output(self):
        if not os.path.exists(self.log.name):
            return "(stopped; its log is gone)"
        with open(self.log.name) as f:
            return f.read()[-4000:]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.client.close()
        if os.path.exists(self.log.name):  # a scenario may have stopped it already
            os.unlink(self.log.name)


def metric(instance, name):
    """The sum of an instance's samples whose line starts with `name` (labels included)."""
    text = instance.client.get("/metrics").text
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def until_available(send, seconds=15):
    """What a client does with 503 + Retry-After: asks again."""
    deadline = time.time() + seconds
    while True:
        reply = send()
        if reply.status_code != 503 or time.time() > deadline:
            return reply
        time.sleep(0.2)


def with_cluster(binary, admin, count, body, admin_token=None, extra=()):
    database = Database(admin)
    instances = []
    try:
        instances = [Instance(binary, database, "abc"[i], admin_token=admin_token, extra=extra) for i in range(count)]
        return body(database, instances)
    except Exception:
        for instance in instances:
            sys.stderr.write("--- log of %s (%s)\n%s\n" % (instance.name, instance.id, instance.output()))
        raise
    finally:
        for instance in instances:
            instance.stop()
        database.drop()


def create_profile_window(instance, window_via=None):
    profile = instance.client.post("/v1/profiles", json={"name": "team"}).json()["id"]
    window = (window_via or instance).client.post("/v1/browsers", json={"profileId": profile})
    check(window.status_code == 201, "window: %s %s" % (window.status_code, window.text))
    return profile, window.json()["id"]


def owner_of(instances, window):
    served = instances[0].client.get("/v1/browsers/%s" % window).headers.get("X-Browserd-Instance")
    return next(i for i in instances if i.id == served)


def scenario_create_read_watch(binary, admin):
    def body(database, instances):
        a, b, c = instances
        check(len({a.id, b.id, c.id}) == 3 and all(i.id for i in instances), "instances name themselves")
        profile, window = create_profile_window(a, window_via=b)
        events = []
        ready = threading.Event()

        def watch():
            with httpx.stream("GET", c.base + "/v1/browsers/%s/events?topics=tabs" % window, timeout=20) as stream:
                check(stream.status_code == 200, "watch through C: %s" % stream.status_code)
                check(stream.headers["content-type"].startswith("text/event-stream"), "an event stream")
                check(stream.headers.get("X-Browserd-Instance") == a.id, "C relays A's stream")
                name = None
                for line in stream.iter_lines():
                    ready.set()
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: ") and name:
                        events.append((name, json.loads(line[6:])))
                        if name == "tabs.remove":
                            return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        check(ready.wait(10), "C's stream started")
        tabs = []
        for i, instance in enumerate(instances):
            reply = instance.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://%s.example/" % instance.name})
            check(reply.status_code == 201, "open through %s: %s %s" % (instance.name, reply.status_code, reply.text))
            check(reply.headers.get("X-Browserd-Instance") == a.id, "A, the owner, served the open sent to %s" % instance.name)
            tabs.append(reply.json()["id"])
        check(b.client.delete("/v1/tabs/%s" % tabs[0]).status_code == 204, "close through B")
        watcher.join(10)
        inserted = [e[1]["item"]["id"] for e in events if e[0] == "tabs.insert"]
        check(inserted == tabs, "C saw every open in order: %s vs %s" % (inserted, tabs))
        check(any(e[0] == "tabs.remove" for e in events), "C saw the close")
        for instance in instances:
            listing = instance.client.get("/v1/browsers/%s/tabs" % window).json()["items"]
            check([t["id"] for t in listing] == tabs[1:], "%s reads the window as it is" % instance.name)
            profiles = instance.client.get("/v1/profiles").json()["items"]
            check([p["id"] for p in profiles] == [profile] and profiles[0]["windowCount"] == 1, "%s lists the profile" % instance.name)
        return "create/read/watch: 3 opens through 3 instances, all served by the owner, seen live through the third"

    return with_cluster(binary, admin, 3, body)


def scenario_kill_owner(binary, admin):
    def body(database, instances):
        a = instances[0]
        profile, window = create_profile_window(a)
        opened, closed, closing, unanswered = set(), set(), set(), []
        lock = threading.Lock()
        stop = threading.Event()

        def client(n):
            target = instances[n % len(instances)]
            mine = []
            i = 0
            with httpx.Client(base_url=target.base, timeout=5, headers={"Content-Type": "application/json"}) as http:
                while not stop.is_set():
                    i += 1
                    if i % 3 == 0 and mine:
                        victim = mine.pop()
                        with lock:
                            closing.add(victim)
                        try:
                            if http.delete("/v1/tabs/%s" % victim).status_code == 204:
                                with lock:
                                    closed.add(victim)
                        except httpx.TransportError:
                            return  # its instance is gone
                        continue
                    key = "k-%d-%d" % (n, i)
                    body = {"url": "https://kill.example/%d/%d" % (n, i)}
                    try:
                        reply = http.post("/v1/browsers/%s/tabs" % window, json=body, headers={"Idempotency-Key": key})
                    except httpx.TransportError:
                        with lock:
                            unanswered.append((key, body))
                        return  # its instance is gone
                    if reply.status_code == 201:
                        with lock:
                            opened.add(reply.json()["id"])
                        mine.append(reply.json()["id"])
                    elif reply.status_code == 503:
                        with lock:
                            unanswered.append((key, body))
                        time.sleep(0.05)

        threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(6)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        owner = owner_of(instances, window)
        owner.process.send_signal(signal.SIGKILL)
        owner.process.wait()
        killed_at = time.time()
        survivors = [i for i in instances if i is not owner]
        # Another instance serves the profile within the lease's expiry + 2 s.
        served_at = None
        while time.time() - killed_at < LEASE + 2:
            try:
                reply = survivors[0].client.get("/v1/browsers/%s" % window)
                if reply.status_code == 200:
                    served_at = time.time()
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        check(served_at is not None, "another instance serves the profile within %.0f s of the kill" % (LEASE + 2))
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(10)
        # Opens whose answer was lost: retried with their keys, they never make a second tab.
        for key, body in unanswered:
            reply = until_available(lambda: survivors[1].client.post("/v1/browsers/%s/tabs" % window, json=body,
                                                                     headers={"Idempotency-Key": key}))
            check(reply.status_code == 201, "retry of %s: %s %s" % (key, reply.status_code, reply.text))
            opened.add(reply.json()["id"])
        listing = until_available(lambda: survivors[1].client.get("/v1/browsers/%s" % window)).json()
        present = [t["id"] for t in listing["tabs"]]
        check(len(present) == len(set(present)), "no tab twice")
        urls = [t["url"] for t in listing["tabs"]]
        check(len(urls) == len(set(urls)), "no open applied twice (a retried key made a second tab)")
        lost = [t for t in opened if t not in closing and t not in present]
        check(not lost, "acknowledged opens lost: %s" % lost[:5])
        undone = [t for t in closed if t in present]
        check(not undone, "acknowledged closes undone: %s" % undone[:5])
        check(len(opened) > 20, "load ran (%d opens)" % len(opened))
        return "kill -9 of the owner under 6 clients on 3 instances: served again by %s after %.2f s (lease %.0f s); %d acknowledged opens, %d closes, %d retried by key, none lost or doubled" % (
            next(i.name for i in survivors if i.id == listing_owner(survivors, window)), served_at - killed_at, LEASE,
            len(opened), len(closed), len(unanswered))

    return with_cluster(binary, admin, 3, body)


def listing_owner(instances, window):
    return instances[0].client.get("/v1/browsers/%s" % window).headers.get("X-Browserd-Instance")


def scenario_pause_owner(binary, admin):
    def body(database, instances):
        a, b = instances
        profile, window = create_profile_window(a)
        check(a.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://before.example/"}).status_code == 201, "first tab")
        a.process.send_signal(signal.SIGSTOP)
        # A request to the paused owner waits in its socket's backlog.
        late = {}

        def late_write():
            try:
                with httpx.Client(base_url=a.base, timeout=30, headers={"Content-Type": "application/json"}) as http:
                    reply = http.post("/v1/browsers/%s/tabs" % window, json={"url": "https://late.example/"})
                    late["status"] = reply.status_code
                    late["instance"] = reply.headers.get("X-Browserd-Instance")
            except httpx.TransportError as error:
                late["status"] = str(error)

        writer = threading.Thread(target=late_write, daemon=True)
        writer.start()
        time.sleep(LEASE + 0.5)
        # Past the lease: B takes the profile over (the owner's address still accepts connections, so
        # only the expiry lets it) and changes it.
        reply = until_available(lambda: b.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://successor.example/"}))
        check(reply.status_code == 201 and reply.headers.get("X-Browserd-Instance") == b.id,
              "B took over and changed the profile: %s %s" % (reply.status_code, reply.text))
        a.process.send_signal(signal.SIGCONT)
        writer.join(30)
        urls = [t["url"] for t in until_available(lambda: b.client.get("/v1/browsers/%s" % window)).json()["tabs"]]
        check(urls.count("https://before.example/") == 1 and urls.count("https://successor.example/") == 1,
              "nothing lost: %s" % urls)
        if late.get("status") == 201:
            check(late.get("instance") == b.id, "a late write that succeeded was served by the new owner")
            check(urls.count("https://late.example/") == 1, "the late write, forwarded, is there once")
            outcome = "forwarded to the new owner"
        else:
            check(late.get("status") == 503, "the paused owner's late write is refused: %s" % late)
            check("https://late.example/" not in urls, "the refused late write left nothing")
            outcome = "refused with 503 (fenced out)"
        # The old owner has dropped the profile: what it is asked now goes to B.
        after = until_available(lambda: a.client.get("/v1/browsers/%s" % window))
        check(after.status_code == 200 and after.headers.get("X-Browserd-Instance") == b.id, "A forwards to B now")
        log = a.output()
        return "SIGSTOP of the owner for %.1f s (lease %.0f s): B took over; the late write was %s; A then forwards%s" % (
            LEASE + 0.5, LEASE, outcome, " (A logged the fenced commit)" if "fenced" in log else "")

    return with_cluster(binary, admin, 2, body)


def scenario_restart_postgres(binary, admin, pg_ctl):
    def body(database, instances):
        a, b = instances
        profile, window = create_profile_window(a)
        check(a.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://kept.example/"}).status_code == 201, "first tab")
        subprocess.run([pg_ctl, "stop", "-m", "fast"], check=True, stdout=subprocess.DEVNULL)
        down = time.time()
        statuses = set()
        try:
            for _ in range(5):
                reply = a.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://while-down.example/"})
                statuses.add(reply.status_code)
                time.sleep(0.1)
        finally:
            subprocess.run([pg_ctl, "start"], check=True, stdout=subprocess.DEVNULL)
        check(statuses == {503}, "changes are refused with 503 while PostgreSQL is down: %s" % statuses)
        up = time.time()
        reply = until_available(lambda: b.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://after.example/"}), 30)
        check(reply.status_code == 201, "changes work again without restarting browserd: %s %s" % (reply.status_code, reply.text))
        recovered = time.time()
        urls = [t["url"] for t in until_available(lambda: a.client.get("/v1/browsers/%s" % window)).json()["tabs"]]
        check("https://kept.example/" in urls and "https://after.example/" in urls, "nothing acknowledged lost: %s" % urls)
        check("https://while-down.example/" not in urls, "nothing refused kept: %s" % urls)
        check(a.process.poll() is None and b.process.poll() is None, "both instances kept running")
        return "PostgreSQL restart: 5 changes refused with 503 while down (%.1f s), changes accepted again %.1f s after it came back, no browserd restart" % (
            up - down, recovered - up)

    return with_cluster(binary, admin, 2, body)


def scenario_tokens(binary, admin):
    """A profile token issued through one instance works on every instance; revoked, on none."""
    def body(database, instances):
        a, b = instances
        profile, window = create_profile_window(a)
        issued = a.client.post("/v1/profiles/%s/tokens" % profile)
        check(issued.status_code == 201, "token issued: %s" % issued.status_code)
        token = {"Authorization": "Bearer " + issued.json()["token"]}

        def listed_by_b():
            reply = httpx.get(b.base + "/v1/profiles", headers=token)
            return reply.status_code, [p["id"] for p in reply.json().get("items", [])] if reply.status_code == 200 else []

        deadline = time.time() + 5
        while listed_by_b()[0] != 200 and time.time() < deadline:
            time.sleep(0.05)
        status, ids = listed_by_b()
        check(status == 200 and ids == [profile], "B authenticates A's token and shows its profile only: %s %s" % (status, ids))
        check(httpx.post(b.base + "/v1/profiles", json={"name": "x"}, headers=token).status_code == 403, "a profile token is not admin on B")
        # A stream opened through B with the token (relayed from the owner) ends when A revokes it.
        ended = threading.Event()

        def watch():
            try:
                with httpx.stream("GET", b.base + "/v1/browsers/%s/events" % window, headers=token, timeout=20) as stream:
                    for _ in stream.iter_lines():
                        pass
            except httpx.HTTPError:
                pass
            ended.set()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        time.sleep(0.5)
        check(not ended.is_set(), "the token's stream is open through B")
        check(a.client.delete("/v1/profiles/%s/tokens/%s" % (profile, issued.json()["id"])).status_code == 204, "revoked through A")
        revoked_at = time.time()
        check(ended.wait(5), "the revoked token's stream through B ended")
        stream_ended_after = time.time() - revoked_at
        deadline = time.time() + 5
        while listed_by_b()[0] != 401 and time.time() < deadline:
            time.sleep(0.05)
        check(listed_by_b()[0] == 401, "B refuses the revoked token")
        check(stream_ended_after < 1.5, "within a second or so: %.2f s" % stream_ended_after)
        return "tokens: one issued through A authenticates on B (its profile only), and is refused there once revoked through A; its stream through B ended %.2f s after" % stream_ended_after

    return with_cluster(binary, admin, 2, body, admin_token="cluster-admin-token-%d" % os.getpid())


def scenario_lists_and_directory(binary, admin):
    """Lists and the administrator's profile directory are the same on every instance, off-the-record
    profiles (which only their owner's memory holds) included; an instance that starts learns them."""
    def body(database, instances):
        a, b, c = instances
        directory = []
        ready = threading.Event()
        done = threading.Event()

        def watch():
            with httpx.stream("GET", c.base + "/v1/events", timeout=30) as stream:
                check(stream.status_code == 200 and stream.headers.get("X-Browserd-Instance") == c.id, "C serves its own directory")
                name = None
                for line in stream.iter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: ") and name:
                        directory.append((name, json.loads(line[6:])))
                        ready.set()
                        if done.is_set():
                            return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        check(ready.wait(10) and directory[0][0] == "profiles.populate", "C's directory starts with profiles.populate")
        p1, w1 = create_profile_window(a)
        p2, w2 = create_profile_window(b)
        w3 = b.client.post("/v1/browsers", json={"profileId": p2}).json()["id"]
        otr = a.client.post("/v1/profiles/%s/incognito" % p1)
        check(otr.status_code in (200, 201), "incognito profile through A: %s %s" % (otr.status_code, otr.text))
        otr = otr.json()["id"]
        # Any instance reaches the off-the-record profile and its windows, which only A holds.
        reply = until_available(lambda: c.client.post("/v1/browsers", json={"profileId": otr}))
        check(reply.status_code == 201 and reply.headers.get("X-Browserd-Instance") == a.id,
              "an incognito window through C, made by A: %s %s" % (reply.status_code, reply.text))
        w4 = reply.json()["id"]
        for instance in instances:
            got = instance.client.get("/v1/browsers/%s" % w4)
            check(got.status_code == 200 and got.headers.get("X-Browserd-Instance") == a.id, "%s reads the incognito window" % instance.name)
            check(instance.client.get("/v1/profiles/%s" % otr).status_code == 200, "%s reads the incognito profile" % instance.name)
        check(b.client.get("/v1/browsers/nonexistent").status_code == 404, "an unknown window is still 404")
        expected = [w1, w2, w3, w4]
        for instance in instances:
            listed = instance.client.get("/v1/browsers").json()["items"]
            check([w["id"] for w in listed] == expected, "%s lists every window in creation order: %s" % (instance.name, [w["id"] for w in listed]))
            first = instance.client.get("/v1/browsers", params={"limit": 3}).json()
            rest = instance.client.get("/v1/browsers", params={"limit": 3, "cursor": first["nextCursor"]}).json()
            check([w["id"] for w in first["items"] + rest["items"]] == expected and "nextCursor" not in rest or rest.get("nextCursor") is None,
                  "%s pages the merged list" % instance.name)

            def listed_profiles(instance=instance):
                return {p["id"]: p for p in instance.client.get("/v1/profiles").json()["items"]}
            deadline = time.time() + 5
            while otr not in listed_profiles() and time.time() < deadline:
                time.sleep(0.05)
            profiles = listed_profiles()
            check(set(profiles) == {p1, p2, otr}, "%s lists every profile, A's incognito one included: %s" % (instance.name, sorted(profiles)))
            check(profiles[p2]["windowCount"] == 2 and profiles[otr]["windowCount"] == 1, "%s counts windows everywhere" % instance.name)
        # A fourth instance, started now, learns the incognito profile from the others.
        d = Instance(binary, database, "d")
        try:
            deadline = time.time() + 5
            ids = []
            while otr not in ids and time.time() < deadline:
                ids = [p["id"] for p in d.client.get("/v1/profiles").json()["items"]]
                time.sleep(0.05)
            check(otr in ids, "a new instance lists the incognito profile A holds: %s" % ids)
        finally:
            d.stop()
        check(a.client.delete("/v1/profiles/%s" % p2).status_code == 204, "delete B's profile through A")
        deadline = time.time() + 5
        while not any(e == ("profiles.remove", {"profileId": p2}) for e in directory) and time.time() < deadline:
            time.sleep(0.05)
        done.set()
        names = [(e[0], e[1].get("profile", {}).get("id") or e[1].get("profileId")) for e in directory[1:]]
        for wanted in [("profiles.add", p1), ("profiles.add", p2), ("profiles.add", otr), ("profiles.remove", p2)]:
            check(wanted in names, "C's directory saw %s %s: %s" % (wanted[0], wanted[1], names))
        counts = [e[1]["profile"]["windowCount"] for e in directory if e[0] in ("profiles.add", "profiles.update") and e[1]["profile"]["id"] == p2]
        check(counts[:3] == [0, 1, 2], "C's directory followed B's window count: %s" % counts)
        return "lists and directory: 4 windows over 2 instances (1 incognito) listed and paged alike by all 3; C's directory saw %d events made on A and B; a 4th instance learned A's incognito profile" % len(names)

    return with_cluster(binary, admin, 3, body)


def scenario_webdriver(binary, admin):
    """A WebDriver client behind a round-robin proxy: each command may reach another instance."""
    def body(database, instances):
        capabilities = {"capabilities": {"alwaysMatch": {"browserName": "browserd"}}}
        # While the database cannot say whether the shared profile exists, a new session is refused
        # (503), never made here with a second shared profile.
        database.psql("ALTER TABLE profiles RENAME TO profiles_unreadable", url=database.url)
        try:
            refused = instances[1].client.post("/webdriver/session", json=capabilities)
        finally:
            database.psql("ALTER TABLE profiles_unreadable RENAME TO profiles", url=database.url)
        check(refused.status_code == 503 and refused.headers.get("Retry-After"), "a new session the database cannot place: %s %s" % (refused.status_code, refused.text[:160]))
        first = instances[1].client.post("/webdriver/session", json=capabilities)
        check(first.status_code == 200, "new session through B: %s %s" % (first.status_code, first.text))
        stored = subprocess.run(["psql", database.url, "-At", "-c", "SELECT count(*) FROM profiles WHERE name = 'webdriver'"],
                                check=True, capture_output=True, text=True).stdout.strip()
        check(stored == "1", "one shared profile after the refusal: %s" % stored)
        session = first.json()["value"]["sessionId"]
        maker = first.headers.get("X-Browserd-Instance")
        # The shared "webdriver" profile lives on one instance: a second session asked elsewhere goes there.
        second = instances[2].client.post("/webdriver/session", json=capabilities)
        check(second.status_code == 200 and second.headers.get("X-Browserd-Instance") == maker,
              "a second session through C lives with the shared profile: %s" % second.headers.get("X-Browserd-Instance"))
        for i in range(6):
            via = instances[i % 3]
            url = "https://example.com/%d" % i
            reply = via.client.post("/webdriver/session/%s/url" % session, json={"url": url})
            check(reply.status_code == 200 and reply.headers.get("X-Browserd-Instance") == maker,
                  "navigate through %s served by the session's instance: %s %s" % (via.name, reply.status_code, reply.text))
            got = instances[(i + 1) % 3].client.get("/webdriver/session/%s/url" % session)
            check(got.status_code == 200 and got.json()["value"] == url, "the URL read through another instance: %s" % got.text)
        bogus = instances[0].client.get("/webdriver/session/pffffffffffffffff.nope/url")
        check(bogus.status_code == 404 and bogus.json()["value"]["error"] == "invalid session id", "an unknown session is invalid everywhere")
        for s_id, via in ((session, instances[0]), (second.json()["value"]["sessionId"], instances[1])):
            check(via.client.delete("/webdriver/session/%s" % s_id).status_code == 200, "session ended through %s" % via.name)
        check(instances[2].client.get("/webdriver/session/%s/url" % session).status_code == 404, "an ended session is gone everywhere")
        return "webdriver: two sessions asked through B and C live with the shared profile on one instance; 12 commands through all 3 reach it"

    return with_cluster(binary, admin, 3, body)


def scenario_hostile(binary, admin):
    """The hostile-tenants review's cluster findings: a NUL refused at the edge takes no profile from
    anyone (1); an invalid token moves no lease and reaches no other instance (6); a forwarded target
    keeps its encoding (10); only instances that know the shared secret are taken for instances (12)."""
    def body(database, instances):
        a, b = instances

        def epoch(profile):
            out = subprocess.run(["psql", database.url, "-At", "-c", "SELECT epoch FROM profile_leases WHERE profile_id = '%s'" % profile],
                                 capture_output=True, text=True, check=True).stdout.strip()
            return out

        # Two tenants, both held by A; the second has an incognito window only A's memory has.
        profile, window = create_profile_window(a)
        other, other_window = create_profile_window(a)
        token = {"Authorization": "Bearer " + a.client.post("/v1/profiles/%s/tokens" % profile).json()["token"], **JSON}
        tab = a.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://one.example/"}).json()["id"]
        incognito = a.client.post("/v1/profiles/%s/incognito" % other).json()["id"]
        secret_window = a.client.post("/v1/browsers", json={"profileId": incognito}).json()["id"]
        secret_tab = a.client.post("/v1/browsers/%s/tabs" % secret_window, json={"url": "https://secret.example/"}).json()["id"]
        # 1: a NUL through B (forwarded to A): 422 naming the field; A keeps every profile it holds.
        for via in (a, b):
            refused = httpx.patch(via.base + "/v1/tabs/%s" % tab, json={"title": "a\u0000b"}, headers=token)
            check(refused.status_code == 422 and refused.json().get("field") == "title", "1: NUL refused via %s: %s %s" % (via.name, refused.status_code, refused.text))
        group = a.client.post("/v1/browsers/%s/groups" % window, json={"tabIds": [tab]}).json()["id"]
        check(httpx.patch(b.base + "/v1/groups/%s" % group, json={"title": "x\u0000"}, headers=token).status_code == 422, "1: NUL in a group title refused")
        check(a.client.get("/v1/tabs/%s" % secret_tab).status_code == 200, "1: the other tenant's incognito tab is still there")
        check(a.client.patch("/v1/tabs/%s" % secret_tab, json={"title": "still mine"}).status_code == 200, "1: and takes edits")
        check(a.client.get("/readyz").status_code == 200, "1: the instance stays ready")
        # 6: an invalid token, through B, on a session id and on ids of A's profile: 401 from B itself;
        # no lease moved, nothing forwarded, nothing asked of the database.
        before_epoch, before_forwarded = epoch(profile), metric(b, "browserd_forwarded_requests_total")
        bad = {"Authorization": "Bearer not-a-token"}
        for path in ["/webdriver/session/%s.x/url" % profile, "/v1/browsers/%s" % window, "/v1/tabs/%s" % tab] + \
                    ["/v1/browsers/w%016x" % i for i in range(20)]:
            reply = httpx.get(b.base + path, headers=bad)
            check(reply.status_code == 401, "6: an invalid token is 401 on %s: %s" % (path, reply.status_code))
        check(epoch(profile) == before_epoch, "6: no lease moved: epoch %s -> %s" % (before_epoch, epoch(profile)))
        check(metric(b, "browserd_forwarded_requests_total") == before_forwarded, "6: nothing was forwarded")
        # 10: the target is forwarded as sent: an encoded ? and # stay in the path segment.
        reply = b.client.post("/v1/browsers/%s/commands/x%%3Fadmin=1%%23frag" % window, json={})
        check(reply.headers.get("X-Browserd-Instance") == a.id, "10: forwarded to the owner")
        check(reply.status_code == 404 and "x?admin=1#frag" in reply.text, "10: the owner saw the command name whole: %s" % reply.text)
        # 12: a client that says it is an instance (no secret) is a client: its request is forwarded,
        # and no answer names a profile or an instance it could not see.
        spoofed = httpx.get(b.base + "/v1/browsers/%s" % window, headers={"X-Browserd-Forwarded-By": "evil", **token})
        check(spoofed.status_code == 200 and spoofed.headers.get("X-Browserd-Instance") == a.id,
              "12: a spoofed forwarded-by header is ignored: %s %s" % (spoofed.status_code, spoofed.text[:200]))
        wrong = httpx.get(b.base + "/v1/browsers/%s" % window,
                          headers={"X-Browserd-Forwarded-By": "evil", "X-Browserd-Cluster-Proof": "t=%d,s=%s" % (time.time(), "0" * 64),
                                   **token})
        check(wrong.status_code == 200 and wrong.headers.get("X-Browserd-Instance") == a.id,
              "12: so is a wrong proof (forwarded to the owner): %s" % wrong.status_code)
        # The secret itself proves nothing (it never travels: an instance proves the request with it).
        with open(SECRET.name) as secret_file:
            secret = secret_file.read().strip()
        clear = httpx.get(b.base + "/v1/browsers/%s" % window,
                          headers={"X-Browserd-Forwarded-By": "evil", "X-Browserd-Cluster-Secret": secret, **token})
        check(clear.status_code == 200 and clear.headers.get("X-Browserd-Instance") == a.id,
              "12: so is the secret sent in clear: %s" % clear.status_code)
        # 13: only an instance may send a pipeline of reads, even one a client dresses as a peer's.
        pipeline = ("GET /v1/browsers/%s HTTP/1.1\r\nAuthorization: %s\r\n\r\n" % (window, token["Authorization"])).encode()
        for instance in (a, b):
            for extra in ({}, {"X-Browserd-Forwarded-By": "evil", "X-Browserd-Cluster-Proof": "t=%d,s=%s" % (time.time(), "0" * 64)}):
                refused = httpx.post(instance.base + "/v1/cluster/pipeline", content=pipeline,
                                     headers={"Content-Type": "application/http; msgtype=request", **token, **extra})
                check(refused.status_code == 403 and "application/problem+json" in refused.headers.get("Content-Type", ""),
                      "13: a client's pipeline is refused: %s %s" % (refused.status_code, refused.text[:200]))
        # 14: reads forwarded at once go to the owner in pipelines, each answered as its own.
        before_pipelines = metric(a, 'browserd_http_requests_total{method="POST",route="/v1/cluster/pipeline",status="200"}')
        answers = []
        def read_window():
            with httpx.Client(base_url=b.base, headers=token, timeout=30) as client:
                for _ in range(20):
                    answers.append(client.get("/v1/browsers/%s" % window))
        readers = [threading.Thread(target=read_window) for _ in range(16)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        check(len(answers) == 320 and all(r.status_code == 200 and r.headers.get("X-Browserd-Instance") == a.id
                                          and r.json()["id"] == window for r in answers),
              "14: every read forwarded through B is A's answer: %s" % sorted({r.status_code for r in answers}))
        pipelines = metric(a, 'browserd_http_requests_total{method="POST",route="/v1/cluster/pipeline",status="200"}') - before_pipelines
        check(pipelines > 0, "14: 320 reads from 16 clients at once went to A in some pipelines")
        return "hostile: a NUL is 422 through either instance and the other tenant's incognito tab stays; an invalid token is 401 on 23 paths with no lease moved and nothing forwarded; an encoded target reaches the owner whole; a forwarded-by header without a valid proof (or with the secret in clear) is a client's; a client's pipeline is 403 on both; 320 reads at once through B answered by A, %d pipelines" % pipelines

    return with_cluster(binary, admin, 2, body, admin_token="cluster-admin-token-%d" % os.getpid())


def scenario_compose_environment(binary, admin):
    """deploy/compose.yaml's browserd environment, as written (but the addresses), starts and serves."""
    import yaml
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    compose = yaml.safe_load(open(os.path.join(root, "deploy", "compose.yaml")))
    help_text = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True).stdout
    names = set()
    for name, service in compose["services"].items():
        for variable in (service.get("environment") or {}):
            # (BROWSERD_RENDERER_*: browserd-renderer's, checked by tests/renderers_test.py.)
            if variable.startswith("BROWSERD_") and not variable.startswith("BROWSERD_RENDERER_"):
                names.add(variable)
    unknown = sorted(n for n in names if n not in help_text)
    check(not unknown, "deploy/compose.yaml sets variables browserd does not know: %s" % unknown)
    database = Database(admin)
    parts = urllib.parse.urlsplit(database.url)
    password = tempfile.NamedTemporaryFile("w", delete=False)
    password.write(urllib.parse.unquote(parts.password or "") + "\n")
    password.close()
    token = "compose-test-token-%d" % os.getpid()
    environment = {k: str(v) for k, v in compose["services"]["browserd-1"]["environment"].items()}
    environment.update(
        BROWSERD_DATABASE_URL=urllib.parse.urlunsplit(parts._replace(netloc="%s@%s:%d" % (parts.username, parts.hostname, parts.port))),
        BROWSERD_DATABASE_PASSWORD_FILE=password.name, BROWSERD_ADMIN_TOKEN=token)
    instance = None
    try:
        instance = Instance(binary, database, "compose", environment=environment,
                            headers={"Authorization": "Bearer " + token})
        check(instance.client.get("/readyz").status_code == 200, "ready with the compose environment")
        check(instance.client.post("/v1/profiles", json={"name": "compose"}).status_code == 201, "serves with the compose environment")
        check(httpx.get(instance.base + "/v1/profiles").status_code == 401, "and asks for the token")
        return "deploy/compose.yaml: its %d BROWSERD_ variables are browserd's; an instance started with them (password from a file) serves" % len(names)
    finally:
        if instance:
            instance.stop()
        os.unlink(password.name)
        database.drop()


def scenario_lazy_read_fails(binary, admin):
    """Storage never lies on PostgreSQL: a profile's load (a takeover) that fails answers 503 and holds
    nothing; once the database reads again the same requests get the stored state, not a made-up one."""
    def body(database, instances):
        a, b = instances
        profile, window = create_profile_window(a)
        tab = a.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://lazy.example/0"}).json()["id"]
        for n in range(1, 6):
            check(a.client.post("/v1/tabs/%s/navigate" % tab, json={"url": "https://lazy.example/%d" % n}).status_code == 200, "navigate")
        stored = ["https://lazy.example/%d" % n for n in range(6)]
        a.stop()  # its leases end with it: B takes the profile over on its first request
        database.psql("ALTER TABLE tabs RENAME TO tabs_unreadable", url=database.url)
        try:
            # The list of every window too: a list without the profile's windows would be made up.
            replies = [b.client.get("/v1/browsers"), b.client.get("/v1/browsers/%s" % window), b.client.get("/v1/tabs/%s/history" % tab),
                       b.client.post("/v1/tabs/%s/navigate" % tab, json={"url": "https://during.example/"})]
            check(all(r.status_code == 503 and r.headers.get("Retry-After") and r.json().get("type") == "/problems/storage-unavailable" for r in replies),
                  "a failed load is 503 with Retry-After: %s" % [(r.status_code, r.text[:120]) for r in replies])
            leased = subprocess.run(["psql", database.url, "-At", "-c", "SELECT count(*) FROM profile_leases WHERE profile_id = '%s' AND owner_id = '%s' AND expires_at > now()" % (profile, b.id)],
                                    check=True, capture_output=True, text=True).stdout.strip()
            check(leased == "0", "B gave the lease back: it holds nothing of a profile it could not load (%s)" % leased)
        finally:
            database.psql("ALTER TABLE tabs_unreadable RENAME TO tabs", url=database.url)
        history = until_available(lambda: b.client.get("/v1/tabs/%s/history" % tab))
        urls = [e["url"] for e in history.json().get("entries", [])]
        check(history.status_code == 200 and urls == stored, "the stored history once it reads again: %s %s" % (history.status_code, urls))
        after = until_available(lambda: b.client.post("/v1/tabs/%s/navigate" % tab, json={"url": "https://after.example/"}))
        check(after.status_code == 200, "a change after it: %s" % after.status_code)
        urls = [e["url"] for e in b.client.get("/v1/tabs/%s/history" % tab).json()["entries"]]
        check(urls == stored + ["https://after.example/"], "nothing made up, nothing lost: %s" % urls)
        return "lazy read: a takeover whose load failed (tabs unreadable) was 503 on the list of windows, a read, the history and a change, held nothing; then the stored 6 entries and a 7th"

    return with_cluster(binary, admin, 2, body)


def scenario_idle_profiles_leave(binary, admin):
    """--profile-idle-seconds on a cluster instance: a profile nobody uses leaves the owner's memory
    (RSS goes back down) and its lease is given back at once, so another instance takes it over on its
    next request and answers exactly what the owner did; one with an open stream stays."""
    def body(database, instances):
        a, b = instances

        def rss(instance):
            with open("/proc/%d/status" % instance.process.pid) as status:
                return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))

        def leased(profile):
            return subprocess.run(["psql", database.url, "-At", "-c", "SELECT count(*) FROM profile_leases WHERE profile_id = '%s' AND expires_at > now()" % profile],
                                  check=True, capture_output=True, text=True).stdout.strip()

        def evicted(instance, count):
            deadline = time.time() + 20
            while metric(instance, "browserd_profile_evictions_total") < count and time.time() < deadline:
                time.sleep(0.2)
            return metric(instance, "browserd_profile_evictions_total") == count

        profile, window = create_profile_window(a)
        for n in range(1500):
            reply = a.client.post("/v1/browsers/%s/tabs" % window, json={"url": "https://idle.example/%d/%s" % (n, "p" * 800), "activate": False})
            check(reply.status_code == 201, "tab %d: %s %s" % (n, reply.status_code, reply.text[:200]))
        kept, kept_window = create_profile_window(a)
        watched = httpx.Client(base_url=a.base, timeout=30)
        with watched.stream("GET", "/v1/browsers/%s/events" % kept_window):
            before = a.client.get("/v1/browsers/%s" % window)
            check(before.headers.get("X-Browserd-Instance") == a.id, "A holds the profile it made")
            check(evicted(a, 1), "A dropped the idle profile: %s" % metric(a, "browserd_profile_evictions_total"))
            check(metric(a, "browserd_profiles_loaded") == 1, "the watched profile stays in memory")
            check(leased(profile) == "0", "its lease was given back at once")
            check(leased(kept) == "1", "the watched profile's lease stays")
        watched.close()
        # B takes it over on its next request, answers what A did, and drops it in turn: its RSS
        # follows (measured on B, whose memory saw nothing but the load).
        empty = rss(b)
        again = b.client.get("/v1/browsers/%s" % window)
        check(again.status_code == 200 and again.headers.get("X-Browserd-Instance") == b.id, "B took it over: %s %s" % (again.status_code, again.headers.get("X-Browserd-Instance")))
        check(again.json() == before.json(), "B answers exactly what A did before it left")
        check(metric(b, "browserd_profile_loads_total") == 1 and metric(b, "browserd_lease_takeovers_total") == 1, "one load on B")
        loaded = rss(b)
        check(evicted(b, 1), "B dropped it too once idle")
        time.sleep(0.3)
        after = rss(b)
        check(after < loaded - (loaded - empty) / 2,
              "B's RSS went back down: empty %.1f MB, loaded %.1f MB, after idle %.1f MB" % (empty / 1e6, loaded / 1e6, after / 1e6))
        check(a.client.get("/v1/browsers/%s" % window).json() == before.json(), "A takes it back unchanged")
        return "idle: A dropped a 1,500-tab profile after 2 s idle and gave its lease back, the watched one stayed; B took it over, answered the same, dropped it (RSS %.1f -> %.1f -> %.1f MB); A took it back unchanged" % (empty / 1e6, loaded / 1e6, after / 1e6)

    return with_cluster(binary, admin, 2, body, extra=("--profile-idle-seconds", "2"))


def main():
    binary = sys.argv[1]
    admin = os.environ.get("BROWSERD_TEST_DATABASE_URL")
    pg_ctl = os.environ.get("BROWSERD_TEST_PG_CTL")
    if not admin or not pg_ctl:
        sys.exit("cluster test: run it under scripts/with-postgres.sh (make test does)")
    only = sys.argv[2] if len(sys.argv) > 2 else ""  # e.g. `lists`: the scenarios whose names hold it
    for scenario in (scenario_compose_environment, scenario_hostile, scenario_tokens, scenario_create_read_watch, scenario_lists_and_directory, scenario_webdriver, scenario_kill_owner, scenario_pause_owner, scenario_lazy_read_fails, scenario_idle_profiles_leave):
        if only in scenario.__name__:
            print("cluster:", scenario(binary, admin), flush=True)
    if only in "scenario_restart_postgres":
        print("cluster:", scenario_restart_postgres(binary, admin, pg_ctl), flush=True)


if __name__ == "__main__":
    main()
