"""The document renderer's speed and fidelity, whole process, one worker.

    python bench/document_speed.py [--short 200] [--long 10]

1. Chromium's start-up (launch, a context and a page), apart.
2. SHORT short items (a table and a code block each, with a formula): ``mmconvert render
   --renderer document`` as a whole process on one worker: items/s and pages/s (goal: 30
   short items a second a worker), against the same command on one item (the fixed cost:
   the interpreter, imports and the browser's start).
3. LONG Markdown documents of about 8,000 words (headings, paragraphs, lists, a table, code):
   pages/s.
4. The short items again with a vision budget (``--vision-budget 400 --ratio-model
   qwen2.5-vl``, pages cut to their text), against the same cut without one: the cost of the
   font-size search, which typesets (never draws) each size it tries.
5. Fidelity: ``mmconvert qa check --checks text_layer`` on the short items and 40 documents of
   our own mixing tables, code and math: items and characters checked, defects.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.runs import WORDS, paragraph  # noqa: E402

FORMULAS = ["\\frac{a+b}{2}", "\\sum_{i=1}^{n} x_i^2", "\\sqrt{x^2 + y^2}", "e^{i\\pi} + 1 = 0",
            "\\int_0^\\infty e^{-x}\\,dx = 1", "\\alpha \\beta \\gamma", "\\mathbf{A}x = b",
            "\\lim_{n \\to \\infty} (1 + 1/n)^n"]


def short_item(rng: random.Random, k: int) -> dict:
    rows = "".join(f"| {rng.choice(WORDS)} | {rng.randint(0, 99)}.{rng.randint(0, 9)} |\n"
                   for _ in range(3))
    code = (f"```python\ndef f{k}(x):\n    return x * {rng.randint(2, 9)}  "
            f"# {rng.choice(WORDS)}\n```")
    return {"id": f"s{k:05d}", "question": "Which row is largest?", "answer": "x",
            "context": (f"| name | value |\n|:--|--:|\n{rows}\n{code}\n\n"
                        f"With ${rng.choice(FORMULAS)}$.")}


def long_item(rng: random.Random, k: int, words: int = 8000) -> dict:
    parts, count = [], 0
    while count < words:
        block = rng.random()
        if block < 0.08:
            text = f"## {' '.join(rng.choices(WORDS, k=4)).capitalize()}"
        elif block < 0.16:
            text = "\n".join(f"- {' '.join(rng.choices(WORDS, k=8))}" for _ in range(4))
        elif block < 0.2:
            text = f"$${rng.choice(FORMULAS)}$$"
        else:
            text = paragraph(rng)
        parts.append(text)
        count += len(text.split())
    return {"id": f"l{k:03d}", "question": "What is it about?", "answer": "x",
            "context": "\n\n".join(parts)}


def render(source: Path, out: Path, *extra) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mmconvert", "render", str(source), "--renderer",
                    "document", "--render", "context", "--out", str(out), "--overwrite",
                    *extra], check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def pages(out: Path) -> int:
    return sum(len(json.loads(line)["images"])
               for line in (out / "manifest.jsonl").read_text(encoding="utf-8").split("\n")
               if line)


def startup() -> float:
    from mmconvert.renderers.document.browser import Browser

    started = time.perf_counter()
    browser = Browser()
    browser.ready()
    seconds = time.perf_counter() - started
    browser.close()
    return seconds


def fidelity(out: Path) -> tuple[int, int, int]:
    subprocess.run([sys.executable, "-m", "mmconvert", "qa", "check", str(out), "--checks",
                    "text_layer"], check=True, capture_output=True, cwd=ROOT)
    events = [json.loads(line) for line in (out / "qa.jsonl").read_text().split("\n") if line]
    layer = [e for e in events if e["source"] == "auto:text_layer"]
    return (len(layer), sum(e["detail"].get("chars", 0) for e in layer),
            sum(e["verdict"] != "accept" for e in layer))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=200)
    parser.add_argument("--long", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(0)
    print(f"Chromium start-up (launch, context, page): {startup():.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        short = tmp / "short.jsonl"
        short.write_text("".join(json.dumps(short_item(rng, k)) + "\n"
                                 for k in range(args.short)))
        one = tmp / "one.jsonl"
        one.write_text(short.read_text().split("\n", 1)[0] + "\n")
        fixed = render(one, tmp / "one")
        seconds = render(short, tmp / "short")
        made = pages(tmp / "short")
        per = (seconds - fixed) / max(1, args.short - 1)
        print(f"{args.short} short items (table, code, formula), one worker: {seconds:.1f} s "
              f"whole process, {args.short / seconds:.1f} items/s, {made / seconds:.1f} "
              f"pages/s; one item alone {fixed:.1f} s, so {1 / per:.1f} items/s past the "
              "start (goal 30)")
        budget = ("--vision-budget", "400", "--ratio-model", "qwen2.5-vl", "--crop", "content")
        cut = render(short, tmp / "cut", "--crop", "content")
        aimed = render(short, tmp / "budget", *budget)
        targets = [json.loads(line)["target"] for line in
                   (tmp / "budget" / "manifest.jsonl").read_text(encoding="utf-8").split("\n")
                   if line]
        print(f"the same with a vision budget (400 qwen2.5-vl tokens, pages cut to the text): "
              f"{aimed:.1f} s against {cut:.1f} s cut without one, "
              f"{sum(t['layouts'] for t in targets) / len(targets):.1f} typesettings an item, "
              f"{sum(t['within'] for t in targets)} of {len(targets)} within 5 %")
        long = tmp / "long.jsonl"
        long.write_text("".join(json.dumps(long_item(rng, k)) + "\n" for k in range(args.long)))
        seconds = render(long, tmp / "long")
        made = pages(tmp / "long")
        print(f"{args.long} Markdown documents of ~8,000 words: {made} pages in {seconds:.1f} s, "
              f"{made / seconds:.1f} pages/s")
        mixed = tmp / "mixed.jsonl"
        mixed.write_text("".join(json.dumps(long_item(rng, k, words=600)) + "\n"
                                 for k in range(40)))
        render(mixed, tmp / "mixed")
        for name in ("short", "mixed"):
            items, chars, defects = fidelity(tmp / name)
            print(f"fidelity ({name}): {items} items, {chars:,} characters checked in the "
                  f"text layer, {defects} defect(s)")


if __name__ == "__main__":
    main()
