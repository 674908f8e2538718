"""Attack every command that reads or writes a run folder through the folder itself: its
entries replaced by symbolic links (to a file or a folder outside), hard links (to a file
outside), or FIFOs, and rows that name paths outside. Each case is a real ``mmconvert``
process with a time limit, and counts as one of:

- ``ok``: exit 0, nothing outside touched;
- ``one-line``: a non-zero exit whose last line is the one ``Error:`` line, no traceback;
- ``traceback``, ``hang`` (past ``--timeout``), ``unsafe`` (a file outside the run was written,
  created or removed), ``lost`` (a file of the user's inside the folder was deleted).

    python bench/hostile_folders.py [--timeout 60] [--only NAME]

Prints one line per case, then the counts; the figures for the closing note are the last
lines. Nothing leaves 127.0.0.1: no command here opens a network connection.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "mmconvert" / "samples" / "mmlu-redux"


def mmconvert(*args, timeout: float) -> tuple[str, subprocess.CompletedProcess | None]:
    try:
        done = subprocess.run([sys.executable, "-m", "mmconvert", *map(str, args)],
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return "hang", None
    if "Traceback" in done.stderr:
        return "traceback", done
    if done.returncode == 0:
        return "ok", done
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    return ("one-line" if last.startswith(("Error: ", "Aborted!")) else "traceback"), done


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) and its content's hash."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            out[str(path)] = "link:" + os.readlink(path)
        elif path.is_file():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            out[str(path)] = "dir"
    return out


# the commands: each reads or writes the run folder RUN (and may write OUT)
COMMANDS = {
    "render (resume)": ["render", "mmlu-redux", "--source", SAMPLE, "--out", "{run}"],
    "render --overwrite": ["render", "mmlu-redux", "--source", SAMPLE, "--out", "{run}",
                           "--overwrite"],
    "qa check": ["qa", "check", "{run}", "--checks", "image,text_layer", "--no-progress"],
    "qa summary": ["qa", "summary", "{run}"],
    "stats": ["stats", "{run}"],
    "sweep": ["sweep", "{run}", "--ppi", "72", "--scale", "0.5", "--out", "{out}"],
    "transform": ["transform", "{run}", "--apply", "blur:1", "--out", "{out}"],
    "export jsonl": ["export", "{run}", "--format", "jsonl", "--out", "{out}"],
    "export hf": ["export", "{run}", "--format", "hf", "--out", "{out}"],
    "export vlmevalkit": ["export", "{run}", "--format", "vlmevalkit", "--out", "{out}"],
    "eval --dry-run": ["eval", "{run}", "--model", "m", "--base-url",
                       "http://127.0.0.1:9/v1", "--dry-run"],
}


def attacks(run: Path, outside: Path):
    """(name, apply) pairs: ``apply()`` damages the fresh copy ``run`` of a rendered run."""
    first = json.loads((run / "manifest.jsonl").read_text().splitlines()[0])
    image = run / first["images"][0]["path"]

    def link(name: str, target: Path):
        def apply():
            path = run / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
            os.symlink(target, path)
        return apply

    def hard(name: str):
        def apply():
            path = run / name
            if path.exists():
                path.unlink()
            os.link(outside / "precious.txt", path)
        return apply

    def fifo(path: Path):
        def apply():
            if path.exists():
                path.unlink()
            os.mkfifo(path)
        return apply

    def row_path(key: str, value: str):
        def apply():
            lines = (run / "manifest.jsonl").read_text().split("\n")
            row = json.loads(lines[0])
            if key == "pdf":
                row["pdf"] = value
            elif key == "image":
                row["images"][0]["path"] = value
            else:
                row["layout"]["path"] = value
            lines[0] = json.dumps(row, ensure_ascii=False)
            (run / "manifest.jsonl").write_text("\n".join(lines))
        return apply

    def mine():  # a file of the user's inside the folder (what --overwrite must not delete)
        (run / "images" / "holiday.jpg").write_bytes(b"mine")

    for name in ("manifest.jsonl", "qa.jsonl", "skipped.jsonl", "run.json",
                 ".mmconvert.lock"):
        yield f"symlink {name} -> file outside", link(name, outside / "precious.txt")
        yield f"hard link {name} -> file outside", hard(name)
    for name in ("stats", "images", "layout", "shards"):
        yield f"symlink {name}/ -> folder outside", link(name, outside / "folder")
    yield "symlink image file -> file outside", link(str(image.relative_to(run)),
                                                     outside / "precious.txt")
    yield "FIFO image file", fifo(image)
    for name in ("qa.jsonl", "manifest.jsonl", "run.json", "skipped.jsonl"):
        yield f"FIFO {name}", fifo(run / name)
    yield "row image path ../", row_path("image", "../outside/precious.txt")
    yield "row layout path ../", row_path("layout", "../outside/precious.txt")
    yield "row pdf path absolute", row_path("pdf", str(outside / "precious.txt"))
    yield "user file in images/", mine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--only", help="run only the commands whose name contains this")
    args = parser.parse_args()

    tally: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = tmp / "base"
        # made as COMMANDS' render makes it, so that "render (resume)" resumes it
        status, done = mmconvert("render", "mmlu-redux", "--source", SAMPLE, "--out", base,
                                 timeout=120)
        if status != "ok":  # the setup failed: show why, not only that it did
            raise SystemExit(f"the base render gave {status}:\n{done.stderr if done else ''}")
        names = [n for n in COMMANDS if not args.only or args.only in n]
        started = time.perf_counter()
        for attack_name, _ in attacks(base, tmp):
            for command in names:
                case = tmp / "case"
                shutil.rmtree(case, ignore_errors=True)
                case.mkdir()
                run, out, outside = case / "run", case / "out", case / "outside"
                shutil.copytree(base, run)
                outside.mkdir()
                (outside / "precious.txt").write_text("keep me")
                (outside / "folder").mkdir()
                (outside / "folder" / "inside.txt").write_text("keep me too")
                apply = dict(attacks(run, outside))[attack_name]
                apply()
                before = snapshot(outside)
                mine = run / "images" / "holiday.jpg"
                had_mine = mine.is_file()
                argv = [a.format(run=run, out=out) if isinstance(a, str) else a
                        for a in COMMANDS[command]]
                status, done = mmconvert(*argv, timeout=args.timeout)
                if snapshot(outside) != before:
                    status = "unsafe"
                elif had_mine and not mine.is_file():
                    status = "lost"
                tally[status] += 1
                line = (done.stderr.strip().splitlines() or [""])[-1][:110] if done else ""
                print(f"{status:<9} {attack_name:<38} {command:<18} {line}", flush=True)
        seconds = time.perf_counter() - started
    cases = sum(tally.values())
    print(f"\n{cases} cases in {seconds:.0f} s: " + ", ".join(
        f"{name} {tally.get(name, 0)}" for name in ("ok", "one-line", "traceback", "hang",
                                                    "unsafe", "lost")))


if __name__ == "__main__":
    main()
