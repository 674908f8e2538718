"""Speed and peak memory of exporting 10,000 items to Hugging Face parquet.

    python bench/export_speed.py [--items 10000] [--formats hf,vlmevalkit,jsonl]

Builds a run folder of ``--items`` items from real renders: the shared MMLU-Redux sample (option
blocks, one small page each) and 40 generated long contexts (2,500 words, four full pages each),
repeated under new ids until the count is reached (images hard-linked, so the folder costs little
disk). Then, each in a fresh process, times ``mmconvert export --format hf`` (streaming: row
groups of about 64 MiB) and the baseline a user would write by hand: every row with its image
bytes in a list, ``datasets.Dataset.from_list(...).to_parquet(...)``. Prints wall time, peak RSS
and rows/s, then the other formats' times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sweep_speed import REDUX, long_corpus  # noqa: E402
from mmconvert.manifest import JsonlLog  # noqa: E402

BASELINE = """
import json, sys, resource, time
from pathlib import Path
import datasets
from mmconvert.exporters.hf import features
datasets.disable_progress_bars()
run, out = Path(sys.argv[1]), Path(sys.argv[2])
started = time.perf_counter()
records = []
for line in open(run / "manifest.jsonl", encoding="utf-8"):
    row = json.loads(line)
    images = [{"bytes": (run / i["path"]).read_bytes(), "path": Path(i["path"]).name}
              for i in row["images"]]
    answer = row.get("answer")
    answers = [str(a) for a in answer] if isinstance(answer, list) else [str(answer)]
    records.append({"id": row["id"], "corpus": row["corpus"], "subset": row["subset"],
                    "split": row["split"], "language": row["language"], "category": "",
                    "renderer": "page", "images": images, "text_only_images": [],
                    "prompt": row["prompt"], "text_prompt": row["text_prompt"],
                    "question": row.get("question"), "context": row.get("context"),
                    "options": row.get("options") or [], "answer": answers[0],
                    "answers": answers, "metadata": json.dumps(row.get("metadata")),
                    "manifest_row": json.dumps({k: v for k, v in row.items() if k != "images"})})
dataset = datasets.Dataset.from_list(records, features=features())
out.mkdir(parents=True)
dataset.to_parquet(str(out / "test.parquet"))
print(json.dumps({"seconds": time.perf_counter() - started,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

OURS = """
import json, sys, resource, time
from mmconvert.exporters import export
started = time.perf_counter()
summary = export(sys.argv[1], sys.argv[3], sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - started, "items": summary.exported,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build_run(folder: Path, items: int, work: Path) -> tuple[int, int]:
    """A page run of ``items`` items made of real renders; (images, image bytes)."""
    for args in (["mmlu-redux", "--source", REDUX],
                 [long_corpus(work / "long.jsonl", 40, 2500), "--render", "context"]):
        out = work / Path(str(args[0])).stem
        subprocess.run([sys.executable, "-m", "mmconvert", "render", *map(str, args), "--out",
                        str(out), "--no-progress"], check=True, stderr=subprocess.DEVNULL)
    sources = [(work / name, row) for name in ("mmlu-redux", "long")
               for row in JsonlLog(work / name / "manifest.jsonl").read()]
    (folder / "images").mkdir(parents=True)
    shutil.copy(work / "mmlu-redux" / "run.json", folder / "run.json")
    images = size = 0
    with open(folder / "manifest.jsonl", "w", encoding="utf-8") as manifest:
        for n in range(items):
            run, row = sources[n % len(sources)]
            row = json.loads(json.dumps(row))
            row["id"] = f"{row['id']}-r{n:05d}"
            for index, image in enumerate(row["images"]):
                rel = f"images/{row['id']}_p{index + 1:03d}.png"
                os.link(run / image["path"], folder / rel)
                image["path"] = rel
                images += 1
                size += (folder / rel).stat().st_size
            row.pop("layout", None)
            manifest.write(json.dumps(row, ensure_ascii=False) + "\n")
    return images, size


def measure(script: str, *args) -> dict:
    result = subprocess.run([sys.executable, "-c", script, *map(str, args)], check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--formats", default="hf-disk,vlmevalkit,jsonl")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        run = tmp / "run"
        started = time.perf_counter()
        images, size = build_run(run, args.items, tmp)
        print(f"run folder: {args.items} items, {images} PNG pages, {size / 2**20:.0f} MiB of "
              f"images (built in {time.perf_counter() - started:.0f} s)")
        ours = measure(OURS, run, tmp / "hf", "hf")
        base = measure(BASELINE, run, tmp / "baseline")
        written = sum(p.stat().st_size for p in (tmp / "hf").rglob("*.parquet"))
        print(f"mmconvert export --format hf: {ours['seconds']:6.1f} s, peak RSS "
              f"{ours['rss_mb']:5.0f} MiB, {ours['items'] / ours['seconds']:6.0f} items/s, "
              f"{written / 2**20:.0f} MiB of parquet")
        print(f"baseline (all rows in memory): {base['seconds']:5.1f} s, peak RSS "
              f"{base['rss_mb']:5.0f} MiB, {args.items / base['seconds']:6.0f} items/s")
        for fmt in [f for f in args.formats.split(",") if f]:
            other = measure(OURS, run, tmp / fmt, fmt)
            print(f"mmconvert export --format {fmt}: {other['seconds']:6.1f} s, peak RSS "
                  f"{other['rss_mb']:5.0f} MiB")
            shutil.rmtree(tmp / fmt)


if __name__ == "__main__":
    main()
