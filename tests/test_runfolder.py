"""No file outside the run folder, whatever a row's data says: ids and subsets are checked where
items are made, and every output name is made from a checked id and resolved inside the run
folder before anything is written."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from mmconvert.corpora import LoadReport, resolve
from mmconvert.corpora.base import load_request
from mmconvert.errors import ItemError
from mmconvert.items import Item, check_name, content_id
from mmconvert.runfolder import inside, item_file, write_file
from tests.conftest import FIXTURES
from tests.test_cli import run
from tests.typed import typed

TRAVERSING = ("../../../../{victim}/PWNED", "a/b", "..", "/{victim}/abs", "x\\..\\y", ".hidden")


def files_under(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def load(name, **request):
    report = LoadReport()
    corpus = resolve(name)
    return list(corpus.load(load_request(corpus, request), report)), report


@pytest.mark.parametrize("field", ["id", "subset"])
@pytest.mark.parametrize("value", TRAVERSING)
def test_generic_file_refuses_a_traversing_id_or_subset(tmp_path, field, value):
    victim = tmp_path / "victim"
    victim.mkdir()
    source = tmp_path / "items.jsonl"
    rows = [{field: value.format(victim=victim.as_posix().lstrip("/")), "question": "Q?",
             "options": ["a", "b"], "answer": "A"},
            {"question": "Fine?", "options": ["yes", "no"], "answer": "B"}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    result = run("render", source, "--out", out)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {source} line 1: field {field}: {field} ")
    assert "is not file-name safe" in result.output and len(result.output.splitlines()) == 1
    result = run("render", source, "--out", out, "--on-error", "skip")
    assert result.exit_code == 0, result.output
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert len(skipped) == 1 and f"field {field}" in skipped[0]["reason"]
    assert files_under(victim) == []
    assert files_under(tmp_path) == sorted([*(f"run/{p}" for p in files_under(out)),
                                            "items.jsonl"])
    images = [p for p in files_under(out) if p.startswith("images/")]
    assert images == [f"images/{content_id('en', None, 'Fine?', ['yes', 'no'])}_p001.png"]


def test_coco_annotation_ids_cannot_leave_the_run_folder(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    coco = tmp_path / "coco"
    shutil.copytree(FIXTURES / "coco", coco)
    path = coco / "annotations" / "captions_val2017.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    first = data["annotations"][0]
    first["id"] = f"../../../{victim.as_posix().lstrip('/')}/OCC"
    path.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "run"
    result = run("occlude", "captions", "--source", coco, "--out", out, "--all-captions",
                 "--no-ner")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {path} annotations[0]: field id: id '../../")
    result = run("occlude", "captions", "--source", coco, "--out", out, "--all-captions",
                 "--no-ner", "--on-error", "skip", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert "field id" in (out / "skipped.jsonl").read_text()
    assert files_under(victim) == []


def test_a_coco_image_id_that_is_not_a_number_falls_back_to_the_row(tmp_path):
    coco = tmp_path / "coco"
    shutil.copytree(FIXTURES / "coco", coco)
    path = coco / "annotations" / "captions_val2017.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    image = data["images"][0]
    old = image["id"]
    image["id"] = "../../x"
    for ann in data["annotations"]:
        if ann["image_id"] == old:
            ann["image_id"] = "../../x"
    path.write_text(json.dumps(data), encoding="utf-8")
    items, _ = load("captions", source=coco)
    assert items[0].id == "val2017-0000"


def rewrite_csv(path, change):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    change(rows)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(text.getvalue(), encoding="utf-8")


def test_every_corpus_field_that_feeds_an_id_is_checked_or_not_used(tmp_path):
    """The corpora whose ids take a value from the data: a traversing value is refused
    (GPQA's record id), or is not used for the id (native ids must be numbers), or is made
    safe (MMLU-Pro's category names a subset)."""
    evil = "../../../tmp/PWNED"
    # GPQA: Record ID is refused, naming the row and field
    gpqa = tmp_path / "gpqa"
    shutil.copytree(FIXTURES / "gpqa", gpqa)
    rewrite_csv(gpqa / "gpqa_diamond.csv", lambda rows: rows[0].update({"Record ID": evil}))
    with pytest.raises(ItemError, match=r"gpqa_diamond.csv line \d+: field Record ID: record id"):
        load("gpqa", source=gpqa)
    # LongBench: _id that is not file-name safe is not used
    longbench = tmp_path / "longbench" / "data"
    longbench.mkdir(parents=True)
    lines = (FIXTURES / "longbench" / "data" / "hotpotqa_e.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["_id"] = evil
    (longbench / "hotpotqa_e.jsonl").write_text(
        "\n".join([json.dumps(row), *lines[1:]]) + "\n", encoding="utf-8")
    items, _ = load("longbench", source=longbench.parent, subsets=["hotpotqa_e"])
    # LogiQA 2.0: a native id that is not a number is not used
    logiqa2 = tmp_path / "logiqa2"
    logiqa2.mkdir()
    lines = (FIXTURES / "logiqa2" / "test.txt").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["id"] = evil
    (logiqa2 / "test.txt").write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n",
                                      encoding="utf-8")
    more, _ = load("logiqa2", source=logiqa2)
    items += more
    # TMMLU+ (exams): a native id that is not a number is not used
    exams = tmp_path / "tmmluplus"
    shutil.copytree(FIXTURES / "tmmluplus", exams)
    target = exams / "data" / "geography_of_taiwan_test.csv"
    rewrite_csv(target, lambda rows: [r.update({"id": evil}) for r in rows])
    more, _ = load("tmmluplus", source=exams)
    items += more
    # MMLU-Pro: the category names the subset and is made safe; question_id must be a number
    import pyarrow.parquet as pq

    pro = tmp_path / "mmlu-pro" / "data"
    pro.mkdir(parents=True)
    table = pq.read_table(FIXTURES / "mmlu-pro" / "data" / "test-00000-of-00001.parquet")
    data = table.to_pylist()
    data[0]["category"] = evil
    pq.write_table(type(table).from_pylist(data, schema=table.schema),
                   pro / "test-00000-of-00001.parquet")
    more, _ = load("mmlu-pro", source=pro.parent)
    items += more
    assert items and all("/" not in i.id and not i.id.startswith(".") for i in items)
    assert any(i.subset == "tmp_PWNED" for i in items)


@pytest.mark.parametrize("value", ["../x", "a/b", "", ".x", "x" * 201, 5, None, "a\x00b"])
def test_item_refuses_an_unsafe_id_or_subset(value):
    with pytest.raises(ItemError, match=r"^f\.csv line 3: field id: id .* is not file-name safe"):
        Item(id=value, corpus="c", subset="s", split="test", origin="f.csv line 3")
    with pytest.raises(ItemError, match=r"^f\.csv line 3: field subset: subset "):
        Item(id="s-1", corpus="c", subset=value, split="test", origin="f.csv line 3")


def test_output_names_are_made_from_checked_ids_and_stay_inside(tmp_path):
    assert item_file("images", "a-001", "_p001.png") == "images/a-001_p001.png"
    with pytest.raises(ItemError, match="field id"):
        item_file("images", "../a", ".png")
    assert check_name("x.y-1_z", "", "id") == "x.y-1_z"
    for rel in ("../x", "/etc/passwd", "images/../../x", "a\\b", "", None, "a\x00"):
        with pytest.raises(ItemError, match="field images\\[0\\].path"):
            inside(tmp_path, rel, where="m line 1", field="images[0].path")
    # a symlink inside the run folder that leads out is refused too
    outside = tmp_path / "outside"
    outside.mkdir()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "images").symlink_to(outside)
    with pytest.raises(ItemError, match="leads outside the run folder"):
        write_file(run_dir, "images/x.png", b"png")
    assert files_under(outside) == []
    (run_dir / "pdf").symlink_to(run_dir / "pdf")  # a loop
    with pytest.raises(ItemError, match="cannot be resolved"):
        write_file(run_dir, "pdf/x.pdf", b"%PDF")
    write_file(run_dir, "layout/x.json", b"{}")
    assert (run_dir / "layout" / "x.json").read_bytes() == b"{}"


def test_a_relative_run_folder_is_checked_where_it_is_now(tmp_path, monkeypatch):
    """The same relative folder name in two working directories: the second one's escaping
    symlink is refused, though the first was checked (and its real path kept) before."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("a", "b"):
        (tmp_path / name / "run").mkdir(parents=True)
    (tmp_path / "b" / "run" / "images").symlink_to(outside)
    monkeypatch.chdir(tmp_path / "a")
    write_file(Path("run"), "images/x.png", b"png")
    monkeypatch.chdir(tmp_path / "b")
    with pytest.raises(ItemError, match="leads outside the run folder"):
        write_file(Path("run"), "images/x.png", b"png")
    assert files_under(outside) == []


def test_a_sweep_or_export_of_a_manifest_naming_outside_paths_writes_nothing_there(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    base = tmp_path / "base"
    source = tmp_path / "items.jsonl"
    source.write_text(json.dumps({"question": "Q?", "options": ["a", "b"], "answer": "A"})
                      + "\n", encoding="utf-8")
    assert run("render", source, "--out", base).exit_code == 0
    manifest = base / "manifest.jsonl"
    row = json.loads(manifest.read_text())
    evil = f"../../../../../../../../{victim.as_posix().lstrip('/')}/PWNED.png"
    shutil.copy(base / row["images"][0]["path"], victim / "PWNED.png")
    row["images"][0]["path"] = evil
    manifest.write_text(json.dumps(row) + "\n", encoding="utf-8")
    result = run("sweep", base, "--scale", "0.5", "--out", tmp_path / "sweep")
    assert result.exit_code == 1
    assert "field images[0].path" in result.output and "is not a path inside" in result.output
    result = run("export", base, "--format", "jsonl", "--out", tmp_path / "export")
    assert result.exit_code == 1
    assert "field images[0].path" in result.output and "is not a path inside" in result.output
    assert files_under(victim) == ["PWNED.png"]


# --- one run at a time per folder -----------------------------------------------------------


def small_source(tmp_path, count=3):
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps({"question": f"Q{n}?", "options": ["a", "b"],
                                          "answer": "A"}) + "\n" for n in range(count)),
                      encoding="utf-8")
    return source


def test_a_second_run_into_a_locked_folder_stops_with_one_line(tmp_path):
    from mmconvert.locks import locked
    from mmconvert.runfolder import LOCK

    source, out = small_source(tmp_path), tmp_path / "run"
    with locked(out / LOCK, out):
        result = run("render", source, "--out", out)
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1
    assert result.output.startswith(f"Error: {out} is in use by another mmconvert run (pid ")
    assert not (out / "manifest.jsonl").exists()
    result = run("render", source, "--out", out)  # the lock went with its holder
    assert result.exit_code == 0, result.output


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path):
    import subprocess
    import sys

    source, out = small_source(tmp_path), tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from mmconvert.locks import locked; from mmconvert.runfolder import LOCK; "
         "out = Path(sys.argv[1]); "
         "cm = locked(out / LOCK, out); cm.__enter__(); print('held', flush=True); "
         "time.sleep(60)", str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        result = run("render", source, "--out", out)
        assert result.exit_code == 1 and f"pid {holder.pid}" in result.output
    finally:
        holder.kill()
        holder.wait()
    result = run("render", source, "--out", out)
    assert result.exit_code == 0 and "3 item(s) rendered" in result.output


def test_repeated_manifest_rows_are_repaired_and_foreign_ones_refused(tmp_path):
    source, out = small_source(tmp_path), tmp_path / "run"
    assert run("render", source, "--out", out).exit_code == 0
    manifest = out / "manifest.jsonl"
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text(lines[0] + lines[1] + lines[0] + lines[2] + lines[1], encoding="utf-8")
    result = run("render", source, "--out", out)
    assert result.exit_code == 0 and "removed 2 repeated row(s)" in result.output
    assert manifest.read_text().splitlines(keepends=True) == lines
    row = json.loads(lines[0])
    row["id"] = "elsewhere-0000"
    manifest.write_text("".join(lines) + json.dumps(row) + "\n", encoding="utf-8")
    result = run("render", source, "--out", out)
    assert result.exit_code == 1
    assert result.output == (f"Error: {manifest} row 4: item 'elsewhere-0000' is not in this "
                             "run's selection; use --overwrite to start again\n")


def test_a_sweep_or_export_into_a_target_in_use_stops(tmp_path):
    from mmconvert.locks import locked
    from mmconvert.runfolder import LOCK

    source, base = small_source(tmp_path), tmp_path / "base"
    assert run("render", source, "--out", base).exit_code == 0
    sweep_out, export_out = tmp_path / "sweep", tmp_path / "export"
    with locked(sweep_out / LOCK, sweep_out):
        result = run("sweep", base, "--scale", "0.5", "--out", sweep_out)
    assert result.exit_code == 1 and "is in use by another mmconvert run" in result.output
    with locked(export_out.with_name(".export.lock"), export_out):
        result = run("export", base, "--format", "jsonl", "--out", export_out)
    assert result.exit_code == 1 and "is in use by another mmconvert run" in result.output
    assert run("sweep", base, "--scale", "0.5", "--out", sweep_out).exit_code == 0
    assert run("export", base, "--format", "jsonl", "--out", export_out).exit_code == 0


def test_grouped_writes_append_rows_in_groups_after_their_files(tmp_path, monkeypatch):
    """Inside ``grouped`` the sink syncs files and appends rows a group at a time (the cost
    of an fsync a file was most of a short item's I/O); a row never goes before its files,
    and the rows of an unfinished group are appended when the block ends, even by an
    error."""
    from mmconvert import runfolder
    from mmconvert.runfolder import GROUP_ROWS, Output, RunFolder

    syncs = []
    monkeypatch.setattr(runfolder, "sync", lambda: syncs.append(1))
    monkeypatch.setattr(runfolder, "GROUP_SECONDS", 3600)
    folder = RunFolder(tmp_path / "run")
    folder.create(False)

    def output(n: int) -> Output:
        made = Output()
        made.row = {"id": f"item-{n:03d}", "renderer": {"name": "none"}}
        made.file(f"images/item-{n:03d}.png", b"png %d" % n)
        return made

    monkeypatch.setattr(runfolder, "read_row", lambda row, model=None: (typed(row), None))
    with pytest.raises(KeyboardInterrupt), folder.grouped():
        for n in range(GROUP_ROWS + 5):
            folder.write(output(n))
            rows = folder.manifest.read()
            assert len(rows) == (GROUP_ROWS if n >= GROUP_ROWS - 1 else 0)
            for row in rows:
                assert (tmp_path / "run" / "images" / f"{row['id']}.png").is_file()
        raise KeyboardInterrupt  # the block ends by an interrupt: its rows are kept
    assert [r["id"] for r in folder.manifest.read()] == [f"item-{n:03d}"
                                                        for n in range(GROUP_ROWS + 5)]
    assert len(syncs) == 2  # one sync a group


def test_a_row_holding_a_lone_surrogate_is_written_with_escapes(tmp_path):
    """A bad source row recorded in skipped.jsonl may hold a lone surrogate (JSON's "\\ud800"),
    which UTF-8 cannot carry: the line is written with escapes and reads back the same."""
    from mmconvert.manifest import JsonlLog

    log = JsonlLog(tmp_path / "skipped.jsonl")
    log.append({"id": "\ud800-0000", "reason": "bad"}, {"id": "é", "reason": "ok"})
    assert log.read() == [{"id": "\ud800-0000", "reason": "bad"}, {"id": "é", "reason": "ok"}]
    assert "é" in (tmp_path / "skipped.jsonl").read_text(encoding="utf-8")


def test_a_run_file_resolves_as_realpath_resolves_it(tmp_path):
    """``inside`` resolves only a file's own components, and the whole path where one is a
    link: the same answer as ``os.path.realpath`` on every kind of name a run may meet."""
    import os

    from mmconvert.runfolder import _realpath_under

    base = os.path.realpath(tmp_path)
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.png").write_bytes(b"")
    (tmp_path / "file").write_bytes(b"")
    os.symlink("/etc", tmp_path / "outside")
    os.symlink(tmp_path / "images", tmp_path / "alias")
    os.symlink("images/a.png", tmp_path / "file-link")
    os.symlink("loop-b", tmp_path / "loop-a")
    os.symlink("loop-a", tmp_path / "loop-b")
    for rel in ["images/a.png", "images/new.png", "new/deeper/x.png", "outside/passwd",
                "alias/a.png", "./images//a.png", "file/x", "file-link", "loop-a/x",
                "images", "dangling/x"]:
        assert _realpath_under(base, rel) == os.path.realpath(os.path.join(base, rel)), rel


def test_partial_files_are_removed_inside_the_folder_only(tmp_path):
    """A killed write's ``.NAME.*.tmp`` files go, in every folder of the run; a folder a link
    leads to (outside the run) is not entered, and other files stay."""
    import os

    from mmconvert.runfolder import RunFolder

    run, outside = tmp_path / "run", tmp_path / "outside"
    (run / "images" / "deep").mkdir(parents=True)
    outside.mkdir()
    partial = [run / ".run.json.1-2.tmp", run / "images" / ".a.png.77-1.tmp",
               run / "images" / "deep" / ".b.png.x8k2.tmp"]
    kept = [run / "images" / "a.png", run / "images" / ".tmp", run / "notes.tmp",
            outside / ".c.png.1-1.tmp"]
    for path in partial + kept:
        path.write_bytes(b"x")
    os.symlink(outside, run / "images" / "elsewhere")
    RunFolder(run).remove_partial_files()
    assert not any(path.exists() for path in partial)
    assert all(path.exists() for path in kept)
