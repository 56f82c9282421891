#!/usr/bin/env python3
"""Renderers at scale (issue 55): two browserd-renderers (no --profile) take the profiles browserd gives
them, against a live browserd with a real Chromium per profile, pages served on loopback.

Every profile with windows is rendered by exactly one renderer; a renderer killed with SIGKILL loses its
profiles to the other within the lease + 5 s (their pages report again); restarted with the same name and
state directory it takes none of them back while the other holds them; a renderer stopped with SIGTERM
drains (its profiles move before it exits); a report under an old fence is refused with 409. A page-side
proof that nothing is rendered twice: each page beats to the page server with its own instance id, and no
two instances of one profile's page beat at the same time.

Usage: tests/renderers_test.py PATH_TO_BROWSERD PATH_TO_BROWSERD_RENDERER (on SQLite, and on PostgreSQL too under
scripts/with-postgres.sh)
"""
import http.server
import json
import os
import re
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

ADMIN = "admin-token-for-the-renderers-test"
LEASE = 4
# A page beats every 100 ms: a page that is not rendered stops beating.
ALIVE = """<!doctype html><title>alive</title><script>
const page = Math.random().toString(36).slice(2);
const key = new URLSearchParams(location.search).get('key');
setInterval(() => fetch('/beat?key=' + key + '&page=' + page, {cache: 'no-store'}).catch(() => {}), 100);
</script>"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None, token=ADMIN, headers=None):
    """(status, JSON or None)."""
    data = json.dumps(body).encode() if body is not None else None
    all_headers = {"Content-Type": "application/json"} if data is not None else {}
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    all_headers.update(headers or {})
    request = urllib.request.Request(base + path, data=data, method=method, headers=all_headers)
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



def wait_for(predicate, what, timeout=30):
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Beats:
    """Each key's page instances and when each beat first and last."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen = {}  # key -> page -> [first, last]

    def beat(self, key, page):
        now = time.time()
        with self.lock:
            span = self.seen.setdefault(key, {}).setdefault(page, [now, now])
            span[1] = now

    def alive(self, key, within=1.0):
        """The page instances of `key` that beat within the last `within` seconds."""
        now = time.time()
        with self.lock:
            return {page for page, (_, last) in self.seen.get(key, {}).items() if now - last <= within}

    def overlaps(self):
        """Pairs of one key's page instances that beat at the same time (rendered twice)."""
        found = []
        with self.lock:
            for key, pages in self.seen.items():
                spans = sorted(pages.items(), key=lambda item: item[1][0])
                for (a, (a0, a1)), (b, (b0, b1)) in zip(spans, spans[1:]):
                    # The next instance's first beat after the previous one's last: a handover.
                    if b0 < a1 - 0.05:
                        found.append((key, a, (a0, a1), b, (b0, b1)))
        return found


def pages_handler(beats):
    class Pages(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path, _, query = self.path.partition("?")
            if path == "/beat":
                fields = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
                beats.beat(fields.get("key", ""), fields.get("page", ""))
                body = b"ok"
            else:
                body = ALIVE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # a page that closed meanwhile (its Chromium stopped)

        def log_message(self, *args):
            pass

    return Pages


class Setup:
    def __init__(self, browserd, renderer, store=None):
        self.root = tempfile.mkdtemp(prefix="browserd-renderers-")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.renderer = renderer
        self.renderers = {}
        self.status = {}
        store = store or ["--data-dir", os.path.join(self.root, "data")]
        self.server_log = open(os.path.join(self.root, "browserd.log"), "w")
        self.server = subprocess.Popen(
            [browserd, "serve", "--port", str(self.port), "--log-level", "warning", "--renderer-lease-seconds", str(LEASE)] + store,
            env=dict(os.environ, BROWSERD_ADMIN_TOKEN=ADMIN), stdout=self.server_log, stderr=subprocess.STDOUT)
        wait_for(self.ready, "browserd to be ready")
        self.beats = Beats()
        self.pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), pages_handler(self.beats))
        threading.Thread(target=self.pages.serve_forever, daemon=True).start()
        self.site = f"http://127.0.0.1:{self.pages.server_address[1]}"

    def ready(self):
        try:
            urllib.request.urlopen(self.base + "/readyz", timeout=1)
            return True
        except OSError:
            return False

    def start(self, name, max_profiles=4, extra=(), own_token=False):
        """A renderer (no --profile); its capacity and status port come from the environment; with
        `own_token`, it calls with its own renderer token rather than the admin's."""
        token = ADMIN
        if own_token:
            status, body = call(self.base, "POST", f"/v1/renderers/{name}/token")
            assert status == 201, body
            token = body["token"]
        log = open(os.path.join(self.root, f"renderer-{name}.log"), "a")
        status = free_port()
        environment = dict(os.environ, BROWSERD_RENDERER_CAPACITY="10", BROWSERD_RENDERER_STATUS_LISTEN=f"127.0.0.1:{status}")
        process = subprocess.Popen(
            [self.renderer, "--server", self.base, "--token", token, "--name", name, "--max-profiles", str(max_profiles),
             "--state-dir", os.path.join(self.root, f"state-{name}"), "--allow-origin", self.site, "--devtools-listen", "off"]
            + list(extra),
            stdout=log, stderr=subprocess.STDOUT, env=environment)
        self.renderers[name] = process
        self.status[name] = f"http://127.0.0.1:{status}"
        return process

    def metrics(self, name):
        """The renderer's Prometheus metrics, by name (labels dropped)."""
        with urllib.request.urlopen(self.status[name] + "/metrics", timeout=5) as reply:
            text = reply.read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                values[key] = float(value)
        return values

    def healthz(self, name):
        try:
            with urllib.request.urlopen(self.status[name] + "/healthz", timeout=5) as reply:
                return reply.status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return None

    def holders(self):
        """profile -> [renderer names that hold it] (GET /v1/renderers)."""
        status, body = call(self.base, "GET", "/v1/renderers")
        assert status == 200, body
        held = {}
        for renderer in body["items"]:
            for hold in renderer["profiles"]:
                held.setdefault(hold["profileId"], []).append(renderer["name"])
        return held

    def log(self, name):
        with open(os.path.join(self.root, f"renderer-{name}.log")) as f:
            return f.read()

    def close(self):
        for process in self.renderers.values():
            if process.poll() is None:
                process.terminate()
        for process in self.renderers.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.server.terminate()
        self.server.wait(timeout=20)
        self.pages.shutdown()
        shutil.rmtree(self.root, ignore_errors=True)


def chromiums_of(state_dir):
    """Chromium processes whose user-data directory is under `state_dir`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except OSError:
            continue
        if "--user-data-dir=" + state_dir in cmdline and "--type=" not in cmdline:
            found.append(int(pid))
    return found


def compose_variables_are_known(renderer):
    """deploy/compose.yaml's and the renderer image's BROWSERD_RENDERER_* variables each name a flag of
    browserd-renderer's (BROWSERD_RENDERER_STATUS_HOST and _PORT make --status-listen)."""
    import yaml
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    help_text = subprocess.run([renderer, "--help"], capture_output=True, text=True).stdout
    compose = yaml.safe_load(open(os.path.join(root, "deploy", "compose.yaml")))
    names = set()
    for service in compose["services"].values():
        names.update(v for v in (service.get("environment") or {}) if v.startswith("BROWSERD_RENDERER_"))
    with open(os.path.join(root, "clients", "swift", "Dockerfile")) as f:
        names.update(re.findall(r"\b(BROWSERD_RENDERER_[A-Z_]+)=", f.read()))
    flags = {"--" + name[len("BROWSERD_RENDERER_"):].lower().replace("_", "-") for name in names} - {"--status-host", "--status-port"}
    unknown = sorted(flag for flag in flags if flag not in help_text)
    assert not unknown, f"compose.yaml or the renderer's Dockerfile set variables browserd-renderer does not know: {unknown}"
    print(f"renderers: the {len(names)} BROWSERD_RENDERER_* variables of compose.yaml and the image are flags of browserd-renderer")


def main():
    browserd, renderer = sys.argv[1], sys.argv[2]
    compose_variables_are_known(renderer)
    for label, store, drop in stores("renderers"):
        print(f"renderers: on {label}")
        setup = Setup(browserd, renderer, store)
        try:
            run(setup)
            if store is None:
                setup.close()
                setup = Setup(browserd, renderer)
                max_profiles(setup)
                max_live_pages(setup)
        except BaseException:
            for name in setup.renderers:
                print(f"--- renderer {name}'s log (last 4000 characters)\n{setup.log(name)[-4000:]}", file=sys.stderr)
            raise
        finally:
            setup.close()
            drop()


def max_profiles(setup):
    """--max-profiles 2: three profiles, at most two Chromiums; the one closed for room (nobody watches
    or uses it) starts again when a client watches its window, closing another."""
    base = setup.base
    setup.start("c", max_profiles=2, extra=["--profile-idle-seconds", "2"])
    wait_for(lambda: len(call(base, "GET", "/v1/renderers")[1]["items"]) == 1, "c registered")
    windows = {}
    for i in range(3):
        profile = created(base, "/v1/profiles", {"name": f"m{i}"})
        window = created(base, "/v1/browsers", {"profileId": profile})
        call(base, "POST", f"/v1/browsers/{window}/tabs", {"url": f"{setup.site}/alive.html?key={profile}"})
        windows[profile] = window
    profiles = list(windows)
    most = [0]

    def beating():
        alive = [p for p in profiles if setup.beats.alive(p, 0.3)]
        most[0] = max(most[0], len(alive))
        return alive

    # The third profile waits for room: one of the first two closes once nobody used it for 2 s.
    wait_for(lambda: all(p in setup.beats.seen for p in profiles) and len(beating()) == 2, "every profile rendered once, two at a time",
             timeout=40)
    idle = wait_for(lambda: next((p for p in profiles if p not in beating()), None), "a profile closed for room")
    # A client watches the idle profile's window: it starts again, and another closes for it.
    stream = urllib.request.urlopen(urllib.request.Request(
        f"{base}/v1/browsers/{windows[idle]}/events", headers={"Authorization": f"Bearer {ADMIN}"}), timeout=60)
    try:
        started = time.time()
        wait_for(lambda: idle in beating(), "the watched profile rendered again", timeout=20)
        print(f"renderers: --max-profiles 2 with 3 profiles: a watched idle profile renders again after {time.time() - started:.1f} s")
        time.sleep(1)
        assert len(beating()) <= 2
    finally:
        stream.close()
    assert most[0] <= 2, f"{most[0]} profiles rendered at once under --max-profiles 2"
    assert setup.metrics("c")["browserd_renderer_profiles_running"] == 2


def max_live_pages(setup):
    """--max-live-pages 3 across two profiles of one renderer, each a window of three tabs: three pages
    beat at most, each window's active tab among them."""
    base = setup.base
    setup.start("d", extra=["--max-live-pages", "3", "--live-tabs", "3"])
    wait_for(lambda: any(r["name"] == "d" for r in call(base, "GET", "/v1/renderers")[1]["items"]), "d registered")
    keys, active = [], []
    for i in range(2):
        profile = created(base, "/v1/profiles", {"name": f"l{i}"})
        window = created(base, "/v1/browsers", {"profileId": profile})
        for t in range(3):
            key = f"{profile}-{t}"
            call(base, "POST", f"/v1/browsers/{window}/tabs", {"url": f"{setup.site}/alive.html?key={key}"})
            keys.append(key)
        active.append(key)
    held = wait_for(lambda: [r for r in call(base, "GET", "/v1/renderers")[1]["items"] if r["name"] == "d" and len(r["profiles"]) == 2],
                    "d to hold both profiles")
    assert held
    most = [0]

    def beating():
        alive = [k for k in keys if setup.beats.alive(k, 0.3)]
        most[0] = max(most[0], len(alive))
        return alive

    wait_for(lambda: len(beating()) == 3 and all(k in beating() for k in active), "three live pages, both active tabs among them", timeout=40)
    for _ in range(20):
        beating()
        time.sleep(0.1)
    assert most[0] <= 3, f"{most[0]} pages live under --max-live-pages 3"
    assert setup.metrics("d")["browserd_renderer_live_pages"] == 3
    print("renderers: --max-live-pages 3 across two profiles' windows of three tabs: three pages, both active tabs")


def run(setup):
    base = setup.base
    # Both renderers register first; then twelve profiles: four with a window whose tab beats, eight
    # without windows (they want no renderer).
    setup.start("a")
    setup.start("b", own_token=True)
    wait_for(lambda: len(call(base, "GET", "/v1/renderers")[1]["items"]) == 2, "both renderers registered")
    windowed, idle = [], []
    for i in range(12):
        status, profile = call(base, "POST", "/v1/profiles", {"name": f"p{i}"})
        assert status == 201, profile
        if i < 4:
            window = created(base, "/v1/browsers", {"profileId": profile["id"]})
            status, tab = call(base, "POST", f"/v1/browsers/{window}/tabs", {"url": f"{setup.site}/alive.html?key={profile['id']}"})
            assert status == 201, tab
            windowed.append((profile["id"], tab["id"]))
        else:
            idle.append(profile["id"])
    profiles = [p for p, _ in windowed]

    def everyone_rendered_once():
        held = setup.holders()
        return all(len(held.get(p, [])) == 1 for p in profiles) and not any(p in held for p in idle) and all(
            len(setup.beats.alive(p)) == 1 for p in profiles)

    started = time.time()
    wait_for(everyone_rendered_once, "every profile with windows rendered by exactly one renderer", timeout=60)
    first_visible = time.time() - started
    held = setup.holders()
    counts = {}
    for p in profiles:
        counts[held[p][0]] = counts.get(held[p][0], 0) + 1
    assert counts == {"a": 2, "b": 2}, f"least loaded first: {counts}"
    print(f"renderers: 4 profiles rendered (2 each), their pages beating {first_visible:.1f} s after their windows were made")
    # Each renderer's status port: healthy, and what it counts.
    listed = call(base, "GET", "/v1/renderers")[1]["items"]
    assert [r["capacity"] for r in listed] == [10, 10], f"the capacity from the environment: {listed}"
    for name in ("a", "b"):
        assert setup.healthz(name) == 200, name
        wait_for(lambda: setup.metrics(name).get("browserd_renderer_live_pages") == 2, f"{name}'s metrics to count its live pages")
        values = setup.metrics(name)
        assert values["browserd_renderer_profiles_held"] == 2 and values["browserd_renderer_profiles_running"] == 2, values
        assert values["browserd_renderer_chromium_starts_total"] == 2, values
        assert values.get("browserd_renderer_report_seconds_count", 0) > 0, values

    # A report under an old or another's fence is refused (409); the holder's is taken.
    profile, tab = windowed[0]
    status, body = call(base, "GET", f"/v1/profiles/{profile}/rendering")
    holder, fence = body["renderer"]["name"], body["renderer"]["fence"]
    other = "b" if holder == "a" else "a"
    status, body = call(base, "PATCH", f"/v1/tabs/{tab}", {"title": "late"}, headers={"Browserd-Renderer": f"{other}; fence={fence}"})
    assert status == 409 and body["type"].endswith("renderer-fenced"), (status, body)

    # SIGKILL a: its Chromiums go with it (they read their pipe's end), b takes its profiles within the
    # lease + 5 s, and their pages beat again.
    of_a = [p for p in profiles if setup.holders()[p] == ["a"]]
    setup.renderers["a"].kill()
    setup.renderers["a"].wait()
    killed = time.time()
    wait_for(lambda: not chromiums_of(os.path.join(setup.root, "state-a")), "a's Chromiums to end with it", timeout=10)

    def started_since(p, moment):
        """A page of `p` that first beat after `moment` (a new instance, not the old one's last beats)."""
        with setup.beats.lock:
            return any(first >= moment for first, _ in setup.beats.seen.get(p, {}).values())

    def b_renders_all():
        held = setup.holders()
        return all(held.get(p) == ["b"] for p in profiles) and all(started_since(p, killed) for p in of_a)

    wait_for(b_renders_all, "b to render a's profiles", timeout=LEASE + 5)
    print(f"renderers: a killed; b renders its {len(of_a)} profiles after {time.time() - killed:.1f} s (lease {LEASE} s)")

    # a again, same name and state directory: it takes none of them back while b holds them.
    setup.start("a")
    time.sleep(LEASE)
    held = setup.holders()
    assert all(held.get(p) == ["b"] for p in profiles), (held, call(base, "GET", "/v1/renderers"), setup.renderers["b"].poll())
    assert "rendering profile" not in setup.log("a").split("serving the profiles")[-1], "a renders nothing"

    # SIGTERM b: it drains (a takes its profiles before b exits), with no gap beyond one load.
    setup.renderers["b"].send_signal(signal.SIGTERM)
    stopped = time.time()
    setup.renderers["b"].wait(timeout=25)
    exited = time.time() - stopped
    # Drained, not lapsed: a holds them at once (b's lease would last 4 s more), and b said so.
    wait_for(lambda: all(setup.holders().get(p) == ["a"] for p in profiles), "a to hold every profile after b drained", timeout=1)
    assert "drained: browserd handed" in setup.log("b"), setup.log("b")[-2000:]
    wait_for(lambda: all(started_since(p, stopped) for p in profiles), "a's pages to beat", timeout=15)
    gaps = []
    with setup.beats.lock:
        for p in profiles:
            spans = sorted(setup.beats.seen[p].values())
            # The handover of the drain: the last page before the SIGTERM, the first after it.
            before = max(span[1] for span in spans if span[0] < stopped)
            after = min(span[0] for span in spans if span[0] >= stopped)
            gaps.append(after - before)
    # One load: Chromium's start in a (it runs none of these profiles yet) and the page's first beat.
    assert max(gaps) < 6, f"the drain's page gaps: {gaps}"
    print(f"renderers: b drained and exited in {exited:.1f} s; page gaps at the handover {min(gaps):.2f}-{max(gaps):.2f} s")

    overlaps = setup.beats.overlaps()
    assert not overlaps, f"a profile's page rendered twice at once: {overlaps}"
    print("renderers: no page was rendered twice at any moment")


if __name__ == "__main__":
    main()
