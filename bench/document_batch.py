"""What printing documents in batches would save (issue 57, part 2): Chromium's print of one
item at a time against one print of N items with page breaks, on the short items of
``bench/document_speed.py``, and what ``page.pdf`` itself costs against setting the document.
A measure for the design, not the renderer: the batched documents here are not split back into
items, and their pages are not compared with single prints.

    python bench/document_batch.py [--items 64]
"""

from __future__ import annotations

import argparse
import queue
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.document_speed import short_item  # noqa: E402
from mmconvert.items import Item  # noqa: E402
from mmconvert.renderers.document import DocumentOptions, DocumentRenderer  # noqa: E402
from mmconvert.renderers.document.browser import Browser  # noqa: E402

BODY = re.compile(r"<body[^>]*>(.*)</body>", re.S)


def pages(count: int) -> list[tuple[str, dict[str, bytes]]]:
    """The browser's page (document, files) of ``count`` short items, as the renderer builds
    them."""
    rng = random.Random(0)
    renderer = DocumentRenderer(DocumentOptions())
    built = []
    for k in range(count):
        raw = short_item(rng, k)
        item = Item(id=raw["id"], corpus="bench", subset="short", split="test",
                    question=raw["question"], answer=raw["answer"], context=raw["context"])
        _, document, files = renderer.page(item, "context")
        built.append((document, files))
    return built


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

    answer: queue.Queue = queue.Queue()
    browser._tasks.put((draw, answer))
    ok, value = answer.get()
    if not ok:
        raise value
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=64)
    args = parser.parse_args()
    built = pages(args.items)
    browser = Browser.get()
    for _ in range(3):  # the faces fetched, the page warm
        browser.pdf(*built[0])
    started = time.perf_counter()
    for document, files in built:
        browser.pdf(document, files)
    alone = (time.perf_counter() - started) / len(built)
    print(f"one item a print: {alone * 1000:.1f} ms an item")
    head = built[0][0].partition("<body")[0]
    for size in (4, 16, 64):
        started = time.perf_counter()
        for k in range(0, len(built), size):
            bodies = "".join(f'<section style="break-before: page">{BODY.search(d).group(1)}'
                             "</section>" for d, _ in built[k:k + size] if BODY.search(d))
            browser.pdf(f"{head}<body>{bodies}</body>", built[0][1])
        print(f"{size} items a print: "
              f"{(time.perf_counter() - started) / len(built) * 1000:.1f} ms an item")
    setting = printing = 0.0
    for document, files in built:
        a, b = split_costs(browser, document, files)
        setting, printing = setting + a, printing + b
    print(f"one item a print, split: the document set and its fonts ready "
          f"{setting / len(built) * 1000:.1f} ms, page.pdf {printing / len(built) * 1000:.1f} ms")
    tiny = f"{head}<body><p>x</p></body>"
    costs = [split_costs(browser, tiny, built[0][1]) for _ in range(20)]
    print(f"a document of one letter: page.pdf {sum(b for _, b in costs) / 20 * 1000:.1f} ms "
          "(what a print costs whatever it holds)")
    browser.close()


if __name__ == "__main__":
    main()
