"""``mmconvert render`` as a whole process, for the benches: its wall time and the run's rows
(read by the run folder's own reader)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from "
         "at which but have an they you were her she there been one all we their has would "
         "when reading benchmark model vision language token image page context question "
         "answer measure result experiment evidence probability distribution").split()


def paragraph(rng) -> str:
    """A seeded paragraph of 40 to 140 English words, for the benches' prose contexts."""
    return " ".join(rng.choices(WORDS, k=rng.randint(40, 140))).capitalize() + "."


def timed(command: list) -> float:
    """Seconds of ``command`` as a whole process, started with nothing left to write back: a
    run syncs its files (``os.sync``, the whole system's), and would otherwise also wait for
    the pages the process before it left unwritten (a baseline may sync nothing)."""
    os.sync()
    started = time.perf_counter()
    subprocess.run([str(part) for part in command], check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def timed_render(args: list, out: Path) -> tuple[float, list[dict[str, Any]]]:
    """Seconds ``mmconvert render ARGS --out OUT`` took (``timed``), start-up included, and the
    rows it wrote. A run into an ``out`` that exists goes to a new folder beside it (``OUT-1``,
    ...), never over it: an --overwrite would time its deletes, and ext4's slow file making just
    after them (``bench/io_speed.py``); the caller's temporary folder removes them all."""
    from mmconvert.runfolder import open_run

    folder, number = out, 0
    while folder.exists():
        number += 1
        folder = out.with_name(f"{out.name}-{number}")
    seconds = timed([sys.executable, "-m", "mmconvert", "render", *args, "--out", folder])
    return seconds, open_run(folder).rows()
