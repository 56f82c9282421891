"""browserd-tabs, the Swift client's terminal tab strip, driven in a real pseudo-terminal (tmux).

Starts browserd and `browserd-tabs --server URL --window ID` inside a private tmux server (its own
socket), then checks what the screen shows (`tmux capture-pane`) as the window changes through the
REST API and as keys are typed: the live redraw, the pinned section, a group's heading, the active tab,
and that each key's change reached the server.

Usage: tests/tabs_tui_test.py PATH_TO_BROWSERD PATH_TO_BROWSERD_TABS
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import httpx


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pane:
    def __init__(self, command, width=100, height=24):
        self.socket = f"browserd-tabs-test-{os.getpid()}"
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "t",
                        "-x", str(width), "-y", str(height), command], check=True)

    def screen(self):
        return subprocess.run(["tmux", "-L", self.socket, "capture-pane", "-p", "-t", "t"],
                              check=True, capture_output=True, text=True).stdout

    def keys(self, *keys):
        subprocess.run(["tmux", "-L", self.socket, "send-keys", "-t", "t", *keys], check=True)

    def wait_for(self, predicate, what, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"the screen never showed {what}:\n{self.screen()}")

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def lines_with(screen, text):
    return [line for line in screen.splitlines() if text in line]


def main():
    browserd, tabs_binary = sys.argv[1], sys.argv[2]
    data = tempfile.mkdtemp(prefix="browserd-tabs-test-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([browserd, "--port", str(port), "--data-dir", data, "--log-level", "warning"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pane = None
    try:
        api = httpx.Client(base_url=base, timeout=5, headers={"Content-Type": "application/json"})
        for _ in range(200):
            try:
                if api.get("/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        profile = api.post("/v1/profiles", json={"name": "tabs"}).json()["id"]
        window = api.post("/v1/browsers", json={"profileId": profile}).json()["id"]
        a = api.post(f"/v1/browsers/{window}/tabs", json={"url": "https://a.example/"}).json()["id"]
        b = api.post(f"/v1/browsers/{window}/tabs", json={"url": "https://b.example/"}).json()["id"]

        def tabs():
            return api.get(f"/v1/browsers/{window}").json()["tabs"]

        def active():
            body = api.get(f"/v1/browsers/{window}").json()
            return body["tabs"][body["activeIndex"]]["id"]

        pane = Pane(f"{tabs_binary} --server {base} --window {window}; echo browserd-tabs exited $?; sleep 60")
        screen = pane.wait_for(lambda s: "2 tabs" in s and "[live]" in s, "the window's two tabs")
        assert lines_with(screen, "https://a.example/")[0].lstrip().startswith("1."), screen
        assert lines_with(screen, "https://b.example/")[0].startswith(">* 2."), screen  # active, under the cursor

        # A change made elsewhere is redrawn from the stream.
        api.patch(f"/v1/tabs/{a}", json={"title": "Alpha", "loading": False})
        pane.wait_for(lambda s: "1. Alpha — https://a.example/" in s, "the new title")

        # Keys: up and Enter activate the first tab on the server; the strip marks it.
        pane.keys("k", "Enter")
        pane.wait_for(lambda s: ">* 1. Alpha" in s, "the first tab active")
        assert active() == a

        # n opens a tab.
        pane.keys("n")
        pane.wait_for(lambda s: "3 tabs" in s and "browserd://newtab" in s, "a third tab")
        assert [t["url"] for t in tabs()] == ["https://a.example/", "https://b.example/", "browserd://newtab"]

        # [ and ] move the tab under the cursor (the new, active one) left and right.
        pane.keys("[")
        pane.wait_for(lambda s: lines_with(s, "browserd://newtab")[0].startswith(">* 2."), "the new tab second")
        assert [t["url"] for t in tabs()] == ["https://a.example/", "browserd://newtab", "https://b.example/"]
        pane.keys("]")
        pane.wait_for(lambda s: lines_with(s, "browserd://newtab")[0].startswith(">* 3."), "the new tab last again")
        assert [t["url"] for t in tabs()][2] == "browserd://newtab"

        # k then p pins the second tab: it moves to the pinned section, first.
        pane.keys("k", "p")
        screen = pane.wait_for(lambda s: " pinned" in s, "the pinned section")
        rows = screen.splitlines()
        assert "https://b.example/" in rows[rows.index(" pinned") + 1], screen
        assert [t["id"] for t in tabs()][0] == b and tabs()[0]["pinned"]

        # A group made elsewhere shows its heading above its tab.
        api.post(f"/v1/browsers/{window}/groups", json={"tabIds": [a], "title": "Work", "color": "green"})
        screen = pane.wait_for(lambda s: "group Work (green)" in s, "the group heading")
        rows = screen.splitlines()
        heading = next(i for i, r in enumerate(rows) if "group Work (green)" in r)
        assert "Alpha" in rows[heading + 1], screen

        # x closes the tab under the cursor (the cursor followed the pinned tab to the front; two down).
        pane.keys("j", "j")
        pane.wait_for(lambda s: lines_with(s, "browserd://newtab")[0].startswith(">"), "the cursor on the new tab")
        pane.keys("x")
        pane.wait_for(lambda s: "2 tabs" in s and "browserd://newtab" not in s, "the new tab closed")
        assert len(tabs()) == 2

        # The window closed elsewhere: the strip says so, and a key's refused change shows its problem.
        api.delete(f"/v1/browsers/{window}")
        pane.wait_for(lambda s: "the window was closed" in s, "the closed window")
        pane.keys("n")
        pane.wait_for(lambda s: "error: 404" in s, "the problem of a change to a closed window")

        pane.keys("q")
        pane.wait_for(lambda s: "browserd-tabs exited 0" in s, "a clean exit")
        print("browserd-tabs in a pseudo-terminal (tmux): live redraw, pinned, groups, keys: ok")
    finally:
        if pane:
            pane.close()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
