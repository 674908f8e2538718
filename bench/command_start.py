"""How long each command takes to start: ``python -m mmconvert ARGS`` as a whole process, best
of ``--repeat``, for the commands whose module imports differ (issue 56, part 2: what keeping
imports at the top of a command's module costs its start).

    python bench/command_start.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = [["--version"], ["render", "--help"], ["qa", "check", "--help"], ["eval", "--help"],
            ["curve", "--help"], ["frontier", "--help"], ["sweep", "--help"],
            ["score", "--help"], ["export", "--help"], ["list", "recipes"],
            ["harness", "--help"]]


def best(args: list[str], repeat: int) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mmconvert", *args], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"best of {args.repeat} whole processes (load {os.getloadavg()[0]:.2f}):")
    for command in COMMANDS:
        print(f"  mmconvert {' '.join(command):<20} {best(command, args.repeat):.3f} s")


if __name__ == "__main__":
    main()
