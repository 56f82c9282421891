#!/usr/bin/env python3
"""Makes docs/renderer-grid.png: browserd, browserd-renderer's Chromium rendering a window's pages (served
here on loopback), and the inspector's tab grid of their snapshots, screenshotted in headless Chromium.

Usage: scripts/renderer-grid-screenshot.py BROWSERD BROWSERD_RENDERER [OUT.png]
(`make test` builds both: .build-test/.../debug/browserd and browserd-renderer.)
"""
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
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from browser_test import Browserd, free_port, make_driver, wait  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

SITES = [
    ("Daily Planet", "#0b57d0", "#e8f0fe", "Morning edition", "City council approves the riverside park; the bridge reopens on Monday."),
    ("Trail Maps", "#137333", "#e6f4ea", "Ridge loop, 12 km", "Elevation 640 m. Water at the second shelter. Dogs on a leash."),
    ("Recipe Box", "#b3261e", "#fce8e6", "Tomato soup", "Roast the tomatoes with garlic for 40 minutes, then blend with basil."),
    ("Docs", "#5f6368", "#f1f3f4", "API reference", "GET /v1/tabs/{tabId}/snapshot answers the picture with its entity tag."),
    ("Weather", "#e37400", "#fef7e0", "Sunny, 21 °C", "Light wind from the west. Rain expected on Thursday evening."),
]


def page(index):
    name, colour, tint, heading, text = SITES[index]
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{name} — {heading}</title>
<style>body{{margin:0;font:18px/1.5 system-ui,sans-serif;background:{tint};color:#202124}}
header{{background:{colour};color:#fff;padding:28px 48px;font-size:34px;font-weight:700}}
main{{padding:32px 48px}}h1{{font-size:44px;margin:0 0 12px}}.card{{background:#fff;border-radius:14px;padding:24px;margin:20px 0;
box-shadow:0 1px 3px #0002}}.bar{{height:18px;border-radius:9px;background:{colour};opacity:.25;margin:12px 0}}</style></head>
<body><header>{name}</header><main><h1>{heading}</h1><div class="card"><p>{text}</p><div class="bar" style="width:80%"></div>
<div class="bar" style="width:65%"></div><div class="bar" style="width:72%"></div></div></main></body></html>"""


class Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        name = self.path.strip("/").split(".")[0]
        if not name.isdigit():
            self.send_error(404)
            return
        index = int(name) % len(SITES)
        body = page(index).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    browserd, renderer = sys.argv[1], sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "renderer-grid.png")
    scratch = tempfile.mkdtemp(prefix="browserd-grid-")
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{pages.server_port}"
    os.makedirs(os.path.join(scratch, "data"))
    server = Browserd(browserd, os.path.join(scratch, "data"), free_port()).start()
    driver = make_driver()
    process = None
    try:
        _, profile = server.call("POST", "/v1/profiles", {"name": "Home"})
        _, window = server.call("POST", "/v1/browsers", {"profileId": profile["id"]})
        process = subprocess.Popen([renderer, "--server", server.base, "--profile", profile["id"], "--live-tabs", str(len(SITES)),
                                    "--state-dir", os.path.join(scratch, "renderer"), "--allow-origin", origin])
        tabs = [server.call("POST", f"/v1/browsers/{window['id']}/tabs", {"url": f"{origin}/{i}.html", "activate": i == 1})[1]["id"]
                for i in range(len(SITES))]
        deadline = time.time() + 60
        while time.time() < deadline:
            listed = [server.call("GET", f"/v1/tabs/{t}")[1] for t in tabs]
            if all(t["snapshot"] and not t["loading"] for t in listed):
                break
            time.sleep(0.5)
        else:
            raise SystemExit("the tabs did not all get a snapshot within 60 s")
        driver.set_window_size(1280, 900)
        driver.get(f"{server.base}/inspector/?browser={window['id']}&profile={profile['id']}")
        wait(driver, lambda d: d.execute_script(
            "return [...document.querySelectorAll('#grid img')].filter(i => !i.hidden && i.complete && i.naturalWidth > 0).length") == len(SITES),
            "every snapshot in the grid", 10)
        driver.execute_script("document.getElementById('window-title').scrollIntoView({block: 'start'})")
        time.sleep(0.3)
        driver.save_screenshot(out)
        print(f"wrote {out}")
    finally:
        driver.quit()
        if process:
            process.terminate()
            process.wait(timeout=15)
        server.stop()
        pages.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
