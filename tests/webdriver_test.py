#!/usr/bin/env python3
"""The WebDriver facade with a real client: selenium's webdriver.Remote (generic ArgOptions) against a
live browserd, while an SSE client watches the session's window; then the wire rules and error codes
over raw HTTP, checked as the W3C spec and its WPT conformance tests (webdriver/tests/classic) state
them for these commands.

Usage: tests/webdriver_test.py PATH_TO_BROWSERD
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import httpx
from httpx_sse import connect_sse
from selenium import webdriver
from selenium.common.exceptions import InvalidArgumentException, NoSuchWindowException, InvalidSessionIdException, WebDriverException
from selenium.webdriver.common.options import ArgOptions
from selenium.webdriver.common.proxy import Proxy, ProxyType
from selenium.webdriver.remote.client_config import AuthType, ClientConfig


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw(base, method, path, body=None, data=None, headers=None):
    """A request to the facade; returns (status, headers, decoded JSON)."""
    if body is not None:
        data = json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers=dict({"Content-Type": "application/json"}, **(headers or {})))
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.headers, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


def expect_error(answer, status, code):
    got_status, headers, body = answer
    assert got_status == status, (got_status, body)
    assert list(body) == ["value"] and set(body["value"]) == {"error", "message", "stacktrace"}, body
    assert body["value"]["error"] == code, body
    assert all(isinstance(body["value"][k], str) for k in ("error", "message", "stacktrace")), body
    assert headers["Content-Type"] == "application/json; charset=utf-8", headers["Content-Type"]


class Watcher(threading.Thread):
    """Reads a window's event stream and keeps the event names and payloads."""

    def __init__(self, base, window):
        super().__init__(daemon=True)
        self.url = f"{base}/v1/browsers/{window}/events?topics=tabs,toolbar"
        self.events = []

    def run(self):
        try:
            with httpx.Client(timeout=None, trust_env=False) as client, connect_sse(client, "GET", self.url) as source:
                for event in source.iter_sse():
                    if not event.data:
                        continue  # the retry: preamble
                    self.events.append((event.event, json.loads(event.data)))
                    if event.event == "browser.closed":
                        return
        except Exception as error:  # noqa: BLE001 — said in the assertion that waits
            self.error = error

    error = None

    def wait_for(self, predicate, what, timeout=5):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(predicate(name, data) for name, data in list(self.events)):
                return
            time.sleep(0.02)
        raise AssertionError(f"the SSE watcher did not see {what}: {[n for n, _ in self.events]} (error: {self.error!r})")


def selenium_session(base):
    config = ClientConfig(remote_server_addr=base + "/webdriver", proxy=Proxy({"proxyType": ProxyType.DIRECT}))
    driver = webdriver.Remote(command_executor=base + "/webdriver", options=ArgOptions(), client_config=config)
    caps = driver.capabilities
    assert caps["browserName"] == "browserd" and caps["platformName"] == "linux" and caps["setWindowRect"] is True, caps
    window = caps["browserd:browserId"]
    watcher = Watcher(base, window)
    watcher.start()
    watcher.wait_for(lambda n, d: n == "tabs.populate", "the snapshot")

    first = driver.current_window_handle
    assert driver.window_handles == [first]
    assert driver.current_url == "about:blank" and driver.title == ""
    # Back and forward at both ends of the history do nothing.
    driver.back()
    driver.forward()
    assert driver.current_url == "about:blank"
    driver.get("https://example.com/one")
    watcher.wait_for(lambda n, d: n == "tabs.update" and d["item"]["url"] == "https://example.com/one", "the navigation")
    driver.get("https://example.com/two")
    assert driver.current_url == "https://example.com/two"
    driver.back()
    assert driver.current_url == "https://example.com/one"
    driver.forward()
    assert driver.current_url == "https://example.com/two"
    driver.forward()
    assert driver.current_url == "https://example.com/two", "forward at the end is a no-op"
    driver.refresh()
    assert driver.current_url == "https://example.com/two"
    # Timeouts round-trip.
    driver.implicitly_wait(2.5)
    driver.set_page_load_timeout(12)
    driver.set_script_timeout(7)
    t = driver.timeouts
    assert (t.implicit_wait, t.page_load, t.script) == (2.5, 12, 7), t
    # Rect, maximize, minimize (the browserd window's).
    assert driver.get_window_rect() == {"x": 0, "y": 0, "width": 1280, "height": 800}
    assert driver.set_window_rect(x=10, y=20, width=1000, height=700) == {"x": 10, "y": 20, "width": 1000, "height": 700}
    watcher.wait_for(lambda n, d: n == "window.bounds" and d["width"] == 1000 and d["state"] == "normal", "the new rect")
    driver.maximize_window()
    assert driver.get_window_rect()["width"] == 1920
    driver.minimize_window()
    watcher.wait_for(lambda n, d: n == "window.bounds" and d["state"] == "minimized", "the minimized window")
    # A new tab and a switch: separate URLs per tab.
    driver.switch_to.new_window("tab")
    second = driver.current_window_handle
    assert second != first and set(driver.window_handles) == {first, second}
    watcher.wait_for(lambda n, d: n == "tabs.insert" and d["item"]["id"] == second, "the new tab")
    assert driver.current_url == "about:blank"
    driver.get("https://example.org/second")
    driver.switch_to.window(first)
    assert driver.current_url == "https://example.com/two"
    driver.switch_to.window(second)
    assert driver.current_url == "https://example.org/second"
    # An invalid URL, an unknown handle.
    try:
        driver.get("not a url")
        raise AssertionError("an invalid URL was taken")
    except InvalidArgumentException:
        pass
    assert driver.current_url == "https://example.org/second"
    try:
        driver.switch_to.window("t0000000000000000")
        raise AssertionError("an unknown handle was taken")
    except NoSuchWindowException:
        pass
    # Close the current tab: no current window until a switch.
    driver.close()
    watcher.wait_for(lambda n, d: n == "tabs.remove" and d["tabId"] == second, "the closed tab")
    try:
        driver.current_url
        raise AssertionError("a closed current window still answered")
    except NoSuchWindowException:
        pass
    assert driver.window_handles == [first]
    driver.switch_to.window(first)
    driver.quit()
    watcher.wait_for(lambda n, d: n == "browser.closed" or (n == "tabs.remove" and d["tabId"] == first), "the session's end")
    try:
        driver.current_url
        raise AssertionError("a deleted session still answered")
    except (InvalidSessionIdException, WebDriverException):
        pass
    return len(watcher.events)


def wire(base):
    w = base + "/webdriver"
    status, headers, body = raw(w, "GET", "/status")
    assert status == 200 and body["value"]["ready"] is True and isinstance(body["value"]["message"], str), body
    assert headers["Cache-Control"] == "no-cache"
    expect_error(raw(w, "GET", "/nope"), 404, "unknown command")
    expect_error(raw(w, "PUT", "/status"), 405, "unknown method")
    expect_error(raw(w, "GET", "/session/0000/url"), 404, "invalid session id")
    expect_error(raw(w, "POST", "/session", data=b"null"), 400, "invalid argument")
    expect_error(raw(w, "POST", "/session", data=b"{"), 400, "invalid argument")
    expect_error(raw(w, "POST", "/session", {"capabilities": []}), 400, "invalid argument")
    expect_error(raw(w, "POST", "/session", {"capabilities": {"firstMatch": []}}), 400, "invalid argument")
    expect_error(raw(w, "POST", "/session", {"capabilities": {"alwaysMatch": {"pageLoadStrategy": "x"}}}), 400, "invalid argument")
    expect_error(raw(w, "POST", "/session", {"capabilities": {"alwaysMatch": {"nonsense": 1}}}), 400, "invalid argument")
    expect_error(raw(w, "POST", "/session", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": True},
                                                               "firstMatch": [{"acceptInsecureCerts": False}]}}), 400, "invalid argument")
    expect_error(raw(w, "POST", "/session", {"capabilities": {"alwaysMatch": {"browserName": "firefox"}}}), 500, "session not created")
    # The second firstMatch entry matches; extension capabilities are taken as given.
    status, _, body = raw(w, "POST", "/session", {"capabilities": {"alwaysMatch": {"se:remoteUrl": w},
                                                                    "firstMatch": [{"browserName": "chrome"}, {"browserName": "browserd"}]}})
    assert status == 200, body
    caps = body["value"]["capabilities"]
    for key, kind in [("browserName", str), ("browserVersion", str), ("platformName", str), ("acceptInsecureCerts", bool),
                      ("pageLoadStrategy", str), ("proxy", dict), ("setWindowRect", bool), ("timeouts", dict),
                      ("strictFileInteractability", bool), ("unhandledPromptBehavior", str), ("userAgent", str)]:
        assert isinstance(caps[key], kind), (key, caps)
    assert caps["timeouts"] == {"script": 30000, "pageLoad": 300000, "implicit": 0}
    sid = body["value"]["sessionId"]
    s = f"/session/{sid}"
    expect_error(raw(w, "POST", s + "/url", data=b"null"), 400, "invalid argument")
    expect_error(raw(w, "POST", s + "/url", {"url": "http://"}), 400, "invalid argument")
    expect_error(raw(w, "POST", s + "/url", {"url": 5}), 400, "invalid argument")
    for bad in [-1, 2.5, 2 ** 53, "10", False, [], {}]:
        expect_error(raw(w, "POST", s + "/timeouts", {"implicit": bad}), 400, "invalid argument")
    assert raw(w, "POST", s + "/timeouts", {"implicit": 2.0, "unknown": 1})[0] == 200
    assert raw(w, "GET", s + "/timeouts")[2]["value"] == {"script": 30000, "pageLoad": 300000, "implicit": 2}
    for bad in [True, 42, 4.2, [], {}]:
        expect_error(raw(w, "POST", s + "/window/new", {"type": bad}), 400, "invalid argument")
    before = raw(w, "GET", s + "/window")[2]["value"]
    status, _, body = raw(w, "POST", s + "/window/new", {"type": "foo"})
    assert status == 200 and body["value"]["type"] == "tab", body
    assert raw(w, "GET", s + "/window")[2]["value"] == before, "New Window does not switch"
    assert body["value"]["handle"] in raw(w, "GET", s + "/window/handles")[2]["value"]
    status, _, body = raw(w, "POST", s + "/window/new", {"type": "window"})
    assert status == 200 and body["value"]["type"] == "window", body
    expect_error(raw(w, "POST", s + "/window", {}), 400, "invalid argument")
    expect_error(raw(w, "POST", s + "/window", {"handle": "t0000000000000000"}), 404, "no such window")
    for bad in [{"width": -1}, {"x": "1"}, {"height": True}, {"width": []}]:
        expect_error(raw(w, "POST", s + "/window/rect", bad), 400, "invalid argument")
    assert raw(w, "POST", s + "/window/rect", {"width": 150.5, "height": None})[2]["value"]["width"] == 150
    assert raw(w, "POST", s + "/execute/sync", {"script": "return window.name", "args": []})[2] == {"value": ""}
    expect_error(raw(w, "POST", s + "/execute/sync", {"script": "return 1", "args": []}), 500, "unsupported operation")
    # No renderer holds the profile: no real page to run a script in or to take a picture of.
    expect_error(raw(w, "POST", s + "/execute/async", {"script": "arguments[0](1)", "args": []}), 500, "unsupported operation")
    expect_error(raw(w, "GET", s + "/screenshot"), 500, "unsupported operation")
    expect_error(raw(w, "POST", s + "/execute/sync", {"script": "return 1"}), 400, "invalid argument")
    # Closing every window ends the session: [] then invalid session id.
    handles = raw(w, "GET", s + "/window/handles")[2]["value"]
    assert len(handles) == 3, handles
    for handle in handles:
        assert raw(w, "POST", s + "/window", {"handle": handle})[0] == 200
        status, _, body = raw(w, "DELETE", s + "/window")
        assert status == 200, body
    assert body["value"] == [], body
    expect_error(raw(w, "GET", s + "/url"), 404, "invalid session id")
    assert raw(w, "DELETE", s)[0] == 404
    return 40


def authenticated(binary):
    """With tokens: the facade takes the bearer token; a profile token's sessions are its own."""
    admin = "admin-token-for-the-webdriver-test"
    data = tempfile.mkdtemp(prefix="browserd-webdriver-auth-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning"],
                              env=dict(os.environ, BROWSERD_ADMIN_TOKEN=admin), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(base)
        bearer = lambda token: {"Authorization": f"Bearer {token}"}
        rest = lambda method, path, body=None, token=admin: raw(base, method, path, body, headers=bearer(token))
        mine = rest("POST", "/v1/profiles", {"name": "mine"})[2]["id"]
        theirs = rest("POST", "/v1/profiles", {"name": "theirs"})[2]["id"]
        token = rest("POST", f"/v1/profiles/{mine}/tokens")[2]["token"]
        other = rest("POST", f"/v1/profiles/{theirs}/tokens")[2]["token"]
        w = base + "/webdriver"
        assert raw(w, "POST", "/session", {"capabilities": {}})[0] == 401
        status, _, body = raw(w, "POST", "/session", {"capabilities": {}}, headers=bearer(token))
        assert status == 200 and body["value"]["capabilities"]["browserd:profileId"] == mine, body
        sid = body["value"]["sessionId"]
        expect_error(raw(w, "POST", "/session", {"capabilities": {"alwaysMatch": {"browserd:profileId": theirs}}}, headers=bearer(token)),
                     500, "session not created")
        expect_error(raw(w, "GET", f"/session/{sid}/url", headers=bearer(other)), 404, "invalid session id")
        assert raw(w, "GET", f"/session/{sid}/url", headers=bearer(token))[2] == {"value": "about:blank"}
        assert raw(w, "GET", f"/session/{sid}/url", headers=bearer(admin))[0] == 200
        # Selenium sends the token through its ClientConfig.
        config = ClientConfig(remote_server_addr=w, proxy=Proxy({"proxyType": ProxyType.DIRECT}), auth_type=AuthType.BEARER, token=token)
        driver = webdriver.Remote(command_executor=w, options=ArgOptions(), client_config=config)
        driver.get("https://example.com/mine")
        assert driver.current_url == "https://example.com/mine"
        driver.quit()
    finally:
        server.terminate()
        server.wait(timeout=20)


def wait_ready(base):
    deadline = time.time() + 30
    while True:
        try:
            urllib.request.urlopen(base + "/readyz", timeout=1)
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def readme_example(base):
    """docs/webdriver.md's selenium example, run as written (against this server's port)."""
    readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "webdriver.md")).read()
    section = readme[readme.index("## WebDriver"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[:code.index("```")]
    assert "http://127.0.0.1:8080/webdriver" in code
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace("http://127.0.0.1:8080", base), "docs/webdriver.md (its example)", "exec"), {})
    printed = out.getvalue().strip()
    assert printed.endswith("https://swift.org/") and printed.startswith("['t"), printed
    return printed


def main():
    binary = sys.argv[1]
    data = tempfile.mkdtemp(prefix="browserd-webdriver-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", data, "--log-level", "warning"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ["no_proxy"] = "127.0.0.1"
    try:
        wait_ready(base)
        events = selenium_session(base)
        checks = wire(base)
        readme_example(base)
        authenticated(binary)
        print(f"webdriver: a selenium {webdriver.__version__} session's whole life against /webdriver, watched live over SSE "
              f"({events} events); {checks}+ wire checks of errors and statuses; docs/webdriver.md's example as written; bearer and profile tokens: ok")
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
