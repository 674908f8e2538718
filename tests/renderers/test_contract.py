"""The renderer contract: every registered renderer states it, and the rest of mmconvert asks
it (an unknown renderer is a one-line error, never a check that accepts anything)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest

from mmconvert.errors import UsageError
from mmconvert.qa.checks import load_thresholds
from mmconvert.renderers import RENDERERS, from_row, renderer_class, row_renderer
from mmconvert.renderers.base import Renderer, item_from_row
from tests.conftest import FIXTURES, SAMPLE, copy_run
from tests.test_cli import run
from tests.typed import typed_rows

# the renderers an error names: the built-ins and any a plugin in this environment adds
KNOWN = ", ".join(RENDERERS.names())


@pytest.mark.parametrize("name", RENDERERS.built_in())  # a plugin states its own
def test_every_registered_renderer_states_the_contract(name):
    cls = renderer_class(name)
    assert issubclass(cls, Renderer) and cls.name == name and cls.version
    assert cls.options_model.model_config.get("extra") == "forbid"
    assert cls.breach() is None
    assert {"ocr", "image"} <= cls.profile.checks
    assert cls.unit in ("page", "image")
    assert name in load_thresholds()["max_cer"], "the OCR check needs a threshold"
    for method in ("from_params", "expected_text"):
        assert getattr(cls, method).__func__ is not getattr(Renderer, method).__func__


def test_unknown_renderer_is_one_line_with_a_did_you_mean():
    with pytest.raises(UsageError, match=r"^m line 2: field renderer.name: unknown renderer "
                                         rf"'pgae' \(known: {re.escape(KNOWN)}\); did you "
                                         r"mean 'page'\?$"):
        row_renderer({"renderer": {"name": "pgae"}}, "m line 2")
    with pytest.raises(UsageError, match="unknown renderer 'None'"):
        row_renderer({"id": "x"})


def test_list_renderers_includes_generate():
    output = run("list", "renderers").output
    for name in ("page", "occlude", "generate"):
        assert f"  {name} " in output


def rows(folder):
    return [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]


def test_a_page_renderer_rebuilt_from_a_row_draws_its_bytes_again(tmp_path):
    out = tmp_path / "run"
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", out, "--ppi", "150",
                 "--limit", "3")
    assert result.exit_code == 0, result.output
    for row in typed_rows(out):
        renderer = from_row(row)
        assert renderer.options.ppi == 150
        pages = renderer.render(item_from_row(row), row["renderer"]["params"]["render"]).pages
        assert [hashlib.sha256(p.png).hexdigest() for p in pages] == [
            i["sha256"] for i in row["images"]]
        assert renderer.sample(item_from_row(row), row["seed"]) == {}


def test_an_occluder_rebuilt_from_a_row_samples_and_draws_the_same(tmp_path):
    out = tmp_path / "vcr"
    result = run("occlude", "captions", "--source", FIXTURES / "coco", "--out", out,
                 "--style", "hidden", "--difficulty", "hard", "--seed", "3")
    assert result.exit_code == 0, result.output
    from mmconvert.corpora import LoadReport, LoadRequest, resolve
    from mmconvert.renderers.occlude import OcclusionParams

    items = {i.id: i for i in resolve("captions").load(LoadRequest(source=FIXTURES / "coco"),
                                                       LoadReport())}
    for row in typed_rows(out):
        renderer = from_row(row)
        sampled = renderer.sample(items[row["id"]], row["seed"])
        params = row["renderer"]["params"]
        assert sampled == {**{k: params[k] for k in ("language", "difficulty", "position",
                                                      "width", "font")},
                           "masked_spans": row.raw["masked_spans"]}
        made = renderer.draw_occlusion(items[row["id"]], OcclusionParams.from_row(row))
        assert hashlib.sha256(made.stacked).hexdigest() == row["images"][0]["sha256"]


def test_qa_check_stops_on_a_row_of_an_unknown_renderer(tmp_path, sample_run):
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract is not installed")
    out = copy_run(sample_run, tmp_path / "run")
    manifest = out / "manifest.jsonl"
    got = rows(out)
    got[1]["renderer"]["name"] = "pagee"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in got), encoding="utf-8")
    result = run("qa", "check", out, "--no-progress")
    assert result.exit_code == 1
    assert result.output == (f"Error: {manifest} line 2: field renderer.name: unknown renderer "
                             f"'pagee' (known: {KNOWN}); did you mean 'page'?\n")
    for command in (("stats", out, "--no-plots"), ("export", out, "--format", "jsonl", "--out",
                                                   tmp_path / "x")):
        result = run(*command)
        assert result.exit_code != 0 and "unknown renderer 'pagee'" in result.output
        assert len(result.output.splitlines()) == 1
