"""The fast lane's time at rest and under load (issue 56, part 8: under 3 minutes at a load of
2): ``pytest -m "not slow"`` as the README runs it (``-n auto``, one worker a core) and in one
process, each with ``--load`` busy processes (a Python loop each) running beside it the whole
time.

    python bench/fast_lane.py [--load 2] [--serial]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(extra: list[str], load: int) -> tuple[float, str]:
    """Seconds of one fast-lane run beside ``load`` busy processes, and pytest's last line."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
    try:
        if busy:
            time.sleep(20)  # the load average climbs to the load before the run starts
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not slow",
                               "-p", "no:cacheprovider", *extra], cwd=ROOT,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
    finally:
        for process in busy:
            process.kill()
            process.wait()
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return seconds, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the run")
    parser.add_argument("--serial", action="store_true",
                        help="also run the lane in one process (the way before -n auto)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores")
    runs = [("-n auto", ["-n", "auto"])] + ([("one process", [])] if args.serial else [])
    for name, extra in runs:
        for load in sorted({0, args.load}):
            seconds, last = timed(extra, load)
            print(f"fast lane, {name}, load {load}: {seconds:.0f} s  ({last})")


if __name__ == "__main__":
    main()
