"""Recipes: the shipped ones verify identical here, a changed fingerprint is said, render
--recipe and rendering in memory give the same pages, and a training loader's transform draws
each item with its own seed."""

from __future__ import annotations

import hashlib
import io
import json
import pickle

import pytest
import yaml
from click.testing import CliRunner
from PIL import Image

import mmconvert
from mmconvert.cli import main
from mmconvert.errors import MMConvertError, UsageError
from mmconvert.recipes import REFERENCE_ITEMS, Drawer, load_recipe, shipped
from mmconvert.recipes.training import RenderedDataset
from tests.test_stats import tiktoken_files

SHIPPED = ["deepseek-ocr-base", "deepseek-ocr-large", "deepseek-ocr-small", "deepseek-ocr-tiny",
           "glyph", "pixelworld", "readbench", "text-or-pixels", "vtcbench", "vtcbench-ratio"]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(autouse=True)
def _tiktoken(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())  # vtcbench-ratio counts tokens


def shown_pages(out):
    """Each item's shown pages' bytes, as render wrote them."""
    pages = {}
    for line in (out / "manifest.jsonl").read_text().splitlines():
        row = json.loads(line)
        pages[row["id"]] = [(out / e["path"]).read_bytes() for e in row["images"]
                            if e["role"] in ("page", "prompt")]
    return pages


def test_every_shipped_recipe_verifies_identical():
    assert sorted(shipped()) == SHIPPED
    listed = run("list", "recipes")
    assert listed.exit_code == 0 and all(f"  {name} " in listed.output for name in SHIPPED)
    result = run("recipe", "verify", *SHIPPED)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{name}: identical ({len(load_recipe(name).references)} reference item(s), "
        f"{sum(len(r.pages) for r in load_recipe(name).references)} page(s))"
        for name in SHIPPED]


def test_a_changed_fingerprint_is_said_with_why(tmp_path):
    data = yaml.safe_load(shipped()["readbench"].read_text())
    data["references"][0]["pages"][0]["sha256"] = "0" * 64
    data["references"][1]["pages"][0]["pixels"] = "0" * 64
    data["references"][1]["pages"][0]["sha256"] = "0" * 64
    data["references"][2]["pages"][0]["width"] = 1
    data["references"][2]["pages"][0]["sha256"] = "0" * 64
    data["made_with"]["fonts"]["Liberation Sans"] = "f" * 64
    data["made_with"]["libraries"]["pymupdf"] = "1.0.0"
    path = tmp_path / "tampered.yaml"
    path.write_text(yaml.safe_dump(data))
    result = run("recipe", "verify", path)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "readbench: differs",
        "  ref-options page 1: the same pixels, encoded otherwise",
        "  ref-context page 1: other pixels",
        "  ref-question page 1: 426x67 px, the recipe's 1x67",
        f"  why: fonts Liberation Sans: the recipe's {'f' * 64}, here "
        f"{load_recipe('readbench').made_with['fonts']['Liberation Sans']}",
        "  why: libraries pymupdf: the recipe's 1.0.0, here "
        f"{load_recipe('readbench').made_with['libraries']['pymupdf']}",
        "Error: 1 of 1 recipe(s) draw otherwise here"]


def test_bad_recipes_are_one_line(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("name: r\nrenderr: page\n")
    result = run("recipe", "verify", path)
    assert result.exit_code == 2
    assert result.output == (f"Error: recipe {path}: renderr: Extra inputs are not permitted; "
                             "did you mean 'renderer'?\n")
    path.write_text("name: r\noptions: {pppi: 90}\nreferences: [{item: {question: q}}]\n")
    result = run("recipe", "verify", path)
    assert result.exit_code == 2
    assert result.output == ("Error: recipe r: page.pppi: Extra inputs are not permitted (got 90); "
                             "did you mean 'ppi'?\n")
    result = run("render", "mmlu-redux", "--recipe", "readbnch", "--out", tmp_path / "o")
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1
    assert "no recipe 'readbnch'" in result.output and "did you mean 'readbench'?" in result.output
    path.write_text("name: r\n")
    result = run("recipe", "verify", path)
    assert result.exit_code == 1
    assert "recipe r has no fingerprint (no references): nothing to verify" in result.output


def test_make_writes_a_recipe_that_verifies(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: mine\nstyle: wild\noptions: {ppi: 60}\ntransforms: [rotate:2]\n")
    out = tmp_path / "mine.yaml"
    result = run("recipe", "make", spec, "--out", out)
    assert result.exit_code == 0, result.output
    made = load_recipe(out)
    assert [ref.item["id"] for ref in made.references] == [i["id"] for i in REFERENCE_ITEMS]
    assert made.made_with["renderer"] == {"name": "page", "version": "2"}
    assert run("recipe", "verify", out).output.startswith("mine: identical (3 reference")
    assert run("recipe", "show", out).output == out.read_text()


@pytest.mark.parametrize("name", ["readbench", "pixelworld", "text-or-pixels", "mine"])
def test_render_recipe_equals_rendering_in_memory(tmp_path, name):
    """The pages ``load_recipe(...).render(item)`` gives are the bytes render --recipe writes
    (a recipe's transforms included), and convert(items=...) writes them too."""
    if name == "mine":
        path = tmp_path / "mine.yaml"
        path.write_text("name: mine\nstyle: wild\ntransforms: [rotate:3, jpeg:60]\n")
        name = str(path)
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(item) + "\n" for item in REFERENCE_ITEMS))
    result = run("render", items, "--recipe", name, "--out", tmp_path / "cli")
    assert result.exit_code == 0, result.output
    written = shown_pages(tmp_path / "cli")
    recipe = mmconvert.load_recipe(name)
    drawer = recipe.drawer()
    for index, item in enumerate(REFERENCE_ITEMS):
        drawn = drawer.draw(item, index)
        assert drawn.pages == written[item["id"]]
        images = recipe.render(item)
        assert [image.tobytes() for image in images] == \
            [Image.open(io.BytesIO(page)).tobytes() for page in written[item["id"]]]
    mmconvert.convert({"corpus": "items"}, items=REFERENCE_ITEMS, recipe=name,
                      out=tmp_path / "api", progress=False, log=lambda m: None)
    assert shown_pages(tmp_path / "api") == written


def test_recipe_values_go_under_flags_and_other_renderers_refuse(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(REFERENCE_ITEMS[2]) + "\n")
    result = run("render", items, "--recipe", "readbench", "--ppi", "150", "--out", tmp_path / "o")
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "o" / "manifest.jsonl").read_text())
    assert row["renderer"]["params"]["ppi"] == 150.0
    assert row["renderer"]["params"]["margin"] == 0.25  # the readbench style's
    result = run("document", items, "--recipe", "readbench", "--out", tmp_path / "d")
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1
    assert "recipe readbench" in result.output and "page" in result.output


def test_in_memory_items_are_read_as_a_file_of_them(tmp_path):
    summary = mmconvert.convert({"corpus": "items", "page": {"ppi": 40}},
                                items=[{"question": "Two?", "options": ["a", "b"],
                                        "answer": "A"}, {"question": "One more"}],
                                out=tmp_path / "run", progress=False, log=lambda m: None)
    assert summary.rendered == 2
    rows = [json.loads(line) for line in (tmp_path / "run" / "manifest.jsonl").read_text()
            .splitlines()]
    assert [row["id"] for row in rows] == ["items-0000", "items-0001"]
    with pytest.raises(UsageError, match="items: a list of item dicts"):
        mmconvert.convert({}, items={"question": "q"}, out=tmp_path / "x")
    with pytest.raises(MMConvertError, match=r"^items\[1\]: an item is a dict of its fields, "
                                             "not str$"):
        mmconvert.convert({}, items=[{"question": "q"}, "oops"], out=tmp_path / "y",
                          progress=False, log=lambda m: None)


def test_fit_pages_fits_each_item_on_one_page():
    recipe = load_recipe("text-or-pixels")
    short = {"id": "s", "context": "A few words."}
    long = {"id": "l", "context": " ".join(f"word{i}" for i in range(3000))}
    drawer = recipe.drawer()
    sizes = {}
    for item in (short, long):
        drawn = drawer.draw(item)
        assert len(drawn.pages) == 1
        sizes[item["id"]] = drawn.row["renderer"]["params"]["font_size"]
    assert sizes["s"] == 72.0  # the largest the target allows
    assert sizes["l"] < 20 and sizes["l"] * 2 == int(sizes["l"] * 2)  # half-point steps
    # half a point more takes the long item onto two pages
    fixed = recipe.model_copy(update={"target": None, "options": {
        **recipe.options, "font_size": sizes["l"] + 0.5}})
    assert len(Drawer(fixed).draw(long).pages) == 2


def test_training_transform_draws_each_item_with_its_own_seed():
    datasets = pytest.importorskip("datasets")
    rows = {"id": ["a", "b", "c"], "text": ["First passage.", "Second one.", "Third, longer "
                                                                             "passage here."],
            "question": ["q1?", "q2?", "q3?"]}
    recipe = load_recipe("pixelworld")  # draws a style per item
    transform = recipe.transform(fields={"context": "text"}, seed=7)
    dataset = datasets.Dataset.from_dict(rows).with_transform(transform)
    whole = dataset[0:3]["images"]
    one_by_one = [dataset[i]["images"] for i in (2, 0, 1)]
    shuffled = dataset.shuffle(seed=1)
    by_id = {row["id"]: row["images"] for row in shuffled}

    def digest(images):
        return [hashlib.sha256(image.tobytes()).hexdigest() for image in images]

    assert [digest(p) for p in whole] == [digest(one_by_one[1]), digest(one_by_one[2]),
                                         digest(one_by_one[0])]
    assert [digest(by_id[i]) for i in "abc"] == [digest(p) for p in whole]
    sizes = {image.size for images in whole for image in images}
    assert len(sizes) > 1  # the style is drawn per item
    # the item is what a renderer draws with --seed 7: the same pages as rendering in memory
    again = RenderedDataset([{"id": "a", "text": "First passage.", "question": "q1?"}], recipe,
                            seed=7, fields={"context": "text"})
    assert len(again) == 1 and digest(again[0]["images"]) == digest(whole[0])
    other_seed = recipe.transform(fields={"context": "text"}, seed=8)
    assert digest(other_seed({"id": ["a"], "text": ["First passage."], "question": ["q1?"]})
                  ["images"][0]) != digest(whole[0])
    restored = pickle.loads(pickle.dumps(transform))  # a loader's worker opens its own
    assert digest(restored.pages({"id": "b", "text": "Second one.", "question": "q2?"})) == \
        digest(whole[1])
    no_id = transform.item({"text": "x", "question": "y"})
    assert no_id["id"].startswith("row-") and no_id == transform.item({"question": "y",
                                                                       "text": "x"})
    with pytest.raises(UsageError, match="fields: txt is not an item field"):
        recipe.transform(fields={"txt": "text"})


def test_a_recipe_that_draws_otherwise_here_is_said_wherever_it_draws(tmp_path):
    data = yaml.safe_load(shipped()["readbench"].read_text())
    data["references"][0]["pages"][0]["sha256"] = "0" * 64
    data["references"][0]["pages"][0]["pixels"] = "0" * 64
    data["made_with"]["libraries"]["pymupdf"] = "1.0.0"
    path = tmp_path / "tampered.yaml"
    path.write_text(yaml.safe_dump(data))
    here = load_recipe("readbench").made_with["libraries"]["pymupdf"]
    said = (f"warning: recipe readbench: its fingerprint differs here (ref-options page 1: "
            f"other pixels; why: libraries pymupdf: the recipe's 1.0.0, here {here}; 1 page(s) "
            f"differ): these pages are not the recipe's; mmconvert recipe verify {path} says "
            "all")
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(REFERENCE_ITEMS[0]) + "\n")
    result = run("render", items, "--recipe", path, "--out", tmp_path / "r")
    assert result.exit_code == 0 and said in result.output.splitlines(), result.output
    logged = []
    mmconvert.convert({"corpus": "items"}, items=REFERENCE_ITEMS[:1], recipe=path,
                      out=tmp_path / "api", progress=False, log=logged.append)
    assert said in logged
    clean = run("render", items, "--recipe", "readbench", "--out", tmp_path / "c")
    assert clean.exit_code == 0 and "warning" not in clean.output


def test_pages_that_differ_with_nothing_recorded_differing_say_mmconvert_changed(tmp_path):
    data = yaml.safe_load(shipped()["glyph"].read_text())
    data["references"][2]["pages"][0].update(sha256="0" * 64, pixels="0" * 64)
    path = tmp_path / "glyph.yaml"
    path.write_text(yaml.safe_dump(data))
    result = run("recipe", "verify", path)
    assert result.exit_code == 1
    assert result.output.splitlines()[1:3] == [
        "  ref-question page 1: other pixels",
        "  why: nothing the recipe records differs here: mmconvert's own drawing of these "
        "settings changed"]
