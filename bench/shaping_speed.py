"""Speed of shaped pages against Latin pages, in one process: the same number of characters
of each hard case of tests/renderers/test_shaping.py (right to left with numbers and English,
Persian, Hebrew, Devanagari, Bengali, Tamil, Thai, emoji, mixed) and of English, rendered to
PNG at 92.9 PPI. Prints ms per item and the ratio to English.

    python bench/shaping_speed.py [--chars 3000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "renderers"))

from test_shaping import HARD  # noqa: E402

from mmconvert.items import Item  # noqa: E402
from mmconvert.renderers.page import PageOptions, PageRenderer  # noqa: E402

LATIN = ("The lantern by the harbour was painted red, and the river stone beside it kept the "
         "archive's signal copper bright.")


def per_item(renderer: PageRenderer, text: str, repeat: int) -> tuple[float, int]:
    item = Item(id="t", corpus="t", subset="t", split="test", context=text)
    renderer.render(item, "context")  # fonts, caches
    start = time.perf_counter()
    for _ in range(repeat):
        result = renderer.render(item, "context")
    return (time.perf_counter() - start) / repeat, len(result.pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    renderer = PageRenderer(PageOptions())
    base = None
    for name, text in [("latin", LATIN), *HARD.items()]:
        full = ((text + " ") * (args.chars // len(text) + 1))[:args.chars]
        seconds, pages = per_item(renderer, full, args.repeat)
        base = base or seconds
        print(f"{name:6s} {args.chars} chars, {pages} page(s): {seconds * 1000:6.1f} ms/item, "
              f"{seconds / base:4.1f}x latin")


if __name__ == "__main__":
    main()
