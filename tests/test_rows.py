"""Typed manifest rows: each renderer's row model, checked by the sink before a row is written
and by every reader after; a row that does not fit is one line naming file, line and field."""

from __future__ import annotations

import json

import pytest

from mmconvert.errors import RunFolderError
from mmconvert.renderers import RENDERERS, renderer_class
from mmconvert.rows import SCHEMA, Row, row_problem
from mmconvert.runfolder import Output, RunFolder
from tests.conftest import SAMPLE
from tests.test_cli import run


@pytest.mark.parametrize("name", RENDERERS.names())
def test_every_renderer_names_a_row_model(name):
    model = renderer_class(name).row_model
    assert issubclass(model, Row) and model.model_config["extra"] == "forbid"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("rows") / "demo"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--out", out, "--pdf").exit_code == 0
    return out


def lines(folder):
    return (folder / "manifest.jsonl").read_text().splitlines()


def test_rows_of_a_run_fit_and_run_json_names_the_schema(demo):
    assert all(row_problem(json.loads(line)) is None for line in lines(demo))
    assert json.loads((demo / "run.json").read_text())["schema"] == SCHEMA


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda r: r["images"][0].update(sha256="xyz"), "images[0].sha256",
     "String should match pattern"),
    (lambda r: r.pop("prompt"), "prompt", "missing"),
    (lambda r: r.update(bogus=1), "bogus", "not a field of this row"),
    (lambda r: r.update(images=[]), "images", "List should have at least 1 item"),
    (lambda r: r["layout"].update(pages=0), "layout.pages", "greater than or equal to 1"),
])
def test_a_row_that_does_not_fit_is_one_line(demo, tmp_path, change, field, message):
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(demo, folder)
    got = lines(folder)
    row = json.loads(got[1])
    change(row)
    got[1] = json.dumps(row)
    manifest = folder / "manifest.jsonl"
    manifest.write_text("\n".join(got) + "\n", encoding="utf-8")
    for command in (("stats", folder, "--no-plots"), ("qa", "summary", folder),
                    ("sweep", folder, "--scale", "0.5", "--out", tmp_path / "s"),
                    ("transform", folder, "--apply", "blur:1", "--out", tmp_path / "t")):
        result = run(*command)
        assert result.exit_code == 1, (command, result.output)
        assert result.output.startswith(f"Error: {manifest} line 2: field {field}: "), \
            (command, result.output)
        assert message in result.output and len(result.output.splitlines()) == 1
    result = run("export", folder, "--format", "jsonl", "--out", tmp_path / "e", "--on-error",
                 "skip")
    assert result.exit_code == 0, result.output
    skipped = (tmp_path / "e" / "export-skipped.jsonl").read_text()
    assert f"line 2: field {field}: " in skipped


def test_a_folder_recorded_before_the_schema_still_reads(demo, tmp_path):
    import shutil

    folder = tmp_path / "old"
    shutil.copytree(demo, folder)
    info = json.loads((folder / "run.json").read_text())
    del info["schema"]
    (folder / "run.json").write_text(json.dumps(info), encoding="utf-8")
    assert run("stats", folder, "--no-plots").exit_code == 0
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--out", folder,
               "--pdf").exit_code == 0


def test_the_sink_refuses_a_row_that_does_not_fit(tmp_path):
    folder = RunFolder(tmp_path / "run")
    output = Output()
    output.row = {"id": "x-1", "renderer": {"name": "page", "version": "1", "params": {}}}
    with pytest.raises(RunFolderError, match=r"item 'x-1': field corpus: missing"):
        folder.write(output)
    assert not (tmp_path / "run").exists()


def test_not_a_run_folder_is_one_line_everywhere(tmp_path):
    folder = tmp_path / "none"
    folder.mkdir()
    for command in (("stats", folder), ("qa", "summary", folder), ("qa", "check", folder),
                    ("export", folder, "--format", "jsonl", "--out", tmp_path / "e"),
                    ("transform", folder, "--apply", "blur:1", "--out", tmp_path / "t")):
        result = run(*command)
        assert result.exit_code == 1, (command, result.output)
        assert result.output == (f"Error: {folder} has no manifest.jsonl: not an mmconvert "
                                 "run folder\n"), (command, result.output)
