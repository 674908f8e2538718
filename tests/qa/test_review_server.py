"""The review server over HTTP: verdicts land in qa.jsonl at once, only the run's files are
served, foreign hosts and origins are refused, several servers share one folder."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mmconvert.qa.review import ReviewServer, ReviewState
from tests.test_cli import run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def rendered(sample_run):
    return sample_run


@pytest.fixture
def folder(rendered, tmp_path):
    import shutil

    out = tmp_path / "demo"
    shutil.copytree(rendered, out)
    return out


class Serving:
    def __init__(self, folder: Path, **kwargs):
        self.server = ReviewServer(ReviewState(folder, kwargs.pop("reject_votes", 1)),
                                   **kwargs)
        # a short poll: shutdown() waits for the loop's next look (half a second by default)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.05})
        self.thread.start()
        self.port = self.server.port

    def request(self, method: str, path: str, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        data = None if body is None else (body if isinstance(body, bytes)
                                          else json.dumps(body).encode())
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        hdrs.update(headers or {})
        conn.request(method, path, body=data, headers=hdrs)
        response = conn.getresponse()
        payload = response.read()
        conn.close()
        return response.status, payload

    def json(self, method: str, path: str, body=None, headers=None):
        status, payload = self.request(method, path, body, headers)
        return status, json.loads(payload)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    started = []

    def start(folder, **kwargs):
        s = Serving(folder, **kwargs)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


def qa_events(folder: Path) -> list[dict]:
    path = folder / "qa.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_state_item_and_a_verdict_written_at_once(folder, serve):
    s = serve(folder, reviewer="ana")
    status, state = s.json("GET", "/api/state")
    assert status == 200 and state["reviewer"] == "ana" and len(state["items"]) == 9
    assert state["counts"] == {"items": 9, "accepted": 0, "rejected": 0, "pending": 9,
                               "flagged": 0, "awaiting_review": 0, "reviewed": 0}
    first = state["items"][0][0]
    status, item = s.json("GET", f"/api/item?id={first}")
    assert status == 200 and item["images"][0]["url"].startswith("/files/images/")
    assert item["text"].startswith("A. ") and item["question_as_text"]
    status, answer = s.json("POST", "/api/verdict", {"id": first, "reviewer": "ana",
                                                     "verdict": "reject", "reason": "layout",
                                                     "note": "D is cut"})
    assert status == 200 and answer["item"] == [first, "rejected", False, True, False]
    assert answer["counts"]["rejected"] == 1 and answer["counts"]["pending"] == 8
    (saved,) = qa_events(folder)  # on disk before the answer came back
    assert saved["source"] == "reviewer:ana" and saved["reason"] == "layout"
    assert saved["detail"] == {"note": "D is cut"}
    status, image = s.request("GET", item["images"][0]["url"])
    assert status == 200 and image.startswith(b"\x89PNG")


@pytest.mark.parametrize("path", [
    "/files/../../../etc/passwd", "/files/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/files//etc/passwd", "/files/images/../../outside.txt", "/files/images",
    "/files/link-out",
])
def test_only_files_inside_the_run_are_served(folder, serve, path):
    (folder.parent / "outside.txt").write_text("secret")
    (folder / "link-out").symlink_to(folder.parent / "outside.txt")
    s = serve(folder)
    status, payload = s.request("GET", path)
    assert status == 404 and b"secret" not in payload and b"root:" not in payload


def test_foreign_hosts_origins_and_forms_are_refused(folder, serve):
    s = serve(folder)
    first = s.json("GET", "/api/state")[1]["items"][0][0]
    vote = {"id": first, "reviewer": "eve", "verdict": "accept"}
    assert s.request("GET", "/api/state", headers={"Host": "attacker.example"})[0] == 403
    assert s.request("POST", "/api/verdict", vote,
                     headers={"Origin": "http://attacker.example"})[0] == 403
    form = b"id=x&verdict=accept"
    assert s.request("POST", "/api/verdict", form, headers={
        "Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    assert qa_events(folder) == []
    assert s.request("POST", "/api/verdict", vote,
                     headers={"Origin": f"http://127.0.0.1:{s.port}"})[0] == 200


@pytest.mark.parametrize("body, message", [
    ({"id": "nope", "reviewer": "ana", "verdict": "accept"}, "no item 'nope'"),
    ({"reviewer": "ana", "verdict": "accept"}, "no item None"),
    ({"id": "FIRST", "reviewer": "", "verdict": "accept"}, "reviewer name"),
    ({"id": "FIRST", "reviewer": "a b", "verdict": "accept"}, "reviewer name"),
    ({"id": "FIRST", "reviewer": "ana", "verdict": "reject"}, "needs a reason"),
    ({"id": "FIRST", "reviewer": "ana", "verdict": "maybe"}, "accept or reject"),
    ([1, 2], "JSON object"),
])
def test_bad_verdicts_get_a_clear_error_and_write_nothing(folder, serve, body, message):
    s = serve(folder)
    first = s.json("GET", "/api/state")[1]["items"][0][0]
    if isinstance(body, dict) and body.get("id") == "FIRST":
        body["id"] = first
    status, answer = s.json("POST", "/api/verdict", body)
    assert status == 400 and message in answer["error"]
    assert qa_events(folder) == []


def test_two_servers_on_one_folder_see_each_others_votes(folder, serve):
    one, two = serve(folder, reject_votes=2), serve(folder, reject_votes=2)
    first = one.json("GET", "/api/state")[1]["items"][0][0]
    seq = two.json("GET", "/api/state")[1]["seq"]
    one.json("POST", "/api/verdict", {"id": first, "reviewer": "ana", "verdict": "reject",
                                      "reason": "unreadable"})
    changes = two.json("GET", f"/api/changes?since={seq}")[1]
    # one vote of the two needed: still pending, but reviewed
    assert changes["items"] == [[first, "pending", False, True, False]]
    _, answer = two.json("POST", "/api/verdict", {"id": first, "reviewer": "bo",
                                                  "verdict": "reject", "reason": "layout"})
    assert answer["item"][1] == "rejected"
    assert one.json("GET", "/api/item?id=" + first)[1]["votes"].keys() == {"ana", "bo"}


def test_a_killed_server_loses_no_verdict(folder):
    process = subprocess.Popen([sys.executable, "-m", "mmconvert", "qa", "review", str(folder),
                                "--reviewer", "ana"], cwd=ROOT, stderr=subprocess.PIPE,
                               text=True)
    try:
        line = process.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert url, line
        port = int(url.group(1))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/api/state")
        first = json.loads(conn.getresponse().read())["items"][0][0]
        conn.request("POST", "/api/verdict", body=json.dumps(
            {"id": first, "reviewer": "ana", "verdict": "accept"}),
            headers={"Content-Type": "application/json"})
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
    (saved,) = qa_events(folder)
    assert saved["id"] == first and saved["verdict"] == "accept"
    result = run("qa", "summary", folder, "--json")
    assert json.loads(result.output)["accepted"] == 1


def test_review_of_a_folder_that_is_not_a_run(tmp_path):
    result = run("qa", "review", tmp_path)
    assert result.exit_code != 0 and "not an mmconvert run folder" in result.output
    result = run("qa", "review", tmp_path, "--reviewer", "no spaces please")
    assert result.exit_code != 0 and "reviewer name" in result.output


def raw(port: int, request: bytes) -> bytes:
    """Send ``request`` as it is and read the answer (the status line is enough)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    return data


def test_hostile_requests_get_a_4xx_and_the_server_goes_on(folder, serve, capsys):
    s = serve(folder)
    first = json.loads((folder / "manifest.jsonl").read_text().splitlines()[0])["id"]
    (folder / "images" / "loop").symlink_to(folder / "images" / "loop")
    assert s.request("GET", "/files/images/loop")[0] == 404
    for body in ({"id": [first], "reviewer": "ana", "verdict": "accept"},
                 {"id": {"x": 1}, "reviewer": "ana", "verdict": "accept"},
                 {"id": first, "reviewer": "ana", "verdict": "reject", "reason": 7},
                 {"id": first, "reviewer": ["ana"], "verdict": "accept"},
                 {"id": first, "reviewer": "ana", "verdict": ["accept"]}):
        status, answer = s.json("POST", "/api/verdict", body)
        assert status == 400 and "must be text" in answer["error"], (body, answer)
    deep = b"[" * 100_000 + b"]" * 100_000
    status, payload = s.request("POST", "/api/verdict", deep)
    assert status in (400, 413), payload
    host = f"127.0.0.1:{s.port}".encode()
    for length in (b"abc", b"-1", "²".encode(), b"9" * 5000):
        answer = raw(s.port, b"POST /api/verdict HTTP/1.1\r\nHost: " + host
                     + b"\r\nContent-Type: application/json\r\nContent-Length: " + length
                     + b"\r\nConnection: close\r\n\r\n" + b"x" * 100)
        assert answer.startswith(b"HTTP/1.0 400") or answer.startswith(b"HTTP/1.1 400"), answer
    assert s.json("POST", "/api/verdict", {"id": first, "reviewer": "ana",
                                            "verdict": "accept"})[0] == 200
    assert "Traceback" not in capsys.readouterr().err
    events = [json.loads(line) for line in (folder / "qa.jsonl").read_text().splitlines()]
    assert [(e["id"], e["verdict"]) for e in events] == [(first, "accept")]


def test_a_body_shorter_than_its_length_is_answered_408(folder, serve, monkeypatch):
    from mmconvert.qa.review import Handler

    monkeypatch.setattr(Handler, "timeout", 1)
    s = serve(folder)
    host = f"127.0.0.1:{s.port}".encode()
    import socket

    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
        sock.sendall(b"POST /api/verdict HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: "
                     b"application/json\r\nContent-Length: 10\r\n\r\n{}")
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert s.request("GET", "/api/state")[0] == 200
