"""The QA manifest (``qa.jsonl``): append-only verdict events, and an item's status as their fold.

An event is ``{"id", "source", "verdict", "reason", "detail", "at"}``; ``source`` is
``auto:<check>`` or ``reviewer:<name>``. Only the latest event of each source counts, so a reviewer
who changes their mind, or a check re-run with other thresholds, replaces its earlier verdict.

Status: when reviewers have spoken they decide: ``reject_votes`` rejecting reviewers reject the
item, otherwise any accepting reviewer accepts it, otherwise it stays pending. Without a reviewer a
failed automatic check rejects the item only when the check is certain of what it found (a blank
or changed image, a missing glyph, text outside the page, a text layer that differs). A failure
that rests on Tesseract's reading (``UNCERTAIN``: OCR misreads correct pages) leaves the item
pending and *awaiting review*: exports keep it, and say how many wait. Passing every check does
not accept an item (a human does), so it stays pending.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import RunFolderError, UsageError
from ..manifest import QA, dumps, open_for_append, open_regular, whole_lines_end

VERDICTS = ("accept", "reject")
AUTO, REVIEWER = "auto:", "reviewer:"
# the review page's reason codes for a rejection (any other word is accepted too)
REVIEW_REASONS = {
    "unreadable": "text cannot be read (blur, size, contrast)",
    "missing_text": "part of the text is not in the image",
    "wrong_text": "the image shows other text than the source",
    "layout": "text cut off, overlapping or out of order",
    "artifact": "rendering or generation artefact",
    "answer_leak": "the image gives the answer away",
    "other": "see the note",
}
# automatic rejections that rest on an OCR reading, which can be wrong about a correct page:
# they mark an item for review and never reject it on their own
UNCERTAIN = frozenset({"ocr_mismatch", "missing_option", "missing_question", "words_at_edge"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,39}$")
_REASON = re.compile(r"^[a-z0-9_]{1,40}$")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_reviewer(name: str) -> str:
    if not _NAME.match(name or ""):
        raise UsageError(f"reviewer name {name!r}: use 1-40 letters, digits, '.', '_', '-', '@'")
    return name


def event(item_id: str, source: str, verdict: str, reason: str,
          detail: dict[str, Any] | None = None, at: str | None = None) -> dict[str, Any]:
    if verdict not in VERDICTS:
        raise UsageError(f"verdict {verdict!r}: use accept or reject")
    if not _REASON.match(reason):
        raise UsageError(f"reason {reason!r}: use a lower-case code such as unreadable")
    return {"id": item_id, "source": source, "verdict": verdict, "reason": reason,
            "detail": detail or {}, "at": at or now()}


def parse_event(line: bytes) -> dict[str, Any]:
    """One line of qa.jsonl as an event, or ValueError naming what is wrong with it."""
    e = json.loads(line)
    if not isinstance(e, dict):
        raise ValueError("not a JSON object")
    if e.get("verdict") == "accept":
        e.setdefault("reason", "ok")
    for name in ("id", "source", "verdict", "reason"):  # a rejection says why
        if name not in e:
            raise ValueError(f"no {name!r}")
        if not isinstance(e[name], str):
            raise ValueError(f"{name} {e[name]!r} is not a string")
    if e["verdict"] not in VERDICTS:
        raise ValueError(f"verdict {e['verdict']!r}")
    if not e["source"].startswith((AUTO, REVIEWER)):
        raise ValueError(f"source {e['source']!r} is neither auto:<check> nor "
                         "reviewer:<name>")
    if not isinstance(e.setdefault("detail", {}), dict):
        raise ValueError(f"detail {e['detail']!r} is not an object")
    return e


@dataclass
class ItemStatus:
    status: str = "pending"
    # latest event of each source
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def auto(self) -> dict[str, dict[str, Any]]:
        return {s[len(AUTO):]: e for s, e in self.latest.items() if s.startswith(AUTO)}

    @property
    def reviewers(self) -> dict[str, dict[str, Any]]:
        return {s[len(REVIEWER):]: e for s, e in self.latest.items()
                if s.startswith(REVIEWER)}

    @property
    def flagged(self) -> bool:
        """A failed automatic check (whatever the reviewers said)."""
        return any(e["verdict"] == "reject" for e in self.auto.values())

    def _failed(self) -> dict[str, dict[str, Any]]:
        """The failed automatic checks that are certain of what they found."""
        return {name: e for name, e in self.auto.items()
                if e["verdict"] == "reject" and e["reason"] not in UNCERTAIN}

    @property
    def awaiting_review(self) -> bool:
        """No reviewer yet, and only a check that can be wrong (OCR) failed: a person must
        look before the item is left out of anything."""
        return self.status == "pending" and self.flagged

    @property
    def reviewed(self) -> bool:
        return bool(self.reviewers)

    def reasons(self) -> list[str]:
        """Why a rejected item is rejected: its rejecting reviewers' reasons, or (without
        reviewers) its failed checks' reasons."""
        if self.status != "rejected":
            return []
        pool = self.reviewers or self._failed()
        return sorted({e["reason"] for e in pool.values() if e["verdict"] == "reject"})


def fold(events: Iterable[dict[str, Any]], reject_votes: int = 1) -> ItemStatus:
    """The status of one item from its events, in log order."""
    state = ItemStatus()
    for e in events:
        state.latest[e["source"]] = e
    refold(state, reject_votes)
    return state


def refold(state: ItemStatus, reject_votes: int) -> None:
    reviewers = state.reviewers
    if reviewers:
        rejects = sum(e["verdict"] == "reject" for e in reviewers.values())
        if rejects >= reject_votes:
            state.status = "rejected"
        elif any(e["verdict"] == "accept" for e in reviewers.values()):
            state.status = "accepted"
        else:
            state.status = "pending"
    else:
        state.status = "rejected" if state._failed() else "pending"


class QaLog:
    """``qa.jsonl`` of a run folder, read incrementally (other processes may append too) and
    appended one whole, fsync'd line per event."""

    def __init__(self, run: Path, reject_votes: int = 1):
        if reject_votes < 1:
            raise UsageError("--reject-votes must be at least 1")
        self.path = run / QA
        self.reject_votes = reject_votes
        self.items: dict[str, ItemStatus] = {}
        self.events = 0
        self._offset = 0
        self._line = 0
        self._lock = threading.Lock()

    def refresh(self) -> set[str]:
        """Read events appended since the last call; the ids whose status may have changed."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> set[str]:
        try:
            with open_regular(self.path) as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return set()
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        changed = set()
        for line in data[:end].splitlines():
            self._line += 1
            if not line.strip():
                continue
            try:
                e = parse_event(line)
            except (ValueError, KeyError, TypeError) as err:
                raise RunFolderError(f"{self.path} line {self._line}: not a QA event "
                                     f"({err})") from None
            item_id, source = e["id"], e["source"]
            state = self.items.setdefault(item_id, ItemStatus())
            state.latest[source] = e
            changed.add(item_id)
            self.events += 1
        self._offset += end
        for item_id in changed:
            refold(self.items[item_id], self.reject_votes)
        return changed

    def status(self, item_id: str) -> ItemStatus:
        return self.items.get(item_id) or ItemStatus()

    def append(self, *events: dict[str, Any]) -> set[str]:
        """Append ``events`` and fold them in (with anything others appended meanwhile)."""
        if not events:
            return set()
        data = "".join(dumps(e) + "\n" for e in events).encode("utf-8")
        with self._lock:
            fd = open_for_append(self.path)
            try:
                # every writer (review servers, qa check, in any process) appends under this
                # lock, so a tail without its newline is a writer that was killed, never one
                # still writing, and cutting it off cannot cut into another's event
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._repair_torn_tail(fd)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)  # releases the lock
            return self._refresh()

    def _repair_torn_tail(self, fd: int) -> None:
        """Cut off a line torn by a kill (an event no reader has seen whole), so that it does
        not glue itself to the next one."""
        size = os.fstat(fd).st_size
        end = whole_lines_end(fd, size)
        if end < size:
            os.ftruncate(fd, end)


@dataclass
class Kept:
    """What an export keeps of a run's items: their ids in order, a count of what it left out
    by status, and the kept ids that wait for a reviewer (an OCR check flagged them)."""

    ids: list[str]
    left_out: Counter
    awaiting_review: set[str] = field(default_factory=set)


def kept(run: Path, ids: Iterable[str], *, reject_votes: int = 1,
         accepted_only: bool = False) -> Kept:
    """What an export keeps of ``ids``: every item but the rejected ones (and, with
    ``accepted_only``, the pending ones, those awaiting review among them)."""
    log = QaLog(run, reject_votes)
    log.refresh()
    result = Kept([], Counter())
    for item_id in ids:
        state = log.status(item_id)
        if state.status == "rejected" or (accepted_only and state.status == "pending"):
            result.left_out[state.status] += 1
        else:
            result.ids.append(item_id)
            if state.awaiting_review:
                result.awaiting_review.add(item_id)
    return result
