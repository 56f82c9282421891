#!/usr/bin/env python3
"""Automation clients attach to a profile's real pages (issue 51): Playwright's Python client
(`connect_over_cdp`, its bundled driver, no browser download) and raw WebSocket clients against a live
browserd and two browserd-renderers (a real headless Chromium each), with pages served on loopback.

What a client does is the model's (a new page is a tab, a closed page a closed tab, a form's submit a
history entry), what the model does reaches the client (a tab opened through REST is a new page), two
profiles never see each other's pages, the fence holds for a client's navigations, a client's
`Browser.close` ends only its connection, and the tabs outlive every client.

Usage: tests/automation_test.py PATH_TO_BROWSERD PATH_TO_BROWSERD_RENDERER
"""
import base64
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import websocket
from selenium import webdriver
from selenium.common.exceptions import JavascriptException, WebDriverException
from selenium.webdriver.common.options import ArgOptions
from selenium.webdriver.common.proxy import Proxy, ProxyType
from selenium.webdriver.remote.client_config import AuthType, ClientConfig
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

ADMIN = "admin-token-for-the-automation-test"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None, token=ADMIN):
    """(status, headers, JSON or None)."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=15) as reply:
            text = reply.read()
            return reply.status, reply.headers, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, error.headers, json.loads(text) if text else None


def wait_for(predicate, what, timeout=20):
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def pumped(browser, predicate, what, timeout=30):
    """wait_for, letting Playwright's sync loop take the browser's events between looks."""
    def look():
        value = predicate()
        if not value:
            pages = browser.contexts[0].pages if browser.contexts else []
            try:
                pages[0].wait_for_timeout(50) if pages else time.sleep(0.05)
            except PlaywrightError:
                time.sleep(0.05)
        return value
    return wait_for(look, what, timeout)


class Pages(http.server.BaseHTTPRequestHandler):
    """The pages clients drive: a form that submits to /done, and a page to screenshot."""

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/form":
            body = b"""<!doctype html><title>form</title><form action="/done" method="get">
                <input id="name" name="name"><button id="send" type="submit">send</button></form>"""
        elif path == "/done":
            body = f"<!doctype html><title>done {self.path.split('=', 1)[-1]}</title><p>thanks".encode()
        else:
            body = f"<!doctype html><title>page {path}</title><p style='font-size:40px'>{path}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Setup:
    def __init__(self, browserd, renderer):
        self.root = tempfile.mkdtemp(prefix="browserd-automation-")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.processes = []
        self.server = subprocess.Popen(
            [browserd, "serve", "--port", str(self.port), "--data-dir", os.path.join(self.root, "data"), "--log-level", "warning"],
            env=dict(os.environ, BROWSERD_ADMIN_TOKEN=ADMIN), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(self.server)
        wait_for(lambda: self.ready(), "browserd to be ready")
        self.pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
        threading.Thread(target=self.pages.serve_forever, daemon=True).start()
        self.site = f"http://127.0.0.1:{self.pages.server_address[1]}"
        self.renderer = renderer

    def ready(self):
        try:
            urllib.request.urlopen(self.base + "/readyz", timeout=1)
            return True
        except OSError:
            return False

    def profile(self, name):
        """A profile with a token and one window holding one tab at the page server's /start-NAME."""
        status, _, profile = call(self.base, "POST", "/v1/profiles", {"name": name})
        assert status == 201, profile
        token = call(self.base, "POST", f"/v1/profiles/{profile['id']}/tokens")[2]["token"]
        window = call(self.base, "POST", "/v1/browsers", {"profileId": profile["id"]})[2]["id"]
        tab = call(self.base, "POST", f"/v1/browsers/{window}/tabs", {"url": f"{self.site}/start-{name}"})[2]
        return profile["id"], token, window, tab["id"]

    def render(self, profile):
        log = open(os.path.join(self.root, f"renderer-{profile}.log"), "w")
        process = subprocess.Popen(
            [self.renderer, "--server", self.base, "--token", ADMIN, "--profile", profile, "--state-dir", os.path.join(self.root, "state"),
             "--allow-origin", self.site, "--name", f"test-{profile}", "--status-listen", "127.0.0.1:0"],
            stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def endpoint(self, profile):
        return f"{self.base}/v1/profiles/{profile}/devtools"

    def close(self):
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        self.pages.shutdown()
        shutil.rmtree(self.root, ignore_errors=True)


def tabs_of(setup, window):
    return [t["id"] for t in call(setup.base, "GET", f"/v1/browsers/{window}")[2]["tabs"]]


def directory(setup, profile, token, other_token):
    """Chromium's /json/* as browserd answers them: auth, 503 while no renderer holds the profile."""
    for path in ("/json/version", "/json/version/", "/json/list", "/json", "/json/list/"):
        assert call(setup.base, "GET", f"/v1/profiles/{profile}/devtools{path}", token=None)[0] == 401, path
        assert call(setup.base, "GET", f"/v1/profiles/{profile}/devtools{path}", token=other_token)[0] in (403, 404), path
    status, headers, body = call(setup.base, "GET", f"/v1/profiles/{profile}/devtools/json/version/", token=token)
    assert status == 200, (status, body)
    assert body["Browser"].startswith("Chrome/") and body["Protocol-Version"] == "1.3", body
    assert body["webSocketDebuggerUrl"].startswith("ws://127.0.0.1:") and f"/devtools/browser/{profile}?ticket=" in body["webSocketDebuggerUrl"], body
    return body["webSocketDebuggerUrl"]


def webdriver_on_a_real_page(setup, token):
    """selenium's Execute Script (sync and async, with arguments) and Take Screenshot on the real page
    of the session's tab."""
    w = setup.base + "/webdriver"
    config = ClientConfig(remote_server_addr=w, proxy=Proxy({"proxyType": ProxyType.DIRECT}), auth_type=AuthType.BEARER, token=token)
    driver = webdriver.Remote(command_executor=w, options=ArgOptions(), client_config=config)
    try:
        driver.get(f"{setup.site}/webdriver")

        def loaded():
            try:
                return driver.execute_script("return document.title") == "page /webdriver"
            except WebDriverException:
                return False  # the session's new tab has no page yet
        wait_for(loaded, "the WebDriver session's page", 30)
        assert driver.execute_script("return [document.title, arguments[0] + 1, arguments[1]]", 41, {"a": [1, None]}) == ["page /webdriver", 42, {"a": [1, None]}]
        assert driver.execute_async_script("const done = arguments[arguments.length - 1]; setTimeout(() => done(arguments[0] * 2), 10)", 21) == 42
        assert driver.execute_script("return Promise.resolve(location.pathname)") == "/webdriver"
        try:
            driver.execute_script("throw new Error('boom')")
            raise AssertionError("a throwing script answered")
        except JavascriptException as error:
            assert "boom" in error.msg, error.msg
        png = driver.get_screenshot_as_png()
        assert png.startswith(b"\x89PNG") and len(png) > 1000
    finally:
        driver.quit()


def main():
    browserd, renderer = sys.argv[1], sys.argv[2]
    os.environ["no_proxy"] = "127.0.0.1"
    setup = Setup(browserd, renderer)
    figures = {}
    try:
        a, a_token, a_window, a_tab = setup.profile("a")
        b, b_token, b_window, b_tab = setup.profile("b")
        # No renderer holds A yet: 503 with Retry-After.
        status, headers, body = call(setup.base, "GET", f"/v1/profiles/{a}/devtools/json/version", token=a_token)
        assert status == 503 and headers["Retry-After"], (status, body)
        renderer_a = setup.render(a)
        setup.render(b)
        wait_for(lambda: call(setup.base, "GET", f"/v1/profiles/{a}/devtools/json/list", token=a_token)[0] == 200
                 and call(setup.base, "GET", f"/v1/profiles/{a}/devtools/json/list", token=a_token)[2], "A's page in its directory", 60)
        wait_for(lambda: call(setup.base, "GET", f"/v1/profiles/{b}/devtools/json/list", token=b_token)[0] == 200
                 and call(setup.base, "GET", f"/v1/profiles/{b}/devtools/json/list", token=b_token)[2], "B's page in its directory", 60)
        socket_url = directory(setup, a, a_token, b_token)
        listed = call(setup.base, "GET", f"/v1/profiles/{a}/devtools/json/list", token=a_token)[2]
        assert [entry["browserdTabId"] for entry in listed] == [a_tab] and listed[0]["type"] == "page", listed
        target_of_a_tab = listed[0]["id"]
        assert call(setup.base, "GET", f"/v1/tabs/{a_tab}", token=a_token)[2].get("targetId") == target_of_a_tab
        # A ticket opens one socket, once.
        raw = websocket.create_connection(socket_url, timeout=10)
        raw.close()
        try:
            websocket.create_connection(socket_url, timeout=10)
            raise AssertionError("a used ticket opened a second socket")
        except websocket.WebSocketBadStatusException as refused:
            assert refused.status_code in (401, 403), refused.status_code

        with sync_playwright() as p:
            started = time.perf_counter()
            browser = p.chromium.connect_over_cdp(setup.endpoint(a), headers={"Authorization": f"Bearer {a_token}"})
            context = browser.contexts[0]
            figures["attach ms"] = round((time.perf_counter() - started) * 1000)
            pages = context.pages
            assert [page.url for page in pages] == [f"{setup.site}/start-a"], [page.url for page in pages]
            page = pages[0]
            assert page.evaluate("1 + 2") == 3
            assert page.title() == "page /start-a"

            # A form filled and submitted: the tab's history is the page's.
            page.goto(f"{setup.site}/form")
            page.fill("#name", "ada")
            page.click("#send")
            page.wait_for_url(f"{setup.site}/done?name=ada")
            history = wait_for(lambda: (lambda h: h if [e["url"] for e in h["entries"]][-3:] == [
                f"{setup.site}/start-a", f"{setup.site}/form", f"{setup.site}/done?name=ada"] else None)(
                call(setup.base, "GET", f"/v1/tabs/{a_tab}/history", token=a_token)[2]), "the form's entries in the tab's history")
            assert history["currentIndex"] == len(history["entries"]) - 1, history

            # A screenshot of the real page.
            png = page.screenshot()
            assert png.startswith(b"\x89PNG") and len(png) > 1000

            # A new page is a new tab of the profile's window (the model's), activated.
            before = tabs_of(setup, a_window)
            new = context.new_page()
            after = wait_for(lambda: (lambda t: t if len(t) == len(before) + 1 else None)(tabs_of(setup, a_window)), "the new page's tab")
            new_tab = [t for t in after if t not in before][0]
            assert call(setup.base, "GET", f"/v1/browsers/{a_window}")[2]["activeTabId"] == new_tab
            new.goto(f"{setup.site}/second")
            wait_for(lambda: call(setup.base, "GET", f"/v1/tabs/{new_tab}")[2]["url"] == f"{setup.site}/second", "the new tab's URL")
            # Closing the page closes the tab; recently closed keeps it.
            new.close()
            wait_for(lambda: new_tab not in tabs_of(setup, a_window), "the closed page's tab to go")
            closed = call(setup.base, "GET", f"/v1/profiles/{a}/recently-closed")[2]
            assert f"{setup.site}/second" in json.dumps(closed), closed

            # A tab opened through REST is a new page for the client.
            with context.expect_page(timeout=20000) as opened:
                rest_tab = call(setup.base, "POST", f"/v1/browsers/{a_window}/tabs", {"url": f"{setup.site}/from-rest"})[2]["id"]
            rest_page = opened.value
            # Its page is made blank, then loads the tab's URL (as every new tab's page does).
            rest_page.wait_for_url(f"{setup.site}/from-rest", timeout=20000)
            # bring_to_front activates its tab in the model.
            call(setup.base, "POST", f"/v1/tabs/{a_tab}/activate")
            rest_page.bring_to_front()
            wait_for(lambda: call(setup.base, "GET", f"/v1/browsers/{a_window}")[2]["activeTabId"] == rest_tab, "bring_to_front to activate")
            # A tab closed through REST: its page closes for the client.
            with rest_page.expect_event("close", timeout=20000):
                call(setup.base, "DELETE", f"/v1/tabs/{rest_tab}")

            # Nothing reaches the renderer's disk: a download (the page's own, by a click) is refused.
            probe = f"browserd-download-probe-{os.getpid()}.sh"
            page.goto(f"{setup.site}/form")
            page.evaluate("""name => { const a = document.createElement('a'); a.href = 'data:text/plain,echo owned';
                a.download = name; document.body.appendChild(a); a.click(); }""", probe)
            page.wait_for_timeout(1500)
            downloads = [os.path.join(os.path.expanduser("~"), "Downloads"), os.path.join(setup.root, "state")]
            leaked = [os.path.join(d, f) for top in downloads for d, _, files in os.walk(top) for f in files if f == probe]
            assert not leaked, leaked

            # The fence holds for a client: another loopback port, the renderer's files.
            for url in (f"http://127.0.0.1:{free_port()}/", "file:///etc/passwd", "chrome://version"):
                try:
                    page.goto(url, timeout=15000)
                    raise AssertionError(f"a client's goto {url} went through: {page.url}")
                except PlaywrightError as refused:
                    assert "ERR_" in str(refused) or "browserd" in str(refused), str(refused)
                    # A load the network refused: Chromium commits its error page after goto's refusal,
                    # later the busier Chromium is. Wait for that commit, or the next goto is
                    # "interrupted by another navigation to chrome-error://chromewebdata/". (A goto
                    # browserd refused never started a load: nothing follows it.)
                    if "ERR_" in str(refused):
                        page.wait_for_url("chrome-error://chromewebdata/", wait_until="commit", timeout=15000)

            # Profile B's client sees B's page only; A's never sees B's.
            other = p.chromium.connect_over_cdp(setup.endpoint(b), headers={"Authorization": f"Bearer {b_token}"})
            assert [pg.url for pg in other.contexts[0].pages] == [f"{setup.site}/start-b"], [pg.url for pg in other.contexts[0].pages]
            assert all("/start-b" not in pg.url for pg in context.pages), [pg.url for pg in context.pages]
            other.close()

            # Browser.close from a client ends its connection only: tabs and pages stay.
            tabs_before = tabs_of(setup, a_window)
            page.goto(f"{setup.site}/last")
            pages_before = sorted(pg.url for pg in context.pages)
            session = browser.new_browser_cdp_session()
            gone = []
            browser.on("disconnected", lambda _: gone.append(True))
            try:
                session.send("Browser.close")
            except PlaywrightError:
                pass
            deadline = time.time() + 10
            while not gone and time.time() < deadline:
                try:
                    page.wait_for_timeout(50)  # lets Playwright's loop see the socket close
                except PlaywrightError:
                    time.sleep(0.05)
            assert gone, "the client's connection did not end after Browser.close"
            assert tabs_of(setup, a_window) == tabs_before
            # Reconnecting finds the same pages.
            again = p.chromium.connect_over_cdp(setup.endpoint(a), headers={"Authorization": f"Bearer {a_token}"})
            urls = sorted(pg.url for pg in again.contexts[0].pages)
            assert urls == pages_before and f"{setup.site}/last" in urls, (urls, pages_before)
            assert [pg.evaluate("document.title") for pg in again.contexts[0].pages if pg.url.endswith("/last")] == ["page /last"]
            again.close()
            assert tabs_of(setup, a_window) == tabs_before

        webdriver_on_a_real_page(setup, a_token)

        with sync_playwright() as p:
            # The incognito profile has its own endpoint (same renderer, its own browser context): its
            # client sees its pages only, and the regular profile's client never sees them.
            incognito = call(setup.base, "POST", f"/v1/profiles/{a}/incognito", token=a_token)[2]["id"]
            secret_window = call(setup.base, "POST", "/v1/browsers", {"profileId": incognito}, token=a_token)[2]["id"]
            call(setup.base, "POST", f"/v1/browsers/{secret_window}/tabs", {"url": f"{setup.site}/secret"}, token=a_token)
            wait_for(lambda: call(setup.base, "GET", f"/v1/profiles/{incognito}/devtools/json/list", token=a_token)[0] == 200
                     and call(setup.base, "GET", f"/v1/profiles/{incognito}/devtools/json/list", token=a_token)[2], "the incognito page", 30)
            secret = p.chromium.connect_over_cdp(setup.endpoint(incognito), headers={"Authorization": f"Bearer {a_token}"})
            pumped(secret, lambda: [pg.url for pg in secret.contexts[0].pages] == [f"{setup.site}/secret"], "the incognito page's URL")
            regular = p.chromium.connect_over_cdp(setup.endpoint(a), headers={"Authorization": f"Bearer {a_token}"})
            assert all("/secret" not in pg.url for pg in regular.contexts[0].pages), [pg.url for pg in regular.contexts[0].pages]
            # Its new page is a tab of its own window; the regular client never hears of it.
            before = tabs_of(setup, secret_window)
            secret_page = secret.contexts[0].new_page()
            wait_for(lambda: len(tabs_of(setup, secret_window)) == len(before) + 1, "the incognito page's tab")
            secret_page.goto(f"{setup.site}/secret-2")
            assert secret_page.evaluate("location.pathname") == "/secret-2"
            assert all("/secret" not in pg.url for pg in regular.contexts[0].pages), [pg.url for pg in regular.contexts[0].pages]
            # Its cookies are its own context's.
            secret.contexts[0].add_cookies([{"name": "otr", "value": "1", "url": setup.site}])
            assert [c["name"] for c in regular.contexts[0].cookies(setup.site)] == []
            assert [c["name"] for c in secret.contexts[0].cookies(setup.site)] == ["otr"]
            secret.close()
            regular.close()

            # A renderer that stops and starts again: the client reconnects and finds the same tabs
            # (their pages are new: their target ids changed, and the directory says so).
            listed = call(setup.base, "GET", f"/v1/profiles/{a}/devtools/json/list", token=a_token)[2]
            urls_before = sorted(e["url"] for e in listed)
            targets_before = {e["browserdTabId"]: e["id"] for e in listed}
            renderer_a.terminate()
            renderer_a.wait(timeout=20)
            setup.processes.remove(renderer_a)
            setup.render(a)
            wait_for(lambda: (lambda r: r[0] == 200 and len(r[2]) == len(targets_before)
                              and all(targets_before.get(e["browserdTabId"]) not in (None, e["id"]) for e in r[2]))(
                call(setup.base, "GET", f"/v1/profiles/{a}/devtools/json/list", token=a_token)), "the restarted renderer's pages", 60)
            back = p.chromium.connect_over_cdp(setup.endpoint(a), headers={"Authorization": f"Bearer {a_token}"})
            try:
                pumped(back, lambda: sorted(pg.url for pg in back.contexts[0].pages) == urls_before, "the same tabs' pages after a restart")
            except AssertionError:
                print("before", urls_before, "after", sorted(pg.url for pg in back.contexts[0].pages),
                      call(setup.base, "GET", f"/v1/profiles/{a}/devtools/json/list", token=a_token)[2], file=sys.stderr)
                raise
            back.close()

        # Two raw clients at once: their own ids, their own events.
        first = websocket.create_connection(directory(setup, a, a_token, b_token), timeout=10)
        second = websocket.create_connection(directory(setup, a, a_token, b_token), timeout=10)
        for client in (first, second):
            client.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
        for client in (first, second):
            answer = json.loads(client.recv())
            assert answer["id"] == 1 and answer["result"]["product"].startswith("Chrome/") and "sessionId" not in answer, answer
        first.send(json.dumps({"id": 2, "method": "Target.setDiscoverTargets", "params": {"discover": True}}))
        seen = []
        while len([m for m in seen if m.get("id") == 2]) == 0:
            seen.append(json.loads(first.recv()))
        assert any(m.get("method") == "Target.targetCreated" for m in seen), seen
        second.settimeout(1)
        try:
            leaked = second.recv()
            raise AssertionError(f"the second client got the first's events: {leaked}")
        except websocket.WebSocketTimeoutException:
            pass
        first.close()
        second.close()
        ok = True
        print(f"automation: Playwright {figures} attached to two profiles' real pages; evaluate, goto, fill+click as history, "
              f"new_page/close as tabs, REST tabs as pages, screenshot, the fence, no download, Browser.close, reconnect, two raw clients; the incognito profile's own endpoint; a renderer restart; WebDriver scripts and a screenshot on a real page: ok")
    except BaseException:
        # What the renderers said, to see a failure through.
        for name in sorted(os.listdir(setup.root)):
            if name.endswith(".log"):
                print(f"--- {name}", file=sys.stderr)
                print(open(os.path.join(setup.root, name)).read()[-6000:], file=sys.stderr)
        raise
    finally:
        setup.close()


if __name__ == "__main__":
    main()
