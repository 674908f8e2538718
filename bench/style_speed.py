"""What a page style costs: ``mmconvert render`` as a whole process, once per style, on the
same contexts at the same PPI, against the default (readbench) style.

    python bench/style_speed.py [--items 60] [--ppi 92.9] [--style glyph ...]

The contexts are ~3,000 to ~24,000 characters of seeded English prose with paragraph breaks
(the same for every style). A style draws the same text on more or fewer pages (Glyph's 9 pt
pages hold about twice a ReadBench page's text), so the figures are per page and per thousand
characters: a style's page that costs more only because it holds more text is no slower.
Each style's PPI is set to ``--ppi`` (the presets' own PPIs would change the pixel count), and
the cost per megapixel drawn is printed too: larger type or pages, and RGB, draw more pixels
for the same text.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.runs import paragraph, timed_render  # noqa: E402

STYLES = ("readbench", "glyph", "vtcbench", "pixelworld", "wild")


def contexts(count: int) -> list[dict]:
    rng = random.Random(7)
    out = []
    for n in range(count):
        paragraphs = []
        for _ in range(rng.randint(4, 30)):
            paragraphs.append(paragraph(rng))
        out.append({"id": f"s{n:03d}", "context": "\n\n".join(paragraphs)})
    return out


def render(items: Path, out: Path, style: str, ppi: float) -> tuple[float, int, float]:
    seconds, rows = timed_render([items, "--render", "context", "--style", style, "--ppi", ppi],
                                 out)
    images = [image for row in rows for image in row["images"]]
    return seconds, len(images), sum(i["width"] * i["height"] for i in images) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--ppi", type=float, default=92.9)
    parser.add_argument("--style", action="append", help="styles (default: every preset)")
    args = parser.parse_args()
    rows = contexts(args.items)
    chars = sum(len(r["context"]) for r in rows)
    with tempfile.TemporaryDirectory() as tmp:
        items = Path(tmp) / "items.jsonl"
        items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        results = {style: render(items, Path(tmp) / style, style, args.ppi)
                   for style in ["readbench", *(s for s in args.style or STYLES
                                                if s != "readbench")]}
    print(f"{args.items} contexts, {chars:,} characters, {args.ppi:g} PPI, whole process")
    base_seconds, base_pages, base_pixels = results["readbench"]
    for style, (seconds, pages, pixels) in results.items():
        per_page = 1000 * seconds / pages
        per_chars = 1000 * seconds / (chars / 1000)
        per_pixel = 1000 * seconds / pixels
        print(f"  {style:<11} {pages:>5} pages  {seconds:6.2f} s  {per_page:6.1f} ms a page "
              f"({per_page / (1000 * base_seconds / base_pages):.2f}x readbench)  "
              f"{per_chars:5.2f} ms per 1k characters ({seconds / base_seconds:.2f}x)  "
              f"{per_pixel:5.1f} ms per megapixel "
              f"({per_pixel / (1000 * base_seconds / base_pixels):.2f}x)")


if __name__ == "__main__":
    main()
