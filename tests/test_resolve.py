"""One recipe resolver (``recipes.resolve.resolve_config``): the recipe, a ``--config`` file, the
command's argument and its flags merge in one function, later over earlier, on every path
that draws (the CLI, ``convert``, a curve's and a frontier's points, the harness, the recipe's
own drawer); run.json records where each field's value came from."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import mmconvert
from mmconvert.converter import convert
from mmconvert.recipes.resolve import resolve_config
from tests.conftest import SAMPLE
from tests.test_cli import run


def test_later_sources_override_earlier_ones_and_run_json_says_which(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("page:\n  ppi: 72\n  font_size: 14\nlimit: 3\n")
    out = tmp_path / "run"
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--recipe", "readbench",
                 "--config", config, "--ppi", "60", "--out", out)
    assert result.exit_code == 0, result.output
    info = json.loads((out / "run.json").read_text())
    assert info["sources"] == {
        "corpus": "argument", "limit": f"--config {config}", "page.font_size":
        f"--config {config}", "page.ppi": "flag", "renderer": "recipe readbench",
        "source": "flag", "style": "recipe readbench"}
    page = info["config"]["page"]
    assert (page["ppi"], page["font_size"], info["config"]["limit"]) == (60.0, 14.0, 3)
    assert info["recipe"]["name"] == "readbench"


def test_the_same_config_resolves_alike_in_memory(tmp_path):
    """``convert(recipe=...)`` puts the same fields together as the CLI: the same run.json
    config, its values from the recipe and the call."""
    cli, memory = tmp_path / "cli", tmp_path / "memory"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--recipe", "readbench", "--ppi",
               "60", "--limit", "2", "--out", cli).exit_code == 0
    convert({"corpus": "mmlu-redux", "source": str(SAMPLE), "page": {"ppi": 60},
             "limit": 2}, recipe="readbench", out=memory)
    first, second = (json.loads((f / "run.json").read_text()) for f in (cli, memory))
    assert first["config"] == second["config"]
    assert (cli / "manifest.jsonl").read_bytes() == (memory / "manifest.jsonl").read_bytes()
    assert second["sources"]["page.ppi"] == "call"
    assert second["sources"]["style"] == "recipe readbench"


def test_drop_takes_the_recipes_own_value_out_before_the_layers():
    found = resolve_config([("curve", {"target": {"vision_budget": 100}})],
                           recipe="vtcbench-ratio", corpus="c", drop=("target",),
                           checked=False)
    assert found.values["target"] == {"vision_budget": 100}
    assert found.sources["target.vision_budget"] == "curve"
    kept = resolve_config([], recipe="vtcbench-ratio", corpus="c", checked=False)
    assert kept.values["target"] != found.values["target"]


def test_no_module_outside_recipes_puts_a_recipe_together_itself():
    """The recipe's config, its merge, its fingerprint's note and run.json's record are
    reached through ``resolve_config`` alone."""
    package = Path(mmconvert.__file__).parent
    own = ("config_values", "merged", "fingerprint_note", "run_record")
    found = []
    for path in package.rglob("*.py"):
        if path.parent.name == "recipes":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name in own:
                    found.append(f"{path.relative_to(package)}:{node.lineno} {name}")
    assert not found, found
