"""The document renderer with hostile or odd input: math in every position (typeset, or
recorded and flagged), no connection for any markup (a real listener on 127.0.0.1 counts
them), an embedding element an error of its item only, nesting past what the parsers build
refused, control characters refused, and a --css file checked when the options are read."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from mmconvert.manifest import JsonlLog
from mmconvert.renderers.document import DocumentOptions
from mmconvert.renderers.document.browser import has_chromium
from mmconvert.renderers.document.markup import RenderState, markdown_html
from tests.test_cli import run

if not has_chromium():
    if os.environ.get("CI"):
        raise RuntimeError("the document renderer tests need Debian's chromium-headless-shell "
                           "(scripts/install-debian.sh)")
    pytest.skip("chromium is missing", allow_module_level=True)

DELIMITERS = {"$": ("$", "$"), "$$": ("$$", "$$"), "\\(": ("\\(", "\\)"),
              "\\[": ("\\[", "\\]")}
POSITIONS = {
    "mid-paragraph": "Before {m} after.",
    "paragraph start": "{m} then words.",
    "own block": "Words.\n\n{m}\n\nMore.",
    "list item": "- first {m} tail\n- second",
    "ordered item": "1. {m}",
    "table cell": "| a | b |\n|---|---|\n| {m} | x |",
    "quote": "> quoted {m} here",
    "heading": "## Heading {m}",
    "over lines": "Before {open}\nx^2 \\cdot\ny{close} after.",
}


@pytest.mark.parametrize("position", sorted(POSITIONS))
@pytest.mark.parametrize("delimiter", sorted(DELIMITERS))
def test_every_math_delimiter_is_typeset_in_every_position(delimiter, position):
    opening, closing = DELIMITERS[delimiter]
    if position == "over lines" and opening == "$":
        pytest.skip("$…$ is one line's (dollarmath's rule); a newline ends it")
    text = POSITIONS[position].format(m=f"{opening}x^2 + y{closing}", open=opening,
                                      close=closing)
    state = RenderState(DocumentOptions(), None)
    html = markdown_html(text, state)
    assert "<math" in html and state.math_errors == [], html
    from mmconvert.renderers.document.text import visible_text

    shown = visible_text(html)
    assert "\\" not in shown and "$" not in shown and "x^2" not in shown, shown


def test_latex_the_converter_does_not_know_is_recorded_and_drawn_as_its_source():
    state = RenderState(DocumentOptions(), None)
    html = markdown_html("a \\[ \\notacommand{x} \\] b $\\alpha$", state)
    assert state.math_errors == [{"latex": " \\notacommand{x} ",
                                  "error": "unknown command \\notacommand"}]
    assert "\\notacommand{x}" in html and "math-error" in html and "&#x003B1;" in html


@pytest.fixture()
def listener():
    """A TCP listener on 127.0.0.1 that counts the connections made to it."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    accepted: list = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, address = server.accept()
            except OSError:
                continue
            accepted.append(address)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}", accepted
    stop.set()
    thread.join(timeout=2)
    server.close()


def loading_markup(at: str) -> dict[str, str]:
    """Every element and attribute that can load or navigate, at the listener."""
    url = f"http://{at}/x"
    return {
        "iframe": f'<iframe src="{url}"></iframe>',
        "iframe-srcdoc": f'<iframe srcdoc="&lt;img src={url}&gt;"></iframe>',
        "object": f'<object data="{url}"></object>',
        "embed": f'<embed src="{url}">',
        "meta-refresh": f'<meta http-equiv="refresh" content="0;url={url}">',
        "base": f'<base href="{url}/"><img src="y.png">',
        "frameset": f'<frameset><frame src="{url}"></frameset>',
        "img": f'<img src="{url}">',
        "img-srcset": f'<img srcset="{url} 2x">',
        "link-css": f'<link rel="stylesheet" href="{url}">',
        "link-preconnect": f'<link rel="preconnect" href="{url}"><link rel="prefetch" '
                           f'href="{url}">',
        "video": f'<video src="{url}" poster="{url}"></video>',
        "audio-source": f'<audio><source src="{url}"></audio>',
        "track": f'<video><track src="{url}"></video>',
        "svg-image": f'<svg><image href="{url}"/></svg>',
        "svg-use": f'<svg><use href="{url}#a"/></svg>',
        "style-attr": f'<div style="background:url({url})">x</div>',
        "style-import": f"<style>@import url({url});</style>",
        "font-face": f"<style>@font-face {{font-family:z; src:url({url})}} p{{font-family:z}}"
                     "</style><p>x</p>",
        "input-image": f'<input type="image" src="{url}">',
        "picture": f'<picture><source srcset="{url}"><img src="a.png"></picture>',
        "form": f'<form action="{url}"><button formaction="{url}">go</button></form>',
        "a-ping": f'<a href="{url}" ping="{url}">link</a>',
        "table-background": f'<table background="{url}"><tr><td>x</td></tr></table>',
        "script": f'<script src="{url}"></script>',
        "markdown-image": f"![alt]({url})",
        "markdown-link": f"[text]({url})",
    }


EMBEDDING = {"iframe", "iframe-srcdoc", "object", "embed", "meta-refresh", "base", "frameset"}


def test_no_markup_opens_a_connection_and_an_embedding_element_fails_its_item_only(
        listener, tmp_path):
    at, accepted = listener
    markup = loading_markup(at)
    rows = [{"id": name, "question": "q", "answer": "x", "context": f"Before. {html} After."}
            for name, html in markup.items()]
    rows.append({"id": "plain", "question": "q", "answer": "x", "context": "Plain *text*."})
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for markup_kind in ("markdown", "html"):
        out = tmp_path / markup_kind
        result = run("render", source, "--renderer", "document", "--markup", markup_kind,
                     "--render", "context", "--on-error", "skip", "--out", out)
        assert result.exit_code == 0, result.output
        made = {row["id"] for row in JsonlLog(out / "manifest.jsonl").read()}
        skipped = {s["id"]: s["reason"] for s in JsonlLog(out / "skipped.jsonl").read()}
        assert set(skipped) == EMBEDDING, (markup_kind, skipped)
        assert made == set(markup) - EMBEDDING | {"plain"}
        assert all("loads another document or moves the page" in reason
                   and "\n" not in reason for reason in skipped.values())
    # a --css file can hold no tags: '</style><iframe …>' is refused when the options are read
    css = tmp_path / "evil.css"
    css.write_text(f'p {{ color: red }} </style><iframe src="http://{at}/css"></iframe>')
    result = run("render", source, "--renderer", "document", "--css", css, "--out",
                 tmp_path / "css")
    assert result.exit_code == 2 and "holds '</style'" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert accepted == [], f"{len(accepted)} connection(s) reached the listener"


def test_without_the_embedding_check_the_browser_still_opens_no_connection(
        listener, monkeypatch):
    """The browser's own network is closed too: every host name resolves to nothing, a
    numeric address as well (defence in depth beneath the element check)."""
    from mmconvert.items import Item
    from mmconvert.renderers import document
    from mmconvert.renderers.document import markup

    at, accepted = listener
    monkeypatch.setattr(markup, "embedding", lambda body: None)
    renderer = document.DocumentRenderer(DocumentOptions(markup="html"))
    for name, html in loading_markup(at).items():
        if name == "meta-refresh":
            continue
        item = Item(id=name.replace("_", "-"), corpus="c", subset="s", split="t",
                    context=f"<p>{name}</p>{html}")
        renderer.typeset(item, "context")
    assert accepted == []


def test_a_document_that_would_move_the_page_leaves_it_where_it_is(monkeypatch):
    """A meta refresh past the element check (as an element not yet known would be): the
    navigation is answered "no content", so the page stays, the URL is recorded as refused,
    and the next item is drawn on the same page."""
    from mmconvert.items import Item
    from mmconvert.renderers import document
    from mmconvert.renderers.document import markup

    monkeypatch.setattr(markup, "embedding", lambda body: None)
    renderer = document.DocumentRenderer(DocumentOptions(markup="html"))
    moving = Item(id="moving", corpus="c", subset="s", split="t",
                  context='<meta http-equiv="refresh" content="0;url=https://elsewhere.test/">'
                          "<p>x</p>")
    drawn = renderer.pages(moving, "context")
    assert drawn.pages and "https://elsewhere.test/" in drawn.refused
    after = renderer.pages(Item(id="after", corpus="c", subset="s", split="t",
                               context="Drawn *after*."), "context")
    assert after.pages and after.refused == []


@pytest.mark.slow
def test_nesting_past_what_the_parsers_build_and_control_characters_are_item_errors(
        tmp_path):
    rows = [
        {"id": "quotes", "question": "q", "context": ">" * 10000 + " deep"},
        {"id": "list", "question": "q", "context": "\n".join(
            "  " * i + f"- item{i}" for i in range(3000))},
        {"id": "fine-list", "question": "q", "context": "\n".join(
            "  " * i + f"- item{i}" for i in range(30))},
        {"id": "nul", "question": "q", "context": "a\x00b"},
        {"id": "turn-nul", "question": "q", "context": [{"role": "user", "content": "x\x07"}]},
    ]
    source = tmp_path / "deep.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "deep"
    result = run("render", source, "--renderer", "document", "--render", "context",
                 "--on-error", "skip", "--out", out)
    assert result.exit_code == 0, result.output
    skipped = {s["id"]: s["reason"] for s in JsonlLog(out / "skipped.jsonl").read()}
    assert set(skipped) == {"quotes", "list", "nul", "turn-nul"}
    assert "nests 100 or more levels deep" in skipped["quotes"] == skipped["quotes"]
    assert "nests 100 or more levels deep" in skipped["list"]
    assert "control character U+0000" in skipped["nul"]
    assert "control character U+0007" in skipped["turn-nul"]
    (row,) = JsonlLog(out / "manifest.jsonl").read()
    assert row["id"] == "fine-list"
    # raw HTML nested past Chromium's 512 levels (it would set the rest beside their parents)
    html = tmp_path / "divs.jsonl"
    html.write_text("".join(json.dumps({"id": f"d{n}", "question": "q", "context":
                                        "<div>" * n + "x" + "</div>" * n}) + "\n"
                            for n in (400, 3000)), encoding="utf-8")
    result = run("render", html, "--renderer", "document", "--markup", "html", "--render",
                 "context", "--on-error", "skip", "--out", tmp_path / "divs")
    assert result.exit_code == 0
    (skip,) = JsonlLog(tmp_path / "divs" / "skipped.jsonl").read()
    assert skip["id"] == "d3000" and "Chromium nests at most 512" in skip["reason"]


def test_a_css_file_is_checked_when_the_options_are_read(tmp_path):
    source = tmp_path / "a.jsonl"
    source.write_text(json.dumps({"id": "a", "question": "q", "context": "x"}) + "\n")
    big = tmp_path / "big.css"
    with open(big, "wb") as handle:  # sparse: 2 GB on paper, nothing read
        handle.truncate(2 << 30)
    bad = tmp_path / "bad.css"
    bad.write_bytes(b"p { color: \xff }")
    loop = tmp_path / "loop.css"
    os.symlink(loop, loop)
    for css, said in ((big, "over the 1,048,576 a --css file may hold"),
                      (bad, "not UTF-8 text (byte 11)"),
                      (loop, "cannot read this CSS file"),
                      (tmp_path, "not a regular file")):
        result = run("render", source, "--renderer", "document", "--css", css, "--out",
                     tmp_path / "out")
        assert result.exit_code == 2, result.output
        assert said in result.output and len(result.output.strip().splitlines()) == 1


def test_a_killed_chromium_is_its_items_error_and_the_next_item_gets_a_new_one():
    import signal

    from mmconvert.errors import ItemError
    from mmconvert.items import Item
    from mmconvert.renderers.document import DocumentRenderer
    from mmconvert.renderers.document.browser import Browser

    renderer = DocumentRenderer(DocumentOptions())
    first = Item(id="first", corpus="c", subset="s", split="t", context="One.")
    renderer.pages(first, "context")
    browser = Browser.get()
    pids = _chromium_pids()
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(ItemError) as err:
        renderer.pages(Item(id="second", corpus="c", subset="s", split="t", context="Two."),
                      "context")
    assert "\n" not in str(err.value) and len(str(err.value)) < 400
    third = renderer.pages(Item(id="third", corpus="c", subset="s", split="t",
                               context="Three."), "context")
    assert third.pages and Browser.get() is browser


def _chromium_pids() -> list[int]:
    """The Chromium processes under this one."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        parent = int(next(line.split()[1] for line in status.splitlines()
                          if line.startswith("PPid:")))
        if "chrom" in Path(command).name and _descends(parent):
            found.append(int(entry.name))
    return found


def _descends(pid: int) -> bool:
    while pid > 1:
        if pid == os.getpid():
            return True
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        pid = int(next(line.split()[1] for line in status.splitlines()
                       if line.startswith("PPid:")))
    return False
