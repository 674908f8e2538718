"""The review page (``mmconvert qa review``): a local web server over one run folder.

One HTML page (``review.html``) and a small JSON API:

- ``GET /api/state``: the run, the reason codes, counts, and every item's status;
- ``GET /api/changes?since=N``: items whose status changed since change number ``N`` (other
  reviewers, other servers on the same folder, ``qa check`` running meanwhile);
- ``GET /api/item?id=ID``: one item: its images, the text it should show, its checks and votes;
- ``POST /api/verdict``: ``{"id", "reviewer", "verdict", "reason", "note"}``, appended to
  qa.jsonl (fsync'd) before the answer, so a closed browser or a killed server loses nothing;
- ``GET /files/PATH``: a file of the run folder; anything outside it is refused.

Bound to 127.0.0.1 by default; there is no login, so requests must name this server in their
``Host`` (DNS rebinding) and a verdict must come as JSON from this page's origin (cross-site
forms cannot post one).
"""

from __future__ import annotations

import json
import mimetypes
import threading
from collections import Counter
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..errors import MMConvertError
from ..renderers import row_renderer
from ..rows import OcclusionRow
from ..runfolder import open_run, run_file_or_none
from .checks import ocr_images
from .events import REVIEW_REASONS, REVIEWER, QaLog, check_reviewer, event

MAX_BODY = 64 * 1024


class ReviewState:
    """The run's items and their statuses, kept current from qa.jsonl."""

    def __init__(self, run: Path, reject_votes: int = 1):
        self.rows = open_run(run).rows()
        self.run = run.resolve()
        self.index = {row.id: n for n, row in enumerate(self.rows)}
        self.qa = QaLog(run, reject_votes)
        self.lock = threading.Lock()
        self.changes: list[str] = []  # item ids, in the order their status changed
        self.summaries: dict[str, list] = {}
        self.counts: Counter[str] = Counter()
        self.qa.refresh()
        for row in self.rows:
            self._set(row.id)

    def _summary(self, item_id: str) -> list:
        state = self.qa.status(item_id)
        return [item_id, state.status, state.flagged, state.reviewed, state.awaiting_review]

    def _set(self, item_id: str) -> None:
        old = self.summaries.get(item_id)
        new = self._summary(item_id)
        if old == new:
            return
        for summary, sign in ((old, -1), (new, 1)):
            if summary:
                self.counts[summary[1]] += sign
                self.counts["flagged"] += sign * summary[2]
                self.counts["reviewed"] += sign * summary[3]
                self.counts["awaiting_review"] += sign * summary[4]
        self.summaries[item_id] = new
        if old is not None:
            self.changes.append(item_id)

    def _apply(self, changed: set[str]) -> None:
        for item_id in sorted(changed):
            if item_id in self.index:
                self._set(item_id)

    def sync(self) -> None:
        with self.lock:
            self._apply(self.qa.refresh())

    def counts_dict(self) -> dict[str, int]:
        return {"items": len(self.rows), **{k: self.counts[k] for k in
                                            ("accepted", "rejected", "pending", "flagged",
                                             "awaiting_review", "reviewed")}}

    def state(self) -> dict[str, Any]:
        self.sync()
        return {"run": self.run.name, "reject_votes": self.qa.reject_votes,
                "reasons": REVIEW_REASONS, "counts": self.counts_dict(),
                "seq": len(self.changes),
                "items": [self.summaries[row.id] for row in self.rows]}

    def changes_since(self, since: int) -> dict[str, Any]:
        self.sync()
        ids = dict.fromkeys(self.changes[max(0, since):])
        return {"seq": len(self.changes), "counts": self.counts_dict(),
                "items": [self.summaries[i] for i in ids]}

    def item(self, item_id: str) -> dict[str, Any] | None:
        if item_id not in self.index:
            return None
        self.sync()
        row = self.rows[self.index[item_id]]
        state = self.qa.status(item_id)
        renderer = row_renderer(row)
        read = {i.path for i in ocr_images(row)}
        return {
            "id": item_id, "corpus": row.corpus, "subset": row.subset,
            "language": row.language, "renderer": renderer.name,
            "summary": self.summaries[item_id],
            "images": [{"url": "/files/" + i.path, "path": i.path, "role": i.role,
                        "width": i.width, "height": i.height,
                        "ocr": i.path in read} for i in row.images],
            "text": renderer.expected_text(row),
            "masked_spans": [span.model_dump() for span in row.masked_spans]
            if isinstance(row, OcclusionRow) else [],
            "question_as_text": renderer.text_question(row),
            "answer": row.answer,
            "checks": {name: {k: e[k] for k in ("verdict", "reason", "detail", "at")}
                       for name, e in sorted(state.auto.items())},
            "votes": {name: {k: e[k] for k in ("verdict", "reason", "detail", "at")}
                      for name, e in sorted(state.reviewers.items())},
        }

    def verdict(self, body: dict[str, Any]) -> dict[str, Any]:
        for name in ("id", "reviewer", "verdict", "reason", "note"):
            if body.get(name) is not None and not isinstance(body[name], str):
                raise ValueError(f"{name} must be text, not {type(body[name]).__name__}")
        item_id = body.get("id")
        if not isinstance(item_id, str) or item_id not in self.index:
            raise ValueError(f"no item {item_id!r} in this run")
        reviewer = check_reviewer(body.get("reviewer") or "")
        verdict = body.get("verdict")
        reason = body.get("reason") or ("ok" if verdict == "accept" else "")
        if verdict == "reject" and not reason:
            raise ValueError("a rejection needs a reason")
        note = (body.get("note") or "")[:2000]
        e = event(item_id, REVIEWER + reviewer, str(verdict), reason,
                  {"note": note} if note else {})
        with self.lock:
            self._apply(self.qa.append(e))
            return {"item": self.summaries[item_id], "counts": self.counts_dict(),
                    "seq": len(self.changes)}

    def file(self, rel: str) -> bytes | None:
        """The bytes of ``rel``: a file inside the run folder (``runfolder.inside``: symbolic
        links followed), or a sharded run's copy; None when it is neither (also for a link
        loop, or a name the file system refuses)."""
        return run_file_or_none(self.run, rel)


def review_page() -> bytes:
    return resources.files("mmconvert.qa").joinpath("review.html").read_bytes()


class ReviewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: ReviewState, host: str = "127.0.0.1", port: int = 0,
                 reviewer: str | None = None):
        self.state, self.reviewer = state, reviewer
        try:
            super().__init__((host, port), Handler)
        except OSError as err:
            raise MMConvertError(f"cannot listen on {host}:{port}: {err.strerror}") from None
        self.port = self.server_address[1]
        self.names = {f"{name}:{self.port}" for name in
                      ("127.0.0.1", "localhost", "[::1]", host)}

    @property
    def url(self) -> str:
        host = str(self.server_address[0])
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}/"


class Handler(BaseHTTPRequestHandler):
    server: ReviewServer
    protocol_version = "HTTP/1.1"
    # headers and body go out as two writes: with Nagle's algorithm the second waits for the
    # client's delayed ACK, 40 ms per answer (measured by bench/review_speed.py)
    disable_nagle_algorithm = True
    # a client that promises more body than it sends is answered 408, not waited on forever
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:  # quiet: verdicts are in qa.jsonl
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client has gone: nothing to tell
            self.close_connection = True

    def _json(self, data: Any, status: int = 200) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"))

    def _error(self, status: int, message: str) -> None:
        self._json({"error": message}, status)

    def _host_ok(self) -> bool:
        if self.headers.get("Host") not in self.server.names:
            self._error(HTTPStatus.FORBIDDEN, "unknown Host")
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if not self._host_ok():
            return
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        state = self.server.state
        try:
            if url.path in ("/", "/index.html"):
                self._send(200, review_page(), "text/html; charset=utf-8", {
                    "Content-Security-Policy": "default-src 'self'; style-src 'self' "
                    "'unsafe-inline'; script-src 'self' 'unsafe-inline'; img-src 'self'"})
            elif url.path == "/api/state":
                self._json({**state.state(), "reviewer": self.server.reviewer})
            elif url.path == "/api/changes":
                self._json(state.changes_since(int(query.get("since", ["0"])[0])))
            elif url.path == "/api/item":
                item = state.item(query.get("id", [""])[0])
                if item is None:
                    self._error(HTTPStatus.NOT_FOUND, "no such item")
                else:
                    self._json(item)
            elif url.path.startswith("/files/"):
                self._file(unquote(url.path[len("/files/"):]))
            else:
                self._error(HTTPStatus.NOT_FOUND, "not found")
        except (ValueError, MMConvertError) as err:
            self._error(HTTPStatus.BAD_REQUEST, str(err))

    do_HEAD = do_GET

    def _file(self, rel: str) -> None:
        data = self.server.state.file(rel)
        if data is None:
            self._error(HTTPStatus.NOT_FOUND, "not a file of this run")
            return
        kind = mimetypes.guess_type(rel)[0] or "application/octet-stream"
        self._send(200, data, kind)

    def do_POST(self) -> None:  # noqa: N802
        if not self._host_ok():
            return
        origin = self.headers.get("Origin")
        if origin is not None and origin.removeprefix("http://") not in self.server.names:
            self._error(HTTPStatus.FORBIDDEN, "cross-origin request refused")
            return
        if urlsplit(self.path).path != "/api/verdict":
            self._error(HTTPStatus.NOT_FOUND, "not found")
            return
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send JSON")
            return
        text = self.headers.get("Content-Length") or "0"
        # ASCII digits, few of them: not "abc", "-1" (which would read to the end, past the
        # cap), "²" (a digit to isdigit(), not to int()) or 5,000 digits (past int()'s limit)
        if not (text.isascii() and text.isdigit() and len(text) <= 18):
            self._error(HTTPStatus.BAD_REQUEST, "Content-Length must be a whole number")
            self.close_connection = True
            return
        length = int(text)
        if length > MAX_BODY:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "too large")
            self.close_connection = True
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("send a JSON object")
            self._json(self.server.state.verdict(body))
        except RecursionError:
            self._error(HTTPStatus.BAD_REQUEST, "JSON nested too deep")
        except TimeoutError:
            self._error(HTTPStatus.REQUEST_TIMEOUT, "the body did not arrive")
            self.close_connection = True
        except (ValueError, MMConvertError) as err:
            self._error(HTTPStatus.BAD_REQUEST, str(err))
