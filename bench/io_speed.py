"""Whole-process speed of rendering MMLU-Redux option blocks on one worker, against the
ReadBench-style Pillow baseline as a whole process too (issue 18, part 4).

    python bench/io_speed.py [--data ../shared/data] [--copies 3] [--repeat 3]
    python bench/io_speed.py --copies 9 --less 3    # past the start (issue 57, part 5)

The items are the MMLU-Redux rows of ``../shared/data`` (185), ``--copies`` times over with
distinct ids (555 by default). mmconvert: ``mmconvert render items.jsonl --workers 1`` into a
fresh folder (manifest, PNGs, layouts, run.json, all atomic). Baseline: a process that imports
Pillow and writes each item's pages with ``Image.save`` (no manifest, no fsync). Best of
``--repeat``; items/s over the whole process, start-up included; the target is 2.5x.

``--less N`` measures past the start instead: each side's best time on ``--copies`` less its
best time on ``N`` copies, so that what a process pays once (the interpreter, imports, fonts,
run.json) cancels out; the ratio of those differences is the speed-up on the pages themselves
(issue 57's goal: 10x).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.render_speed import BASELINE_PROCESS  # noqa: E402
from bench.runs import timed  # noqa: E402


def items(data: Path, copies: int) -> list[dict]:
    from mmconvert.corpora import LoadReport, LoadRequest, resolve

    loaded = list(resolve("mmlu-redux").load(  # an iterator, read once: held for the copies
        LoadRequest(source=data / "mmlu-redux" / "mmlu_redux"), LoadReport()))
    return [{"id": f"{item.id}-{copy}", "question": item.question, "options": item.options,
             "answer": item.answer} for copy in range(copies) for item in loaded]


def best_times(sets: dict[str, list[dict]], repeat: int) -> dict[str, dict[str, float]]:
    """Each side's best seconds on each set of rows, over ``repeat`` rounds of alternated whole
    processes. Every folder is kept until the end: ext4 makes a file slowly for a minute or
    more after many were deleted near it (its inode search skips recently deleted inodes),
    so a folder removed between runs would slow the runs after it."""
    best = {label: {"mmconvert": float("inf"), "baseline": float("inf")} for label in sets}
    with tempfile.TemporaryDirectory() as tmp:
        sources = {}
        for label, rows in sets.items():
            sources[label] = Path(tmp) / f"{label}.jsonl"
            sources[label].write_text("".join(json.dumps(r) + "\n" for r in rows),
                                      encoding="utf-8")
        script = BASELINE_PROCESS.format(bench=str(ROOT / "bench"), ppi=92.9)
        for number in range(repeat):
            for label, source in sources.items():
                times = best[label]
                times["mmconvert"] = min(times["mmconvert"], timed(
                    [sys.executable, "-m", "mmconvert", "render", str(source), "--workers",
                     "1", "--out", str(Path(tmp) / f"run-{label}-{number}")]))
                times["baseline"] = min(times["baseline"], timed(
                    [sys.executable, "-c", script, str(source), "options",
                     str(Path(tmp) / f"pil-{label}-{number}")]))
    return best


def stages(rows: list[dict], repeat: int) -> dict[str, float]:
    """Seconds of layout, raster and PNG encoding of ``rows``' option blocks in this process,
    one after another (in a run the encoding goes on two threads beside the drawing), best of
    ``repeat``: what is left of a run's time past the start is the engine's (rows, files,
    the manifest)."""
    from mmconvert.items import Item
    from mmconvert.renderers.page import PageOptions, PageRenderer

    renderer = PageRenderer(PageOptions(ppi=92.9))
    objects = [Item(id=r["id"], corpus="bench", subset="mmlu", split="test",
                    question=r["question"], options=r["options"]) for r in rows]
    renderer.render(objects[0], "options")  # fonts and caches warm, as in a run
    best: dict[str, float] = {}
    for _ in range(repeat):
        took = {"layout": 0.0, "raster": 0.0, "encode": 0.0}
        for item in objects:
            started = time.perf_counter()
            _, texts, widths, heights = renderer.laid_out(item, "options")
            laid = time.perf_counter()
            pixmaps = [renderer.draw_page(text, width, height, 92.9)
                       for text, width, height in zip(texts, widths, heights, strict=True)]
            drawn = time.perf_counter()
            for pix in pixmaps:
                renderer.encode(pix, 92.9)
            took["layout"] += laid - started
            took["raster"] += drawn - laid
            took["encode"] += time.perf_counter() - drawn
        if not best or sum(took.values()) < sum(best.values()):
            best = took
    return best


def past_start(args) -> None:
    many, few = items(args.data, args.copies), items(args.data, args.less)
    best = best_times({"many": many, "few": few}, args.repeat)
    big, small = best["many"], best["few"]
    extra = len(many) - len(few)
    print(f"MMLU-Redux option blocks, one worker, whole processes, best of {args.repeat}: "
          f"{len(many)} items less {len(few)} (load {os.getloadavg()[0]:.2f})")
    for name in big:
        past = big[name] - small[name]
        print(f"{name:<10} {big[name]:6.2f} s - {small[name]:6.2f} s = {past:6.2f} s  "
              f"{extra / past:7.1f} items/s past the start")
    ours = big["mmconvert"] - small["mmconvert"]
    took = stages(many[:extra], args.repeat)
    print(f"\nwhere mmconvert's {ours:.2f} s past the start go, a page at a time in this "
          f"process ({extra} items):")
    for name, seconds in took.items():
        print(f"  {name:<8} {seconds:6.2f} s  {1000 * seconds / extra:6.3f} ms an item")
    rest = ours - sum(took.values())
    print(f"  {'the rest':<8} {rest:6.2f} s  {1000 * rest / extra:6.3f} ms an item (the run: "
          "rows, files, manifest; less the encoding done beside the drawing)")
    ratio = (big["baseline"] - small["baseline"]) / ours
    print(f"\n[{'ok' if ratio >= 10 else 'MISS'}] past the start, mmconvert {ratio:.2f}x the "
          "Pillow baseline (target >= 10x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--less", type=int, help="past the start: less this many copies")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.less is not None:
        past_start(args)
        return
    rows = items(args.data, args.copies)
    best = best_times({"all": rows}, args.repeat)["all"]
    print(f"{len(rows)} MMLU-Redux option blocks, one worker, whole processes, best of "
          f"{args.repeat}")
    for name, seconds in best.items():
        print(f"{name:<10} {seconds:6.2f} s  {len(rows) / seconds:7.1f} items/s")
    ratio = best["baseline"] / best["mmconvert"]
    print(f"\n[{'ok' if ratio >= 2.5 else 'MISS'}] mmconvert {ratio:.2f}x the Pillow baseline "
          "(target >= 2.5x)")


if __name__ == "__main__":
    main()
