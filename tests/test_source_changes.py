"""A changed source is never served stale: every row records the fingerprint of the source
fields it was drawn from (``source_sha256``); a resumed run draws an item whose source changed
again (or, with ``--on-change refuse``, stops and changes nothing), says how many, and ends
with the folder a run from scratch on the new source writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import mmconvert
from mmconvert.cli import main
from mmconvert.errors import RunFolderError
from mmconvert.manifest import JsonlLog

ROWS = [{"id": f"q{i}", "question": f"Question {i}?", "options": ["yes", "no", "maybe"],
         "answer": "A"} for i in range(4)]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in ("run.json", ".mmconvert.lock")}


def edited(rows: list[dict], index: int, **fields) -> list[dict]:
    return [{**row, **fields} if n == index else row for n, row in enumerate(rows)]


def test_an_item_edited_in_the_source_is_drawn_again(tmp_path):
    source = write(tmp_path / "items.jsonl", ROWS)
    out = tmp_path / "run"
    mmconvert.convert({"corpus": str(source)}, out=out)
    before = files(out)
    rows = JsonlLog(out / "manifest.jsonl").read()
    assert all(len(row["source_sha256"]) == 64 for row in rows)
    write(source, edited(ROWS, 1, question="Question 1, edited?", options=["si", "no", "x"]))
    notes = []
    summary = mmconvert.convert({"corpus": str(source)}, out=out, log=notes.append)
    assert (summary.rendered, summary.changed, summary.already_done) == (1, 1, 3)
    assert "(1 drawn again: their source changed); 3 already done" in summary.line()
    assert any("1 item(s) changed in the source since they were drawn (the first: q1)" in n
               for n in notes)
    row = {r["id"]: r for r in JsonlLog(out / "manifest.jsonl").read()}["q1"]
    assert row["question"] == "Question 1, edited?" and row["options"][0] == "si"
    # the folder is what a run from scratch on the edited source writes: rows in item order
    fresh = tmp_path / "fresh"
    mmconvert.convert({"corpus": str(source)}, out=fresh)
    assert files(out) == files(fresh)
    assert files(out)["images/q1_p001.png"] != before["images/q1_p001.png"]
    # and then nothing is left to do
    again = mmconvert.convert({"corpus": str(source)}, out=out)
    assert (again.rendered, again.changed, again.already_done) == (0, 0, 4)


def test_on_change_refuse_stops_and_changes_nothing(tmp_path):
    source = write(tmp_path / "items.jsonl", ROWS)
    out = tmp_path / "run"
    assert CliRunner().invoke(main, ["render", str(source), "--out", str(out),
                                     "--no-progress"]).exit_code == 0
    before = files(out)
    write(source, edited(ROWS, 2, answer="B"))
    result = CliRunner().invoke(main, ["render", str(source), "--out", str(out),
                                       "--on-change", "refuse", "--no-progress"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"Error: {out}: 1 item(s) changed in the source since they were drawn (the first: "
        "q2); nothing was changed: --on-change redraw draws them again, --overwrite starts "
        "the run again")
    assert files(out) == before
    with pytest.raises(RunFolderError):
        from mmconvert.config import ExecutionOptions

        mmconvert.convert({"corpus": str(source)}, execution=ExecutionOptions(
            out=out, on_change="refuse"))


def test_a_skipped_item_whose_source_is_mended_is_drawn(tmp_path):
    """A skip records the fingerprint too: an item skipped while drawing (a NUL in its text)
    and one skipped at load (no options list) are made once their rows are mended."""
    bad = edited(ROWS, 1, options=["ye\x00s", "no", "maybe"])
    bad = edited(bad, 3, options="not a list")
    source = write(tmp_path / "items.jsonl", bad)
    out = tmp_path / "run"
    first = mmconvert.convert({"corpus": str(source), "on_error": "skip"}, out=out)
    assert first.rendered == 2
    skips = {s["id"]: s for s in JsonlLog(out / "skipped.jsonl").read()}
    assert skips["q1"]["stage"] == "render" and len(skips["q1"]["source_sha256"]) == 64
    write(source, ROWS)
    second = mmconvert.convert({"corpus": str(source), "on_error": "skip"}, out=out)
    assert (second.rendered, second.changed) == (2, 2)
    assert not JsonlLog(out / "skipped.jsonl").read()
    fresh = tmp_path / "fresh"
    mmconvert.convert({"corpus": str(source)}, out=fresh)
    assert files(out) == files(fresh)


def test_a_sharded_run_draws_a_changed_item_again(tmp_path):
    source = write(tmp_path / "items.jsonl", ROWS)
    config = {"corpus": str(source), "store": "shards", "shard_rows": 2}
    out = tmp_path / "run"
    mmconvert.convert(config, out=out)
    write(source, edited(ROWS, 3, question="Changed?"))
    config["corpus"] = str(source)
    summary = mmconvert.convert(config, out=out)
    assert summary.changed == 1 and summary.already_done == 2  # the second shard is made again
    fresh = tmp_path / "fresh"
    mmconvert.convert(config, out=fresh)
    assert files(out) == files(fresh)


def test_a_transform_of_a_run_whose_item_was_drawn_again_follows_it(tmp_path):
    from mmconvert.postprocess.chain import transform_run

    source = write(tmp_path / "items.jsonl", ROWS)
    base, blurred = tmp_path / "run", tmp_path / "blurred"
    mmconvert.convert({"corpus": str(source)}, out=base)
    transform_run(base, blurred, ["blur:1"])
    write(source, edited(ROWS, 0, question="New first?"))
    mmconvert.convert({"corpus": str(source)}, out=base)
    summary = transform_run(base, blurred, ["blur:1"])
    assert (summary.made, summary.already_done) == (1, 3)
    fresh = tmp_path / "fresh"
    transform_run(base, fresh, ["blur:1"])
    assert files(blurred) == files(fresh)


def test_rows_made_before_fingerprints_resume_as_they_were(tmp_path):
    """A row with no source_sha256 (mmconvert before this) cannot tell: it is kept."""
    source = write(tmp_path / "items.jsonl", ROWS)
    out = tmp_path / "run"
    mmconvert.convert({"corpus": str(source)}, out=out)
    log = JsonlLog(out / "manifest.jsonl")
    log.rewrite([{k: v for k, v in row.items() if k != "source_sha256"} for row in log.read()])
    write(source, edited(ROWS, 1, question="Edited?"))
    summary = mmconvert.convert({"corpus": str(source)}, out=out)
    assert (summary.rendered, summary.changed, summary.already_done) == (0, 0, 4)
