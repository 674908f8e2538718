"""What a 2.1-million-item VCR-wiki run would cost on 1, 8 and 64 machines, projected from
figures this script measures on this machine:

- the occluder end to end (``mmconvert occlude``, hard, with NER) at 1 and 2 workers: items/s;
- the bytes an item writes (stacked PNG, text-only PNG, manifest row) and the worker's peak RSS;
- the driver's sink alone, fed made items as fast as it takes them, for each store: files
  written by the workers where they run (only rows reach the driver, which checks the files
  are there and appends the rows), shards written by the driver (the local executors: the
  bytes reach it) and shards on a cluster (the workers spool the files, Ray tasks pack the
  shards, only rows reach the driver);
- what a cluster's sharded run adds to a worker: spooling an item's files, and packing them;
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
from mmconvert.shards import new_spool, pack  # noqa: E402

ITEMS = 2_100_000
BLOCK = 4096  # a file system's allocation unit: a file takes whole blocks


def made_items(folder: Path) -> tuple[list[dict], dict[str, bytes]]:
    rows = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
    files = {img["path"]: (folder / img["path"]).read_bytes() for row in rows
             for img in row["images"]}
    return rows, files


def made_outputs(rows: list[dict], files: dict[str, bytes], count: int) -> list[Output]:
    """``count`` items made from ``rows`` under new ids, their files' bytes in hand."""
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
        output.row = row
        outputs.append(output)
    return outputs


def sink_rate(rows: list[dict], files: dict[str, bytes], store: str, count: int) -> float:
    """Items/s the driver's sink takes, for ``count`` made items: ``files``, ``shards`` (the
    bytes reach the driver, which writes the shards: the local executors) or ``packed`` (a
    cluster: the workers spooled the files, and another process packs the shards). For
    ``packed`` the figure is the driver's own CPU time, since the packing runs elsewhere."""
    from concurrent.futures import ProcessPoolExecutor

    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(1) as packer:
        folder = RunFolder(Path(tmp) / "run")
        folder.path.mkdir()
        outputs = made_outputs(rows, files, count)
        context = folder.grouped() if store == "files" else \
            folder.sharded(1000, packer.submit if store == "packed" else None)
        clock = time.process_time if store == "packed" else time.perf_counter
        with context:
            for output in outputs:  # a worker elsewhere wrote them (Output.write_into)
                if store == "files":
                    output.write_into(folder.path)
                elif store == "packed":
                    output.write_into(folder.path, under=folder.spool, durable=False)
            started = clock()
            for output in outputs:
                folder.write(output)
        return count / (clock() - started)


def pack_rate(rows: list[dict], files: dict[str, bytes], count: int) -> tuple[float, float]:
    """(items/s a worker spools, items/s one process packs into a shard), for ``count``
    made items: what a cluster's sharded run adds to its workers' drawing."""
    with tempfile.TemporaryDirectory() as tmp:
        root, spool = Path(tmp) / "run", new_spool()
        outputs = made_outputs(rows, files, count)
        started = time.perf_counter()
        for output in outputs:
            output.write_into(root, under=spool, durable=False)
        spooled = count / (time.perf_counter() - started)
        started = time.perf_counter()
        pack(str(root), spool, 0, [(o.row, o.written) for o in outputs])
        return spooled, count / (time.perf_counter() - started)


def load_rate(source: Path, count: int) -> tuple[float, float]:
    """(pairs/s, mean photo KiB) of the selection of ``count`` pairs from a Parquet file whose
    rows hold the source's photos, both passes, every item consumed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mmconvert.config import run_config
    from mmconvert.selection import stream_selection

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
    sinks = {store: sink_rate(rows, files, store, 2000)
             for store in ("files", "shards", "packed")}
    spooling, packing = pack_rate(rows, files, 1000)
    loading, photo_kib = load_rate(args.source, 3000)

    print(f"measured on this machine ({cores} cores), {len(rows)} COCO captions made of "
          f"{args.items}:")
    for workers, rate in rates.items():
        print(f"  mmconvert occlude --workers {workers}: {rate:.1f} items/s end to end")
    print(f"  bytes an item writes: {per_item / 1024:.1f} KiB of PNG ({per_item_files / 1024:.1f} "
          f"KiB on disk as 2 files), {row_bytes / 1024:.2f} KiB of manifest row")
    print(f"  peak RSS of a process that drew them (spaCy, fonts, MuPDF): {worker_rss:.0f} MB")
    for store, rate in sinks.items():
        what = {"files": "files, rows of files the workers wrote",
                "shards": "shards, rows and their bytes, written here (local executors)",
                "packed": "shards on a cluster, rows of files the workers spooled, the "
                          "shards packed by another process (driver CPU)"}[store]
        print(f"  the driver's sink alone, {what}: {rate:,.0f} items/s")
    print(f"  a cluster's sharded run adds per item: a worker spools its files "
          f"({spooling:,.0f} items/s) and a task packs them ({packing:,.0f} items/s, one "
          "process)")
    print(f"  the driver's load of Parquet pairs ({photo_kib:.0f} KiB photos), both passes: "
          f"{loading:,.0f} items/s")

    machine_rate = rates[max(rates)]
    print(f"\nprojected for {ITEMS:,} items, each machine like this one ({cores} workers, "
          f"{machine_rate:.0f} items/s), Ray's start-up (about 9 s) left out:")
    print("| machines | store | items/s | time | driver memory | worker memory, all "
          "machines | disk | files | bottleneck |")
    print("|---|---|---|---|---|---|---|---|---|")
    # on a cluster, the spooling and packing take the workers' cores: items/s of a machine
    # whose cores draw at machine_rate and also spool and pack every item
    packed_rate = cores / (cores / machine_rate + 1 / spooling + 1 / packing)
    for machines in (int(m) for m in args.machines.split(",")):
        for store in ("files", "shards"):
            # one machine: the local executors (a sharded run's bytes reach the driver); more:
            # Ray (the shards packed on the cluster)
            cluster = store == "shards" and machines > 1
            sink = sinks["packed" if cluster else store]
            workers_rate = machines * (packed_rate if cluster else machine_rate)
            rate = min(workers_rate, sink, loading)
            hours = ITEMS / rate / 3600
            disk = ITEMS * ((per_item_files if store == "files" else per_item) + row_bytes)
            count = f"{2 * ITEMS / 1e6:.1f} M" if store == "files" else \
                f"{-(-ITEMS // 1000):,} shards"
            if workers_rate <= min(sink, loading):
                neck = "the workers' drawing (spaCy, photo decode, PNG)" + (
                    ", spooling and packing" if cluster else "")
            elif loading < sink:
                neck = "the driver's load: every photo read (twice) and sent to the workers"
            elif store == "files" or cluster:
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
