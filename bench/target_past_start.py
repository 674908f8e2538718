"""The page renderer's vision-budget search past the start (issue 57, part 1): the MMLU-Redux
option blocks of ``../shared/data`` rendered plain and at budgets, as whole processes on one
worker, on ``--copies`` copies less ``--less`` copies (``bench/io_speed.py``'s items, distinct
ids), so that what a process pays once (the interpreter, imports, fonts, run.json) cancels
out; each time the best of ``--repeat``.

    python bench/target_past_start.py [--copies 9] [--less 3] [--budgets 256,400]
                                      [--ratio-model qwen2.5-vl] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.io_speed import items  # noqa: E402
from bench.runs import timed_render  # noqa: E402


def page_pixels(rows: list[dict]) -> float:
    """The mean width x height of the pages of a run's ``rows``."""
    sizes = [image["width"] * image["height"] for row in rows for image in row["images"]]
    return sum(sizes) / len(sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--copies", type=int, default=9)
    parser.add_argument("--less", type=int, default=3)
    parser.add_argument("--budgets", default="256,400")
    parser.add_argument("--ratio-model", default="qwen2.5-vl")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    budgets = args.budgets.split(",")
    best: dict[tuple[int, str], float] = {}
    made: dict[str, float] = {}  # the mean pixels of a page of each run
    with tempfile.TemporaryDirectory() as tmp:
        for copies in (args.less, args.copies):
            source = Path(tmp) / f"items-{copies}.jsonl"
            source.write_text("".join(json.dumps(row) + "\n"
                                      for row in items(args.data, copies)), encoding="utf-8")
            for number in range(args.repeat):  # alternated, the best of each kept
                for budget in ("plain", *budgets):
                    extra = [] if budget == "plain" else [
                        "--vision-budget", budget, "--ratio-model", args.ratio_model]
                    seconds, rows = timed_render([source, "--workers", "1", *extra],
                                                 Path(tmp) / f"run-{copies}-{budget}")
                    key = (copies, budget)
                    best[key] = min(best.get(key, float("inf")), seconds)
                    if copies == args.copies and number == 0:
                        made[budget] = page_pixels(rows)
    plain = best[args.copies, "plain"] - best[args.less, "plain"]
    print(f"plain: {best[args.copies, 'plain']:.2f} s on {args.copies} copies, "
          f"{best[args.less, 'plain']:.2f} s on {args.less}: {plain:.2f} s past the start")
    print("pixels a page (what a page costs to draw and encode): " + ", ".join(
        f"{budget} {made[budget]:,.0f}" for budget in ("plain", *budgets)))
    for budget in budgets:
        past = best[args.copies, budget] - best[args.less, budget]
        whole = best[args.copies, budget] / best[args.copies, "plain"]
        print(f"--vision-budget {budget} --ratio-model {args.ratio_model}: {past:.2f} s past "
              f"the start, {past / plain:.2f}x the plain render ({whole:.2f}x as a whole "
              f"process on {args.copies} copies) [{'ok' if past / plain <= 2 else 'MISS'}]")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)")
