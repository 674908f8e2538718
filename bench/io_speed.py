"""Whole-process speed of rendering MMLU-Redux option blocks on one worker, against the
ReadBench-style Pillow baseline as a whole process too (issue 18, part 4).

    python bench/io_speed.py [--data ../shared/data] [--copies 3] [--repeat 3]

The items are the MMLU-Redux rows of ``../shared/data`` (185), ``--copies`` times over with
distinct ids (555 by default). mmconvert: ``mmconvert render items.jsonl --workers 1`` into a
fresh folder (manifest, PNGs, layouts, run.json, all atomic). Baseline: a process that imports
Pillow and writes each item's pages with ``Image.save`` (no manifest, no fsync). Best of
``--repeat``; items/s over the whole process, start-up included; the target is 2.5x.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.render_speed import BASELINE_PROCESS  # noqa: E402


def items(data: Path, copies: int) -> list[dict]:
    from mmconvert.corpora import LoadReport, LoadRequest, resolve

    loaded = list(resolve("mmlu-redux").load(  # an iterator, read once: held for the copies
        LoadRequest(source=data / "mmlu-redux" / "mmlu_redux"), LoadReport()))
    return [{"id": f"{item.id}-{copy}", "question": item.question, "options": item.options,
             "answer": item.answer} for copy in range(copies) for item in loaded]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = items(args.data, args.copies)
    best = {"mmconvert": float("inf"), "baseline": float("inf")}
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "items.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        script = BASELINE_PROCESS.format(bench=str(ROOT / "bench"), ppi=92.9)
        for number in range(args.repeat):
            best["mmconvert"] = min(best["mmconvert"], timed(
                [sys.executable, "-m", "mmconvert", "render", str(source), "--workers", "1",
                 "--out", str(Path(tmp) / f"run-{number}")]))
            best["baseline"] = min(best["baseline"], timed(
                [sys.executable, "-c", script, str(source), "options",
                 str(Path(tmp) / f"pil-{number}")]))
    print(f"{len(rows)} MMLU-Redux option blocks, one worker, whole processes, best of "
          f"{args.repeat}")
    for name, seconds in best.items():
        print(f"{name:<10} {seconds:6.2f} s  {len(rows) / seconds:7.1f} items/s")
    ratio = best["baseline"] / best["mmconvert"]
    print(f"\n[{'ok' if ratio >= 2.5 else 'MISS'}] mmconvert {ratio:.2f}x the Pillow baseline "
          "(target >= 2.5x)")


if __name__ == "__main__":
    main()
