"""How well a document's page size is estimated from its layout alone (issue 57, part 1: the
``Estimates`` a vision-budget search tries before it typesets). For short items at several
sizes, each page is laid out in the browser and not printed (``DocumentRenderer.page_edges``),
and its size estimated from the layout's edges (``edge_pixels``): as laid out; moved by the
renderer's usual offsets (``usual_offsets``), as the search first does; and moved by the
item's own offsets on its page at the first size (``pixel_edges``; the lower one scaled with
the size), as the search does where that first print disagrees. Each is compared with the
page printed, read back and cut, with the time of each.

    python bench/document_measure.py [--items 40] [--sizes 12,9,10.5,14.6,19.2]
                                     [--model qwen2.5-vl]

An estimate "meets" where the model's vision tokens for it equal the printed page's: what a
search needs of it (the size it keeps is printed and checked).
"""

from __future__ import annotations

import argparse
import collections
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.document_speed import short_item  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--sizes", default="12,9,10.5,14.6,19.2")
    parser.add_argument("--model", default="qwen2.5-vl")
    args = parser.parse_args()
    from mmconvert.items import Item
    from mmconvert.renderers.document import Bodies, DocumentRenderer
    from mmconvert.renderers.document import DocumentOptions as Options
    from mmconvert.vision_tokens import token_rule

    rule = token_rule(args.model)
    rng = random.Random(0)
    items = [Item(corpus="bench", subset="short", split="test", **short_item(rng, k))
             for k in range(args.items)]
    sizes = [float(s) for s in args.sizes.split(",")]
    bodies = Bodies()
    printed: dict[tuple[str, float], list[tuple[int, int]]] = {}
    edges: dict[tuple[str, float], tuple[float, float] | None] = {}
    print_ms: list[float] = []
    layout_ms: list[float] = []
    renderers = {size: DocumentRenderer(Options(font_size=size, crop="content"), None, bodies)
                 for size in sizes}
    for size, renderer in renderers.items():
        for item in items:
            started = time.perf_counter()
            printed[item.id, size] = renderer.pixel_sizes(item, "context")
            print_ms.append(1000 * (time.perf_counter() - started))
            started = time.perf_counter()
            edges[item.id, size] = renderer.page_edges(item, "context")
            layout_ms.append(1000 * (time.perf_counter() - started))
    first = sizes[0]
    modes = (("as laid out", "none"), ("moved by the usual offsets", "usual"),
             (f"moved by the offsets at {first:g} pt", "own"))
    for name, moved in modes:
        met = equal = total = 0
        off: collections.Counter = collections.Counter()
        for item in items:
            base = edges[item.id, first]
            if base is None or len(printed[item.id, first]) != 1:
                continue
            ink = renderers[first].pixel_edges(*printed[item.id, first][0])
            offsets = [0.0 if got is None or moved != "own" else got - laid
                       for got, laid in zip(ink, base, strict=True)]
            if moved == "usual":
                offsets = list(renderers[first].usual_offsets())
            for size in sizes[1:] if moved == "own" else sizes:
                laid = edges[item.id, size]
                if laid is None or len(printed[item.id, size]) != 1:
                    continue
                guess = renderers[size].edge_pixels(laid[0] + offsets[0],
                                                    laid[1] + offsets[1] * size / first)
                (width, height), total = printed[item.id, size][0], total + 1
                off[guess[0] - width, guess[1] - height] += 1
                equal += guess == (width, height)
                met += rule(*guess) == rule(width, height)
        print(f"{name}: pixel size equal {equal}/{total}, the same {args.model} tokens "
              f"{met}/{total}; (width, height) off by (estimated - printed, px): "
              f"{sorted(off.items())[:10]}")
    print(f"a typesetting (print, read back, cut): {statistics.median(print_ms):.1f} ms; "
          f"a layout: {statistics.median(layout_ms):.1f} ms (medians)")


if __name__ == "__main__":
    main()
