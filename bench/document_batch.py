"""What printing documents in batches would save (issue 57, part 2): Chromium's print of one
item at a time against one print of N items with page breaks, on the short items of
``bench/document_speed.py``, and what ``page.pdf`` itself costs against setting the document.
A measure for the design, not the renderer.

``--compare`` asks whether a batch draws each item's pages as its own print does, which part 2
requires: short, long (several pages), right-to-left, CJK and mixed Markdown items, in batches
of 4 and 18, under several page options. Each item's body goes into a section of the batch's
page that starts a page and holds the columns the page's body holds alone; the batch's PDF is
cut at the items' own page counts, and each part normalised and drawn as the renderer draws
an item. It prints, per case, the items whose pages are the same PNG bytes, and for the others
how many pixels differ, by how much, and whether Chromium wrote their content streams alike (a
later item's page is drawn in the batch's coordinates, under a translation).

    python bench/document_batch.py [--items 64] [--compare]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.document_speed import short_item  # noqa: E402
from bench.runs import paragraph  # noqa: E402
from mmconvert.items import Item  # noqa: E402
from mmconvert.renderers.document import DocumentOptions, DocumentRenderer  # noqa: E402
from mmconvert.renderers.document.browser import Browser  # noqa: E402
from mmconvert.renderers.document.pdf import normalised, rasterise  # noqa: E402


def pages(count: int) -> list[tuple[Any, str, dict[str, bytes]]]:
    """The browser's page (body, document, files) of ``count`` short items, as the renderer
    builds them."""
    rng = random.Random(0)
    renderer = DocumentRenderer(DocumentOptions())
    built = []
    for k in range(count):
        raw = short_item(rng, k)
        item = Item(id=raw["id"], corpus="bench", subset="short", split="test",
                    question=raw["question"], answer=raw["answer"], context=raw["context"])
        built.append(renderer.page(item, "context"))
    return built


def batch_page(built: list[tuple[Any, str, dict[str, bytes]]], options) -> str:
    """One page of several items' bodies (``renderer.page``'s), each in a section that starts
    a page and holds the columns the page's body holds alone (the body, a multicol
    container, ignores page breaks inside it)."""
    columns = (f"column-count: {options.columns}; column-gap: {options.column_gap}pt; "
               "column-fill: auto")
    head = built[0][1].partition("<body")[0].replace(
        "</head>", "<style>body { column-count: auto !important; }</style></head>")
    sections = "".join(f'<section style="break-before: page; {columns}">\n{body.html}\n'
                       "</section>" for body, _, _ in built)
    return f"{head}<body>\n{sections}\n</body>"


def split_costs(browser: Browser, document: str, files: dict[str, bytes]) -> tuple[float, float]:
    """(seconds setting the document and waiting for its fonts, seconds in ``page.pdf``)."""
    def draw(page):
        browser._files, browser._refused = files, []
        started = time.perf_counter()
        page.evaluate("html => { document.documentElement.innerHTML = html; "
                      "return document.fonts.ready.then(() => 1); }", document)
        set_at = time.perf_counter()
        page.pdf(prefer_css_page_size=True, print_background=True,
                 display_header_footer=False)
        return set_at - started, time.perf_counter() - set_at

    return browser._answer(browser._queued(draw))


def compared_items() -> list[Item]:
    """Items of every kind a batch must keep apart: short ones, ones of several pages, and
    right-to-left, CJK and mixed Markdown."""
    rng = random.Random(1)
    raw = [short_item(rng, k) for k in range(10)]
    raw += [{"id": f"long{k}", "context": "\n\n".join(paragraph(rng) for _ in range(12))}
            for k in range(3)]
    raw += [{"id": "rtl", "context": "نص عربي قصير للتجربة، ثم كلمات أخرى. " * 30
             + "\n\nטקסט קצר בעברית לבדיקה. " * 20},
            {"id": "cjk",
             "context": "用于检查排版的中文句子。" * 50 + "\n\n日本語の短い文です。" * 20},
            {"id": "mixed", "context": ("# A heading\n\n> a quote, **bold** and *italic*\n\n"
                                        "1. one\n2. two\n\n- [x] done\n\nA note[^1].\n\n"
                                        "[^1]: the note.\n\n$$x^2 + \\frac{1}{3}$$\n\n") * 4}]
    return [Item(id=r["id"], corpus="bench", subset="compare", split="test",
                 question=r.get("question", "q"), answer=r.get("answer", "a"),
                 context=r["context"]) for r in raw]


def drawn(pdf: bytes, options) -> list[bytes]:
    """The PNGs of a PDF's pages as the renderer draws an item's."""
    return [png for png, _, _ in rasterise(normalised(pdf, options), options.ppi,
                                           options.color)]


def contents(pdf: bytes) -> list[bytes]:
    """Each page's content stream, as Chromium wrote it (``normalised`` rewrites only the
    runs of right-to-left lines)."""
    import pymupdf

    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [page.read_contents() for page in doc]


def differing(one: bytes, other: bytes) -> str:
    """How two PNGs of a page differ: their sizes, else the pixels and the largest step."""
    import io

    import numpy as np
    from PIL import Image

    a, b = (np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=int)
            for png in (one, other))
    if a.shape != b.shape:
        return f"size {a.shape[::-1]} against {b.shape[::-1]}"
    steps = np.abs(a - b)
    return f"{int((steps > 0).sum())} of {steps.size} px, by up to {int(steps.max())}"


def compare(browser: Browser) -> None:
    """Each case's items printed alone and in batches, their pages compared."""
    import pymupdf

    items = compared_items()
    cases = [{}, {"crop": "content"}, {"columns": 2}, {"columns": 2, "crop": "bottom"},
             {"font_size": 9, "page_size": "letter"}]
    for values in cases:
        options = DocumentOptions(**values)
        renderer = DocumentRenderer(options)
        printed = {item.id: renderer.pages(item, "context") for item in items}
        alone = {key: [png for png, _, _ in done.pages] for key, done in printed.items()}
        for size in (4, 18):
            same, other = 0, []
            for k in range(0, len(items), size):
                group = items[k:k + size]
                built = [renderer.page(item, "context") for item in group]
                pdf, _ = browser.pdf(batch_page(built, options), built[0][2])
                with pymupdf.open(stream=pdf, filetype="pdf") as batch:
                    at = 0
                    for item in group:
                        count = len(alone[item.id])
                        with pymupdf.open() as part:
                            part.insert_pdf(batch, from_page=at, to_page=at + count - 1)
                            data = part.tobytes()
                        at += count
                        pages = drawn(data, options)
                        if pages == alone[item.id]:
                            same += 1
                            continue
                        streams = contents(data) == contents(printed[item.id].pdf or b"")
                        other += [f"{item.id}: {differing(a, b)} (content streams "
                                  f"{'equal' if streams else 'differ'})" for a, b in
                                  zip(alone[item.id], pages, strict=False) if a != b]
                    if at != len(batch):
                        other.append(f"the batch has {len(batch)} pages, its items {at}")
            print(f"{values or 'the defaults'}, batches of {size}: {same}/{len(items)} the "
                  f"same" + (f"; {'; '.join(other)}" if other else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--compare", action="store_true",
                        help="compare each item's pages in batches with its own print")
    args = parser.parse_args()
    if args.compare:
        browser = Browser.get()
        compare(browser)
        browser.close()
        return
    built = pages(args.items)
    browser = Browser.get()
    for _ in range(3):  # the faces fetched, the page warm
        browser.pdf(*built[0][1:])
    started = time.perf_counter()
    for _, document, files in built:
        browser.pdf(document, files)
    alone = (time.perf_counter() - started) / len(built)
    print(f"one item a print: {alone * 1000:.1f} ms an item")
    options = DocumentOptions()
    for size in (4, 16, 64):
        started = time.perf_counter()
        for k in range(0, len(built), size):
            browser.pdf(batch_page(built[k:k + size], options), built[0][2])
        print(f"{size} items a print (a page or more each): "
              f"{(time.perf_counter() - started) / len(built) * 1000:.1f} ms an item")
    setting = printing = 0.0
    for _, document, files in built:
        a, b = split_costs(browser, document, files)
        setting, printing = setting + a, printing + b
    print(f"one item a print, split: the document set and its fonts ready "
          f"{setting / len(built) * 1000:.1f} ms, page.pdf {printing / len(built) * 1000:.1f} ms")
    tiny = f"{built[0][1].partition('<body')[0]}<body><p>x</p></body>"
    costs = [split_costs(browser, tiny, built[0][2]) for _ in range(20)]
    print(f"a document of one letter: page.pdf {sum(b for _, b in costs) / 20 * 1000:.1f} ms "
          "(what a print costs whatever it holds)")
    browser.close()


if __name__ == "__main__":
    main()
