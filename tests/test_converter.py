"""Runs: determinism for any worker count, sampling, resuming after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mmconvert
from mmconvert.selection import select
from tests.conftest import REDUX_CSV, copy_run, make_item


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run.json"}


def long_items(path: Path, n: int = 24, words: int = 2500) -> Path:
    rows = []
    for i in range(n):
        text = " ".join(f"w{i}x{j}" for j in range(words))
        rows.append({"id": f"doc{i:03d}", "question": "What?", "context": text, "answer": "x"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_same_bytes_for_any_worker_count(tmp_path):
    config = {"corpus": "mmlu-redux", "source": REDUX_CSV, "sample": 6, "pdf": True}
    mmconvert.convert(config, out=tmp_path / "w1", workers=1)
    mmconvert.convert(config, out=tmp_path / "w2", workers=2)
    one, two = files(tmp_path / "w1"), files(tmp_path / "w2")
    assert len(one) == 1 + 12 + 12 + 12  # manifest, 12 PNGs, 12 PDFs, 12 layouts
    assert one == two


def test_sample_per_subset_is_seeded_and_keeps_source_order():
    items = [make_item(id=f"{s}-{i:03d}", subset=s) for s in "ab" for i in range(50)]
    first = select(items, 5, None, seed=0)
    assert [i.id for i in first] == [i.id for i in select(items, 5, None, seed=0)]
    assert [i.id for i in first] != [i.id for i in select(items, 5, None, seed=1)]
    assert sum(i.subset == "a" for i in first) == 5 and first == sorted(first, key=lambda i: i.id)
    assert len(select(items, 5, 7, seed=0)) == 7


def test_finished_run_redoes_nothing(tmp_path, csv_run):
    """The session's CLI run of six items (copied), resumed through ``convert``."""
    out = copy_run(csv_run, tmp_path / "run")
    config = {"corpus": "mmlu-redux", "source": REDUX_CSV, "limit": 6}
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.png")}
    summary = mmconvert.convert(config, out=out)
    assert (summary.rendered, summary.already_done) == (0, 6)
    assert stamps == {p: p.stat().st_mtime_ns for p in out.rglob("*.png")}


def test_a_resumed_run_s_progress_bar_counts_the_items_already_done(tmp_path, capsys):
    out = tmp_path / "run"
    config = {"corpus": "mmlu-redux", "source": REDUX_CSV, "limit": 5}
    mmconvert.convert(config, out=out)
    manifest = out / "manifest.jsonl"
    manifest.write_bytes(b"\n".join(manifest.read_bytes().split(b"\n")[:3]) + b"\n")
    capsys.readouterr()
    summary = mmconvert.convert(config, out=out, progress=True)
    assert (summary.rendered, summary.already_done) == (2, 3)
    assert capsys.readouterr().err.replace("\r", "\n").splitlines()[-1].startswith(
        "100%|██████████| 5/5 ")


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_output(tmp_path):
    # enough work that the kill lands mid-run: 24 such items now render in about half a
    # second past the start-up, about as long as the sink waits to append a group of rows
    items = 96
    source = long_items(tmp_path / "docs.jsonl", n=items)
    fresh = tmp_path / "fresh"
    mmconvert.convert({"corpus": str(source)}, out=fresh)
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "mmconvert", "render", str(source), "--out", str(out),
               "--workers", "2"]
    proc = subprocess.Popen(command, stderr=subprocess.DEVNULL, start_new_session=True)
    manifest = out / "manifest.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if manifest.exists() and len(manifest.read_bytes().splitlines()) >= 3:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = manifest.read_bytes().count(b"\n")  # whole rows (a kill may tear the last)
    assert 3 <= done_before < items, "the kill should land mid-run"
    # simulate the worst moment of a kill too: a torn last manifest line
    with open(manifest, "ab") as handle:
        handle.write(b'{"id": "doc9')
    summary = mmconvert.convert({"corpus": str(source)}, out=out, workers=2)
    assert summary.already_done == done_before and summary.rendered == items - done_before
    assert files(out) == files(fresh)
    assert not [p for p in out.rglob("*.tmp")]


def test_written_files_are_readable_by_others_as_the_umask_allows(csv_run):
    import stat

    from mmconvert.manifest import FILE_MODE

    for path in csv_run.rglob("*"):  # the session's run, read only
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == FILE_MODE, path
