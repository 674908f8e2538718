"""Attack the new surface with hostile input, as whole ``mmconvert`` processes, and count what
came back: the document renderer's loading elements and odd markup, style files, tokenizer
files, haystack options, eval endpoints and plugins; and (``truth``, issue 53) hostile recipe
files, a paid recipe checked unasked, hostile harness names and folders, a limit over a split
of 300,000 docs, a gzip bomb from the image API and an image that does not decode.

    python bench/attack.py [--only document,style,tokenizer,haystack,eval,plugin,truth]

Every URL a case names points at a TCP listener on 127.0.0.1 that counts the connections made
to it (a beacon: no bytes need be sent). Each case states what it expects: a run (exit 0, and
what the run must show: an embedding element skipped, a loading one recorded as refused), or a
one-line error (exit 1 or 2, one ``Error:`` line, no traceback). A result is counted as:

- ``as expected``;
- ``one-line error`` or ``ran``, when that is what it expected;
- ``traceback``: a traceback in the output, or any other output on a failure;
- ``hang``: no end within 120 s (the process is killed);
- ``silent wrong``: exit 0 where an error was due, or a run whose check failed.

The counts, and the connections the listener saw, are printed at the end; nothing but 0 is a
pass for tracebacks, hangs, silent wrongs and sockets.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SAMPLE = ROOT / "mmconvert" / "samples" / "mmlu-redux"
TIMEOUT = 120


class Listener:
    """A TCP listener on 127.0.0.1 counting connections."""

    def __init__(self):
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(128)
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.hits: list[Any] = []
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, address = self.server.accept()
            except OSError:
                continue
            self.hits.append(address)
            conn.close()

    def url(self, path: str = "x") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"


@dataclass
class Case:
    group: str
    name: str
    args: list[str]
    expect: str  # "run" or "error"
    check: Callable[[Path], str | None] | None = None  # a run's check: why it is wrong
    env: dict[str, str] = field(default_factory=dict)


def run_case(case: Case, tally: Counter, work: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [
        case.env.get("PYTHONPATH")])]), **{k: v for k, v in case.env.items()
                                            if k != "PYTHONPATH"}}
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "mmconvert", *case.args], env=env,
                              capture_output=True, text=True, timeout=TIMEOUT, cwd=work)
    except subprocess.TimeoutExpired:
        tally["hang"] += 1
        print(f"HANG {case.group}/{case.name}", file=sys.stderr)
        return
    seconds = time.perf_counter() - started
    tally[f"{case.group} cases"] += 1
    tally["cases"] += 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    if "Traceback" in done.stderr or (done.returncode and len(errors) != 1) or \
            done.returncode not in (0, 1, 2, 3):
        tally["traceback"] += 1
        print(f"TRACEBACK {case.group}/{case.name} (exit {done.returncode}): "
              f"{done.stderr[-600:]}", file=sys.stderr)
        return
    if done.returncode == 0:
        if case.expect == "error":
            tally["silent wrong"] += 1
            print(f"SILENT WRONG {case.group}/{case.name}: exit 0 where an error was due",
                  file=sys.stderr)
            return
        wrong = case.check(work) if case.check else None
        if wrong:
            tally["silent wrong"] += 1
            print(f"SILENT WRONG {case.group}/{case.name}: {wrong}", file=sys.stderr)
            return
        tally["ran"] += 1
    else:
        if case.expect == "run":
            tally["unexpected error"] += 1
            print(f"UNEXPECTED ERROR {case.group}/{case.name}: {errors[0]}", file=sys.stderr)
            return
        tally["one-line error"] += 1
    tally["as expected"] += 1
    if os.environ.get("ATTACK_VERBOSE"):
        print(f"ok {case.group}/{case.name} {seconds:.1f}s {errors[:1]}", file=sys.stderr)


def rows(path: Path, name: str) -> list[dict]:
    file = path / name
    return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


# --- the document renderer -----------------------------------------------------------------

EMBEDDING = {"iframe", "iframe-srcdoc", "object", "embed", "meta-refresh", "base", "frameset",
             "frame", "portal", "applet", "meta-charset-refresh"}


def loading_markup(listener: Listener) -> dict[str, str]:
    url = listener.url()
    return {
        "iframe": f'<iframe src="{url}"></iframe>',
        "iframe-srcdoc": f'<iframe srcdoc="&lt;img src={url}&gt;"></iframe>',
        "object": f'<object data="{url}"></object>',
        "embed": f'<embed src="{url}">',
        "meta-refresh": f'<meta http-equiv="refresh" content="0;url={url}">',
        "meta-charset-refresh": f'<meta charset="utf-8" http-equiv="refresh" content="0;{url}">',
        "base": f'<base href="{url}/"><img src="y.png">',
        "frameset": f'<frameset><frame src="{url}"></frameset>',
        "frame": f'<frame src="{url}">',
        "portal": f'<portal src="{url}"></portal>',
        "applet": f'<applet code="x" codebase="{url}"></applet>',
        "img": f'<img src="{url}">',
        "img-srcset": f'<img srcset="{url} 2x">',
        "img-lazy": f'<img loading="lazy" src="{url}">',
        "link-css": f'<link rel="stylesheet" href="{url}">',
        "link-preconnect": f'<link rel="preconnect" href="{url}"><link rel="dns-prefetch" '
                           f'href="{url}">',
        "link-prefetch": f'<link rel="prefetch" href="{url}"><link rel="preload" as="image" '
                         f'href="{url}">',
        "video": f'<video src="{url}" poster="{url}"></video>',
        "audio-source": f'<audio autoplay><source src="{url}"></audio>',
        "track": f'<video><track src="{url}"></video>',
        "svg-image": f'<svg><image href="{url}"/></svg>',
        "svg-xlink": f'<svg><image xlink:href="{url}"/></svg>',
        "svg-use": f'<svg><use href="{url}#a"/></svg>',
        "svg-feimage": f'<svg><filter id="f"><feImage href="{url}"/></filter></svg>',
        "style-attr": f'<div style="background:url({url})">x</div>',
        "style-import": f"<style>@import url({url});</style>",
        "style-font-face": f"<style>@font-face {{font-family:z; src:url({url})}} "
                           "p{font-family:z}</style><p>x</p>",
        "style-image-set": f'<div style="background-image:image-set(url({url}) 1x)">x</div>',
        "input-image": f'<input type="image" src="{url}">',
        "picture": f'<picture><source srcset="{url}"><img src="a.png"></picture>',
        "form": f'<form action="{url}"><button formaction="{url}">go</button></form>',
        "a-ping": f'<a href="{url}" ping="{url}">link</a>',
        "table-background": f'<table background="{url}"><tr><td>x</td></tr></table>',
        "body-background": f'<body background="{url}">x</body>',
        "script-src": f'<script src="{url}"></script>',
        "script-inline": f"<script>fetch('{url}')</script>",
        "onerror": f'<img src="x" onerror="fetch(\'{url}\')">',
        "markdown-image": f"![alt]({url})",
        "markdown-link": f"[text]({url})",
        "markdown-autolink": f"<{url}>",
        "math-href": f'<math href="{url}"><mi>x</mi></math>',
    }


def document_cases(listener: Listener, data: Path) -> list[Case]:
    cases = []
    markup = loading_markup(listener)
    for kind in ("markdown", "html"):
        source = data / f"loading-{kind}.jsonl"
        source.write_text("".join(json.dumps({"id": name, "question": "q", "answer": "x",
                                              "context": f"Before. {html} After."}) + "\n"
                                  for name, html in markup.items()), encoding="utf-8")
        out = f"doc-loading-{kind}"

        def check(work: Path, out=out) -> str | None:
            made = {r["id"] for r in rows(work / out, "manifest.jsonl")}
            skipped = {r["id"] for r in rows(work / out, "skipped.jsonl")}
            drawn_embedding = made & EMBEDDING
            if drawn_embedding:
                return f"an embedding element drawn: {sorted(drawn_embedding)}"
            if made | skipped != set(markup):
                return f"items neither made nor recorded: {sorted(set(markup) - made - skipped)}"
            return None

        cases.append(Case("document", f"{len(markup)} loading elements as {kind}",
                          ["render", str(source), "--renderer", "document", "--markup", kind,
                           "--render", "context", "--on-error", "skip", "--out", out,
                           "--no-progress"], "run", check))
        for name, html in markup.items():  # each alone, --on-error fail
            one = data / f"one-{kind}-{name}.jsonl"
            one.write_text(json.dumps({"id": "x", "question": "q", "answer": "x",
                                       "context": f"Before. {html} After."}) + "\n")
            expect = "error" if name in EMBEDDING else "run"
            cases.append(Case("document", f"{name} ({kind})", [
                "render", str(one), "--renderer", "document", "--markup", kind, "--render",
                "context", "--out", f"one-{kind}-{name}", "--no-progress"], expect))
    odd = {"quotes-10000": ">" * 10000 + " deep", "list-3000": "\n".join(
        "  " * i + f"- i{i}" for i in range(3000)), "nul": "a\x00b", "bell": "a\x07b",
        "emphasis-5000": "*" * 5000 + "x" + "*" * 5000, "unclosed-math": "$$ \\frac{",
        "unknown-command": "\\[ \\notacommand{x} \\]", "huge-table": "| a |\n|---|\n" +
        "| x |\n" * 3000, "divs-3000": "<div>" * 3000 + "x" + "</div>" * 3000}
    # past what the parsers build (markdown-it drops what lies 100 levels deep, emphasis
    # included; Chromium nests 512), and control characters: the item's error
    expect = {"quotes-10000": "error", "list-3000": "error", "nul": "error", "bell": "error",
              "divs-3000": "error", "emphasis-5000": "error"}
    for name, text in odd.items():
        one = data / f"odd-{name}.jsonl"
        one.write_text(json.dumps({"id": "x", "question": "q", "answer": "x",
                                   "context": text}) + "\n")

        def math_recorded(work: Path, name=name) -> str | None:
            if name == "unknown-command":  # a formula not typeset: recorded
                (row,) = rows(work / f"odd-{name}", "manifest.jsonl")
                return None if row.get("math_errors") else "math not typeset, not recorded"
            if name == "unclosed-math":  # no formula (no closing $$): its text, drawn whole
                import pymupdf

                (row,) = rows(work / f"odd-{name}", "manifest.jsonl")
                with pymupdf.open(work / f"odd-{name}" / row["pdf"]) as doc:
                    text = "".join(page.get_text() for page in doc)
                return None if "$$ \\frac{" in text else f"the text is not whole: {text!r}"
            return None

        cases.append(Case("document", f"odd markup: {name}", [
            "render", str(one), "--renderer", "document", "--render", "context", "--out",
            f"odd-{name}", "--no-progress"], expect.get(name, "run"), math_recorded))
    css = {"style-end": f"p {{ }} </style><iframe src=\"{listener.url('css')}\"></iframe>",
           "import": f"@import url({listener.url('css')}); p {{ color: red }}",
           "font": f"@font-face {{ font-family: z; src: url({listener.url('css')}) }} "
                   "body { font-family: z }"}
    for name, text in css.items():
        path = data / f"{name}.css"
        path.write_text(text)
        cases.append(Case("document", f"--css {name}", [
            "render", str(data / "one-markdown-img.jsonl"), "--renderer", "document", "--css",
            str(path), "--out", f"css-{name}", "--no-progress"],
            "error" if name == "style-end" else "run"))
    bad = data / "bad-utf8.css"
    bad.write_bytes(b"p { color: \xff }")
    big = data / "big.css"
    with open(big, "wb") as handle:
        handle.truncate(2 << 30)
    loop = data / "loop.css"
    if not loop.is_symlink():
        os.symlink(loop, loop)
    for name, path in (("invalid UTF-8", bad), ("2 GB sparse", big), ("symlink loop", loop),
                       ("a directory", data), ("/dev/zero", Path("/dev/zero"))):
        cases.append(Case("document", f"--css {name}", [
            "render", str(data / "one-markdown-img.jsonl"), "--renderer", "document", "--css",
            str(path), "--out", "css-bad", "--no-progress"], "error"))
    return cases


# --- style files ---------------------------------------------------------------------------

def style_cases(data: Path) -> list[Case]:
    bomb = "\n".join(["a: &a [x, x, x, x, x, x, x, x, x]", *(
        f"{chr(98 + n)}: &{chr(98 + n)} [" + ", ".join([f"*{chr(97 + n)}"] * 9) + "]"
        for n in range(8)), "font_size: {choice: *i}"])
    styles = {
        "alias-bomb.yaml": (bomb, "error"),
        "anchor.yaml": ("x: &a 12\nfont_size: *a\n", "error"),
        "not-yaml.yaml": ("font_size: [1, 2\n", "error"),
        "list.yaml": ("- 1\n- 2\n", "error"),
        "unknown-field.yaml": ("font_sise: 12\n", "error"),
        "bad-value.yaml": ("font_size: -3\n", "error"),
        "bad-choice.yaml": ("font_size: {choice: [10, lots]}\n", "error"),
        "inverted-range.yaml": ("font_size: {uniform: [14, 9]}\n", "error"),
        "two-draws.yaml": ("font_size: {uniform: [9, 14], choice: [1]}\n", "error"),
        "deep.yaml": ("font_size: " + "[" * 5000 + "]" * 5000 + "\n", "error"),
        "huge-number.yaml": ("font_size: " + "9" * 5000 + "\n", "error"),
        "nan.yaml": ("font_size: .nan\n", "error"),
        "inf.yaml": ("font_size: .inf\n", "error"),
        "tab.yaml": ("font_size:\t12\n\tppi: 3\n", "error"),
        "render-field.yaml": ("render: all\n", "error"),
        "empty.yaml": ("", "run"),
        "ok.yaml": ("font_size: {uniform: [10, 12]}\nalign: [left, justify]\n", "run"),
        "ok.json": ('{"font_size": 11}', "run"),
        "bad.json": ('{"font_size": 11', "error"),
        "binary.yaml": ("\x00\x01\x02\xff", "error"),
    }
    cases = []
    for name, (text, expect) in styles.items():
        path = data / name
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        cases.append(Case("style", name, ["render", "mmlu-redux", "--source", str(SAMPLE),
                                          "--style", str(path), "--limit", "2", "--out",
                                          f"style-{name}", "--no-progress"], expect))
    big = data / "big.yaml"
    with open(big, "wb") as handle:
        handle.truncate(1 << 30)
    loop = data / "loop.yaml"
    if not loop.is_symlink():
        os.symlink(loop, loop)
    for name, path in (("1 GB sparse", big), ("symlink loop", loop), ("a directory", data),
                       ("/dev/zero", Path("/dev/zero")), ("missing", data / "none.yaml")):
        cases.append(Case("style", name, ["render", "mmlu-redux", "--source", str(SAMPLE),
                                          "--style", str(path), "--out", "style-x",
                                          "--no-progress"], "error"))
    config = data / "config-bomb.yaml"
    config.write_text(bomb.replace("font_size: {choice: *i}", "page: {ppi: 92.9}"))
    cases.append(Case("style", "--config alias bomb", [
        "render", "mmlu-redux", "--source", str(SAMPLE), "--config", str(config), "--out",
        "config-x", "--no-progress"], "error"))
    return cases


# --- tokenizer files -----------------------------------------------------------------------

def tokenizer_cases(data: Path, demo: Path) -> list[Case]:
    files = {"not-json.json": "{", "list.json": "[1, 2]", "empty.json": "",
             "wrong-shape.json": '{"model": {"type": "Nope"}}',
             "binary.json": "\x00\xff\x00", "deep.json": "[" * 100000 + "]" * 100000}
    cases = []
    for name, text in files.items():
        path = data / name
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        cases.append(Case("tokenizer", name, ["stats", str(demo), "--no-plots", "--tokenizer",
                                              str(path)], "error"))
    big = data / "big-tokenizer.json"
    with open(big, "wb") as handle:
        handle.truncate(1 << 30)
    loop = data / "loop-tokenizer.json"
    if not loop.is_symlink():
        os.symlink(loop, loop)
    empty_dir = data / "no-tokenizer"
    empty_dir.mkdir(exist_ok=True)
    for name, spec in (("1 GB sparse", str(big)), ("symlink loop", str(loop)),
                       ("/dev/zero", "/dev/zero"), ("folder without one", str(empty_dir)),
                       ("missing file", str(data / "none.json")),
                       ("hub id not cached", "nobody/no-such-model"),
                       ("unknown tiktoken", "tiktoken:o300k"),
                       ("tiktoken not cached", "tiktoken:r50k_base")):
        cases.append(Case("tokenizer", name, ["stats", str(demo), "--no-plots", "--tokenizer",
                                              spec], "error",
                          env={"TIKTOKEN_CACHE_DIR": str(data / "no-tiktoken-cache")}))
    for name, flags in (("target without a tokenizer", ["--target-ratio", "2",
                                                        "--ratio-model", "qwen2.5-vl"]),
                        ("tokenizer without a target", ["--tokenizer", "/dev/zero"]),
                        ("unknown ratio model", ["--vision-budget", "256", "--ratio-model",
                                                 "qwen9"])):
        cases.append(Case("tokenizer", name, ["render", "mmlu-redux", "--source", str(SAMPLE),
                                              *flags, "--out", "tok-x", "--no-progress"],
                          "error"))
    return cases


# --- haystack options ----------------------------------------------------------------------

def haystack_cases(data: Path) -> list[Case]:
    cases = []
    flagged = {
        "length 1e9": ["--lengths", "1000000000"], "length 400 digits": ["--lengths", "1" * 400],
        "length 1m+1": ["--lengths", "1048577"], "length abc": ["--lengths", "abc"],
        "length -5": ["--lengths", "-5"], "length 0": ["--lengths", "0"],
        "length nan": ["--lengths", "nan"], "length 1e3": ["--lengths", "1e3"],
        "depth 101": ["--depths", "101"], "depth -1": ["--depths", "-1"],
        "depth nan": ["--depths", "nan"], "depth inf": ["--depths", "inf"],
        "needle other field": ["--needle", "{other} {key} {value}"],
        "needle lone brace": ["--needle", "{key} {value} {"],
        "needle closing brace": ["--needle", "{key} {value} }"],
        "needle huge width": ["--needle", "{key} {value:>1500000000}"],
        "needle conversion": ["--needle", "{key!r} {value}"],
        "needle attribute": ["--needle", "{key.__class__} {value}"],
        "needle index": ["--needle", "{key[0]} {value}"],
        "needle without value": ["--needle", "{key} only"],
        "needle 100k characters": ["--needle", "{key} {value} " + "x" * 100_000],
        "haystack /dev/zero": ["--haystack", "/dev/zero"],
        "haystack missing": ["--haystack", str(data / "none.txt")],
        "haystack niah": ["--haystack", "niah"],
        "samples 10^6": ["--needle-samples", "1000000"],
        "unknown kind": ["--needle-kind", "multi-everything"],
        "turns from text": ["--haystack", str(data / "hay.txt"), "--haystack-unit", "turn"],
        "length tokenizer /dev/zero": ["--length-tokenizer", "/dev/zero"],
        "tokenizer without target": ["--tokenizer", "tiktoken:o200k_base"],
    }
    (data / "hay.txt").write_text("The grass is green. The sky is blue. " * 50)
    (data / "empty.txt").write_text("")
    (data / "binary.txt").write_bytes(b"\xff\xfe\x00\x01" * 100)
    loop = data / "loop.txt"
    if not loop.is_symlink():
        os.symlink(loop, loop)
    flagged.update({"haystack empty": ["--haystack", str(data / "empty.txt")],
                    "haystack binary": ["--haystack", str(data / "binary.txt")],
                    "haystack loop": ["--haystack", str(loop)]})
    for name, flags in flagged.items():
        cases.append(Case("haystack", name, ["render", "niah", *flags, "--out", "niah-x",
                                             "--no-progress"], "error"))

    def depths_reached(work: Path) -> str | None:
        found = rows(work / "niah-ok", "manifest.jsonl")
        return None if len(found) == 3 else f"{len(found)} items, not 3"

    cases.append(Case("haystack", "a small grid", [
        "render", "niah", "--haystack", str(data / "hay.txt"), "--lengths", "256", "--depths",
        "0,50,100", "--needle", "{{braces}} {key}: {value}.", "--out", "niah-ok",
        "--no-progress"], "run", depths_reached))
    return cases


# --- eval endpoints ------------------------------------------------------------------------

def eval_cases(data: Path, demo: Path, listener: Listener) -> tuple[list[Case], list]:
    from tests.openai_server import FakeOpenAI

    servers = []

    def start(**kwargs) -> str:
        fake = FakeOpenAI(**kwargs)
        servers.append(fake)
        return fake.start()

    elsewhere = listener.url("v1")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead_port = closed.getsockname()[1]
    closed.close()
    cases = []
    endpoints = {
        "unreachable": f"http://127.0.0.1:{dead_port}/v1",
        "models redirect elsewhere": start(models=("reader",), models_redirect=elsewhere
                                           + "/models"),
        "chat 307 elsewhere": start(models=("reader",), chat_redirect=elsewhere
                                    + "/chat/completions"),
        "models slow-loris": start(models_trickle=2.0),
        "wrong key": start(models=("reader",), key="right-key"),
        "unknown model": start(models=("other",)),
        "a port that takes and closes connections (no HTTP)": _closer(),
    }
    always_500 = FakeOpenAI(models=("reader",))
    always_500.script("", *["500"] * 100, path="chat")
    servers.append(always_500)
    endpoints["every chat 500"] = always_500.start()
    malformed = FakeOpenAI(models=("reader",))
    malformed.script("", *["malformed"] * 100, path="chat")
    servers.append(malformed)
    endpoints["every chat malformed"] = malformed.start()
    for name, url in endpoints.items():
        cases.append(Case("eval", name, ["eval", str(demo), "--model", "reader", "--base-url",
                                         url, "--out", f"ev-{len(cases)}", "--timeout", "5",
                                         "--max-retries", "1", "--limit", "2"], "error",
                          env={"OPENAI_API_KEY": "sk-attack-test"}))
    # a /models listing mmconvert cannot read is no reason to stop: the model is checked by
    # the first request, and the replies are scored (the fake's are unparsed: scored 0)
    for name, body in (("models not JSON", b"<html>not json</html>"),
                       ("models a JSON list", b"[1, 2, 3]"),
                       ("models over 1 MiB", b'{"data": [' + b'{"id": "x"},' * 200000
                        + b'{"id": "reader"}]}')):
        out = f"ev-models-{len(cases)}"

        def scored(work: Path, out=out) -> str | None:
            results = json.loads((work / out / "results.json").read_text())
            image = results["overall"]["image"]
            return None if image["n"] == 2 and image["errors"] == 0 else f"results: {image}"

        cases.append(Case("eval", name, ["eval", str(demo), "--model", "reader", "--base-url",
                                         start(models_body=body), "--out", out, "--limit",
                                         "2", "--modality", "image"], "run", scored))
    for name, url in (("ftp scheme", "ftp://127.0.0.1/v1"), ("no host", "http:///v1"),
                      ("spaces", "http://127.0.0.1 /v1"), ("javascript", "javascript:alert(1)")):
        cases.append(Case("eval", f"base-url {name}", ["eval", str(demo), "--model", "reader",
                                                       "--base-url", url, "--out", "ev-bad"],
                          "error"))
    return cases, servers


def _closer() -> str:
    """A port on 127.0.0.1 that accepts each connection and closes it at once."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}/v1"


# --- issue 53: recipes, harness folders, limits, responses ----------------------------------

def truth_cases(data: Path, listener: Listener) -> tuple[list[Case], list]:
    """The attack run of issue 53, as whole processes: hostile recipe files, a paid recipe
    checked unasked, hostile harness names and folders, a limit over a huge split, a gzip
    bomb, an image that does not decode."""
    import yaml

    from tests.openai_server import FakeOpenAI

    lm = ROOT / "tests" / "fixtures" / "lm-eval"
    readbench = yaml.safe_load((ROOT / "mmconvert" / "recipes" / "readbench.yaml").read_text())
    cases: list[Case] = []

    def recipe(name: str, text: str) -> str:
        path = data / f"recipe-{name}.yaml"
        path.write_text(text)
        return str(path)

    for name, text in (
            ("nested 3000 deep", "name: x\noptions: " + "{a: " * 3000 + "1" + "}" * 3000),
            ("python tag", "name: x\noptions: !!python/object/apply:os.system ['id']\n"),
            ("100,000 blur steps", "name: x\ntransforms: ["
             + ", ".join(["blur:1"] * 100000) + "]\n")):
        path = recipe(name.split()[0], text)
        cases.append(Case("truth", f"recipe {name}: verify", ["recipe", "verify", path],
                          "error"))
        cases.append(Case("truth", f"recipe {name}: render", [
            "render", "mmlu-redux", "--source", str(SAMPLE), "--recipe", path, "--limit", "1",
            "--out", f"t-{len(cases)}"], "error"))
    sparse = data / "recipe-sparse.yaml"
    with open(sparse, "wb") as handle:
        handle.truncate(6 << 30)
    cases.append(Case("truth", "recipe 6 GB sparse", ["recipe", "verify", str(sparse)],
                      "error"))
    edited = dict(readbench, options={**readbench["options"], "page_height": 2.0})
    cases.append(Case("truth", "recipe page_height edited", [
        "recipe", "verify", recipe("edited", yaml.safe_dump(edited))], "error"))
    paid = {k: v for k, v in readbench.items() if k not in ("style", "options")}
    paid.update(name="paid", renderer="generate")
    paid_file = recipe("paid", yaml.safe_dump(paid))
    beacon = {"OPENAI_BASE_URL": listener.url("v1"), "OPENAI_API_KEY": "sk-attack-test"}
    cases.append(Case("truth", "paid recipe: verify", ["recipe", "verify", paid_file],
                      "error", env=beacon))

    def fingerprint_skipped(work: Path) -> str | None:
        record = json.loads((work / "h-paid" / "harness.json").read_text())
        return None if "not checked here" in record["recipe_fingerprint"] else str(record)

    cases.append(Case("truth", "paid recipe: harness", [
        "harness", "lm-eval", "arc_easy", "--recipe", paid_file, "--out", "h-paid"], "run",
        fingerprint_skipped, env=beacon))

    def compiles(folder: str):
        def check(work: Path) -> str | None:
            import ast

            text = (work / folder / "mmconvert_harness.py").read_text()
            ast.parse(text)
            return "os.system in the module" if "os.system" in text else None
        return check

    cases.append(Case("truth", "harness dotted task", [
        "harness", "lm-eval", "bertaqa_en_mt_latxa-7b-v1.1,arc_easy", "--recipe", "readbench",
        "--out", "h-dotted"], "run", compiles("h-dotted")))
    xdg = data / "xdg"
    (xdg / "mmconvert").mkdir(parents=True, exist_ok=True)
    from importlib.util import find_spec

    from mmconvert.corpora.lmeval import index_file, task_index
    from mmconvert.manifest import user_cache

    folder = Path(next(iter(find_spec("lm_eval").submodule_search_locations))) / "tasks"
    kept = json.loads(index_file(user_cache(), folder).read_text()) \
        if index_file(user_cache(), folder).is_file() else None
    if kept is None:
        task_index()
        kept = json.loads(index_file(user_cache(), folder).read_text())
    entry = kept["entries"]["ai2_arc"]
    kept["entries"]["ai2_arc"] = entry[:2] + [["arc_easy\nimport os; os.system('id')"]]
    index_file(xdg / "mmconvert", folder).write_text(json.dumps(kept))
    cases.append(Case("truth", "harness tampered index cache", [
        "harness", "lm-eval", "arc_easy", "--recipe", "readbench", "--out", "h-tampered"],
        "run", compiles("h-tampered"), env={"XDG_CACHE_HOME": str(xdg)}))
    cases.append(Case("truth", "harness first write", [
        "harness", "lm-eval", "arc_easy", "--recipe", "readbench", "--source", str(lm),
        "--out", "h-once"], "run"))

    def first_kept(work: Path) -> str | None:
        return None if (work / "h-once" / "mmconvert_arc_easy.yaml").is_file() and \
            not (work / "h-once" / "mmconvert_gsm8k.yaml").exists() else "first write changed"

    cases.append(Case("truth", "harness second write, another task", [
        "harness", "lm-eval", "gsm8k", "--recipe", "readbench", "--source", str(lm),
        "--out", "h-once"], "error", first_kept))
    own = data / "own"
    own.mkdir(exist_ok=True)
    (own / "recipe.yaml").write_text("mine\n")
    cases.append(Case("truth", "harness over a user's recipe.yaml", [
        "harness", "lm-eval", "arc_easy", "--recipe", "readbench", "--out", str(own)],
        "error"))
    big = data / "big" / "ARC-Easy"
    big.mkdir(parents=True, exist_ok=True)
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = lm / "ai2_arc" / "ARC-Easy"
    for split in ("train", "validation"):
        table = pq.read_table(next(source.glob(f"{split}-*.parquet")))
        pq.write_table(table, big / f"{split}-00000-of-00001.parquet")
    test = pq.read_table(next(source.glob("test-*.parquet")))
    test = pa.concat_tables([test] * (300000 // test.num_rows))
    test = test.set_column(test.schema.get_field_index("id"), "id",
                           pa.array([f"q{i}" for i in range(test.num_rows)]))
    pq.write_table(test, big / "test-00000-of-00001.parquet")
    cases.append(Case("truth", "render lm-eval --limit 3 of 300,000 docs", [
        "render", "lm-eval:arc_easy", "--source", str(data / "big"), "--limit", "3", "--out",
        "t-big"], "run"))
    short = data / "short" / "gsm8k" / "main"
    short.mkdir(parents=True, exist_ok=True)
    for path in (lm / "gsm8k" / "main").glob("*.parquet"):
        table = pq.read_table(path)
        pq.write_table(table.slice(0, 2) if path.name.startswith("train") else table,
                       short / path.name)
    cases.append(Case("truth", "few-shot split shorter than the few-shot count", [
        "render", "lm-eval:gsm8k", "--source", str(data / "short"), "--limit", "1", "--out",
        "t-short"], "error"))
    servers = []
    bomb = FakeOpenAI()
    bomb.script("", *["gzipbomb"] * 20, path="images")
    servers.append(bomb)
    url = bomb.start()
    items = data / "gen.jsonl"
    items.write_text(json.dumps({"id": "g1", "context": "A short passage.", "question": "Q?",
                                 "options": ["a", "b"], "answer": "A"}) + "\n")

    def bomb_named(work: Path) -> str | None:
        skipped = rows(work / "t-bomb", "skipped.jsonl")
        return None if skipped and "compression bomb" in skipped[0]["reason"] else \
            f"skipped: {skipped}"

    cases.append(Case("truth", "image API gzip bomb", [
        "generate", str(items), "--image-base-url", url, "--chat-base-url", url, "--layout",
        "background", "--max-tries", "1", "--out", "t-bomb", "--no-progress"], "run",
        bomb_named, env={"OPENAI_API_KEY": "sk-attack-test",
                         "MMCONVERT_CACHE": str(data / "api-cache")}))
    eval_bomb = FakeOpenAI(models=("reader",))
    eval_bomb.script("", *["gzipbomb"] * 20, path="chat")
    servers.append(eval_bomb)
    demo = data.parent / "demo"
    cases.append(Case("truth", "eval reply gzip bomb", [
        "eval", str(demo), "--model", "reader", "--base-url", eval_bomb.start(), "--out",
        "t-eval-bomb", "--limit", "1", "--max-retries", "0", "--modality", "image"], "error",
        env={"OPENAI_API_KEY": "sk-attack-test"}))
    pictures = data / "pictures"
    pictures.mkdir(exist_ok=True)
    (pictures / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    (pictures / "doc.jsonl").write_text(json.dumps({
        "id": "d1", "question": "q", "answer": "x", "context": "![b](broken.png)"}) + "\n")

    def refused(work: Path) -> str | None:
        (row,) = rows(work / "t-broken", "manifest.jsonl")
        return None if row.get("refused") == ["image broken.png"] else f"refused: {row}"

    cases.append(Case("truth", "document image that does not decode", [
        "render", str(pictures / "doc.jsonl"), "--renderer", "document", "--render",
        "context", "--out", "t-broken", "--no-progress"], "run", refused))
    return cases, servers


# --- plugins -------------------------------------------------------------------------------

def plugin_cases(data: Path, demo: Path) -> list[Case]:
    from tests.plugins.test_hostile_plugins import ENTRY_POINTS, EXITS, INTERRUPTS, MODULE

    site = data / "site"
    site.mkdir(exist_ok=True)
    (site / "mmc_hostile.py").write_text(MODULE)
    (site / "mmc_exits.py").write_text(EXITS)
    (site / "mmc_interrupts.py").write_text(INTERRUPTS)
    info = site / "mmc_hostile-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mmc-hostile\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    env = {"PYTHONPATH": str(site)}

    def lists_everything(work: Path) -> str | None:
        return None

    cases = [Case("plugin", "list", ["list"], "run", lists_everything, env)]
    for name, args in (
            ("renderer without ocr_roles", ["render", "mmlu-redux", "--source", str(SAMPLE),
                                            "--renderer", "no-ocr", "--out", "p1"]),
            ("renderer that exits at import", ["render", "mmlu-redux", "--source",
                                               str(SAMPLE), "--renderer", "exits", "--out",
                                               "p2"]),
            ("corpus of dicts", ["render", "dicts", "--out", "p3"]),
            ("corpus whose load raises", ["render", "raises", "--out", "p4"]),
            ("corpus that raises part way", ["render", "lazy-raises", "--out", "p5"]),
            ("corpus that interrupts at import", ["render", "interrupts", "--out", "p6"]),
            ("transform giving None", ["transform", str(demo), "--apply", "gives-none:1",
                                       "--out", "p7"]),
            ("transform giving a string", ["transform", str(demo), "--apply", "gives-text:1",
                                           "--out", "p8"]),
            ("sweep over a transform giving None", ["sweep", str(demo), "--vary",
                                                    "gives-none:1,2", "--out", "p9"]),
            ("exporter that raises", ["export", str(demo), "--format", "raises", "--out",
                                      "p10"]),
            ("exporter that says many", ["export", str(demo), "--format", "many", "--out",
                                         "p11"])):
        cases.append(Case("plugin", name, [*args, "--no-progress"] if args[0] == "render"
                          else args, "error", env=env))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only",
                        default="document,style,tokenizer,haystack,eval,plugin,truth")
    args = parser.parse_args()
    groups = set(args.only.split(","))
    listener = Listener()
    tally: Counter = Counter()
    servers: list = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mmconvert-attack-") as tmp:
        work = Path(tmp)
        data = work / "data"
        data.mkdir()
        demo = work / "demo"
        subprocess.run([sys.executable, "-m", "mmconvert", "render", "mmlu-redux", "--source",
                        str(SAMPLE), "--limit", "3", "--out", str(demo), "--no-progress"],
                       check=True, capture_output=True, cwd=work,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        cases: list[Case] = []
        if "document" in groups:
            cases += document_cases(listener, data)
        if "style" in groups:
            cases += style_cases(data)
        if "tokenizer" in groups:
            cases += tokenizer_cases(data, demo)
        if "haystack" in groups:
            cases += haystack_cases(data)
        if "eval" in groups:
            made, servers = eval_cases(data, demo, listener)
            cases += made
        if "plugin" in groups:
            cases += plugin_cases(data, demo)
        if "truth" in groups:
            made, more = truth_cases(data, listener)
            cases += made
            servers += more
        for case in cases:
            before = len(listener.hits)
            run_case(case, tally, work)
            if len(listener.hits) > before:
                print(f"SOCKET {case.group}/{case.name}: {len(listener.hits) - before} "
                      "connection(s) to the listener", file=sys.stderr)
        for server in servers:
            server.stop()
    time.sleep(0.5)
    listener.stop.set()
    print(f"attack: {tally['cases']} cases in {time.perf_counter() - started:.0f} s")
    for group in ("document", "style", "tokenizer", "haystack", "eval", "plugin", "truth"):
        if tally[f"{group} cases"]:
            print(f"  {group:<10} {tally[f'{group} cases']} cases")
    for name in ("as expected", "ran", "one-line error", "unexpected error", "traceback",
                 "hang", "silent wrong"):
        print(f"  {name:<17} {tally[name]}")
    print(f"  sockets opened    {len(listener.hits)} (connections the listener on "
          f"127.0.0.1:{listener.port} saw)")
    bad = tally["traceback"] + tally["hang"] + tally["silent wrong"] + \
        tally["unexpected error"] + len(listener.hits)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
