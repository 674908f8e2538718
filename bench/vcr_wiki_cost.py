"""What a 2.1-million-item VCR-wiki run would cost on 1, 8 and 64 machines, projected from
figures this script measures on this machine:

- the occluder end to end (``mmconvert occlude``, hard, with NER) at 1 and 2 workers: items/s;
- the bytes an item writes (stacked PNG, text-only PNG, manifest row) and the worker's peak RSS;
- the driver's sink alone, fed made items as fast as it takes them, for each store: files
  written by the workers where they run (only rows reach the driver, which checks the files
  are there and appends the rows) and shards (the bytes reach the driver, which writes them);
- the driver's load of VCR-wiki-style pairs (Parquet with the photos' bytes, here the COCO
  sample's JPEGs over again), both passes of the selection, as the workers would consume it
  (the driver reads the captions; each worker reads its items' photos).

    python bench/vcr_wiki_cost.py [--items 300] [--source DIR] [--machines 1,8,64]

Each machine is taken to be this one (its cores, each a worker); the COCO captions stand in
for WIT's (VCR-wiki's are longer, and its photos larger: a lower bound on the time).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.occlude_speed import caption_options, end_to_end  # noqa: E402
from mmconvert.runfolder import Output, RunFolder  # noqa: E402

ITEMS = 2_100_000
BLOCK = 4096  # a file system's allocation unit: a file takes whole blocks


def made_items(folder: Path) -> tuple[list[dict], dict[str, bytes]]:
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    files = {img["path"]: (folder / img["path"]).read_bytes() for row in rows
             for img in row["images"]}
    return rows, files


def sink_rate(rows: list[dict], files: dict[str, bytes], store: str, count: int) -> float:
    """Items/s the driver's sink takes, for ``count`` items made from ``rows`` under new ids."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = RunFolder(Path(tmp) / "run")
        folder.path.mkdir()
        outputs = []
        for n in range(count):
            row = copy.deepcopy(rows[n % len(rows)])
            old = row["id"]
            row["id"] = f"{old}-{n}"
            output = Output()
            for image in row["images"]:
                data = files[image["path"]]
                image["path"] = image["path"].replace(old, row["id"])
                output.files.append((image["path"], data))
            if store == "files":  # a worker elsewhere wrote them (Output.write_into)
                output.write_into(folder.path)
            output.row = row
            outputs.append(output)
        context = folder.sharded(1000) if store == "shards" else folder.grouped()
        started = time.perf_counter()
        with context:
            for output in outputs:
                folder.write(output)
        return count / (time.perf_counter() - started)


def load_rate(source: Path, count: int) -> tuple[float, float]:
    """(pairs/s, mean photo KiB) of the selection of ``count`` pairs from a Parquet file whose
    rows hold the source's photos, both passes, every item consumed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mmconvert.config import run_config
    from mmconvert.converter import stream_selection

    photos = [p.read_bytes() for p in sorted(source.rglob("*.jpg"))][:50]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "vcr" / "default"
        folder.mkdir(parents=True)
        writer = None
        for start in range(0, count, 500):
            table = pa.Table.from_pylist([
                {"image": {"bytes": photos[n % len(photos)], "path": f"{n}.jpg"},
                 "caption": "A man rides a red bicycle along the river on a sunny morning."}
                for n in range(start, min(count, start + 500))])
            writer = writer or pq.ParquetWriter(folder / "test-00000-of-00001.parquet",
                                                table.schema)
            writer.write_table(table, row_group_size=500)
        writer.close()
        started = time.perf_counter()
        selection = stream_selection(run_config({"corpus": "captions", "source": str(
            folder.parent), "renderer": "occlude"}), log=lambda m: None)
        consumed = sum(1 for _ in selection.items)
        rate = consumed / (time.perf_counter() - started)
    return rate, sum(map(len, photos)) / len(photos) / 1024


def size_on_disk(sizes: list[int]) -> int:
    return sum(-(-size // BLOCK) * BLOCK for size in sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    caption_options(parser, 600)
    parser.add_argument("--machines", default="1,8,64")
    args = parser.parse_args()
    cores = os.cpu_count() or 1

    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        end_to_end(args.source, 20, "hard", 1, Path(tmp) / "warm")  # spaCy and fonts loaded
        for workers in sorted({1, cores}):
            out = Path(tmp) / f"w{workers}"
            seconds, done = end_to_end(args.source, args.items, "hard", workers, out)
            rates[workers] = done / seconds
        rows, files = made_items(Path(tmp) / "w1")
        manifest = (Path(tmp) / "w1" / "manifest.jsonl").stat().st_size
    worker_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_item = sum(len(data) for data in files.values()) / len(rows)
    row_bytes = manifest / len(rows)
    per_item_files = size_on_disk([len(d) for d in files.values()]) / len(rows)
    sinks = {store: sink_rate(rows, files, store, 2000) for store in ("files", "shards")}
    loading, photo_kib = load_rate(args.source, 3000)

    print(f"measured on this machine ({cores} cores), {len(rows)} COCO captions made of "
          f"{args.items}:")
    for workers, rate in rates.items():
        print(f"  mmconvert occlude --workers {workers}: {rate:.1f} items/s end to end")
    print(f"  bytes an item writes: {per_item / 1024:.1f} KiB of PNG ({per_item_files / 1024:.1f} "
          f"KiB on disk as 2 files), {row_bytes / 1024:.2f} KiB of manifest row")
    print(f"  peak RSS of a process that drew them (spaCy, fonts, MuPDF): {worker_rss:.0f} MB")
    for store, rate in sinks.items():
        what = ("rows of files the workers wrote" if store == "files"
                else "rows and their bytes, into shards")
        print(f"  the driver's sink alone, {store}: {rate:,.0f} items/s ({what})")
    print(f"  the driver's load of Parquet pairs ({photo_kib:.0f} KiB photos), both passes: "
          f"{loading:,.0f} items/s")

    machine_rate = rates[max(rates)]
    print(f"\nprojected for {ITEMS:,} items, each machine like this one ({cores} workers, "
          f"{machine_rate:.0f} items/s), Ray's start-up (about 9 s) left out:")
    print("| machines | store | items/s | time | driver memory | worker memory, all "
          "machines | disk | files | bottleneck |")
    print("|---|---|---|---|---|---|---|---|---|")
    for machines in (int(m) for m in args.machines.split(",")):
        for store in ("files", "shards"):
            workers_rate = machines * machine_rate
            rate = min(workers_rate, sinks[store], loading)
            hours = ITEMS / rate / 3600
            disk = ITEMS * ((per_item_files if store == "files" else per_item) + row_bytes)
            count = f"{2 * ITEMS / 1e6:.1f} M" if store == "files" else \
                f"{-(-ITEMS // 1000):,} shards"
            if workers_rate <= min(sinks[store], loading):
                neck = "the workers' drawing (spaCy, photo decode, PNG)"
            elif loading < sinks[store]:
                neck = "the driver's load: every photo read (twice) and sent to the workers"
            elif store == "files":
                neck = "the driver's sink (a file check and a row per item)"
            else:
                neck = "the one shard writer: every image's bytes through the driver"
            # the streaming driver (bench/stream_memory.py: ~0.1-0.2 GB); on a cluster, Ray's
            # window of 10,000 pickled tasks adds ~10 MB (a Parquet pair's task carries a
            # reference to its photo, not the bytes)
            driver = "~0.2 GB"
            print(f"| {machines} | {store} | {rate:,.0f} | "
                  f"{hours:.1f} h | {driver} | {machines * cores * worker_rss / 1024:.1f} GB | "
                  f"{disk / 1e9:.0f} GB | {count} | {neck} |")


if __name__ == "__main__":
    main()
