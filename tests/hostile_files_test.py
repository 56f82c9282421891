#!/usr/bin/env python3
"""Hostile files and the upload path against a real browserd process (issue "Hostile files"): a
session file that used to kill the server for good, arithmetic on a file's numbers, unauthenticated
clients holding the upload slots, one tenant's requests loading another tenant's profile, and
exports that held their slots for ever. Each as an attacker would try it, and what the server and
the other tenants see meanwhile.

Usage: tests/hostile_files_test.py PATH_TO_BROWSERD
"""
import json
import os
import re
import socket
import sqlite3
import struct
import sys
import tempfile
import time

from hostile_test import Server, check, raw_exchange, tenant, window_with_tab


def firefox(server, document, headers=None):
    return server.call("POST", "/v1/profiles/import?format=firefox", raw=json.dumps(document).encode(), headers=headers)


def alive(server):
    status, _, _ = server.call("GET", "/v1/browsers")
    return status == 200 and server.process.poll() is None


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def history_blob(entries):
    """browserd's stored history (HistoryCodec): version 1, the count, then per entry the URL, title,
    transition and the timestamp's Double bits, as varints and length-prefixed UTF-8."""
    out = bytearray([1]) + varint(len(entries))
    for url, title, seconds in entries:
        for text in (url, title, "link"):
            data = text.encode()
            out += varint(len(data)) + data
        out += varint(struct.unpack("<Q", struct.pack("<d", seconds))[0])
    return bytes(out)


def finding_1_a_stored_file_never_kills_the_server(binary, work):
    data = os.path.join(work, "f1")
    server = Server(binary, data)
    tab = {"entries": [{"url": "https://x.example/"}]}
    # Times outside years 1…9999 are refused at the edge, naming the member, whatever the number.
    for member, document, field in [
        ("lastAccessed", {"windows": [{"tabs": [dict(tab, lastAccessed=1e300)]}]}, "windows[0].tabs[0].lastAccessed"),
        ("lastAccessed", {"windows": [{"tabs": [dict(tab, lastAccessed=-1e300)]}]}, "windows[0].tabs[0].lastAccessed"),
        ("closedAt", {"windows": [{"tabs": [tab], "_closedTabs": [{"state": tab, "closedAt": 1e300}]}]}, "windows[0]._closedTabs[0].closedAt"),
        ("closedAt", {"windows": [], "_closedWindows": [{"tabs": [tab], "closedAt": 2.6e14}]}, "_closedWindows[0].closedAt"),
    ]:
        status, _, problem = firefox(server, document)
        check(f"a {member} of {json.dumps(document)[-40:]} is 422 naming {field}",
              status == 422 and problem.get("field") == field, f"{status} {problem}")
    check("the server still answers", alive(server))
    # A profile document's timestamps: year 0 and a month 13 are not times either.
    for stamp in ("0000-01-01T00:00:00.000Z", "2026-13-01T00:00:00.000Z"):
        document = {"format": "browserd-profile", "version": 1,
                    "profile": {"id": "p00000000000000f1", "name": "x", "createdAt": stamp}, "recentlyClosed": [], "windows": []}
        status, _, problem = server.call("POST", "/v1/profiles/import", document)
        check(f"a profile document's createdAt {stamp} is 422", status == 422 and problem.get("field") == "profile.createdAt",
              f"{status} {problem}")
    # A store that already holds such times (written before the edge refused them) loads and serves:
    # the encoders clamp them, after every restart too.
    status, _, made = firefox(server, {"windows": [{"tabs": [{"entries": [{"url": "https://a.example/"}, {"url": "https://b.example/"}]}],
                                                     "_closedTabs": [{"state": tab, "closedAt": 1000}]}]})
    check("a sound session imports", status == 201, f"{status} {made}")
    profile = made["profile"]["id"]
    window = made["windowIds"][0]
    server.stop()
    db = sqlite3.connect(os.path.join(data, "browserd.sqlite"))
    db.execute("UPDATE tabs SET last_active_at = 1e300, created_at = -1e300")
    db.execute("UPDATE tab_histories SET history = ?",
               (history_blob([("https://a.example/", "A", 1e300), ("https://b.example/", "B", float("-inf"))]),))
    db.execute("UPDATE closed_tabs SET closed_at = 1e300")
    db.execute("UPDATE windows SET created_at = -1e300, last_active_at = 1e300")
    db.commit()
    db.close()
    for run in ("after the store was written", "after another restart"):
        server = Server(binary, data)
        status, _, listed = server.call("GET", "/v1/browsers")
        check(f"GET /v1/browsers answers {run}", status == 200 and server.process.poll() is None, f"{status}")
        status, _, tabs = server.call("GET", f"/v1/browsers/{window}")
        check(f"the window serves its tab {run}", status == 200 and len(tabs["tabs"]) == 1, f"{status} {tabs}")
        tab_id = tabs["tabs"][0]["id"]
        status, _, history = server.call("GET", f"/v1/tabs/{tab_id}/history")
        stamps = [entry["timestamp"] for entry in history.get("entries", [])] if status == 200 else []
        check(f"its history is served, the times clamped {run}",
              stamps == ["9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z"], f"{status} {history}")
        status, _, closed = server.call("GET", f"/v1/profiles/{profile}/recently-closed")
        check(f"recently closed is served {run}", status == 200 and len(closed["items"]) == 1, f"{status} {closed}")
        status, _, exported = server.call("GET", f"/v1/profiles/{profile}/export")
        check(f"the export is served {run}", status == 200 and exported["profile"]["id"] == profile, f"{status}")
        server.stop()
    # The export of such a profile imports again (its times are within range as written).
    server = Server(binary, data)
    server.call("DELETE", f"/v1/profiles/{profile}")
    status, _, _ = server.call("POST", "/v1/profiles/import", exported)
    check("the clamped export imports again", status == 201, f"{status}")
    server.stop()


def finding_2_arithmetic_on_a_files_numbers_never_traps(binary, work):
    server = Server(binary, os.path.join(work, "f2"))
    tab = {"entries": [{"url": "https://x.example/"}]}
    for field, document in [
        ("selectedWindow", {"windows": [{"tabs": [tab]}], "selectedWindow": -9223372036854775808}),
        ("windows[0].selected", {"windows": [{"tabs": [tab], "selected": -9223372036854775808}]}),
        ("windows[0].tabs[0].index", {"windows": [{"tabs": [dict(tab, index=-9223372036854775808)]}]}),
        ("windows[0].tabs[0].index", {"windows": [{"tabs": [dict(tab, index=9223372036854775807)]}]}),
        ("windows[0]._closedTabs[0].pos", {"windows": [{"tabs": [tab], "_closedTabs": [{"state": tab, "pos": 1e18}]}]}),
    ]:
        status, _, problem = firefox(server, document)
        check(f"{field} far out of range is 422 naming it", status == 422 and problem.get("field") == field, f"{status} {problem}")
    check("the server still answers", alive(server))
    # NUL reaches no stored text through a session file either (the REST API refuses it too).
    for field, document in [
        ("windows[0].tabs[0].entries[0].title", {"windows": [{"tabs": [{"entries": [{"url": "https://x.example/", "title": "a\u0000b"}]}]}]}),
        ("windows[0].groups[0].name", {"windows": [{"tabs": [dict(tab, groupId="g")], "groups": [{"id": "g", "name": "x\u0000"}]}]}),
    ]:
        status, _, problem = firefox(server, document)
        check(f"U+0000 in {field} is 422 naming it", status == 422 and problem.get("field") == field, f"{status} {problem}")
    server.stop()


def upload_head(length, headers=""):
    return (f"POST /v1/profiles/import HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{headers}"
            f"Content-Length: {length}\r\n\r\n").encode()


def finding_3_uploads_authenticate_first(binary, work):
    server = Server(binary, os.path.join(work, "f3"), "--transfer-timeout", "3")
    _, headers, _ = tenant(server, "Other")
    # Unauthenticated clients: a 401 from the head, the connection closed, no slot taken.
    before = server.rss_kib()
    holders = []
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        s.sendall(upload_head(268435456) + b"x")
        holders.append(s)
    for s in holders:
        answer = s.recv(65536)
        check("an unauthenticated 256 MiB upload gets 401 from its head", answer.startswith(b"HTTP/1.1 401"), answer[:60])
    # A profile token may not import: 403, again from the head.
    answer = raw_exchange(server.port, upload_head(268435456, f"Authorization: {headers['Authorization']}\r\n") + b"x", wait=3)
    check("a profile token's upload gets 403 from its head", answer.startswith(b"HTTP/1.1 403"), answer[:60])
    # A 100 MiB unauthenticated body is refused before it is read: the server's memory stays put.
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.sendall(upload_head(100 << 20))
    sent = 0
    try:
        chunk = b"a" * (1 << 20)
        while sent < (100 << 20):
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    s.close()
    check("the refused upload was not read (the server closed it early)", sent < (100 << 20), f"sent {sent}")
    grown = server.rss_kib() - before
    check("the server's memory did not take the body", grown < 20 * 1024, f"+{grown} KiB")
    # The administrator imports meanwhile (nobody holds a slot).
    document = {"format": "browserd-profile", "version": 1,
                "profile": {"id": "p00000000000000f3", "name": "Imported", "createdAt": "2026-01-01T00:00:00.000Z"},
                "recentlyClosed": [], "windows": []}
    status, _, answer = server.call("POST", "/v1/profiles/import", document)
    check("the administrator's import goes through", status == 201, f"{status} {answer}")
    # One upload per sender: the administrator's second upload while the first trickles is 503.
    slow = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    slow.sendall(upload_head(1 << 20, f"Authorization: Bearer {server.admin['Authorization'][7:]}\r\n") + b"{")
    time.sleep(0.3)
    answer = raw_exchange(server.port, upload_head(10, f"Authorization: {server.admin['Authorization']}\r\n") + b"{}", wait=3)
    check("a second upload of the same sender is 503 at once", answer.startswith(b"HTTP/1.1 503"), answer[:60])
    # The overall deadline: the trickling upload is cut at --transfer-timeout (3 s), well inside the
    # minimum body rate's grace.
    started = time.time()
    closed = False
    while time.time() - started < 8:
        try:
            slow.sendall(b" ")
        except OSError:
            closed = True
            break
        time.sleep(0.25)
    slow.close()
    elapsed = time.time() - started
    check("a trickling upload is closed at the transfer timeout", closed and elapsed < 6, f"closed={closed} after {elapsed:.1f} s")
    server.stop()


def metric(server, name):
    status, _, text = server.call("GET", "/metrics", headers={})
    text = text.decode() if isinstance(text, bytes) else str(text)
    found = re.search(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    return float(found.group(1)) if found else None


def finding_7_placement_never_loads_another_tenants_profile(binary, work):
    data = os.path.join(work, "f7")
    server = Server(binary, data)
    a, a_headers, _ = tenant(server, "A")
    b, b_headers, _ = tenant(server, "B")
    window_with_tab(server, a, a_headers)
    b_window, b_tab = window_with_tab(server, b, b_headers)
    status, _, group = server.call("POST", f"/v1/browsers/{b_window}/groups", {"tabIds": [b_tab]}, headers=b_headers)
    assert status == 201, group
    server.stop()
    # Restarted: every profile is on disk, none in memory.
    server = Server(binary, data)
    loads = metric(server, "browserd_profile_loads_total") or 0
    for path in [f"/v1/profiles/{b}", f"/v1/groups/{group['id']}", f"/v1/browsers/{b_window}", f"/v1/tabs/{b_tab}",
                 f"/webdriver/session/{b}.x/title"]:
        status, _, _ = server.call("GET", path, headers=a_headers)
        check(f"token A's GET {path.replace(b, 'B')} is 404", status == 404, f"{status}")
    status, _, listed = server.call("GET", f"/v1/profiles?profileId={b}", headers=a_headers)
    check("token A's profile list with an undefined profileId lists A only",
          status == 200 and [p["id"] for p in listed["items"] if not p.get("incognito")] == [a], f"{status} {listed}")
    check("none of it loaded B (browserd_profile_loads_total unchanged)",
          (metric(server, "browserd_profile_loads_total") or 0) == loads, f"{loads} -> {metric(server, 'browserd_profile_loads_total')}")
    # B's own token loads it as before.
    status, _, _ = server.call("GET", f"/v1/groups/{group['id']}", headers=b_headers)
    check("B's token reaches its group (loading B)", status == 200 and metric(server, "browserd_profile_loads_total") == loads + 1, f"{status}")
    server.stop()


def finding_8_exports_are_bounded_per_caller_and_in_time(binary, work):
    server = Server(binary, os.path.join(work, "f8"), "--transfer-timeout", "3", "--profile-write-bytes-per-second", "0")
    profile, headers, _ = tenant(server, "Big")
    window, _ = window_with_tab(server, profile, headers)
    # About 10 MB of history text: more than the export's buffer and the socket's together.
    for index in range(12):
        url = f"https://big.example/{index}?" + "a" * 900_000
        status, _, tab = server.call("POST", f"/v1/browsers/{window}/tabs", {"url": url, "activate": False}, headers=headers)
        assert status == 201, tab
    request = f"GET /v1/profiles/{profile}/export HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {headers['Authorization']}\r\n\r\n"
    reader = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.sendall(request.encode())
    first = reader.recv(4096)
    check("the tenant's export starts", first.startswith(b"HTTP/1.1 200"), first[:40])
    status, _, problem = server.call("GET", f"/v1/profiles/{profile}/export", headers=headers)
    check("a second export of the same caller meanwhile is 429", status == 429, f"{status} {problem}")
    status, _, _ = server.call("GET", f"/v1/profiles/{profile}/export")
    check("another caller's export goes through meanwhile", status == 200, f"{status}")
    # The reader never reads more: cut at the transfer timeout (3 s), not after 60 s of no progress.
    started = time.time()
    total = len(first)
    reader.settimeout(10)
    try:
        time.sleep(4)
        while True:
            chunk = reader.recv(65536)
            if not chunk:
                break
            total += len(chunk)
    except OSError:
        pass
    reader.close()
    check("the slow export was cut at the timeout, before its end", total < 9_000_000 and time.time() - started < 15,
          f"{total} bytes in {time.time() - started:.1f} s")
    deadline = time.time() + 5
    status = 0
    while time.time() < deadline and status != 200:
        status, _, _ = server.call("GET", f"/v1/profiles/{profile}/export", headers=headers, timeout=20)
        time.sleep(0.2)
    check("the caller exports again once it ended", status == 200, f"{status}")
    server.stop()


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="browserd-hostile-files-") as work:
        for test in (finding_1_a_stored_file_never_kills_the_server, finding_2_arithmetic_on_a_files_numbers_never_traps,
                     finding_3_uploads_authenticate_first, finding_7_placement_never_loads_another_tenants_profile,
                     finding_8_exports_are_bounded_per_caller_and_in_time):
            print(test.__name__)
            test(binary, work)
    print("hostile files: every finding holds")


if __name__ == "__main__":
    main()
