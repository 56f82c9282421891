#!/usr/bin/env python3
"""End-to-end test of browserd's event streams with a real SSE client from PyPI (httpx-sse).

Starts the browserd binary on a free port with a fresh data directory, watches a window and a
profile with httpx-sse while it drives the REST API, and checks:
  - the stream's headers and framing (text/event-stream, id/event/data, retry);
  - the snapshot first, then one event per consumer call, in order;
  - every event's data against its schema in openapi.yaml (the stream schemas' contentSchema per event), so the contract and the
    server agree;
  - resume with Last-Event-ID gets exactly the missed events, an id of an earlier run a reset.

Usage: tests/sse_client_test.py PATH_TO_BROWSERD
"""
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import jsonschema
import yaml
from httpx_sse import connect_sse

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def contract():
    doc = yaml.safe_load(open(os.path.join(ROOT, "openapi.yaml")))
    schemas = doc["components"]["schemas"]

    def validator(content_schema):
        # The payload's schema (a $ref, or a oneOf of refs), resolved against the contract's schemas.
        schema = dict(content_schema, components={"schemas": schemas})
        return jsonschema.Draft202012Validator(schema)

    def payloads(stream):
        # One variant per event name: `event` is its const, `data` JSON whose contentSchema is the payload's.
        return {v["properties"]["event"]["const"]: validator(v["properties"]["data"]["contentSchema"])
                for v in schemas[stream]["oneOf"]}

    return payloads("WindowEvent"), payloads("ProfileEvent")


class Watcher:
    """Reads a stream on a thread into a queue of (id, event, data)."""

    def __init__(self, client, url, headers=None):
        self.events = queue.Queue()
        self.response_headers = None
        self.retry = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(client, url, headers or {}), daemon=True)
        self.thread.start()
        assert self.ready.wait(5), "stream did not open"

    def _run(self, client, url, headers):
        try:
            with connect_sse(client, "GET", url, headers=headers) as source:
                self.response_headers = source.response.headers
                self.status = source.response.status_code
                self.ready.set()
                for sse in source.iter_sse():
                    if sse.retry is not None:
                        self.retry = sse.retry
                    if not sse.data:
                        continue  # WHATWG: an event with no data is not dispatched (httpx-sse yields it)
                    self.events.put((sse.id, sse.event, sse.data, sse.retry))
        except Exception as error:  # the stream ends when the window closes or the test stops
            self.events.put(("", "__error__", repr(error), None))
        finally:
            self.ready.set()
            self.events.put(("", "__end__", "", None))

    def take(self, count, timeout=5):
        out = []
        while len(out) < count:
            item = self.events.get(timeout=timeout)
            if item[1] == "__end__":
                break
            out.append(item)
        return out

    def until(self, name, timeout=5):
        out = []
        while True:
            item = self.events.get(timeout=timeout)
            if item[1] == "__end__":
                raise AssertionError(f"stream ended before {name}: {out}")
            out.append(item)
            if item[1] == name:
                return out


def check(events, validators):
    for event_id, name, data, _ in events:
        assert name in validators, f"event {name} is not documented in openapi.yaml"
        validators[name].validate(json.loads(data))
        assert event_id and "-" in event_id, f"event {name} has no resumable id: {event_id!r}"


def main():
    binary = sys.argv[1]
    window_schemas, profile_schemas = contract()
    data = tempfile.mkdtemp(prefix="browserd-sse-e2e-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    def start():
        proc = subprocess.Popen([binary, "--port", str(port), "--data-dir", data, "--log-level", "warning"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(200):
            try:
                if httpx.get(f"{base}/readyz").status_code == 200:
                    return proc
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("browserd did not become ready")

    server = start()
    checked = 0
    try:
        # Every POST says it is JSON, empty or not (browserd refuses other unauthenticated POSTs: CSRF).
        api = httpx.Client(base_url=base, timeout=5, headers={"Content-Type": "application/json"})
        stream_client = httpx.Client(base_url=base, timeout=httpx.Timeout(5, read=10))
        profile = api.post("/v1/profiles", json={"name": "e2e"}).json()["id"]
        profile_watch = Watcher(stream_client, f"/v1/events?profileId={profile}")
        window = api.post("/v1/browsers", json={"profileId": profile}).json()["id"]
        watch = Watcher(stream_client, f"/v1/browsers/{window}/events")
        assert watch.status == 200
        assert watch.response_headers["content-type"] == "text/event-stream"
        assert watch.response_headers["cache-control"] == "no-store"
        assert watch.response_headers["x-accel-buffering"] == "no"

        snapshot = watch.until("location.update")
        assert [e[1] for e in snapshot] == ["tabs.populate", "groups.populate", "toolbar.update", "location.update"], snapshot
        tree = watch.take(1)
        assert tree[0][1] == "ui.tree", tree
        check(tree, window_schemas)
        check(snapshot, window_schemas)
        assert watch.retry == 2000, watch.retry

        a = api.post(f"/v1/browsers/{window}/tabs", json={"url": "https://a.example/"}).json()["id"]
        b = api.post(f"/v1/browsers/{window}/tabs", json={"url": "http://b.example/", "activate": False}).json()["id"]
        api.patch(f"/v1/tabs/{a}", json={"title": "A", "progress": 0.5})
        api.post(f"/v1/tabs/{b}/activate")
        api.post(f"/v1/tabs/{b}/move", json={"index": 0})
        group = api.post(f"/v1/browsers/{window}/groups", json={"tabIds": [a], "title": "G", "color": "green"}).json()["id"]
        api.patch(f"/v1/groups/{group}", json={"collapsed": True})
        api.put(f"/v1/browsers/{window}/broadcasts/content.isScrolling", json={"value": True})
        routed = api.post(f"/v1/browsers/{window}/route", json={"url": "browserd://settings/privacy"})
        assert routed.status_code == 200 and [c["op"] for c in routed.json()["changes"]] == ["presented", "pushed"], routed.text
        api.post(f"/v1/browsers/{window}/route", json={"url": "browserd://tab-grid"})
        api.post(f"/v1/tabs/{a}/replace", json={"url": "https://c.example/"})
        live = watch.until("tabs.replace")
        check(live, window_schemas)
        names = [e[1] for e in live]
        for expected in ["tabs.insert", "tabs.update", "tabs.select", "tabs.move", "groups.create", "groups.membership",
                         "groups.update", "broadcast", "tabs.replace", "toolbar.update", "location.update", "actions.append",
                         "ui.changed", "ui.presented", "ui.pushed", "ui.dismissed"]:
            assert expected in names, f"{expected} missing from {names}"
        checked += len(snapshot) + len(live)

        # Resume: drop the stream, change things, come back with Last-Event-ID.
        last = live[-1][0]
        api.patch(f"/v1/tabs/{b}", json={"title": "B1"})
        api.patch(f"/v1/tabs/{b}", json={"title": "B2"})
        continuous = watch.take(2)
        resumed = Watcher(stream_client, f"/v1/browsers/{window}/events", headers={"Last-Event-ID": last})
        replay = resumed.take(2)
        assert [(e[0], e[1], e[2]) for e in replay] == [(e[0], e[1], e[2]) for e in continuous], (replay, continuous)
        check(replay, window_schemas)

        # A batch arrives framed; closing the window ends the stream.
        api.post(f"/v1/browsers/{window}/close-tabs", json={"all": True})
        batch = watch.until("batch.end")
        names = [e[1] for e in batch]
        assert "batch.begin" in names, names
        framed = names[names.index("batch.begin"):]
        assert framed.count("tabs.remove") == 2 and framed.count("batch.end") == 1, framed
        check(batch, window_schemas)
        api.delete(f"/v1/browsers/{window}")
        closed = watch.until("browser.closed")
        check(closed, window_schemas)
        assert watch.take(1, timeout=5) == [], "the stream ends after browser.closed"

        profile_events = profile_watch.until("browsers.remove")
        assert [e[1] for e in profile_events] == ["browsers.populate", "browsers.add", "browsers.remove"], profile_events
        check(profile_events, profile_schemas)
        checked += len(replay) + len(batch) + len(closed) + len(profile_events)

        # After a restart, an old id gets a reset that carries the window's state.
        window2 = api.post("/v1/browsers", json={"profileId": profile}).json()["id"]
        api.post(f"/v1/browsers/{window2}/tabs", json={"url": "https://kept.example/"})
        old = Watcher(stream_client, f"/v1/browsers/{window2}/events")
        old_id = old.until("location.update")[-1][0]
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=15)
        server = start()
        stream_client2 = httpx.Client(base_url=base, timeout=httpx.Timeout(5, read=10))
        after = Watcher(stream_client2, f"/v1/browsers/{window2}/events?lastEventId={old_id}")
        reset = after.take(1)
        assert reset and reset[0][1] == "reset", reset
        body = json.loads(reset[0][2])
        assert body["reason"] == "restarted" and body["tabs"]["items"][0]["url"] == "https://kept.example/", body
        check(reset, window_schemas)
        checked += 1
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)
    print(f"sse e2e (httpx-sse {__import__('httpx_sse').__version__}): {checked} events checked against openapi.yaml: ok")


if __name__ == "__main__":
    main()
