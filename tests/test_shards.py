"""``--store shards``: Parquet shards read by ``datasets`` as they are, the same manifest and
bytes as a files run, every command that reads a run reading them, and resuming shard by
shard after a kill, a torn shard or an unrecorded one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import mmconvert
from mmconvert.cli import main
from mmconvert.manifest import JsonlLog
from mmconvert.shards import shard_files
from tests.conftest import REDUX_CSV, SHARDED, copy_run
from tests.test_converter import files, long_items

CONFIG = SHARDED


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def shard_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in shard_files(folder)}


@pytest.fixture
def both(files_and_shards):
    """The same render as files and as shards of 4 rows (the session's: read only)."""
    return files_and_shards


def test_the_manifest_is_a_files_runs_and_the_files_are_in_the_shards(both):
    plain, sharded = both
    assert (sharded / "manifest.jsonl").read_bytes() == (plain / "manifest.jsonl").read_bytes()
    assert not (sharded / "images").exists() and not (sharded / "layout").exists()
    rows = JsonlLog(plain / "manifest.jsonl").read()
    assert len(shard_files(sharded)) == -(-len(rows) // 4)
    from mmconvert.runfolder import read_run_file

    for row in rows:
        for rel in [i["path"] for i in row["images"]] + [row["layout"]["path"], row["pdf"]]:
            assert read_run_file(sharded, rel) == (plain / rel).read_bytes()


def test_datasets_reads_the_shards_as_they_are(both, tmp_path, monkeypatch):
    import datasets
    from PIL import Image

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    datasets.disable_progress_bars()
    plain, sharded = both
    loaded = datasets.load_dataset("parquet", data_files=str(sharded / "shards" / "*.parquet"),
                                   split="train", cache_dir=str(tmp_path / "cache"))
    rows = JsonlLog(plain / "manifest.jsonl").read()
    assert loaded["id"] == [r["id"] for r in rows]
    first = loaded[0]
    assert isinstance(first["images"][0], Image.Image)
    assert json.loads(first["row"]) == rows[0]
    raw = loaded.cast_column("images", datasets.List(datasets.Image(decode=False)))[0]
    assert raw["images"][0]["bytes"] == (plain / rows[0]["images"][0]["path"]).read_bytes()
    assert {f["path"] for f in first["files"]} == {rows[0]["layout"]["path"], rows[0]["pdf"]}


def test_same_shards_for_any_worker_count(both, tmp_path):
    _, sharded = both
    mmconvert.convert({**CONFIG, "store": "shards", "shard_rows": 4}, out=tmp_path / "w2",
                      workers=2)
    assert shard_bytes(tmp_path / "w2") == shard_bytes(sharded)


def test_every_command_that_reads_a_run_reads_the_shards(both, tmp_path):
    plain, sharded = both
    made = {}
    for name, run_dir in (("files", plain), ("shards", sharded)):
        out = tmp_path / name
        assert run("sweep", run_dir, "--ppi", "72", "--out", out / "sweep").exit_code == 0
        assert run("transform", run_dir, "--apply", "blur:1", "--out",
                   out / "transform").exit_code == 0
        for fmt in ("hf", "vlmevalkit", "lmms-eval", "jsonl"):
            result = run("export", run_dir, "--format", fmt, "--out", out / fmt)
            assert result.exit_code == 0, result.output
        made[name] = out
    for part in ("sweep", "transform"):
        made_here = files(made["shards"] / part)
        made_there = files(made["files"] / part)
        made_here.pop("sweep.json", None), made_there.pop("sweep.json", None)  # base's path
        assert made_here == made_there
    # the jsonl export of a sharded run writes its files out beside the manifest
    exported = JsonlLog(made["shards"] / "jsonl" / "manifest.jsonl").read()
    for row in exported:
        assert (made["shards"] / "jsonl" / row["images"][0]["path"]).is_file()
        assert (made["shards"] / "jsonl" / row["layout"]["path"]).is_file()
    assert [p.read_bytes() for p in sorted((made["shards"] / "hf").rglob("*.parquet"))] == \
        [p.read_bytes() for p in sorted((made["files"] / "hf").rglob("*.parquet"))]
    assert run("stats", copy_run(sharded, tmp_path / "stats")).exit_code == 0  # it writes

    from mmconvert.qa.review import ReviewState

    row = JsonlLog(plain / "manifest.jsonl").read()[0]
    state = ReviewState(sharded)
    assert state.file(row["images"][0]["path"]) == (plain / row["images"][0]["path"]).read_bytes()
    assert state.file("images/nothing.png") is None and state.file("../run.json") is None


@pytest.mark.slow
def test_qa_check_reads_the_shards(both, tmp_path):
    import shutil

    plain, sharded = both
    events = {}
    for name, run_dir in (("files", plain), ("shards", sharded)):
        copy = tmp_path / name
        shutil.copytree(run_dir, copy)
        result = run("qa", "check", copy, "--checks", "image,ocr,text_layer")
        assert result.exit_code == 0, result.output
        events[name] = [{k: v for k, v in e.items() if k not in ("at", "detail")}
                        for e in JsonlLog(copy / "qa.jsonl").read()]
    assert events["shards"] == events["files"]
    assert {e["verdict"] for e in events["shards"]} == {"accept"}


def test_a_torn_shard_and_everything_after_it_are_made_again(both, tmp_path):
    import shutil

    _, sharded = both
    out = tmp_path / "run"
    shutil.copytree(sharded, out)
    second = shard_files(out)[1]
    second.write_bytes(second.read_bytes()[:len(second.read_bytes()) // 2])  # torn
    log = []
    summary = mmconvert.convert({**CONFIG, "store": "shards", "shard_rows": 4}, out=out,
                                log=log.append)
    assert summary.already_done == 4
    assert any("removed" in line and "shard" in line for line in log)
    assert shard_bytes(out) == shard_bytes(sharded)
    assert (out / "manifest.jsonl").read_bytes() == (sharded / "manifest.jsonl").read_bytes()


def test_a_shard_the_manifest_never_recorded_is_made_again(both, tmp_path):
    import shutil

    _, sharded = both
    out = tmp_path / "run"
    shutil.copytree(sharded, out)
    rows = JsonlLog(out / "manifest.jsonl").read()
    JsonlLog(out / "manifest.jsonl").rewrite(rows[:4])  # killed after shard 1's rename
    (out / "shards" / ".shard-000002.parquet.tmp").write_bytes(b"PAR1 half")
    summary = mmconvert.convert({**CONFIG, "store": "shards", "shard_rows": 4}, out=out)
    assert summary.already_done == 4
    assert shard_bytes(out) == shard_bytes(sharded)
    assert not list(out.rglob("*.tmp"))


def test_a_shard_whose_rows_were_cut_part_way_into_the_manifest_is_made_again(both, tmp_path):
    """A kill during the append of a shard's rows (one write, which the kernel can stop
    between pages) leaves some of them and a torn line: the shard is made again with them."""
    import shutil

    _, sharded = both
    out = tmp_path / "run"
    shutil.copytree(sharded, out)
    manifest = out / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(b"".join(lines[:6]) + lines[6][:40])  # shard 1: 2 of its 4 rows
    summary = mmconvert.convert({**CONFIG, "store": "shards", "shard_rows": 4}, out=out)
    assert summary.already_done == 4 and summary.rendered == 10
    assert shard_bytes(out) == shard_bytes(sharded)
    assert manifest.read_bytes() == (sharded / "manifest.jsonl").read_bytes()


def row_files(plain: Path, row: dict) -> list[tuple[str, bytes]]:
    names = [i["path"] for i in row["images"]] + [row["layout"]["path"], row["pdf"]]
    return [(rel, (plain / rel).read_bytes()) for rel in names]


def spooled_run(plain: Path, out: Path, submit) -> None:
    """The files run's rows into shards of 4, as a cluster's driver gets them: each row's
    files written into the spool by a worker, only the row handed to the sink."""
    from mmconvert.runfolder import Output, RunFolder

    folder = RunFolder(out)
    out.mkdir()
    with folder.sharded(4, submit):
        for row in JsonlLog(plain / "manifest.jsonl").read():
            output = Output()
            output.row, output.files = row, row_files(plain, row)
            output.write_into(out, under=folder.spool, durable=False)
            assert output.files == [] and output.written
            folder.write(output)


def test_shards_packed_elsewhere_are_the_same_bytes_and_their_rows_keep_order(
        both, tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    import mmconvert.shards as shards

    plain, sharded = both
    monkeypatch.setattr(shards, "PACKS_IN_FLIGHT", 1)
    lock = threading.Lock()
    running, most = [0], [0]

    def pack_slowly(fn, root, spool, index, entries):  # earlier shards finish later
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.3 if index % 2 == 0 else 0.0)
        try:
            return fn(root, spool, index, entries)
        finally:
            with lock:
                running[0] -= 1

    with ThreadPoolExecutor(4) as pool:
        spooled_run(plain, tmp_path / "run",
                    lambda fn, *args: pool.submit(pack_slowly, fn, *args))
    assert shard_bytes(tmp_path / "run") == shard_bytes(sharded)
    assert (tmp_path / "run" / "manifest.jsonl").read_bytes() == \
        (plain / "manifest.jsonl").read_bytes()
    assert not (tmp_path / "run" / "shards" / ".spool").exists()
    # one waiting to be recorded and the one over the limit at most; and more than one
    assert most[0] == 2


def test_a_stopped_run_keeps_the_shards_packed_in_order_and_resume_drops_the_rest(
        both, tmp_path, monkeypatch):
    from concurrent.futures import Future

    import mmconvert.shards as shards

    plain, sharded = both
    monkeypatch.setattr(shards, "ABANDON_WAIT", 0.2)
    out = tmp_path / "run"
    packed: list[int] = []

    def submit(fn, root, spool, index, entries):
        future: Future = Future()
        if index != 1:  # shard 1 is still packing when the run stops
            future.set_result(fn(root, spool, index, entries))
            packed.append(index)
        if index == 2:
            raise KeyboardInterrupt  # the run stops with shard 2 packed, not recorded
        return future

    with pytest.raises(KeyboardInterrupt):
        spooled_run(plain, out, submit)
    rows = JsonlLog(out / "manifest.jsonl").read()
    assert packed == [0, 2] and len(rows) == 4  # shard 0's rows only
    manifest = JsonlLog(out / "manifest.jsonl")
    # shard 2 goes
    assert shards.check_shards(out, [r["id"] for r in rows], manifest.lines) == (4, 1)
    assert [p.name for p in shard_files(out)] == ["shard-000000.parquet"]
    assert shard_bytes(out)["shard-000000.parquet"] == \
        shard_bytes(sharded)["shard-000000.parquet"]


def test_a_shard_that_fails_to_pack_stops_the_run_with_its_error(both, tmp_path):
    from concurrent.futures import Future

    plain, _ = both

    pending: list[Future] = []

    def submit(fn, root, spool, index, entries):
        future: Future = Future()
        if index == 1:  # fails once shard 2 is packing
            pending.append(future)
        else:
            future.set_result(fn(root, spool, index, entries))
            for earlier in pending:
                earlier.set_exception(OSError(f"{root}: no space left on device"))
        return future

    with pytest.raises(OSError, match="no space left"):
        spooled_run(plain, tmp_path / "run", submit)
    # shard 0's rows; not shard 2's, though it was packed before the run stopped
    assert len(JsonlLog(tmp_path / "run" / "manifest.jsonl").read()) == 4


def test_a_pack_a_killed_run_left_running_puts_nothing_in_place(both, tmp_path, monkeypatch):
    import shutil
    from concurrent.futures import Future

    import mmconvert.shards as shards
    from mmconvert.runfolder import Output

    plain, _ = both
    out, spool = tmp_path / "run", shards.new_spool()
    entries = []
    for row in JsonlLog(plain / "manifest.jsonl").read()[:4]:
        output = Output()
        output.row, output.files = row, row_files(plain, row)
        output.write_into(out, under=spool, durable=False)
        entries.append((row, output.written))
    close = shards._ShardFile.close

    def cleared_meanwhile(self, still=None):  # the run, started again, clears the spools
        shutil.rmtree(out / shards.SPOOL)
        return close(self, still)

    monkeypatch.setattr(shards._ShardFile, "close", cleared_meanwhile)
    assert shards.pack(str(out), spool, 0, entries) is False
    assert list((out / "shards").iterdir()) == []  # no shard, and no temporary file

    def submit(fn, root, spool, index, entries):  # the driver that sent it is told
        future: Future = Future()
        future.set_result(False)
        return future

    with pytest.raises(OSError, match="cleared while shard 0 was packing"):
        spooled_run(plain, tmp_path / "again", submit)


def test_a_resumed_run_clears_the_spool_a_stopped_one_left(both, tmp_path):
    import shutil

    _, sharded = both
    out = tmp_path / "run"
    shutil.copytree(sharded, out)
    JsonlLog(out / "manifest.jsonl").rewrite(JsonlLog(out / "manifest.jsonl").read()[:4])
    stale = out / "shards" / ".spool" / "images" / "stale.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"never packed")
    summary = mmconvert.convert({**CONFIG, "store": "shards", "shard_rows": 4}, out=out)
    assert summary.already_done == 4
    assert not (out / "shards" / ".spool").exists()
    assert shard_bytes(out) == shard_bytes(sharded)


@pytest.mark.slow
def test_a_killed_sharded_run_resumes_shard_by_shard(tmp_path):
    source = long_items(tmp_path / "docs.jsonl")
    config = {"corpus": str(source), "store": "shards", "shard_rows": 3}
    fresh = tmp_path / "fresh"
    mmconvert.convert(config, out=fresh)
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "mmconvert", "render", str(source), "--out", str(out),
               "--workers", "2", "--store", "shards", "--shard-rows", "3"]
    proc = subprocess.Popen(command, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and len(shard_files(out)) < 2:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    recorded = len(JsonlLog(out / "manifest.jsonl").read())
    # a shard's three rows (about 120 KB here) are one append, which a kill can cut part way
    # (the kernel stops a write between pages): the rows past the last whole shard are cut on
    # resume and made again with that shard
    whole = recorded - recorded % 3
    assert 3 <= whole and recorded < 24, "the kill should land mid-run"
    summary = mmconvert.convert(config, out=out, workers=2)
    assert summary.already_done == whole and summary.rendered == 24 - whole
    assert shard_bytes(out) == shard_bytes(fresh)
    assert (out / "manifest.jsonl").read_bytes() == (fresh / "manifest.jsonl").read_bytes()


def test_a_folder_keeps_the_store_it_was_made_with(both, tmp_path):
    out = tmp_path / "run"
    mmconvert.convert({**CONFIG, "limit": 2}, out=out)
    result = CliRunner().invoke(main, ["render", "mmlu-redux", "--source", str(REDUX_CSV),
                                       "--pdf", "--limit", "2", "--out", str(out),
                                       "--store", "shards"])
    assert not (out / "shards").exists()
    assert result.exit_code != 0 and "store" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_torn_shard_is_one_line_for_a_reader_and_the_other_shards_still_read(both, tmp_path):
    import shutil

    _, sharded = both
    out = tmp_path / "run"
    shutil.copytree(sharded, out)
    second = shard_files(out)[1]
    second.write_bytes(second.read_bytes()[:500])
    result = CliRunner().invoke(main, ["export", str(out), "--format", "hf", "--out",
                                       str(tmp_path / "hf")])
    assert result.exit_code != 0
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and "line 5" in line and "shard-000001.parquet" in line
    result = run("export", out, "--format", "hf", "--out", tmp_path / "hf", "--on-error", "skip")
    assert result.exit_code == 0 and "10 item(s) exported" in result.output


def rewrite_shard(path: Path, change) -> None:
    """The shard at ``path`` with ``change(records)`` applied to its rows, written whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mmconvert.shards import _schema

    records = pq.ParquetFile(path).read().to_pylist()
    change(records)
    pq.write_table(pa.Table.from_pylist(records, schema=_schema()), path)


@pytest.mark.parametrize("damage", ["image bytes", "shard row", "manifest sha256",
                                    "manifest answer"])
def test_resume_redoes_a_whole_shard_whose_rows_or_bytes_differ(both, tmp_path, damage):
    """A shard that parses but no longer matches the manifest (an image's bytes, its row, or
    the manifest's sha256 or answer edited) is made again on resume, with every later one."""
    import shutil

    _, sharded = both
    out = tmp_path / "run"
    shutil.copytree(sharded, out)
    second = shard_files(out)[1]
    manifest = out / "manifest.jsonl"
    lines = manifest.read_text().split("\n")[:-1]  # (a row may hold U+2028)
    if damage == "image bytes":
        def change(records):
            image = records[0]["images"][0]
            image["bytes"] = image["bytes"] + b"\0"
        rewrite_shard(second, change)
    elif damage == "shard row":
        def change(records):
            records[1]["row"] = records[1]["row"].replace('"answer": "', '"answer": "Z')
        rewrite_shard(second, change)
    else:
        row = json.loads(lines[5])
        if damage == "manifest sha256":
            row["images"][0]["sha256"] = "0" * 64
        else:
            row["answer"] = "D" if row["answer"] != "D" else "C"
        lines[5] = json.dumps(row, ensure_ascii=False, separators=(", ", ": "))
        manifest.write_text("\n".join(lines) + "\n")
    if damage in ("image bytes", "manifest sha256"):  # a reader names the shard, not a file
        result = run("export", out, "--format", "jsonl", "--out", tmp_path / "j")
        assert result.exit_code == 1 and "shard-000001.parquet" in result.output, result.output
    log = []
    summary = mmconvert.convert({**CONFIG, "store": "shards", "shard_rows": 4}, out=out,
                                log=log.append)
    assert summary.already_done == 4 and summary.rendered == len(lines) - 4
    removed = len(shard_files(sharded)) - 1
    assert any(f"removed {removed} shard(s) torn, changed" in line for line in log), log
    assert shard_bytes(out) == shard_bytes(sharded)
    assert manifest.read_bytes() == (sharded / "manifest.jsonl").read_bytes()


def test_a_parquet_file_of_another_schema_in_shards_is_no_traceback(both, tmp_path):
    """A file named like a shard that is not one: readers pass over it (naming it when a
    file they need is in no shard, also a reader that indexed the shard before it was
    replaced), and a resumed run removes it."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    _, sharded = both
    out = tmp_path / "run"
    shutil.copytree(sharded, out)
    last = shard_files(out)[-1]
    foreign = last.with_name(f"shard-{int(last.stem.split('-')[1]) + 1:06d}.parquet")
    pq.write_table(pa.table({"a": [1, 2]}), foreign)
    result = run("export", out, "--format", "jsonl", "--out", tmp_path / "j")
    assert result.exit_code == 0, result.output
    pq.write_table(pa.table({"a": [1, 2]}), shard_files(out)[0])  # one that is needed
    # the reader of this process (a review server, say) sees the shard made again
    result = run("export", out, "--format", "jsonl", "--out", tmp_path / "k")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "shard-000000.parquet cannot be read (not an mmconvert shard" in result.output
    log = []
    mmconvert.convert({**CONFIG, "store": "shards", "shard_rows": 4}, out=out, log=log.append)
    assert shard_bytes(out) == shard_bytes(sharded)
