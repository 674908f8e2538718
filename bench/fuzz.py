"""Fuzz the loaders (through ``mmconvert render``) and the review API with hypothesis, and count
what came back: runs, one-line errors, tracebacks, hangs, and verdicts lost.

    python bench/fuzz.py [--cases 400]

Loader cases are generic JSONL, JSON-array and CSV files whose rows mix the known fields with
hostile values (deep nesting, huge integers, lone surrogates, NaN, control characters, wrong
types, raw bytes). Each is rendered in this process through the CLI with ``--on-error`` fail
and skip; a result is a run (exit 0), a one-line error (exit 1 or 2, one ``Error:`` line), or a
traceback (anything else). Review cases are verdict bodies and headers sent to a real review
server on 127.0.0.1; every answer must be 2xx or 4xx, and every verdict answered 200 must be in
qa.jsonl.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIELDS = ["id", "question", "options", "answer", "context", "language", "subset", "split",
          "metadata", "extra"]
HOSTILE_TEXT = st.sampled_from([
    "", " ", "../../x", "a/b", "\x1b]0;PWNED\x07", "\u202e", "\ud800", "x" * 5000, "[" * 3000,
    "[\"a\", \"b\"]", "A", "0", "-1", "1e309", "NaN", "\x00", "日本語", "\r\n", "C:\\x"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
                    HOSTILE_TEXT)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=5),
                                                                       inner, max_size=4)),
                      max_leaves=12)
ROW = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=8)


def deep(n: int) -> str:
    return "[" * n + "]" * n


def render_file(path: Path, out: Path, tally: Counter, on_error: str) -> None:
    from click.testing import CliRunner

    from mmconvert.cli import main

    started = time.perf_counter()
    result = CliRunner().invoke(main, ["render", str(path), "--out", str(out), "--on-error",
                                       on_error, "--no-progress"])
    if time.perf_counter() - started > 60:
        tally["hang (over 60 s)"] += 1
    lines = result.output.strip().splitlines()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        tally["traceback"] += 1
        tally.setdefault("examples", [])
        print(f"TRACEBACK on {path.name}: {type(result.exception).__name__}: "
              f"{result.exception}"[:300], file=sys.stderr)
    elif result.exit_code == 0:
        tally["ran"] += 1
    elif lines and lines[-1].startswith("Error: ") and "Traceback" not in result.output:
        tally["one-line error"] += 1
    else:
        tally["other output"] += 1
        print(f"OTHER on {path.name}: {result.output[-300:]}", file=sys.stderr)


def fuzz_loaders(cases: int, tmp: Path, tally: Counter) -> None:
    counter = iter(range(10**9))

    @settings(max_examples=cases, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(rows=st.lists(ROW, min_size=1, max_size=4),
           form=st.sampled_from(["jsonl", "json", "csv", "raw"]),
           extra=st.sampled_from(["", deep(50_000), "9" * 5000, "\\ud800", "{bad"]))
    def case(rows, form, extra):
        n = next(counter)
        path = tmp / f"case{n}.{form if form != 'raw' else 'jsonl'}"
        if form == "jsonl":
            text = "".join(json.dumps(r) + "\n" for r in rows)
            if extra:
                text += '{"question": "q", "x": ' + (extra if extra != "{bad" else "{") + "}\n"
        elif form == "json":
            text = json.dumps(rows)
        elif form == "csv":
            keys = sorted({k for r in rows for k in r}) or ["question"]
            text = ",".join(keys) + "\n" + "".join(
                ",".join(json.dumps(r.get(k, ""))[:200].replace("\n", " ") for k in keys) + "\n"
                for r in rows)
        else:
            text = extra + "\n" + "".join(json.dumps(r) + "\n" for r in rows)
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        for on_error in ("fail", "skip"):
            render_file(path, tmp / f"out{n}-{on_error}", tally, on_error)
        tally["loader cases"] += 1

    case()


def fuzz_review(cases: int, tmp: Path, tally: Counter, run: Path | None = None) -> None:
    """``cases`` requests to the review page of ``run`` (which it may change), or of the
    shipped sample rendered into ``tmp``."""
    from click.testing import CliRunner

    from mmconvert.cli import main
    from mmconvert.qa.review import ReviewServer, ReviewState

    if run is None:
        run = tmp / "review-run"
        CliRunner().invoke(main, ["render", "mmlu-redux", "--source",
                                  str(ROOT / "mmconvert" / "samples" / "mmlu-redux"),
                                  "--out", str(run)])
    ids = [json.loads(line)["id"] for line in (run / "manifest.jsonl").read_text()
           .splitlines()]
    server = ReviewServer(ReviewState(run))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    answered: list[str] = []
    counter = iter(range(10**9))
    body_values = st.one_of(VALUES, st.sampled_from(ids), st.sampled_from(["accept", "reject"]))

    def send(raw: bytes) -> int:
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
            sock.sendall(raw)
            data = b""
            try:
                while chunk := sock.recv(65536):
                    data += chunk
            except (ConnectionResetError, TimeoutError):
                pass
        if not data:
            return 0
        return int(data.split(b" ", 2)[1])

    valid = st.fixed_dictionaries({"id": st.sampled_from(ids),
                                   "reviewer": st.sampled_from(["ana", "bo"]),
                                   "verdict": st.just("accept"), "note": st.just("")})

    @settings(max_examples=cases, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(body=st.one_of(valid, st.dictionaries(
               st.sampled_from(["id", "reviewer", "verdict", "reason", "note", "x"]),
               body_values, max_size=6)),
           length=st.sampled_from([None, None, None, "abc", "-1", "0", "99999999", "3"]),
           path=st.sampled_from(["/api/verdict", "/api/verdict", "/files/../run.json",
                                 "/files/images/%00",
                                 "/api/item?id=" + "x" * 5000, "/api/changes?since=-5",
                                 "/api/state", "/nope"]),
           method=st.sampled_from(["POST", "POST", "GET"]))
    def case(body, length, path, method):
        n = next(counter)
        note = f"fuzz-{n}"
        if method == "POST" and isinstance(body, dict) and isinstance(body.get("note"), str):
            body = {**body, "note": note}
        data = json.dumps(body).encode("utf-8", "surrogatepass")
        headers = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}",
                   "Content-Type: application/json", "Connection: close"]
        headers.append(f"Content-Length: {len(data) if length is None else length}")
        status = send(("\r\n".join(headers) + "\r\n\r\n").encode() + data)
        tally["review cases"] += 1
        if status == 0:
            tally["review: connection dropped"] += 1
            print(f"DROPPED: {headers} body {data[:80]!r}", file=sys.stderr)
        elif status >= 500:
            tally["review: 5xx"] += 1
        else:
            tally[f"review: {status // 100}xx"] += 1
        if status == 200 and method == "POST" and path == "/api/verdict":
            answered.append(json.loads(data).get("note") or "")

    case()
    server.shutdown()
    notes = [(json.loads(line).get("detail") or {}).get("note", "")
             for line in (run / "qa.jsonl").read_text().splitlines()] \
        if (run / "qa.jsonl").exists() else []
    tally["review: verdicts answered 200"] += len(answered)
    tally["review: verdicts lost"] += sum(1 for n in answered if n and n not in notes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=400)
    args = parser.parse_args()
    tally: Counter = Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        fuzz_loaders(args.cases, Path(tmp), tally)
        fuzz_review(args.cases, Path(tmp), tally)
    tally.pop("examples", None)
    print(f"{time.perf_counter() - started:.0f} s")
    for key, value in sorted(tally.items()):
        print(f"  {key}: {value}")
    bad = tally["traceback"] + tally["other output"] + tally["hang (over 60 s)"] + \
        tally["review: 5xx"] + tally["review: connection dropped"] + \
        tally["review: verdicts lost"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
