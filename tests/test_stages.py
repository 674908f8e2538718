"""The run's stages (``mmconvert.stages``), each alone on real parts: the selection and the
limit the sink counts, the resume (with the redraw of items changed at the source), the
drawing's tasks, the sink (with the limit) and the storage. ``tests/test_converter.py`` and
the resume tests check them together, as ``convert`` runs them."""

from __future__ import annotations

import contextlib
import json
import shutil

from mmconvert.config import ExecutionOptions, run_config
from mmconvert.converter import convert, make_job
from mmconvert.corpora import resolve
from mmconvert.corpora.files import LocalFile
from mmconvert.errors import ItemError
from mmconvert.manifest import JsonlLog
from mmconvert.runfolder import Failed, Made, Output, RunFolder, Stopped
from mmconvert.selection import stream_selection
from mmconvert.stages import (
    Resumed,
    RunSummary,
    passed_to_limit,
    resume_folder,
    select_items,
    sink,
    storage,
    tasks,
)
from tests.conftest import SAMPLE

ITEMS = [{"id": f"q-{n}", "question": f"Question {n}?", "options": ["yes", "no"],
          "answer": "A"} for n in range(4)]


def source(tmp_path, items=ITEMS):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def test_select_stops_at_the_limit_or_leaves_it_to_the_sink(tmp_path):
    config = run_config({"corpus": "mmlu-redux", "source": str(SAMPLE), "limit": 2})
    execution = ExecutionOptions(out=tmp_path / "run")
    corpus = resolve("mmlu-redux")
    for drops, count, at_sink in ((False, 2, None), (True, 2, 2)):
        summary = RunSummary(out=tmp_path)
        selection, limit = select_items(config, corpus, execution, drops, False, summary, print)
        assert (selection.count, limit, summary.selected) == (count, at_sink, count)
        # the renderer that may drop an item reads on past the limit; the other stops at it
        assert len(list(selection.items)) == (9 if drops else 2)


def test_resume_forgets_the_items_changed_at_the_source(tmp_path):
    path = source(tmp_path)
    out = tmp_path / "run"
    convert({"corpus": str(path)}, out=out)
    changed = [dict(item) for item in ITEMS]
    changed[2]["question"] = "Question two, edited?"
    path.write_text("".join(json.dumps(item) + "\n" for item in changed), encoding="utf-8")
    config = run_config({"corpus": str(path)})
    selection = stream_selection(config, LocalFile(path), ids=True)
    summary, said = RunSummary(out=out), []
    found = resume_folder(RunFolder(out), selection, "redraw", summary, said.append)
    assert found.changed == ["q-2"] and summary.changed == 1
    assert found.made == found.done == {"q-0", "q-1", "q-3"}
    assert said == [f"{out}: 1 item(s) changed in the source since they were drawn (the "
                    "first: q-2): drawn again"] == summary.notes
    assert [row["id"] for row in JsonlLog(out / "manifest.jsonl").read()] == \
        ["q-0", "q-1", "q-3"]  # its row forgotten, to be drawn again
    assert selection.ids is None  # checked, and not held through the run


def test_resume_removes_repeated_rows_and_says_so(tmp_path):
    out = tmp_path / "run"
    convert({"corpus": str(source(tmp_path))}, out=out)
    manifest = out / "manifest.jsonl"
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines + lines[:1]))
    summary, said = RunSummary(out=out), []
    selection = stream_selection(run_config({"corpus": str(source(tmp_path))}),
                                 LocalFile(tmp_path / "items.jsonl"), ids=True)
    found = resume_folder(RunFolder(out), selection, "redraw", summary, said.append)
    assert found.made == {f"q-{n}" for n in range(4)} and not found.changed
    assert said == [f"{manifest}: removed 1 repeated row(s) (two runs once wrote into this "
                    "folder)"]
    assert manifest.read_text() == "".join(lines)


def test_tasks_are_the_items_not_done_in_order_and_count_the_done(tmp_path):
    path = source(tmp_path)
    config = run_config({"corpus": str(path)})
    corpus, job = LocalFile(path), make_job(config)
    items = list(stream_selection(config, corpus).items)
    summary, order = RunSummary(out=tmp_path), {}
    made = list(tasks(items, Resumed({"q-1", "q-3"}, {"q-1"}, []), job, corpus, summary,
                      order))
    assert [item.id for item, _, _ in made] == ["q-0", "q-2"]
    assert summary.already_done == 2
    assert order == {"q-0": 0, "q-1": 1, "q-2": 2, "q-3": 3}


def test_at_the_limit_the_done_items_are_counted_until_the_made_ones_pass(tmp_path):
    path = source(tmp_path)
    config = run_config({"corpus": str(path)})
    items = list(stream_selection(config, LocalFile(path)).items)
    summary = RunSummary(out=tmp_path)
    # q-1 skipped before, q-0 and q-2 made: counting stops once both made ones have passed
    passed_to_limit(items, Resumed({"q-0", "q-1", "q-2", "q-3"}, {"q-0", "q-2"}, []),
                    summary)
    assert summary.already_done == 3


def test_the_sink_counts_each_fate_and_stops_at_the_limit(tmp_path):
    out = tmp_path / "run"
    convert({"corpus": str(source(tmp_path))}, out=out)
    rows = JsonlLog(out / "manifest.jsonl").read()
    drawn = {image["path"]: (out / image["path"]).read_bytes()
             for row in rows for image in row["images"]}
    shutil.rmtree(out)
    folder = RunFolder(out)
    with folder.lock():
        folder.create(True)
        closed = []

        def results(outputs):
            try:
                yield from outputs
            finally:
                closed.append(True)

        def made(row):  # the item's image, as its worker would hand it back
            output = Output()
            for image in row["images"]:
                output.file(image["path"], drawn[image["path"]])
            output.row = dict(row)
            return Made(output)

        failure = ItemError("no text", where="items.jsonl row 9", field="question",
                            item_id="q-9")
        summary = RunSummary(out=out)
        sink(folder, results([made(rows[0]), Failed(failure, None), Stopped("budget"),
                              made(rows[1]), made(rows[2])]), "skip", summary, wanted=2)
        assert closed == [True]  # the work past the limit is cancelled
        assert (summary.rendered, summary.skipped, summary.not_done, summary.stopped) == \
            (2, 1, 1, "budget")
        assert [r["id"] for r in JsonlLog(out / "manifest.jsonl").read()] == ["q-0", "q-1"]
        assert JsonlLog(out / "skipped.jsonl").read()[0]["id"] == "q-9"


def test_storage_is_shards_groups_or_each_row_as_it_comes(tmp_path):
    folder = RunFolder(tmp_path / "run")
    execution = ExecutionOptions(out=tmp_path / "run")
    files = run_config({"corpus": "mmlu-redux"})
    shards = run_config({"corpus": "mmlu-redux", "store": "shards"})
    job = make_job(files)
    assert isinstance(storage(folder, files, execution, job),
                      type(folder.grouped()))
    assert isinstance(storage(folder, shards, execution, job),
                      type(folder.sharded(shards.shard_rows)))

    class Waits:  # a job that waits on the network (generate's): each row as it comes
        threads = 8
    assert isinstance(storage(folder, files, execution, Waits()), contextlib.nullcontext)
