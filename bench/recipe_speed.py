"""Rendering in memory against the CLI, and recipe verification, as whole processes.

    python bench/recipe_speed.py [--items 300] [--recipes readbench,glyph,pixelworld]

For each recipe, the same items (the shipped MMLU-Redux sample's questions and options, with a
~300-word passage each, so a page holds real text) are drawn three ways, each in a fresh
process on one core, timed from the process's start (imports and the renderer's set-up
included) to its end:

- ``memory``: ``Drawer.draw(item).images()`` for every item (the row, each page's PNG, then
  the PNGs decoded: what ``load_recipe(NAME).render(item)`` did before ``Job.pictures``);
- ``render``: ``mmconvert.load_recipe(NAME).render(item)`` for every item, the pages drawn as
  Pillow images with no PNG (``Job.pictures``), checked pixel for pixel against ``memory``'s;
- ``cli``: ``mmconvert render ITEMS.jsonl --recipe NAME --out DIR`` (one worker), which also
  writes each PNG, the manifest and the run's records;
- ``transform``: a ``datasets.Dataset`` with ``recipe.transform()`` read row by row, as a
  training loader reads it.

Then ``mmconvert recipe verify`` on every shipped recipe, one process. Prints pages per second
and the ratio against the CLI, and checks that the in-memory pages are the CLI's, byte for byte.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "mmconvert" / "samples" / "mmlu-redux"
WORDS = ("the river rose three feet overnight and by morning the ferry had stopped while the "
         "lower road was under water and the baker on mill street sold bread from an upstairs "
         "window as the town waited for the water to fall").split()

MEMORY = textwrap.dedent("""
    import json, sys, time, hashlib
    start = time.perf_counter()
    import mmconvert
    recipe = mmconvert.load_recipe(sys.argv[1])
    items = [json.loads(line) for line in open(sys.argv[2])]
    drawer = recipe.drawer()
    pages, digest, pixels = 0, hashlib.sha256(), hashlib.sha256()
    for index, item in enumerate(items):
        drawn = drawer.draw(item, index)
        for image in drawn.images():
            pages += 1
            pixels.update(f"{image.mode} {image.size}".encode() + image.tobytes())
        for data in drawn.pages:
            digest.update(data)
    print(json.dumps({"pages": pages, "seconds": time.perf_counter() - start,
                      "sha256": digest.hexdigest(), "pixels": pixels.hexdigest()}))
""")

# ``recipe.render(item)``: the pages in memory (``Job.pictures``: no PNG made and read back)
RENDER = textwrap.dedent("""
    import json, sys, time, hashlib
    start = time.perf_counter()
    import mmconvert
    recipe = mmconvert.load_recipe(sys.argv[1])
    items = [json.loads(line) for line in open(sys.argv[2])]
    pages, pixels = 0, hashlib.sha256()
    for index, item in enumerate(items):
        for image in recipe.render(item):
            pages += 1
            pixels.update(f"{image.mode} {image.size}".encode() + image.tobytes())
    print(json.dumps({"pages": pages, "seconds": time.perf_counter() - start,
                      "pixels": pixels.hexdigest()}))
""")

TRANSFORM = textwrap.dedent("""
    import json, sys, time
    start = time.perf_counter()
    import datasets, mmconvert
    recipe = mmconvert.load_recipe(sys.argv[1])
    rows = [json.loads(line) for line in open(sys.argv[2])]
    columns = {key: [row.get(key) for row in rows] for key in ("id", "question", "context")}
    options = [row.get("options") or [] for row in rows]
    answers = [str(row.get("answer", "")) for row in rows]
    dataset = datasets.Dataset.from_dict({**columns, "options": options, "answer": answers})
    dataset = dataset.with_transform(recipe.transform())
    pages = sum(len(dataset[i]["images"]) for i in range(len(dataset)))
    print(json.dumps({"pages": pages, "seconds": time.perf_counter() - start}))
""")


def items(count: int) -> list[dict]:
    """The sample's MCQ items, each with a passage of ~300 words, cycled to ``count``."""
    import csv

    found = []
    for path in sorted(SAMPLE.glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row.get("question") and row.get("choices"):
                    found.append(row)
    out = []
    for index in range(count):
        row = found[index % len(found)]
        choices = ast.literal_eval(row["choices"])
        passage = " ".join(WORDS[(index * 7 + k) % len(WORDS)] for k in range(300))
        out.append({"id": f"bench-{index:05d}", "context": passage.capitalize() + ".",
                    "question": row["question"], "options": [str(c) for c in choices][:4],
                    "answer": "A"})
    return out


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])}...: {done.stderr[-800:]}")
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--recipes", default="readbench,glyph,pixelworld,deepseek-ocr-base")
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    if "TIKTOKEN_CACHE_DIR" not in env:  # vtcbench-ratio counts o200k tokens: litellm's files
        sys.path.insert(0, str(ROOT))
        from tests.test_stats import tiktoken_files

        env["TIKTOKEN_CACHE_DIR"] = tiktoken_files()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "items.jsonl"
        data.write_text("".join(json.dumps(item) + "\n" for item in items(args.items)))
        print(f"{args.items} items (MMLU-Redux sample's questions and options, a ~300-word "
              "passage each), one process each, one core")
        print(f"{'recipe':20} {'pages':>6} {'memory p/s':>11} {'render p/s':>11} "
              f"{'cli p/s':>8} {'transform p/s':>14} {'render/memory':>14} {'memory/cli':>11}"
              "  same bytes  same pixels")
        for name in args.recipes.split(","):
            seconds, out = timed([sys.executable, "-c", MEMORY, name, str(data)], env)
            memory = json.loads(out)
            render_seconds, out = timed([sys.executable, "-c", RENDER, name, str(data)], env)
            render = json.loads(out)
            run = Path(tmp) / f"run-{name}"
            cli, _ = timed([sys.executable, "-m", "mmconvert", "render", str(data), "--recipe",
                            name, "--out", str(run), "--workers", "1"], env)
            rows = [json.loads(line) for line in (run / "manifest.jsonl").read_text()
                    .splitlines()]
            import hashlib

            digest = hashlib.sha256()
            pages = 0
            for row in sorted(rows, key=lambda r: r["id"]):
                for entry in row["images"]:
                    if entry["role"] in ("page", "prompt"):
                        digest.update((run / entry["path"]).read_bytes())
                        pages += 1
            _, out = timed([sys.executable, "-c", TRANSFORM, name, str(data)], env)
            transform = json.loads(out)
            rate = memory["pages"] / seconds
            in_memory = render["pages"] / render_seconds
            print(f"{name:20} {memory['pages']:>6} {rate:>11.1f} {in_memory:>11.1f} "
                  f"{pages / cli:>8.1f} {transform['pages'] / transform['seconds']:>14.1f} "
                  f"{in_memory / rate:>13.2f}x {rate / (pages / cli):>10.2f}x  "
                  f"{'yes' if digest.hexdigest() == memory['sha256'] else 'NO':>10}  "
                  f"{'yes' if render['pixels'] == memory['pixels'] else 'NO':>11}")
        from mmconvert.recipes import shipped

        seconds, out = timed([sys.executable, "-m", "mmconvert", "recipe", "verify",
                              *shipped()], env)
        print(f"\nmmconvert recipe verify (all {len(shipped())} shipped): {seconds:.1f} s")
        print(out.rstrip())


if __name__ == "__main__":
    main()
