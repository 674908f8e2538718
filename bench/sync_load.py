"""A render's time beside another process writing to the same disk: what making each group
of files durable costs when the machine is shared.

    python bench/sync_load.py [--data ../shared/data] [--copies 3] [--repeat 3]

``mmconvert render`` of the MMLU-Redux rows of ``--data``, ``--copies`` times over with
distinct ids (as ``bench/io_speed.py`` makes them), on one worker into a fresh folder: alone,
then beside a writer (a process writing 64 MiB files into the temporary folder without
pause, as another user's job would). Best and median seconds of ``--repeat`` runs each.
Run it in two checkouts to compare them.

Measured on 2026-11-29 (555 items, 3 runs each, alternated twice): ``manifest.sync`` as
``os.sync`` took 1.22-1.23 s alone and 1.47-1.61 s beside the writer; an fsync of each file
and folder of a group instead took 1.46-1.60 s alone and 2.86-3.26 s beside the writer. So
``os.sync`` stays.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.io_speed import items  # noqa: E402

WRITER = """
import os, sys
block = b"\\0" * (1 << 20)
n = 0
while True:
    path = os.path.join(sys.argv[1], f"load-{n % 4}")
    with open(path, "wb") as handle:
        for _ in range(64):
            handle.write(block)
    n += 1
"""


def render_seconds(source: Path, out: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mmconvert", "render", str(source), "--workers",
                    "1", "--out", str(out)], check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = items(args.data, args.copies)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "items.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        times: dict[str, list[float]] = {"alone": [], "beside a writer": []}
        for number in range(args.repeat):
            for case in times:
                writer = None
                if case != "alone":
                    load = Path(tmp) / "load"
                    load.mkdir(exist_ok=True)
                    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(load)])
                    time.sleep(3)  # the writer's dirty pages build up first
                try:
                    times[case].append(render_seconds(source, Path(tmp) / f"run-{number}-"
                                                      f"{case.replace(' ', '-')}"))
                finally:
                    if writer is not None:
                        writer.kill()
                        writer.wait()
    print(f"{len(rows)} items, one worker, {args.repeat} runs each (seconds)")
    for case, seconds in times.items():
        print(f"  {case:>16}: best {min(seconds):.2f}, median {statistics.median(seconds):.2f}")


if __name__ == "__main__":
    main()
