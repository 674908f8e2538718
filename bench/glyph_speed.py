"""``mmconvert render --style glyph`` against Glyph's own pipeline, each a whole process,
alternated in one run; then where mmconvert's time goes, by stage.

    pip install reportlab pdf2image tqdm && apt-get install poppler-utils   # Glyph's needs
    python bench/glyph_speed.py --glyph PATH/TO/Glyph [--set ten|long] [--repeat 3]
                                [--glyph-python PYTHON] [--workers 1]

Glyph (github.com/thu-coai/Glyph) renders with ``scripts/word2png_function.text_to_images``:
reportlab lays the text out into a PDF, and pdf2image (poppler's ``pdftoppm``) rasterises and
saves each page. Its process here imports that module from the checkout, reads its
``config/config_en.json`` with ``font-path`` set to ``--font`` (default: the checkout's
Verdana.ttf) and renders each context into a folder, as Glyph's inference does. mmconvert's is
``mmconvert render CONTEXTS --render context --style glyph --font FONT`` (one worker unless
``--workers``). Runs alternate (Glyph, mmconvert, then mmconvert, Glyph, …) so that a change in
the machine's load falls on both.

Sets: ``ten``: ten contexts of 1,500 to 9,600 words (900 apart) cut at word ends from the long
texts of Glyph's demo (``demo/examples/case2-4.txt``); ``long``: the 60 contexts of 2,000 to
120,000 characters of ``bench/glyph_geometry.py``.

Stages (mmconvert in this process, best of ``--repeat``): start-up (a whole ``mmconvert render``
of a one-word context: the interpreter, imports, fonts and run folder), layout
(``PageRenderer.layout``), raster (the page's text object drawn into a pixmap), PNG encoding,
and the rest of the whole process (run folder, rows, layout files and writes): the median
whole process less the others.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.glyph_geometry import contexts as long_contexts  # noqa: E402
from bench.runs import timed_render  # noqa: E402

# Glyph's pipeline in a process of its own: argv = checkout, font, contexts.jsonl, out folder
GLYPH_PROCESS = """
import importlib.util, json, sys
glyph, font, contexts, out = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("word2png_function",
                                              glyph + "/scripts/word2png_function.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
config = json.load(open(glyph + "/config/config_en.json"))
config["font-path"] = font
pages = 0
for line in open(contexts, encoding="utf-8"):
    row = json.loads(line)
    pages += len(module.text_to_images(row["context"], out, config_dict=dict(config),
                                       unique_id=row["id"]))
print(pages)
"""


def ten_contexts(glyph: Path) -> list[tuple[str, str]]:
    """Ten contexts of 1,500 to 9,600 words, each cut at word ends from one of Glyph's demo
    texts (spread offsets, whitespace kept as it is)."""
    texts = [(glyph / "demo" / "examples" / f"case{n}.txt").read_text(encoding="utf-8")
             for n in (2, 3, 4)]
    out = []
    for index, words in enumerate(range(1500, 9601, 900)):
        tokens = re.split(r"(\s+)", texts[index % len(texts)])
        start = (index * 1237) % max(1, len(tokens) - 2 * words - 2)
        start -= start % 2  # a word, not the whitespace after one
        out.append((f"ctx{index:02d}-{words}w", "".join(tokens[start:start + 2 * words]).strip()))
    return out


def run_glyph(python: str, glyph: Path, font: Path, items_file: Path,
              out: Path) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([python, "-c", GLYPH_PROCESS, str(glyph), str(font), str(items_file),
                           str(out)], capture_output=True, text=True, check=True)
    return time.perf_counter() - started, int(done.stdout.split()[-1])


def run_ours(items_file: Path, font: Path, out: Path, workers: int) -> tuple[float, int]:
    seconds, rows = timed_render([items_file, "--render", "context", "--style", "glyph",
                                  "--font", font, "--workers", workers], out)
    return seconds, sum(len(row["images"]) for row in rows)


def stages(items, font: Path, repeat: int) -> dict[str, float]:
    """Seconds of layout, raster and encoding over ``items`` in this process (best of
    ``repeat``), and the pages."""
    from mmconvert.items import Item
    from mmconvert.renderers.page import PageRenderer, RenderConfig

    renderer = PageRenderer(RenderConfig(corpus="contexts.jsonl", style="glyph",
                                         page={"font": [str(font)]}).page)
    objects = [Item(id=i, corpus="bench", subset="glyph", split="test", question="",
                    context=text) for i, text in items]
    renderer.render(objects[0], "context")  # fonts and caches warm, as in a run
    best: dict[str, float] = {}
    for _ in range(repeat):
        took = {"layout": 0.0, "raster": 0.0, "encode": 0.0}
        pages = 0
        for item in objects:
            started = time.perf_counter()
            layout = renderer.layout(item, "context")
            widths, heights = renderer.page_sizes(layout)
            laid = time.perf_counter()
            pixmaps = [renderer.draw(renderer.text_object(lines), width, height,
                                     renderer.options.ppi)
                       for lines, width, height in zip(layout.pages, widths, heights,
                                                       strict=True)]
            drawn = time.perf_counter()
            for pix in pixmaps:
                renderer.encode(pix, renderer.options.ppi)
            encoded = time.perf_counter()
            took["layout"] += laid - started
            took["raster"] += drawn - laid
            took["encode"] += encoded - drawn
            pages += len(pixmaps)
        if not best or sum(took.values()) < sum(best[k] for k in took):
            best = {**took, "pages": pages}
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--glyph", type=Path, required=True, help="a checkout of Glyph")
    parser.add_argument("--font", type=Path, help="the face both set (default: the "
                                                  "checkout's config/Verdana.ttf)")
    parser.add_argument("--set", choices=("ten", "long"), default="ten")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1, help="mmconvert's workers")
    parser.add_argument("--glyph-python", default=sys.executable,
                        help="the Python that has Glyph's requirements (default: this one)")
    args = parser.parse_args()
    glyph = args.glyph.resolve()
    font = (args.font or glyph / "config" / "Verdana.ttf").resolve()
    items = ten_contexts(glyph) if args.set == "ten" else long_contexts(glyph, 60)
    words = [len(text.split()) for _, text in items]
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {"glyph": [], "mmconvert": []}
    pages: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        items_file = tmp / "contexts.jsonl"
        items_file.write_text("".join(json.dumps({"id": i, "context": t}, ensure_ascii=False)
                                      + "\n" for i, t in items), encoding="utf-8")
        tiny = tmp / "tiny.jsonl"
        tiny.write_text(json.dumps({"id": "tiny", "context": "word"}) + "\n", encoding="utf-8")
        startup = []
        for round_ in range(args.repeat):
            order = ("glyph", "mmconvert") if round_ % 2 == 0 else ("mmconvert", "glyph")
            for who in order:
                if who == "glyph":
                    seconds, pages[who] = run_glyph(args.glyph_python, glyph, font, items_file,
                                                    tmp / f"glyph{round_}")
                else:
                    seconds, pages[who] = run_ours(items_file, font, tmp / f"ours{round_}",
                                                   args.workers)
                times[who].append(seconds)
            startup.append(run_ours(tiny, font, tmp / f"tiny{round_}", 1)[0])
    load_after = os.getloadavg()
    glyph_s, ours_s = (statistics.median(times[k]) for k in ("glyph", "mmconvert"))
    print(f"set {args.set}: {len(items)} contexts of {min(words):,}-{max(words):,} words "
          f"({sum(len(t) for _, t in items):,} characters); font {font.name}; "
          f"{os.cpu_count()} cores, load {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"pages: Glyph {pages['glyph']}, mmconvert {pages['mmconvert']}")
    for who in ("glyph", "mmconvert"):
        print(f"{who:>10}: " + ", ".join(f"{s:.2f}" for s in times[who])
              + f" s (median {statistics.median(times[who]):.2f} s, "
                f"{1000 * statistics.median(times[who]) / pages[who]:.1f} ms a page)")
    ratio = glyph_s / ours_s
    print(f"mmconvert --style glyph, {args.workers} worker(s), whole process: {ratio:.2f}x "
          f"Glyph's pipeline (median against median; goal >= 5x)")

    took = stages(items, font, args.repeat)
    n = took["pages"]
    start = statistics.median(startup)
    rest = ours_s - start - took["layout"] - took["raster"] - took["encode"]
    print(f"\nwhere mmconvert's {ours_s:.2f} s go ({n} pages; stages in this process, best of "
          f"{args.repeat}):")
    for name, seconds in (("start-up (one-word render, whole process)", start),
                          ("layout", took["layout"]), ("raster", took["raster"]),
                          ("PNG encoding", took["encode"]),
                          ("run folder, rows and writes (the rest)", rest)):
        print(f"  {name:<42} {seconds:6.3f} s {100 * seconds / ours_s:5.1f} %   "
              f"{1000 * seconds / n:6.2f} ms a page")
    print(f"layout per page {1000 * took['layout'] / n:.2f} ms against raster + encoding "
          f"{1000 * (took['raster'] + took['encode']) / n:.2f} ms "
          f"({'ok' if took['layout'] <= took['raster'] + took['encode'] else 'MISS'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
