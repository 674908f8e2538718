"""Pages of ``mmconvert render --style glyph`` against Glyph's own ``text_to_images`` on the same
long contexts, and the time each takes.

    pip install reportlab pdf2image tqdm && apt-get install poppler-utils   # Glyph's needs
    python bench/glyph_geometry.py --glyph PATH/TO/Glyph [--font PATH.ttf] [--items 60]

Glyph (github.com/thu-coai/Glyph) sets text with reportlab's platypus (a SimpleDocTemplate whose
frame has 6 pt padding inside the margins, one Paragraph per 30 source lines joined by
``<br/>``), rasterises the PDF with pdf2image (poppler) at the config's dpi and crops each page
10 px right of its rightmost ink and the last page 10 px below its lowest ink. Its
``config/config_en.json`` is used as it is, with ``font-path`` set to ``--font`` (default:
the Verdana.ttf of the checkout, the face Glyph ships), which mmconvert takes as ``--font``.

The contexts: windows of 2,000 to 120,000 characters, cut at line ends, of the long texts
Glyph's checkout ships for its demo (``demo/examples/*.txt``, ``scripts/input.txt``).

Prints: items, items with the same page count, pages compared, pages whose width and height
are both within a line's height (the config's line-height, in pixels at its dpi) or 3 %, the
largest differences, and seconds per page: Glyph's function in this process, and
``mmconvert render`` as a whole process (start-up included), with the glyph style and with
the default (readbench) style at the same PPI.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.runs import timed_render  # noqa: E402

LENGTHS = (2_000, 5_000, 10_000, 20_000, 40_000, 80_000, 120_000)


def contexts(glyph: Path, count: int) -> list[tuple[str, str]]:
    """(id, text) windows of the checkout's long texts, of ``LENGTHS`` characters from spread
    offsets, cut at a line end (or, in a text without one there, a space)."""
    sources = sorted((glyph / "demo" / "examples").glob("*.txt")) + [glyph / "scripts" /
                                                                      "input.txt"]
    texts = [p.read_text(encoding="utf-8") for p in sources if p.is_file()]
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    n = 0
    while len(out) < count and n < 50 * count:
        text = texts[n % len(texts)]
        length = LENGTHS[(n // len(texts)) % len(LENGTHS)]
        start = (n * 7919) % max(1, len(text) - length)
        cut = max(text.rfind("\n", 0, start), text.rfind(" ", 0, start))
        start = cut + 1 if cut >= 0 else 0
        end = min(len(text), start + length)
        stop = text.rfind("\n", start + length // 2, end)
        stop = stop if stop > 0 else (text.rfind(" ", start + length // 2, end)
                                      if end < len(text) else end)
        window = text[start:stop if stop > start else end].strip()
        n += 1
        if window and window not in seen:
            seen.add(window)
            out.append((f"ctx{len(out):03d}-{len(window)}", window))
    return out


def run_glyph(glyph: Path, font: Path, items, out: Path) -> tuple[dict[str, list], float]:
    spec = importlib.util.spec_from_file_location("word2png_function",
                                                  glyph / "scripts" / "word2png_function.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = json.loads((glyph / "config" / "config_en.json").read_text())
    config["font-path"] = str(font)
    from PIL import Image

    sizes: dict[str, list] = {}
    started = time.perf_counter()
    for item_id, text in items:
        paths = module.text_to_images(text, str(out), config_dict=dict(config),
                                      unique_id=item_id)
        sizes[item_id] = [Image.open(p).size for p in paths]
    return sizes, time.perf_counter() - started


def run_mmconvert(items_file: Path, out: Path, *args: str) -> tuple[dict[str, list], float]:
    seconds, rows = timed_render([items_file, "--render", "context", *args], out)
    return {row["id"]: [(image["width"], image["height"]) for image in row["images"]]
            for row in rows}, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--glyph", type=Path, required=True, help="a checkout of Glyph")
    parser.add_argument("--font", type=Path, help="the face both set (default: the "
                                                  "checkout's config/Verdana.ttf)")
    parser.add_argument("--items", type=int, default=60)
    args = parser.parse_args()
    font = (args.font or args.glyph / "config" / "Verdana.ttf").resolve()
    items = contexts(args.glyph, args.items)
    config = json.loads((args.glyph / "config" / "config_en.json").read_text())
    line = config["line-height"] * config["dpi"] / 72  # a line's height in pixels
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        items_file = tmp / "contexts.jsonl"
        items_file.write_text("".join(json.dumps({"id": i, "context": t}, ensure_ascii=False)
                                      + "\n" for i, t in items), encoding="utf-8")
        theirs, glyph_seconds = run_glyph(args.glyph, font, items, tmp / "glyph")
        ours, our_seconds = run_mmconvert(items_file, tmp / "styled", "--style", "glyph",
                                          "--font", str(font))
        plain, plain_seconds = run_mmconvert(items_file, tmp / "plain", "--ppi",
                                             str(config["dpi"]))
    same = [i for i, _ in items if len(ours[i]) == len(theirs[i])]
    pages = within = 0
    worst_w = worst_h = 0.0
    outside = []
    for item_id, _ in items:
        pairs = zip(ours[item_id], theirs[item_id], strict=False)  # counts may differ
        for number, ((w, h), (gw, gh)) in enumerate(pairs, start=1):
            pages += 1
            dw, dh = abs(w - gw), abs(h - gh)
            worst_w, worst_h = max(worst_w, dw / gw), max(worst_h, dh)
            if (dw <= line or dw <= 0.03 * gw) and (dh <= line or dh <= 0.03 * gh):
                within += 1
            else:
                outside.append(f"{item_id} p{number}: ours {w}x{h}, Glyph's {gw}x{gh}")
    glyph_pages = sum(len(v) for v in theirs.values())
    our_pages = sum(len(v) for v in ours.values())
    plain_pages = sum(len(v) for v in plain.values())
    print(f"font: {font.name}; {len(items)} contexts of {min(len(t) for _, t in items):,}-"
          f"{max(len(t) for _, t in items):,} characters "
          f"({sum(len(t) for _, t in items):,} in all)")
    print(f"same page count: {len(same)}/{len(items)} ({100 * len(same) / len(items):.1f} %); "
          f"pages: Glyph {glyph_pages}, mmconvert {our_pages}")
    print(f"pages compared: {pages}; width and height within a line ({line:g} px) or 3 %: "
          f"{within} ({100 * within / max(pages, 1):.1f} %); largest width difference "
          f"{100 * worst_w:.2f} %, largest height difference {worst_h:g} px")
    for entry in outside[:12]:
        print("  outside:", entry)
    for item_id, _ in items:
        if len(ours[item_id]) != len(theirs[item_id]):
            print(f"  page count: {item_id}: ours {len(ours[item_id])}, Glyph's "
                  f"{len(theirs[item_id])}")
    per_glyph = glyph_seconds / glyph_pages
    per_ours = our_seconds / our_pages
    per_plain = plain_seconds / plain_pages
    print(f"seconds a page: Glyph's text_to_images {1000 * per_glyph:.1f} ms "
          f"({glyph_seconds:.1f} s); mmconvert --style glyph, whole process "
          f"{1000 * per_ours:.1f} ms ({our_seconds:.1f} s): {per_glyph / per_ours:.1f}x")
    print(f"readbench style at {config['dpi']} PPI, whole process: {1000 * per_plain:.1f} ms a "
          f"page ({plain_pages} pages, {plain_seconds:.1f} s); glyph style / readbench a page: "
          f"{per_ours / per_plain:.2f}; a character: "
          f"{(our_seconds / plain_seconds):.2f}")
    print(f"workers: mmconvert's default ({os.cpu_count()} cores here); Glyph's function "
          "runs in this one process")


if __name__ == "__main__":
    main()
