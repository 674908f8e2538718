"""``kill -9`` in the middle of render, sweep, transform, export and qa check, then the same
command again: is the result the same as an uninterrupted run, with no worker left behind?

    python bench/kill_resume.py [--items 120] [--workers 2] [--after 1.5]

Each command runs once to completion (the reference), and once killed with SIGKILL ``--after``
seconds in (its workers are not signalled: they must die with it) and then re-run. Compared:
every file of the run folders byte for byte (run.json's timings aside), the export's files,
and qa.jsonl's verdicts (their times aside). Also counted: child processes of the killed run
still alive 1 s and 10 s later (pool workers die with it; a Tesseract already reading a page
finishes that page).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mmconvert(*args) -> list[str]:
    return [sys.executable, "-m", "mmconvert.cli", *map(str, args)]


def files(folder: Path, skip=("run.json", "qa.jsonl", "export.json")) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in skip}


def verdicts(folder: Path) -> list[tuple]:
    path = folder / "qa.jsonl"
    if not path.exists():
        return []
    out = set()
    for line in path.read_text().splitlines():
        e = json.loads(line)
        out.add((e["id"], e["source"], e["verdict"], e["reason"]))
    return sorted(out)


def living_parents() -> dict[int, int]:
    """Every living process (not a zombie), with its parent's pid."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat[0] != "Z":
                parents[int(entry.name)] = int(stat[1])
    return parents


def descendants(pid: int) -> set[int]:
    """The living processes below ``pid``: its workers, and what they started (a document
    worker's Playwright driver and Chromium)."""
    parents = living_parents()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def killed_then_resumed(args: list[str], after: float) -> tuple[list[int], int]:
    """Start ``args``, SIGKILL it ``after`` seconds in, count its children still alive 1 s
    and 10 s later, then run it again to completion. (orphan counts, exit code of the
    re-run)"""
    process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    time.sleep(after)
    workers = descendants(process.pid)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    counts = []
    for wait in (1.0, 9.0):  # alive 1 s after the kill, and 10 s after
        time.sleep(wait)
        alive = [pid for pid in workers if running(pid)]
        counts.append(len(alive))
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    rerun = subprocess.run(args, cwd=ROOT, capture_output=True)
    return counts, rerun.returncode


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=120)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--after", type=float, default=1.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source = tmp / "long.jsonl"
        with open(source, "w", encoding="utf-8") as handle:
            for n in range(args.items):
                words = " ".join(f"word{(n * 7 + k) % 997}" for k in range(1500))
                handle.write(json.dumps({"id": f"long-{n:04d}", "question": "Which word?",
                                         "context": words}) + "\n")
        w = ("--workers", args.workers)
        steps = {
            "render": lambda out: mmconvert("render", source, "--out", out, *w),
            "document": lambda out: mmconvert("render", source, "--renderer", "document",
                                              "--render", "context", "--out", out, *w),
            "sweep": lambda out: mmconvert("sweep", tmp / "ref-render", "--ppi", "150,200",
                                           "--out", out, *w),
            "transform": lambda out: mmconvert("transform", tmp / "ref-render", "--apply",
                                               "blur:1", "--apply", "noise:4", "--out", out,
                                               *w),
            "export": lambda out: mmconvert("export", tmp / "ref-render", "--format", "hf",
                                            "--out", out),
            "qa check": lambda out: mmconvert("qa", "check", out, "--no-progress"),
        }
        for name, command in steps.items():
            slug = name.replace(" ", "-")
            ref, killed = tmp / f"ref-{slug}", tmp / f"cut-{slug}"
            if name == "qa check":  # checks run in a copy of the rendered run
                subprocess.run(["cp", "-r", str(tmp / "ref-render"), str(ref)], check=True)
                subprocess.run(["cp", "-r", str(tmp / "ref-render"), str(killed)], check=True)
            started = time.perf_counter()
            done = subprocess.run(command(ref), cwd=ROOT, capture_output=True)
            seconds = time.perf_counter() - started
            if done.returncode != 0:
                sys.exit(f"{name}: {done.stderr.decode()[-300:]}")
            orphans, code = killed_then_resumed(command(killed), min(args.after, seconds / 2))
            if name == "qa check":
                same = verdicts(ref) == verdicts(killed)
            else:
                same = files(ref) == files(killed)
            print(f"{name:<10} {seconds:5.1f} s uninterrupted; killed at "
                  f"{min(args.after, seconds / 2):.1f} s and re-run (exit {code}): "
                  f"{'identical' if same else 'DIFFERENT'}; children alive 1 s after the "
                  f"kill {orphans[0]}, 10 s after {orphans[1]}")


if __name__ == "__main__":
    main()
