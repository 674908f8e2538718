"""The document renderer's vision-budget search, as whole processes on one worker (issue 57,
part 1): short items (a table, code and a formula each, ``bench/document_speed.py``'s) cut to
their text, drawn plain and at budgets for a model's rule (Qwen2.5-VL's by default); the time
against the plain cut, the typesettings an item, and how many met the budget exactly.

    python bench/document_target.py [--items 40] [--budgets 400,256] [--repeat 2]
                                    [--ratio-model qwen3-vl]

Each time is the best of ``--repeat`` processes. Run it in a worktree of another commit for a
same-run baseline (it renders with the tree it is in).
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

from bench.document_speed import short_item  # noqa: E402
from bench.runs import timed_render  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--budgets", default="400,256")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--ratio-model", default="qwen2.5-vl")
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        items = tmp / "short.jsonl"
        items.write_text("".join(json.dumps(short_item(rng, k)) + "\n"
                                 for k in range(args.items)))

        def render(out: Path, *extra: str) -> tuple[float, list[dict]]:
            """The best of ``--repeat`` runs (``timed_render``: each into a new folder), and
            the rows of the last."""
            runs = [timed_render([items, "--renderer", "document", "--workers", "1", "--crop",
                                  "content", *extra], out) for _ in range(args.repeat)]
            return min(seconds for seconds, _ in runs), runs[-1][1]

        cut, _ = render(tmp / "cut")
        print(f"{args.items} short items cut to their text: {cut:.1f} s")
        for budget in args.budgets.split(","):
            seconds, rows = render(tmp / "budget", "--vision-budget", budget, "--ratio-model",
                                   args.ratio_model)
            targets = [row["target"] for row in rows]
            layouts = [t["layouts"] for t in targets]
            laid = [t.get("estimated", 0) for t in targets]
            print(f"  --vision-budget {budget}: {seconds:.1f} s, {seconds / cut:.2f}x the cut; "
                  f"typesettings an item {sum(layouts) / len(layouts):.1f} (at most "
                  f"{max(layouts)}), layouts {sum(laid) / len(laid):.1f}; exact "
                  f"{sum(bool(t.get('exact')) for t in targets)}/"
                  f"{len(targets)}, width moved {sum('page_width' in t for t in targets)}")


if __name__ == "__main__":
    main()
