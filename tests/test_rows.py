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


@pytest.fixture
def demo(sample_pdf_run):
    """The session's sample run with its PDFs: read only (a test here copies it to change
    it)."""
    return sample_pdf_run.out


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


def test_a_reader_gets_the_typed_row_and_its_line_s_own_json(demo):
    """Every reader's row is the renderer's model (attributes a type checker sees); the line's
    JSON stays with it byte for byte, which is what a row written again is written from."""
    from mmconvert.manifest import dumps
    from mmconvert.rows import ImageEntry, PageRow, manifest_entries
    from mmconvert.runfolder import open_run

    rows = open_run(demo).rows()
    entries = [row for _, row, _ in manifest_entries(demo / "manifest.jsonl")]
    assert [r.id for r in rows] == [r.id for r in entries] == [
        json.loads(line)["id"] for line in lines(demo)]
    for row, line in zip(rows, lines(demo), strict=True):
        assert type(row) is PageRow and isinstance(row.images[0], ImageEntry)
        assert row.params == json.loads(line)["renderer"]["params"] and row.params["ppi"]
        assert row.layout is not None and row.pdf == json.loads(line)["pdf"]
        assert dumps(row.raw) == line  # written again, the same bytes
        # a hook written for dict rows reads it as the JSON object it came from
        assert (row["id"], row.get("question"), row.get("target", "none")) == (
            row.id, row.question, "none")
        assert "pdf" in row and "target" not in row and "bogus" not in row
        with pytest.raises(KeyError):
            row["target"]


def test_what_a_pipeline_carries_with_a_row_is_never_written(demo):
    from mmconvert.manifest import dumps
    from mmconvert.runfolder import open_run

    row = open_run(demo).rows()[0]
    carrying = row.carrying("text_budget", {"prompt": "cut"})
    assert carrying.carried("text_budget") == {"prompt": "cut"}
    assert row.carried("text_budget") is None  # the row read stays as it was
    assert dumps(carrying.raw) == dumps(row.raw) == lines(demo)[0]
    assert carrying.model_dump(mode="json", exclude_unset=True) == row.raw


def test_a_renderer_whose_row_model_is_not_a_row_is_refused_at_load():
    from pydantic import BaseModel

    from mmconvert.registry import contract_breach
    from mmconvert.renderers.base import Renderer
    from mmconvert.renderers.page import PageRenderer

    class Loose(BaseModel):
        id: str

    class Plugin(PageRenderer):
        row_model = Loose  # type: ignore[assignment]

    assert contract_breach(Plugin, Renderer) == "row_model is not a subclass of mmconvert.rows.Row"


def test_manifest_rows_are_read_by_attribute_not_by_key():
    """``row["…"]`` reads in the package stay at most 30 (``bench/shape.py`` counts them):
    the ones left read a line's JSON on purpose (a row written again, a damaged line, the
    shipped standalone templates, which cannot import mmconvert)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent.parent / "bench" / "shape.py"
    spec = importlib.util.spec_from_file_location("shape", path)
    assert spec is not None and spec.loader is not None
    shape = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shape)
    reads = sum(len(shape.ROW_READ.findall(p.read_text(encoding="utf-8")))
                for p in shape.modules().values())
    assert reads <= 30, reads
