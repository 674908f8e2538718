"""The document renderer in real headless Chromium (Debian's, through Playwright): Markdown
with tables, code, math and dialogues typeset, every character in the PDF's text layer,
byte-identical runs, PPI sweeps from the stored PDF, and nothing loaded from outside."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from PIL import Image

from mmconvert.manifest import JsonlLog
from mmconvert.renderers.document.browser import browser_name, has_chromium
from mmconvert.rows import Row
from tests.test_cli import run
from tests.typed import typed_rows

if not has_chromium():
    if os.environ.get("CI"):
        raise RuntimeError("the document renderer tests need Debian's chromium-headless-shell "
                           "(scripts/install-debian.sh)")
    pytest.skip("chromium is missing", allow_module_level=True)

# documents of our own: a table with alignment and a struck word, lists, a task list, a
# quote with a link, a footnote; code with colours, inline and display math, \( \), LaTeX
# that does not parse; a dialogue of chat turns
DOCUMENTS = [
    {"id": "table", "question": "Which model scores best?", "options": ["Qwen2.5-VL", "GLM-4.1V"],
     "answer": "A", "context": (
         "## Results\n\n| model | score | note |\n|:--|--:|:-:|\n| Qwen2.5-VL | 71.2 | **best** |\n"
         "| GLM-4.1V | 68.0 | ~~old~~ |\n\nA list:\n\n1. first\n2. second with `inline code`\n\n"
         "- [x] done\n- [ ] todo\n\n> a quote with a [link](https://example.com)\n\n"
         "Footnote here[^1].\n\n[^1]: The note.")},
    {"id": "code", "question": "What is the loss?", "answer": "squared error", "context": (
        "```python\ndef loss(x, y):\n    return (x - y) ** 2  # squared\n```\n\n"
        "Inline math $\\mathcal{L} = \\frac{1}{n}\\sum_i (x_i - y_i)^2$ and display:\n\n"
        "$$\\int_0^1 x^2\\,dx = \\frac{1}{3}$$\n\n$$\\sum_{i=1}^{n} \\sqrt{x_i^2 + y_i^2}$$\n\n"
        "Also \\(a^2 + b^2 = c^2\\). "
        "Broken: $\\frac{1}{$ end.")},
    {"id": "chat", "question": "When did Caroline go?", "answer": "yesterday", "context": [
        {"role": "Caroline", "content": "I went to the **support group** yesterday."},
        {"role": "Melanie", "content": "That sounds great! What happened?"},
        {"role": "Caroline", "content": "We talked about $x^2$ and `code`."}]},
]


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    source = folder / "items.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    return source


@pytest.fixture(scope="module")
def drawn(docs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("drawn") / "run"
    result = run("render", docs, "--renderer", "document", "--render", "context", "--out", out)
    assert result.exit_code == 0, result.output
    return out


def rows(folder: Path) -> list[Row]:
    return typed_rows(folder)


def pdf_text(path: Path) -> str:
    import pymupdf

    with pymupdf.open(path) as doc:
        return "".join(page.get_text() for page in doc)


def test_markdown_is_typeset_and_every_character_is_in_the_text_layer(drawn):
    found = {row["id"]: row for row in rows(drawn)}
    assert set(found) == {"table", "code", "chat"}
    # typeset, never left as source: no pipes, backticks, dollar signs or asterisks (the
    # code's own ** aside)
    for row in found.values():
        text = pdf_text(drawn / row["pdf"]).replace("** 2", "")
        assert not set("|`*$") & set(text), (row["id"], text)
    table = pdf_text(drawn / found["table"]["pdf"])
    assert "Qwen2.5-VL" in table and "71.2" in table and "[1]" in table and "link" in table
    code = pdf_text(drawn / found["code"]["pdf"])
    assert "def loss(x, y):" in code and "ℒ" in code and "∫" in code
    # LaTeX that does not parse: drawn as its source, and recorded
    assert found["code"]["math_errors"] == [{"latex": "\\frac{1}{",
                                             "error": "NoAvailableTokensError"}]
    assert "\\frac{1}{" in code
    chat = pdf_text(drawn / found["chat"]["pdf"])
    assert chat.index("Caroline") < chat.index("Melanie") < chat.rindex("Caroline")
    assert found["chat"]["context"].startswith("Caroline: I went to the **support group**")
    assert found["chat"]["metadata"]["turns"][1]["role"] == "Melanie"
    # qa check: every character of the visible text is in the text layer, in order, with a
    # real glyph, inside the margins; OCR reads the pages; the formula drawn as its source is
    # a rejection
    assert run("qa", "check", drawn).exit_code == 0
    events = JsonlLog(drawn / "qa.jsonl").read()
    layer = {e["id"]: e for e in events if e["source"] == "auto:text_layer"}
    assert {i: e["verdict"] for i, e in layer.items()} == {
        **dict.fromkeys(found, "accept"), "code": "reject"}
    assert layer["code"]["reason"] == "math_untypeset"
    assert layer["code"]["detail"]["math_errors"] == found["code"]["math_errors"]
    assert all(e["detail"]["pdf"] == "stored" and e["detail"]["chars"] > 50
               for e in layer.values())
    # OCR is asked for the text without formulas and tables, which Tesseract does not read
    from mmconvert.renderers.document import DocumentRenderer

    for_ocr = DocumentRenderer.ocr_text(found["code"])
    assert "def loss(x, y):" in for_ocr and "Also" in for_ocr and "ℒ" not in for_ocr
    assert "ℒ" in DocumentRenderer.expected_text(found["code"])
    assert "Qwen2.5-VL" not in DocumentRenderer.ocr_text(found["table"])
    assert "A list:" in DocumentRenderer.ocr_text(found["table"])
    ocr = {e["id"]: e["verdict"] for e in events if e["source"] == "auto:ocr"}
    assert ocr["table"] == ocr["chat"] == "accept"
    info = json.loads((drawn / "run.json").read_text())
    # the build that drew (Debian's headless shell, where install-debian.sh put it)
    assert info["browser"]["name"] == browser_name() and info["browser"]["version"]
    assert {f["name"] for f in info["fonts"]} >= {"Noto Sans", "Fira Mono", "Noto Sans Math"}


@pytest.mark.slow
def test_the_same_input_gives_the_same_bytes_and_a_sweep_redraws_the_stored_pdf(
        docs, drawn, tmp_path, monkeypatch):
    again = tmp_path / "again"
    assert run("render", docs, "--renderer", "document", "--render", "context",
               "--out", again).exit_code == 0
    for name in ("manifest.jsonl",):
        assert (again / name).read_bytes() == (drawn / name).read_bytes()
    for row in rows(drawn):
        assert (again / row["pdf"]).read_bytes() == (drawn / row["pdf"]).read_bytes()
    # two worker processes, each with its own browser, make the same bytes
    workers = tmp_path / "workers"
    scratch = tmp_path / "scratch"  # the workers' temporary folders: none is left behind
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert run("render", docs, "--renderer", "document", "--render", "context", "--workers",
               "2", "--out", workers).exit_code == 0
    assert sorted(p.name for p in scratch.iterdir()) == []
    assert (workers / "manifest.jsonl").read_bytes() == (drawn / "manifest.jsonl").read_bytes()
    sweep = tmp_path / "sweep"
    assert run("sweep", drawn, "--ppi", "150", "--out", sweep).exit_code == 0
    direct = tmp_path / "direct"
    assert run("render", docs, "--renderer", "document", "--render", "context", "--ppi", "150",
               "--out", direct).exit_code == 0
    swept = {r["id"]: [i["sha256"] for i in r["images"]] for r in rows(sweep / "ppi-150")}
    assert swept == {r["id"]: [i["sha256"] for i in r["images"]] for r in rows(direct)}
    width = rows(direct)[0]["images"][0]["width"]
    assert width == round(8.27 * 150)  # A4 at 150 PPI


def test_html_scripts_urls_and_paths_outside_the_item_folder_are_not_loaded(tmp_path):
    folder = tmp_path / "items"
    folder.mkdir()
    png = io.BytesIO()
    Image.new("L", (40, 20), 0).save(png, "PNG")
    (folder / "figure.png").write_bytes(png.getvalue())
    (tmp_path / "outside.png").write_bytes(png.getvalue())
    html_item = {"id": "page", "question": "q", "answer": "x", "context": (
        "<h3>HTML item</h3><p>Visible <b>text</b>.</p>"
        "<script>document.body.innerHTML = 'replaced'</script>"
        "<img src=\"https://example.com/x.png\"><img src=\"../outside.png\">"
        "<link rel=\"stylesheet\" href=\"file:///etc/hosts\"><p>end</p>")}
    markdown_item = {"id": "md", "question": "q", "answer": "x", "context": (
        "A figure: ![inside](figure.png) and ![outside](../outside.png) and "
        "![remote](https://example.com/y.png).")}
    (folder / "html.jsonl").write_text(json.dumps(html_item) + "\n")
    (folder / "md.jsonl").write_text(json.dumps(markdown_item) + "\n")
    out = tmp_path / "html"
    assert run("render", folder / "html.jsonl", "--renderer", "document", "--markup", "html",
               "--render", "context", "--out", out).exit_code == 0
    (row,) = rows(out)
    assert "replaced" not in pdf_text(out / row["pdf"])  # JavaScript is off
    assert "Visible text" in pdf_text(out / row["pdf"])
    assert {"script", "https://example.com/x.png", "../outside.png",
            "file:///etc/hosts"} <= set(row["refused"])
    md = tmp_path / "md"
    assert run("render", folder / "md.jsonl", "--renderer", "document", "--render", "context",
               "--out", md).exit_code == 0
    (row,) = rows(md)
    assert row["refused"] == ["image ../outside.png", "image https://example.com/y.png"]
    text = pdf_text(md / row["pdf"])
    assert "[outside]" in text and "[remote]" in text and "[inside]" not in text
    import pymupdf

    with pymupdf.open(md / row["pdf"]) as doc:
        assert doc[0].get_images()  # the image from the item's own folder is drawn
    # the text the page shows: the refused images' alternative text, not the drawn one's
    assert run("qa", "check", md, "--checks", "text_layer").exit_code == 0
    (event,) = JsonlLog(md / "qa.jsonl").read()
    assert event["verdict"] == "accept", event


def test_an_image_that_does_not_decode_is_refused_and_shows_its_text(tmp_path):
    """It was drawn as the browser's broken-image icon, and the row's refused was empty."""
    folder = tmp_path / "items"
    folder.mkdir()
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image at all")
    (folder / "cut.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 20)
    png = io.BytesIO()
    Image.new("L", (40, 20), 0).save(png, "PNG")
    (folder / "named.jpg").write_bytes(png.getvalue())  # a PNG under another name: drawn
    item = {"id": "md", "question": "q", "answer": "x", "context":
            "![broken](broken.png) ![cut](cut.jpg) ![good](named.jpg)"}
    (folder / "md.jsonl").write_text(json.dumps(item) + "\n")
    out = tmp_path / "out"
    assert run("render", folder / "md.jsonl", "--renderer", "document", "--render",
               "context", "--out", out).exit_code == 0
    (row,) = rows(out)
    assert row["refused"] == ["image broken.png", "image cut.jpg"]
    text = pdf_text(out / row["pdf"])
    assert "[broken]" in text and "[cut]" in text and "[good]" not in text


def test_a_css_file_and_columns_change_the_look(docs, drawn, tmp_path):
    css = tmp_path / "red.css"
    css.write_text("body { color: #c00000; }")
    out = tmp_path / "css"
    assert run("render", docs, "--renderer", "document", "--render", "context", "--css", css,
               "--color", "rgb", "--columns", "2", "--limit", "1", "--out", out).exit_code == 0
    (row,) = rows(out)
    with Image.open(out / row["images"][0]["path"]) as image:
        import numpy as np

        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
        reds = int(((pixels[:, 0] > 150) & (pixels[:, 1] < 80)).sum())
    assert reds > 100
    assert row["renderer"]["params"]["columns"] == 2
    assert row["renderer"]["params"]["css"] == str(css.resolve())


def text_layer_verdicts(out: Path) -> dict[str, str]:
    assert run("qa", "check", out, "--checks", "text_layer").exit_code == 0
    return {e["id"]: e["verdict"] for e in JsonlLog(out / "qa.jsonl").read()
            if e["source"] == "auto:text_layer"}


def test_a_style_file_draws_documents_and_names_the_fields_it_leaves_out(docs, tmp_path):
    # a preset: the fields the document draws are taken, the page renderer's line layout is
    # named once before the run and recorded
    out = tmp_path / "glyph"
    result = run("render", docs, "--renderer", "document", "--render", "context", "--style",
                 "glyph", "--out", out)
    assert result.exit_code == 0, result.output
    note = ("style glyph: the document renderer does not draw line_fit, newlines, "
            "space_shrink; left out")
    assert result.output.count(note) == 1
    info = json.loads((out / "run.json").read_text())
    assert info["notes"] == [note]
    assert info["config"]["style"]["left_out"] == ["line_fit", "newlines", "space_shrink"]
    document = info["config"]["document"]
    assert (document["ppi"], document["font_size"], document["line_pitch"],
            document["crop"], document["crop_pad"]) == (72, 9, 10, "content", 10)
    for row in rows(out):
        (image,) = row["images"]
        assert image["width"] < 595 and image["height"] < 842  # cut to the text, at 72 PPI
    # the code item's formula that does not parse rejects it (drawn as its source)
    assert text_layer_verdicts(out) == {"table": "accept", "code": "reject", "chat": "accept"}
    # a style drawn per item: each row holds its own draw, the same on a second run
    wild = tmp_path / "wild"
    assert run("render", docs, "--renderer", "document", "--render", "context", "--style",
               "wild", "--seed", "3", "--out", wild).exit_code == 0
    drawn = [(*r["renderer"]["params"]["font"], r["renderer"]["params"]["font_size"])
             for r in rows(wild)]
    assert len(set(drawn)) == 3
    assert {f["name"] for f in json.loads((wild / "run.json").read_text())["fonts"]} >= {
        "Comic Neue", "Liberation Serif"}
    again = tmp_path / "wild-again"
    assert run("render", docs, "--renderer", "document", "--render", "context", "--style",
               "wild", "--seed", "3", "--out", again).exit_code == 0
    assert (again / "manifest.jsonl").read_bytes() == (wild / "manifest.jsonl").read_bytes()
    assert text_layer_verdicts(wild) == {"table": "accept", "code": "reject", "chat": "accept"}


@pytest.mark.slow
def test_a_vision_budget_sets_each_documents_type_size(docs, tmp_path, monkeypatch):
    import mmconvert.renderers.document as document
    from mmconvert.vision_tokens import image_tokens, token_rule

    # the search's typesettings share the item's body, and only the drawn one is written
    bodies: list[str] = []
    writes: list[int] = []
    make_body, write = document.fields_html, document.written
    monkeypatch.setattr(document, "fields_html",
                        lambda item, *a: bodies.append(item.id) or make_body(item, *a))
    monkeypatch.setattr(document, "written", lambda doc: writes.append(1) or write(doc))
    out = tmp_path / "budget"
    result = run("render", docs, "--renderer", "document", "--render", "context",
                 "--vision-budget", "400", "--ratio-model", "qwen2.5-vl", "--crop", "content",
                 "--out", out)
    assert result.exit_code == 0, result.output
    assert len(writes) == 3
    sizes = set()
    for row in rows(out):
        target = row["target"]
        # met exactly in 1 typesetting: the size and width the search found on pages laid
        # out and not printed (the search before took 2, then 3, and before it 4 to 6); the
        # body made when printed ahead and again when searched, not at each size
        assert target["exact"] and target["layouts"] == 1 and target["estimated"] >= 2, target
        assert bodies.count(row["id"]) <= 2, (target, bodies)
        # the tokens the search counted are the drawn pages' own
        assert image_tokens(token_rule("qwen2.5-vl"), row["images"]) == \
            target["vision_tokens"]
        assert row["renderer"]["params"]["font_size"] == target["font_size"]
        sizes.add(target["font_size"])
    assert len(sizes) == 3  # each item its own size
    assert json.loads((out / "run.json").read_text())["target"] == {
        "items": 3, "within": 3, "tolerance": 0.05}
    # the code item's formula that does not parse rejects it (drawn as its source)
    assert text_layer_verdicts(out) == {"table": "accept", "code": "reject", "chat": "accept"}
    # whole pages take the same tokens at any size: the rows say why they are off target
    whole = tmp_path / "whole"
    result = run("render", docs, "--renderer", "document", "--render", "context",
                 "--vision-budget", "400", "--ratio-model", "qwen2.5-vl", "--limit", "1",
                 "--out", whole)
    assert result.exit_code == 0 and "1 of 1 item(s) are off target" in result.output
    (row,) = rows(whole)
    assert not row["target"]["within"] and "in steps" in row["target"]["reason"]


def test_a_budget_draws_a_plain_renders_pages_and_searches_printed_pages_where_estimates_fail(
        docs, tmp_path, monkeypatch):
    """A target's search on pages laid out, not printed, keeps a size only where its printed
    pages give the count estimated: its pages are those a plain render at its size and width
    prints (a layout leaves nothing behind in the browser). Where the estimates are wrong,
    the printed page says so: the search runs again on estimates moved by that page's own
    offsets, and where those are wrong too, on printed pages, which meet the budget as
    before. The first layout of each item after the first in a group is made while the item
    before it is drawn, and taken by its search: no layout is made twice or left unused."""
    from mmconvert.renderers.document import DocumentRenderer
    from mmconvert.renderers.document.browser import Browser

    def pages(folder: Path) -> dict[str, list[str]]:
        return {row["id"]: [image["sha256"] for image in row["images"]] for row in rows(folder)}

    measure, lay_out, made, taken = Browser.measure, Browser._lay_out, [], []

    def measured(self, document, files, across):
        taken.append((document, tuple(files), across) in self._laid_ahead)
        return measure(self, document, files, across)

    def laid_out(self, *args):
        made.append(args)
        return lay_out(self, *args)

    budget = ("--vision-budget", "400", "--ratio-model", "qwen2.5-vl", "--crop", "content")
    out, workers = tmp_path / "budget", tmp_path / "workers"
    with monkeypatch.context() as counting:
        counting.setattr(Browser, "measure", measured)
        counting.setattr(Browser, "_lay_out", laid_out)
        assert run("render", docs, "--renderer", "document", "--render", "context", *budget,
                   "--out", out).exit_code == 0
    assert any(taken) and len(made) == len(taken) == sum(
        row["target"]["estimated"] for row in rows(out))
    assert run("render", docs, "--renderer", "document", "--render", "context", *budget,
               "--workers", "2", "--out", workers).exit_code == 0
    assert (workers / "manifest.jsonl").read_bytes() == (out / "manifest.jsonl").read_bytes()
    for row in rows(out):
        target, source = row["target"], tmp_path / f"{row['id']}.jsonl"
        source.write_text("".join(line + "\n" for line in docs.read_text().splitlines()
                                  if json.loads(line)["id"] == row["id"]))
        plain = tmp_path / f"plain-{row['id']}"
        assert run("render", source, "--renderer", "document", "--render", "context",
                   "--crop", "content", "--font-size", target["font_size"], "--page-width",
                   target["page_width"], "--out", plain).exit_code == 0
        assert pages(plain) == {row["id"]: pages(out)[row["id"]]}
    edges = DocumentRenderer.page_edges

    def low_edges(low):
        def wrong(self, item, part):
            found = edges(self, item, part)
            return None if found is None else (found[0], found[1] + low(self, item))
        return wrong

    # every layout's lower edge 5 em low: the first print differs from its estimate, and
    # gives the item's own offsets, on which the search meets the budget at its second
    monkeypatch.setattr(DocumentRenderer, "page_edges",
                        low_edges(lambda self, item: 5 * self.options.font_size))
    low = tmp_path / "low"
    assert run("render", docs, "--renderer", "document", "--render", "context", *budget,
               "--out", low).exit_code == 0
    for row in rows(low):
        assert row["target"]["exact"] and row["target"]["layouts"] == 2, row["target"]
    # each layout 60 pt lower than the one before: no offsets hold, and the search runs on
    # printed pages
    calls: list[str] = []
    monkeypatch.setattr(DocumentRenderer, "page_edges",
                        low_edges(lambda self, item: 60 * (calls.append(item.id) or
                                                           calls.count(item.id))))
    wrong = tmp_path / "wrong"
    assert run("render", docs, "--renderer", "document", "--render", "context", *budget,
               "--out", wrong).exit_code == 0
    for row in rows(wrong):
        target = row["target"]
        # the layouts made on the way are recorded with the typesettings
        assert target["exact"] and target["layouts"] >= 3 and target["estimated"] >= 2, target
    # two columns are laid out only in print: no estimate, no layout made, none recorded
    columns = tmp_path / "columns"
    assert run("render", docs, "--renderer", "document", "--render", "context", *budget,
               "--columns", "2", "--out", columns).exit_code == 0
    assert all("estimated" not in row["target"] for row in rows(columns))


def test_a_budget_out_of_reach_is_said_from_one_print_as_the_print_search_says_it(
        docs, tmp_path, monkeypatch):
    """A budget no size can meet (every page takes more at the smallest size) is found out
    of reach on estimates and kept once the print at the size found gives the count
    estimated: one or two typesettings, not the whole search on printed pages (which took
    16 an item on short items), and the same verdict as that search gives."""
    from mmconvert.renderers.document import DocumentRenderer

    budget = ("--vision-budget", "40", "--ratio-model", "qwen2.5-vl", "--crop", "content")
    out, printed = tmp_path / "out", tmp_path / "printed"
    assert run("render", docs, "--renderer", "document", "--render", "context", *budget,
               "--out", out).exit_code == 0
    monkeypatch.setattr(DocumentRenderer, "page_edges", lambda self, item, part: None)
    assert run("render", docs, "--renderer", "document", "--render", "context", *budget,
               "--out", printed).exit_code == 0
    searched = {row["id"]: row["target"] for row in rows(printed)}
    for row in rows(out):
        target, alone = row["target"], searched[row["id"]]
        assert target["layouts"] <= 2 < alone["layouts"], (target, alone)
        assert not target["within"] and not alone["within"]
        assert target["reason"].startswith("even at the smallest size, 4 pt")
        assert alone["reason"].startswith("even at the smallest size, 4 pt")
        assert target["vision_tokens"] <= alone["vision_tokens"]


def test_renderers_sharing_bodies_take_only_a_body_made_for_their_own_item_and_options():
    """A job's renderers share the last items' bodies (``Bodies``): a body is taken again only
    for the same item, part and options that make it; anything else makes its own."""
    from mmconvert.items import Item
    from mmconvert.renderers.document import Bodies, DocumentOptions, DocumentRenderer

    def item(text: str) -> Item:
        return Item(id="same-id", corpus="t", subset="t", split="test", question="q?",
                    answer="a", context=text)

    code = item("```python\nx = 1  # one\n```")
    shared = Bodies()
    first = DocumentRenderer(DocumentOptions(), bodies=shared).page(code, "context")[0]
    # the size and the width do not make the body
    wider = DocumentOptions(font_size=20, page_width=9.5)
    assert DocumentRenderer(wider, bodies=shared).page(code, "context")[0] is first
    for options, asked, part in [
            ({}, item("other text"), "context"),  # another item of the same id
            ({}, code, "options"),  # another part of the item
            ({"code_style": "monokai"}, code, "context"),  # another colouring of its code
            ({"markup": "html"}, code, "context")]:  # its text read as HTML
        shared = Bodies()
        first = DocumentRenderer(DocumentOptions(), bodies=shared).page(code, "context")[0]
        body = DocumentRenderer(DocumentOptions(**options), bodies=shared).page(asked, part)[0]
        alone = DocumentRenderer(DocumentOptions(**options)).page(asked, part)[0]
        assert body is not first and body.html == alone.html


def test_each_page_is_printed_once_while_the_one_before_is_drawn(tmp_path, monkeypatch):
    """A worker takes items in groups: each one's page is printed (in Chromium's process)
    while the one before it is drawn (in ours). Each page is built and printed once, the
    print asked for ahead being the one taken, and the pages are those of each item printed
    on its own."""
    from mmconvert.items import Item
    from mmconvert.renderers.document import DocumentRenderer
    from mmconvert.renderers.document.browser import Browser

    printed: list[str] = []
    built: list[str] = []
    print_page, build_page = Browser._print, DocumentRenderer.page

    def counted(self, document, files):
        printed.append(document)
        return print_page(self, document, files)

    def counted_page(self, item, part):
        built.append(item.id)
        return build_page(self, item, part)

    monkeypatch.setattr(Browser, "_print", counted)
    monkeypatch.setattr(DocumentRenderer, "page", counted_page)
    texts = [d["context"] for d in DOCUMENTS if isinstance(d["context"], str)]
    texts += [f"Item {k}: | a | b |\n|--|--|\n| {k} | {k * k} |" for k in range(4)]
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps({"id": f"i{k}", "question": "q", "context": text})
                              + "\n" for k, text in enumerate(texts)), encoding="utf-8")
    out = tmp_path / "run"
    result = run("render", source, "--renderer", "document", "--render", "context",
                 "--out", out)
    assert result.exit_code == 0, result.output
    assert len(printed) == len(texts) == len(set(printed))
    assert sorted(built) == sorted(f"i{k}" for k in range(len(texts)))
    renderer = DocumentRenderer()
    for k, text in enumerate(texts):
        alone = renderer.pages(Item(id=f"i{k}", corpus="t", subset="t", split="t",
                                   question="q", answer="", context=text), "context")
        (row,) = [r for r in rows(out) if r["id"] == f"i{k}"]
        assert (out / row["pdf"]).read_bytes() == alone.pdf
        assert [(out / image["path"]).read_bytes() for image in row["images"]] == \
            [png for png, _, _ in alone.pages]


def test_a_size_search_fetches_the_faces_once(monkeypatch):
    """A target's search typesets an item at many sizes and widths: the faces' style sheet
    is the same text at each, so the browser keeps the faces it loaded and asks for none
    again (it asked for all five, 1.4 MB, at every size tried when the sheet held the
    sizes too)."""
    from mmconvert.items import Item
    from mmconvert.renderers.document import DocumentOptions, DocumentRenderer
    from mmconvert.renderers.document.browser import Browser

    asked: list[str] = []
    route = Browser._route

    def counted(self, request):
        asked.append(request.request.url)
        return route(self, request)

    monkeypatch.setattr(Browser, "_route", counted)
    item = Item(id="code", corpus="t", subset="t", split="t", question="q", answer="A",
                context=DOCUMENTS[1]["context"])
    DocumentRenderer(DocumentOptions(font_size=11)).pixel_sizes(item, "context")
    first = [url for url in asked if "/fonts/" in url]
    asked.clear()
    for size, width in ((9.5, 8.5), (13, 8.5), (11, 7.25)):
        options = DocumentOptions(font_size=size, page_width=width)
        DocumentRenderer(options).pixel_sizes(item, "context")
    assert [url for url in asked if "/fonts/" in url] == [], first


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.slow
def test_a_render_killed_with_its_browsers_up_resumes_to_the_same_bytes(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from bench.kill_resume import descendants, running

    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps({
        "id": f"doc-{n:03d}", "question": "Which?", "context": (
            f"## Part {n}\n\n| a | b |\n|--|--|\n| {n} | {n * n} |\n\n"
            f"```python\nprint({n})\n```\n\nSo $x^{{{n}}} + y$ holds.")}) + "\n"
        for n in range(80)), encoding="utf-8")
    args = ("render", source, "--renderer", "document", "--render", "context", "--workers", "2")
    ref = tmp_path / "ref"
    assert run(*args, "--out", ref).exit_code == 0
    cut = tmp_path / "cut"
    # what the killed browsers leave (their temporary folders) goes where the test removes it
    # (a short path: Chromium's sockets go under it)
    scratch = Path(tempfile.mkdtemp(prefix="mmc-", dir="/tmp"))
    process = subprocess.Popen([sys.executable, "-m", "mmconvert.cli", *map(str, args), "--out",
                                str(cut)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=tmp_path, env={**os.environ, "TMPDIR": str(scratch)})
    try:
        deadline = time.monotonic() + 120
        manifest = cut / "manifest.jsonl"
        # killed once both browsers are up and some items are written
        while time.monotonic() < deadline and not (
                manifest.exists() and manifest.read_bytes().count(b"\n") >= 4):
            time.sleep(0.05)
        below = descendants(process.pid)
        names = [_name(pid) for pid in below]
        assert process.poll() is None, "the render ended before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    assert sum("chrom" in name for name in names) >= 2, names  # both workers' browsers
    deadline = time.monotonic() + 20
    while any(map(running, below)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(running, below)), "workers or browsers outlived their killed run"
    written = manifest.read_bytes().count(b"\n")
    assert 0 < written < 80
    result = run(*args, "--out", cut)
    assert result.exit_code == 0, result.output
    assert f"; {written} already done" in result.output  # finished work is not redone
    assert (cut / "manifest.jsonl").read_bytes() == (ref / "manifest.jsonl").read_bytes()
    made = {p.relative_to(cut).as_posix(): p.read_bytes() for p in sorted(cut.rglob("*"))
            if p.is_file() and p.suffix in (".png", ".pdf")}
    assert made == {p.relative_to(ref).as_posix(): p.read_bytes()
                    for p in sorted(ref.rglob("*")) if p.is_file() and p.suffix in (".png", ".pdf")}


def test_bad_input_is_one_line(docs, drawn, tmp_path, monkeypatch):
    big = tmp_path / "big"
    result = run("render", docs, "--renderer", "document", "--render", "context",
                 "--page-size", "2880,2880", "--ppi", "1200", "--limit", "1", "--out", big)
    assert result.exit_code != 0 and "over the 2,000-megapixel limit" in result.output
    assert len(result.output.strip().splitlines()) == 1
    result = run("render", docs, "--renderer", "document", "--code-style", "monokay",
                 "--out", tmp_path / "s")
    assert result.exit_code == 2 and "did you mean 'monokai'?" in result.output
    bad_turns = tmp_path / "turns.jsonl"
    bad_turns.write_text(json.dumps({"id": "t", "question": "q", "context": ["hello"]}) + "\n")
    result = run("render", bad_turns, "--renderer", "document", "--out", tmp_path / "t")
    assert result.exit_code != 0 and "context[0]" in result.output
    # a run drawn by another Chromium is not resumed with this one
    info = json.loads((drawn / "run.json").read_text())
    copy = tmp_path / "copy"
    shutil.copytree(drawn, copy)
    here = f"{info['browser']['name']} {info['browser']['version']}"
    info["browser"]["version"] = "1.0.0"
    (copy / "run.json").write_text(json.dumps(info))
    result = run("render", docs, "--renderer", "document", "--render", "context", "--out", copy)
    assert result.exit_code != 0 and f"drawn by {info['browser']['name']} 1.0.0 and this " \
        f"is {here}:" in result.output
    # nor one the other build drew, of the same version: the headless shell's pages differ
    other = "chromium" if info["browser"]["name"] != "chromium" else "chromium-headless-shell"
    info["browser"].update(name=other, version=here.split()[1])
    (copy / "run.json").write_text(json.dumps(info))
    result = run("render", docs, "--renderer", "document", "--render", "context", "--out", copy)
    assert result.exit_code != 0 and f"drawn by {other} {here.split()[1]} and this is " \
        f"{here}:" in result.output
    monkeypatch.setenv("MMCONVERT_CHROMIUM", str(tmp_path / "none"))
    result = run("render", docs, "--renderer", "document", "--out", tmp_path / "n")
    assert result.exit_code == 2 and "apt-get install chromium-headless-shell" in result.output


def test_malformed_markdown_and_html_are_drawn_as_parsed(tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps({"id": "bad", "question": "q", "context": (
        "| a | b\n|--\n**unclosed *emphasis `tick <div><p>open tags <b>nested</i>\n\n"
        "$$ \\left( x $$")}) + "\n")
    out = tmp_path / "bad"
    result = run("render", source, "--renderer", "document", "--render", "context",
                 "--out", out)
    assert result.exit_code == 0, result.output
    (row,) = rows(out)
    assert "unclosed" in pdf_text(out / row["pdf"]) and row["math_errors"]


def test_page_images_record_their_ppi(drawn):
    for row in rows(drawn):
        for image in row["images"]:
            with Image.open(drawn / image["path"]) as picture:
                assert round(picture.info["dpi"][0], 1) == 92.9
            data = (drawn / image["path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == image["sha256"]


def test_other_scripts_are_drawn_and_a_right_to_left_paragraph_runs_right_to_left(tmp_path):
    """Chinese, Japanese, Korean, Devanagari, Thai and emoji from the shipped faces, every
    character in the text layer; an Arabic or Hebrew paragraph set from the right, as the
    page renderer sets it, its text layer in reading order."""
    import pymupdf

    source = tmp_path / "scripts.jsonl"
    source.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in (
        {"id": "zh", "question": "q", "context": (
            "## 标题\n\n这是一个**中文**段落：\n\n| 名称 | 数值 |\n|--|--|\n| 甲 | 一 |\n\n"
            "日本語のテキストも。한국어도.")},
        {"id": "hi", "question": "q", "context": "भारत की राजधानी नई दिल्ली है। ไทยเป็นประเทศ 👨‍👩‍👧"},
        {"id": "ar", "question": "q", "context": "القاهرة هي عاصمة مصر.\n\nשלום עולם, English."},
    )), encoding="utf-8")
    out = tmp_path / "scripts"
    assert run("render", source, "--renderer", "document", "--render", "context",
               "--out", out).exit_code == 0
    assert run("qa", "check", out, "--checks", "text_layer").exit_code == 0
    verdicts = {e["id"]: e["verdict"] for e in JsonlLog(out / "qa.jsonl").read()}
    # right-to-left runs too: their text layer reads in reading order (in_reading_order)
    assert verdicts == {"zh": "accept", "hi": "accept", "ar": "accept"}
    (row,) = [r for r in rows(out) if r["id"] == "ar"]
    with pymupdf.open(out / row["pdf"]) as doc:
        width = doc[0].rect.width
        lines = [(b[0], b[2], b[4]) for b in doc[0].get_text("blocks")]
    arabic = next(line for line in lines if "مصر" in line[2])
    assert arabic[1] > width - 40  # it ends at the right margin
    assert arabic[0] > width / 2  # and starts right of the middle


def test_code_is_coloured_on_many_threads_at_once():
    """qa check reads rows on threads: the first code blocks coloured at once, in a fresh
    process, must not trip over one another's imports (pygments' lazy formatter lookup did,
    one time in two)."""
    import subprocess
    import sys

    script = (
        "import threading\n"
        "from mmconvert.renderers.document.markup import highlight\n"
        "barrier, errors = threading.Barrier(16), []\n"
        "def colour():\n"
        "    barrier.wait()\n"
        "    try:\n"
        "        assert 'color' in highlight('default', 'x = 1', 'python', '')\n"
        "    except Exception as err:\n"
        "        errors.append(repr(err))\n"
        "threads = [threading.Thread(target=colour) for _ in range(16)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "print(errors[:1])\n")
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_right_to_left_text_layers_read_in_reading_order_and_draw_the_same(tmp_path):
    """Chromium writes a line's runs left to right as drawn (each right-to-left run marked
    ReversedChars, which MuPDF does not honour); mmconvert rewrites the order of the runs so
    that the text layer reads as the text does, and the pages are the same pixels."""
    import pymupdf

    from mmconvert.items import Item
    from mmconvert.renderers.document import DocumentRenderer
    from mmconvert.renderers.document.browser import Browser
    from mmconvert.renderers.document.css import faces, page_html
    from mmconvert.renderers.document.markup import RenderState, fields_html
    from mmconvert.renderers.document.pdf import rasterise

    arabic = ("القاهرة هي عاصمة مصر وأكبر مدنها، ويبلغ عدد سكانها 22 مليون نسمة تقريبا. "
              "تقع على ضفاف نهر النيل في شمال البلاد. ") * 4
    items = {
        "wrapped": arabic,
        "mixed": "שלום עולם, English words 123 ושוב עברית.\n\nEnglish with عربي inside it.",
        "list": "- البند الأول\n- البند الثاني 2024\n\n| الاسم | القيمة |\n|--|--|\n| أ | 12 |",
    }
    source = tmp_path / "rtl.jsonl"
    source.write_text("".join(json.dumps({"id": k, "question": "q", "context": v},
                                         ensure_ascii=False) + "\n"
                              for k, v in items.items()), encoding="utf-8")
    out = tmp_path / "rtl"
    assert run("render", source, "--renderer", "document", "--render", "context",
               "--out", out).exit_code == 0
    assert run("qa", "check", out, "--checks", "text_layer").exit_code == 0
    verdicts = {e["id"]: e["verdict"] for e in JsonlLog(out / "qa.jsonl").read()}
    assert verdicts == dict.fromkeys(items, "accept")
    found = {r["id"]: r for r in rows(out)}
    text = pdf_text(out / found["wrapped"]["pdf"]).replace("\n", " ")
    assert "القاهرة هي عاصمة مصر وأكبر مدنها" in text
    # the same pixels as Chromium's own order
    item = Item(id="mixed", corpus="t", subset="t", split="t", question="q", answer="A",
                context=items["mixed"])
    renderer = DocumentRenderer()
    drawn = renderer.pages(item, "context")
    raw, _ = Browser.get().pdf(page_html(
        fields_html(item, "context", RenderState(renderer.options, None)),
        renderer.options, faces(renderer.options)),
        {f"/fonts/{f.key}": f.data for f in faces(renderer.options)})
    with pymupdf.open(stream=raw, filetype="pdf") as doc:
        assert "/ReversedChars" in doc.xref_stream(doc[0].get_contents()[0]).decode("latin-1")
    # the same pixels, but where the joined glyphs of a word overlap: drawn in another
    # order, their edges' coverage may round one level apart
    import numpy as np
    from PIL import Image

    (before, *_), (after, *_) = rasterise(raw, 92.9, "gray")[0], drawn.pages[0]
    with Image.open(io.BytesIO(before)) as one, Image.open(io.BytesIO(after)) as two:
        diff = np.abs(np.asarray(one, dtype=int) - np.asarray(two, dtype=int))
    assert diff.max() <= 1 and (diff > 0).sum() <= 10, (diff.max(), (diff > 0).sum())


def test_code_is_embedded_as_truetype_not_drawn_glyph_by_glyph(tmp_path):
    """Chromium writes a CFF face as a Type 3 font (each glyph a drawing procedure MuPDF runs
    each time it reads the page); the code face is served as TrueType, and embedded so."""
    import pymupdf

    from mmconvert.items import Item
    from mmconvert.renderers.document import DocumentRenderer

    code = "```python\ndef loss(x, y):\n    return (x - y) ** 2  # squared\n```"
    drawn = DocumentRenderer().pages(Item(id="code", corpus="t", subset="t", split="t",
                                         question="q", answer="", context=code), "context")
    with pymupdf.open(stream=drawn.pdf, filetype="pdf") as doc:
        fonts = [font for page in doc for font in page.get_fonts()]
    assert fonts and all(font[1] == "ttf" and font[2] == "Type0" for font in fonts), fonts


def test_a_converted_face_is_kept_checked_and_the_same_each_time(tmp_path, monkeypatch):
    """A face converted to TrueType is kept in the cache folder and read back; a kept file that
    was damaged is converted again; the conversion depends on the face alone, keeps every
    glyph, its advance and its outline within MAX_ERROR font units."""
    from fontTools.pens.boundsPen import BoundsPen
    from fontTools.ttLib import TTFont

    from mmconvert.renderers.document.css import CODE_FACES, _shipped
    from mmconvert.renderers.document.truetype import MAX_ERROR, to_truetype, truetype

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    truetype.cache_clear()
    try:
        source = _shipped(CODE_FACES["normal"])
        made = truetype(source)
        (kept,) = (tmp_path / "mmconvert" / "faces").iterdir()
        assert kept.read_bytes() == made == to_truetype(source)
        assert truetype(made) is made  # TrueType already: served as it is
        cff, ttf = TTFont(io.BytesIO(source)), TTFont(io.BytesIO(made))
        assert "glyf" in ttf and "CFF " not in ttf
        assert ttf.getGlyphOrder() == cff.getGlyphOrder()
        assert ttf["hmtx"].metrics == cff["hmtx"].metrics
        assert ttf["cmap"].getBestCmap() == cff["cmap"].getBestCmap()
        for name in ("a", "g", "at", "braceleft", "zero"):
            bounds = []
            for face in (cff, ttf):
                pen = BoundsPen(face.getGlyphSet())
                face.getGlyphSet()[name].draw(pen)
                bounds.append(pen.bounds)
            assert all(abs(a - b) <= MAX_ERROR + 0.5 for a, b in zip(*bounds, strict=True)), \
                (name, bounds)
        damaged = bytearray(made)
        damaged[len(damaged) // 2] ^= 0xFF
        kept.write_bytes(bytes(damaged))
        truetype.cache_clear()
        assert truetype(source) == made and kept.read_bytes() == made
    finally:
        truetype.cache_clear()


@pytest.mark.slow
def test_the_browser_starts_while_run_json_is_made_and_only_where_items_are_drawn(
        docs, tmp_path, monkeypatch):
    """One worker: Chromium (about 0.9 s to start) is started while run.json is made (its
    fonts' digests), and waited for by the first item. Several: the workers start their own,
    and this process none. A Chromium that would not start is one line, and the next run
    starts another."""
    import mmconvert.converter as converter
    from mmconvert.renderers.document import DocumentJob
    from mmconvert.renderers.document.browser import Browser

    monkeypatch.setattr(Browser, "_shared", None)
    seen = []
    info = converter._run_info

    def making(*args, **kwargs):
        seen.append(Browser._shared)
        return info(*args, **kwargs)

    monkeypatch.setattr(converter, "_run_info", making)
    monkeypatch.setattr(DocumentJob, "batch", len(DOCUMENTS))  # cut in this process
    groups = tmp_path / "six.jsonl"  # two groups of items, for two workers
    groups.write_text("".join(json.dumps({**d, "id": f"{d['id']}{k}"}) + "\n"
                              for k in range(2) for d in DOCUMENTS), encoding="utf-8")
    assert run("render", groups, "--renderer", "document", "--render", "context", "--workers",
               "2", "--out", tmp_path / "two").exit_code == 0
    assert set(seen) == {None} and Browser._shared is None
    seen.clear()
    assert run("render", docs, "--renderer", "document", "--render", "context",
               "--out", tmp_path / "one").exit_code == 0
    assert seen[0] is not None and seen[0] is Browser._shared
    started = Browser._shared
    monkeypatch.setattr(Browser, "_shared", None)
    monkeypatch.setenv("MMCONVERT_CHROMIUM", "/bin/false")
    result = run("render", docs, "--renderer", "document", "--render", "context",
                 "--out", tmp_path / "none")
    assert result.exit_code != 0 and "Chromium would not start" in result.output
    assert Browser._shared is None  # let go: the next run starts another
    monkeypatch.setattr(Browser, "_shared", started)


def test_each_page_of_a_document_has_its_own_text_for_the_transcription_probe(tmp_path):
    """``--probe transcribe`` asks a document's pages one at a time, each scored against its
    stored PDF's text layer for that page: the pages' texts, in order, are the item's whole
    text (every word, Fox's precision and recall 1), each page holds the paragraphs it
    shows, and none is empty."""
    import re

    from mmconvert.evaluation.transcribe import pages_to_read, transcribed_text
    from mmconvert.scoring.transcription import transcription_scores

    context = "\n\n".join(f"Paragraph {i}: the quick brown fox number {i} jumps over the lazy "
                          f"dog near river {i * 7}." for i in range(120))
    source = tmp_path / "long.jsonl"
    source.write_text(json.dumps({"id": "long", "question": "Which river?",
                                  "answer": "river 7", "context": context}) + "\n")
    out = tmp_path / "run"
    assert run("render", source, "--renderer", "document", "--render", "context",
               "--out", out).exit_code == 0
    row, = rows(out)
    texts = pages_to_read(out, row)
    assert texts is not None and len(texts) == len(row["images"]) > 2
    read = transcription_scores(transcribed_text(row), "\n".join(texts))
    assert (read.precision, read.recall) == (1.0, 1.0)
    firsts = [[int(n) for n in re.findall(r"Paragraph (\d+):", text)] for text in texts]
    assert all(firsts) and sum(firsts, []) == list(range(120))
