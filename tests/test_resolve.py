"""One recipe resolver (``recipes.resolve.resolve_config``): the recipe, a ``--config`` file, the
command's argument and its flags merge in one function, later over earlier, on every path
that draws (the CLI, ``convert``, a curve's and a frontier's points, the harness, the recipe's
own drawer); run.json records where each field's value came from."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import mmconvert
from mmconvert.converter import convert
from mmconvert.errors import UsageError
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


def test_a_later_side_wins_over_an_earlier_named_page_size(tmp_path):
    """A recipe's (or a config file's) named page size and a later ``--page-height``: the
    later side wins, the other stays the size's, and run.json says where each came from.
    Before, the named size set both sides and the flag was silently lost."""
    recipe_layer = {"page": {"page_size": "letter", "ppi": 72}}
    resolved = resolve_config([("--config c.yaml", recipe_layer),
                               ("flag", {"page": {"page_height": 5.0}})])
    assert resolved.values["page"] == {"page_width": 8.5, "page_height": 5.0, "ppi": 72}
    assert resolved.sources["page.page_width"] == "--config c.yaml"
    assert resolved.sources["page.page_height"] == "flag"
    assert "page.page_size" not in resolved.sources
    assert recipe_layer == {"page": {"page_size": "letter", "ppi": 72}}  # not changed
    # a later named size still sets both sides over earlier ones
    again = resolve_config([("a", {"page": {"page_height": 5.0}}),
                            ("b", {"page": {"page_size": "letter"}})])
    assert again.values["page"] == {"page_height": 5.0, "page_size": "letter"}
    config = tmp_path / "c.yaml"
    config.write_text("page:\n  page_size: letter\n")
    out = tmp_path / "run"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--limit", 1, "--config", config,
               "--page-height", 5, "--ppi", 72, "--crop", "none", "--out", out).exit_code == 0
    page = json.loads((out / "manifest.jsonl").read_text().splitlines()[0])["images"][0]
    assert (page["width"], page["height"]) == (8.5 * 72, 5 * 72)  # not 11 in high


def test_a_page_size_and_a_side_given_together_must_agree(tmp_path):
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--page-size", "letter",
                 "--page-height", 5, "--out", tmp_path / "run")
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "Error: page.page_size letter is 8.5 x 11 in, and page.page_height is 5: give "
        "page_size or page_width and page_height, not both")
    assert not (tmp_path / "run" / "manifest.jsonl").exists()
    # a size that is no size, under a later side: its own one line, as without the side
    config = tmp_path / "c.yaml"
    config.write_text("page:\n  page_size: huge\n")
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--config", config,
                 "--page-height", 5, "--out", tmp_path / "huge")
    assert result.exit_code == 2 and "'huge' is not a page size" in result.output
    # the same page twice (A4 as 8.27 in) is no conflict
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--limit", 1, "--page-size", "a4",
               "--page-width", 8.27, "--out", tmp_path / "a4").exit_code == 0


def test_a_bad_value_is_named_by_the_source_it_came_from(tmp_path):
    """A recipe's bad value is the recipe's, a config file's the file's, a flag's the flag's
    (the recipe's ppi was named ``--ppi``, a flag the user never gave)."""
    recipe = tmp_path / "mine.yaml"
    recipe.write_text("name: mine\nstyle: readbench\noptions:\n  ppi: -3\n  font_size: 400\n")
    config = tmp_path / "c.yaml"
    config.write_text("page:\n  ppi: 5\n")

    def error(*args) -> str:
        result = run("render", "mmlu-redux", "--source", SAMPLE, *args,
                     "--out", tmp_path / "run")
        assert result.exit_code == 2, result.output
        return result.output.strip().splitlines()[-1]

    assert error("--recipe", recipe).startswith("Error: recipe mine: page.ppi: -3 is not a PPI")
    assert error("--recipe", recipe, "--ppi", 3).startswith("Error: --ppi: 3 is not a PPI")
    assert error("--recipe", recipe, "--config", config).startswith(
        f"Error: --config {config}: page.ppi: 5 is not a PPI")
    assert error("--recipe", recipe, "--ppi", 72).startswith(
        "Error: recipe mine: page.font_size: Input should be less than or equal to 72")


def test_a_config_model_over_a_recipe_gives_only_the_fields_it_sets(tmp_path):
    """``convert(RenderConfig(...), recipe=...)``: the model's defaults are not the caller's.
    They went over the recipe's values (Glyph's 72 PPI and 9 pt Noto Sans became 92.9 and
    12 pt Liberation Sans, silently, under a run.json naming the recipe)."""
    from mmconvert.renderers.document import DocumentConfig
    from mmconvert.renderers.page import RenderConfig

    common = {"corpus": "mmlu-redux", "source": str(SAMPLE), "limit": 1}
    convert(common, recipe="glyph", out=tmp_path / "dict", log=lambda m: None)
    convert(RenderConfig(**common), recipe="glyph", out=tmp_path / "model", log=lambda m: None)
    made = {name: json.loads((tmp_path / name / "run.json").read_text())
            for name in ("dict", "model")}
    assert made["model"]["config"] == made["dict"]["config"]
    assert made["model"]["config"]["page"]["ppi"] == 72.0
    assert made["model"]["sources"] == {**made["dict"]["sources"], "renderer": "call"}
    assert (tmp_path / "model" / "manifest.jsonl").read_bytes() == \
        (tmp_path / "dict" / "manifest.jsonl").read_bytes()
    # the model's own renderer is the caller's: a page recipe under a document config
    with pytest.raises(UsageError, match="recipe glyph is drawn by the page renderer"):
        convert(DocumentConfig(**common), recipe="glyph", out=tmp_path / "doc",
                log=lambda m: None)
