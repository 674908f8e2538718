"""``mmconvert qa summary``: counts by status and reason, acceptance rate, per-check figures."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..runfolder import open_run
from .checks import BUCKETS, ocr_statistics
from .events import QaLog


def review_summary(run: Path, reject_votes: int = 1) -> dict[str, Any]:
    ids = [row.id for row in open_run(run).rows()]
    qa = QaLog(run, reject_votes)
    qa.refresh()
    status: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    checks: dict[str, dict[str, Any]] = {}
    measures: dict[str, list[float]] = {"cer": [], "words": [], "seconds": []}
    density: Counter[str] = Counter()
    reviewers: dict[str, Counter[str]] = {}
    flagged = reviewed = awaiting = 0
    for item_id in ids:
        state = qa.status(item_id)
        status[state.status] += 1
        by_reason.update(state.reasons())
        flagged += state.flagged
        awaiting += state.awaiting_review
        reviewed += state.reviewed
        for name, e in state.auto.items():
            figures = checks.setdefault(name, {"checked": 0, "passed": 0, "failed": 0,
                                               "by_reason": Counter()})
            figures["checked"] += 1
            figures["passed" if e["verdict"] == "accept" else "failed"] += 1
            if e["verdict"] == "reject":
                figures["by_reason"][e["reason"]] += 1
            if name == "ocr" and all(key in e["detail"] for key in (*measures, "density")):
                for key in measures:
                    measures[key].append(e["detail"][key])
                density[e["detail"]["density"]] += 1
        for name, e in state.reviewers.items():
            reviewers.setdefault(name, Counter())[e["verdict"]] += 1
    if measures["cer"]:
        checks["ocr"].update({
            "cer": ocr_statistics(measures["cer"]),
            "words_per_item": ocr_statistics([float(w) for w in measures["words"]]),
            "seconds_per_item": ocr_statistics(measures["seconds"]),
            "density": {name: density[name] for name in BUCKETS},
        })
    decided = status["accepted"] + status["rejected"]
    return {
        "items": len(ids), "accepted": status["accepted"], "rejected": status["rejected"],
        "pending": status["pending"], "reviewed": reviewed, "auto_flagged": flagged,
        "awaiting_review": awaiting,
        "acceptance_rate": round(status["accepted"] / decided, 4) if decided else None,
        "reject_votes": reject_votes,
        "by_reason": dict(by_reason.most_common()),
        "checks": {name: {**f, "by_reason": dict(f["by_reason"].most_common())}
                   for name, f in sorted(checks.items())},
        "reviewers": {name: dict(c) for name, c in sorted(reviewers.items())},
        "events": qa.events,
    }


def review_text(s: dict[str, Any]) -> str:
    rate = "n/a" if s["acceptance_rate"] is None else f"{100 * s['acceptance_rate']:.1f} %"
    lines = [f"{s['items']} items: {s['accepted']} accepted, {s['rejected']} rejected, "
             f"{s['pending']} pending; acceptance rate {rate} of decided items",
             f"reviewed by a person: {s['reviewed']}; failed an automatic check: "
             f"{s['auto_flagged']}; a rejection takes {s['reject_votes']} reviewer vote(s)",
             f"awaiting review: {s['awaiting_review']} (pending; only a check that can misread "
             "a correct page, OCR, failed them; exports keep them)"]
    if s["by_reason"]:
        lines.append("rejected by reason: " + ", ".join(f"{k} {v}" for k, v in
                                                        s["by_reason"].items()))
    for name, f in s["checks"].items():
        line = f"  {name:<11} checked {f['checked']}, passed {f['passed']}, failed {f['failed']}"
        if f["by_reason"]:
            line += " (" + ", ".join(f"{k} {v}" for k, v in f["by_reason"].items()) + ")"
        lines.append(line)
        if "cer" in f:
            c, w = f["cer"], f["words_per_item"]
            lines.append(f"              CER mean {c['mean']:.4f}, median {c['median']:.4f}, "
                         f"p95 {c['p95']:.4f}, max {c['max']:.4f}; words per item mean "
                         f"{w['mean']:.0f}; density " + ", ".join(
                             f"{k} {v}" for k, v in f["density"].items()))
    if s["checks"]:
        lines.insert(4 if s["by_reason"] else 3, "automatic checks:")
    for name, c in s["reviewers"].items():
        lines.append(f"reviewer {name}: {c.get('accept', 0)} accepted, {c.get('reject', 0)} "
                     "rejected")
    return "\n".join(lines)
