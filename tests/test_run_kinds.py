"""One run kind per renderer: its command, ``render --renderer NAME`` and ``mmconvert.convert``
all come from the renderer's own models, and bad names and options are one line."""

from __future__ import annotations

import json

import pytest

import mmconvert
from mmconvert.config import run_config
from mmconvert.errors import UsageError
from mmconvert.renderers import DEFAULT, RENDERERS, job_for
from tests.conftest import FIXTURES
from tests.test_cli import run

COCO = FIXTURES / "coco"
# the renderers an error names: the built-ins and any a plugin in this environment adds
KNOWN = ", ".join(RENDERERS.names())


def manifest(folder):
    return (folder / "manifest.jsonl").read_bytes()


def test_render_with_a_renderer_is_that_renderers_command(tmp_path):
    args = ("captions", "--source", COCO, "--limit", 2, "--difficulty", "hard")
    assert run("occlude", *args, "--out", tmp_path / "a").exit_code == 0
    done = run("render", *args, "--renderer", "occlude", "--out", tmp_path / "b")
    assert done.exit_code == 0, done.output
    assert manifest(tmp_path / "a") == manifest(tmp_path / "b")
    # the occluder's own flag is not the page renderer's
    assert run("render", *args, "--out", tmp_path / "c").exit_code == 2


def test_every_renderer_is_a_config_and_a_job():
    for name in RENDERERS.names():
        renderer = RENDERERS.get(name)
        config = run_config({"corpus": "x.jsonl", "renderer": name})
        assert isinstance(config, renderer.config_model) and config.renderer == name
        if not renderer.paid:
            assert job_for(config).renderer.name == name
    assert isinstance(run_config({"corpus": "x.jsonl"}), RENDERERS.get(DEFAULT).config_model)


@pytest.mark.parametrize("config, message", [
    ({"corpus": "x.jsonl", "page": {"ppi": 5}},
     "config: page.ppi: 5 is not a PPI over 10 and at most 1200 (got 5)"),
    ({"corpus": "x.jsonl", "renderer": "pgae"},
     f"config: renderer: unknown renderer 'pgae' (known: {KNOWN}); did you mean 'page'?"),
    ({"corpus": "x.jsonl", "pgae": {}}, "config: pgae: Extra inputs are not permitted"),
    (["x.jsonl"], "config: expected a mapping of option names to values"),
])
def test_convert_raises_its_own_one_line_errors(tmp_path, config, message):
    with pytest.raises(UsageError) as caught:
        mmconvert.convert(config, out=tmp_path / "run")
    assert str(caught.value).startswith(message)
    assert not (tmp_path / "run").exists()


def test_convert_takes_the_executor(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "question": "Q?", "options": ["x", "y"],
                                 "answer": "A"}) + "\n")
    with pytest.raises(UsageError, match="unknown executor 'rya'"):
        mmconvert.convert({"corpus": str(items)}, out=tmp_path / "run", executor="rya")
    summary = mmconvert.convert({"corpus": str(items)}, out=tmp_path / "run", executor="local")
    assert summary.rendered == 1


@pytest.mark.parametrize("args, line", [
    (("render", "x.jsonl", "--renderer", "pgae"),
     f"Error: unknown renderer 'pgae' (known: {KNOWN}); did you mean 'page'?"),
    (("ocllude", "x"), "Error: No such command 'ocllude'; did you mean 'occlude'?"),
    (("render", "x.jsonl", "--ray-address", "10.0.0.1:6379"),
     "Error: --ray-address needs --executor ray"),
])
def test_unknown_names_are_one_line_with_a_did_you_mean(args, line):
    result = run(*args)
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == line
