"""Page sizes of ``mmconvert render`` against ReadBench's on the same MMLU-Redux items.

    python bench/readbench_geometry.py [--data DIR] [--ppi 92.9,300] [--datagen PATH/datagen.py]

ReadBench (github.com/AnswerDotAI/ReadBench) draws each option block with Pillow: type of
int(12 pt x PPI / 72) whole pixels, a line pitch of its ascent + descent plus a fifth of that
(rounded down), words wrapped at the margin, each page cut four margins right of its widest
line and the last one a margin below its last line's pitch.

With ``--datagen`` the figure is measured against ReadBench's own ``_render``, run in a temporary
folder whose ``arial.ttf`` is Liberation Sans (Arial's metrics), the font its code asks for
first. Without it, against ``readbench_sizes`` below: our model of the same rules (the test
suite uses it, since CI has no copy of ReadBench's code).

Prints, per PPI: items, items with the same page count, the range of width ratios (ours /
theirs) and the largest height difference, and each item outside the issue's bounds (width
ratio 0.97-1.05; height within 4 px or 3 %).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.corpora import LoadReport, LoadRequest, resolve  # noqa: E402
from mmconvert.items import option_letter  # noqa: E402
from mmconvert.renderers.fonts import FONT_DIR  # noqa: E402
from mmconvert.renderers.page import PageOptions, PageRenderer, pixels  # noqa: E402

ARIAL_METRICS = FONT_DIR / "LiberationSans-Regular.ttf"
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "mmlu-redux" / "mmlu_redux"


def option_text(options: list[str]) -> str:
    return "\n".join(f"{option_letter(i)}. {o}" for i, o in enumerate(options))


def readbench_sizes(text: str, ppi: float, font_file: Path = ARIAL_METRICS
                    ) -> list[tuple[int, int]]:
    """(width, height) in pixels of each page ReadBench's rules give ``text`` at ``ppi``."""
    from PIL import ImageFont

    font = ImageFont.truetype(str(font_file), max(1, int(12 * ppi / 72)))
    page_w, page_h, margin = int(8.27 * ppi), int(11.69 * ppi), int(0.25 * ppi)
    ascent, descent = font.getmetrics()
    line_h = ascent + descent
    pitch = line_h + int(line_h * 0.2)
    room = page_w - 2 * margin
    lines: list[str] = []
    for paragraph in text.split("\n"):
        words = paragraph.split()
        if not words:
            lines.append("")
            continue
        current = words[0]
        for word in words[1:]:
            if font.getlength(current + " " + word) <= room:
                current += " " + word
            else:
                lines.append(current)
                current = word
        lines.append(current)
    pages: list[list[str]] = [[]]
    y = margin
    for line in lines:
        if y + line_h > page_h - margin:
            pages.append([])
            y = margin
        pages[-1].append(line)
        y += pitch

    def width(page: list[str]) -> int:
        widest = max((font.getlength(line) for line in page), default=0.0)
        return min(page_w, int(margin + min(widest, room) + 4 * margin))

    sizes = [(width(page), page_h) for page in pages]
    sizes[-1] = (sizes[-1][0], min(page_h, margin + len(pages[-1]) * pitch + margin))
    return sizes


def datagen_sizes(datagen: Path):
    """A function like ``readbench_sizes`` that runs ReadBench's own ``_render``."""
    from PIL import Image

    work = Path(tempfile.mkdtemp(prefix="readbench-"))
    (work / "arial.ttf").symlink_to(ARIAL_METRICS)
    os.chdir(work)  # its code opens "arial.ttf" relative to the working folder first
    spec = importlib.util.spec_from_file_location("readbench_datagen", datagen)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    font, *_ = module.get_font_and_dimensions(92.9)
    if Path(font.path).resolve() != ARIAL_METRICS.resolve():
        raise SystemExit(f"ReadBench's code took {font.path}, not the Arial-metric font")
    counter = iter(range(10**9))

    def sizes(text: str, ppi: float) -> list[tuple[int, int]]:
        out = []
        for path in module._render(text, work, f"item{next(counter)}", ppi):
            with Image.open(path) as image:
                out.append(image.size)
            Path(path).unlink()
        return out

    return sizes


def our_sizes(renderer: PageRenderer, item) -> list[tuple[int, int]]:
    layout = renderer.layout(item, "options")
    widths, heights = renderer.page_sizes(layout)
    ppi = renderer.options.ppi
    return [(pixels(w / 72, ppi), pixels(h / 72, ppi)) for w, h in zip(widths, heights,
                                                                        strict=True)]


def within(ours: tuple[int, int], theirs: tuple[int, int]) -> bool:
    ratio = ours[0] / theirs[0]
    height = abs(ours[1] - theirs[1])
    return 0.97 <= ratio <= 1.05 and (height <= 4 or height <= 0.03 * theirs[1])


def compare(items, ppi: float, reference) -> dict:
    renderer = PageRenderer(PageOptions(ppi=ppi))
    ratios, height_px, height_pct, outside, same_pages = [], [], [], [], 0
    for item in items:
        ours = our_sizes(renderer, item)
        theirs = reference(option_text(item.options), ppi)
        if len(ours) != len(theirs):
            outside.append((item.id, ours, theirs))
            continue
        same_pages += 1
        for a, b in zip(ours, theirs, strict=True):
            ratios.append(a[0] / b[0])
            height_px.append(abs(a[1] - b[1]))
            height_pct.append(abs(a[1] - b[1]) / b[1] * 100)
            if not within(a, b):
                outside.append((item.id, ours, theirs))
    return {"ppi": ppi, "items": len(items), "same_pages": same_pages,
            "width_ratio": (min(ratios), max(ratios)), "height_px": max(height_px),
            "height_pct": max(height_pct), "outside": outside}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--ppi", default="92.9,300")
    parser.add_argument("--datagen", type=Path, help="ReadBench's datagen.py")
    args = parser.parse_args()
    items = list(resolve("mmlu-redux").load(LoadRequest(source=args.data.resolve()),
                                            LoadReport()))
    reference = datagen_sizes(args.datagen.resolve()) if args.datagen else readbench_sizes
    what = f"ReadBench's datagen.py ({args.datagen})" if args.datagen else "our model of it"
    print(f"{len(items)} MMLU-Redux items of {args.data}; against {what}")
    for ppi in (float(p) for p in args.ppi.split(",")):
        r = compare(items, ppi, reference)
        print(f"{ppi:g} PPI: {r['same_pages']}/{r['items']} same page count; width ratio "
              f"{r['width_ratio'][0]:.3f}-{r['width_ratio'][1]:.3f}; height off by at most "
              f"{r['height_px']} px ({r['height_pct']:.1f} %); {len(r['outside'])} outside "
              "the bounds")
        for item_id, ours, theirs in r["outside"]:
            print(f"  {item_id}: ours {ours}, ReadBench {theirs}")


if __name__ == "__main__":
    main()
