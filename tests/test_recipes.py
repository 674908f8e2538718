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
from mmconvert.items import content_id
from mmconvert.recipes import REFERENCE_ITEMS, Drawer, load_recipe, shipped
from mmconvert.recipes.training import TrainingDataset
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
    assert result.output == (f"{path}: not verified: renderr: Extra inputs are not permitted; "
                             "did you mean 'renderer'?\n"
                             "Error: 1 of 1 could not be verified\n")
    path.write_text("name: r\noptions: {pppi: 90}\nreferences: [{item: {question: q}}]\n")
    result = run("recipe", "verify", path)
    assert result.exit_code == 2
    assert result.output == (f"{path}: not verified: recipe r: page.pppi: Extra inputs are not "
                             "permitted (got 90); did you mean 'ppi'?\n"
                             "Error: 1 of 1 could not be verified\n")
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
    assert made.made_with["renderer"] == {"name": "page", "version": "4"}
    assert run("recipe", "verify", out).output.startswith("mine: identical (4 reference")
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
        decoded = [Image.open(io.BytesIO(page)) for page in written[item["id"]]]
        assert [(image.mode, image.size, image.tobytes()) for image in images] == \
            [(page.mode, page.size, page.tobytes()) for page in decoded]
    mmconvert.convert({"corpus": "items"}, items=REFERENCE_ITEMS, recipe=name,
                      out=tmp_path / "api", progress=False, log=lambda m: None)
    assert shown_pages(tmp_path / "api") == written


@pytest.mark.parametrize("name", sorted(shipped()))
def test_a_page_recipe_renders_in_memory_without_a_png(monkeypatch, name):
    """``render`` draws a page recipe's pages straight into Pillow images (``Job.pictures``):
    no PNG is made or read back, and the pixels are those of the PNGs a run writes."""
    import mmconvert.renderers.page as page

    recipe = mmconvert.load_recipe(name)
    drawer = recipe.drawer()
    expected = [[(i.mode, i.size, i.tobytes()) for i in drawer.draw(item, n).images()]
                for n, item in enumerate(REFERENCE_ITEMS)]

    def no_png(*args, **kwargs):
        raise AssertionError("a PNG was made")

    monkeypatch.setattr(page, "pixels_png", no_png)
    with pytest.raises(AssertionError, match="a PNG was made"):
        drawer.draw(REFERENCE_ITEMS[0], 0)  # the spy works on the file path
    assert [[(i.mode, i.size, i.tobytes()) for i in drawer.render(item, n)]
            for n, item in enumerate(REFERENCE_ITEMS)] == expected


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
    assert [row["id"] for row in rows] == [content_id("en", None, "Two?", ["a", "b"]),
                                           content_id("en", None, "One more", [])]
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
    again = TrainingDataset([{"id": "a", "text": "First passage.", "question": "q1?"}], recipe,
                            seed=7, fields={"context": "text"})
    assert len(again) == 1 and digest(again[0]["images"]) == digest(whole[0])
    other_seed = recipe.transform(fields={"context": "text"}, seed=8)
    assert digest(other_seed({"id": ["a"], "text": ["First passage."], "question": ["q1?"]})
                  ["images"][0]) != digest(whole[0])
    restored = pickle.loads(pickle.dumps(transform))  # a loader's worker opens its own
    assert digest(restored.pages({"id": "b", "text": "Second one.", "question": "q2?"})) == \
        digest(whole[1])
    assert "id" not in transform.item({"text": "x", "question": "y"})  # named when read
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


def tampered(tmp_path, name, edit, file="tampered.yaml"):
    data = yaml.safe_load(shipped()[name].read_text())
    edit(data)
    path = tmp_path / file
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def test_an_edited_setting_is_named_even_where_the_pages_agree(tmp_path):
    """A copy of a shipped recipe with page_height edited to 2.0 in verified "identical"
    (issue 53): the fingerprint now binds the canonical config, and verify names the field."""
    path = tampered(tmp_path, "readbench", lambda d: d["options"].update(page_height=2.0))
    result = run("recipe", "verify", path)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "readbench: differs"
    assert "  ref-pages: 20 page(s), the recipe's 3" in lines
    assert "  why: setting page.page_height: the fingerprint was made with 11.69, the recipe " \
           "now gives 2.0" in lines
    assert not any("mmconvert's own drawing" in line for line in lines)
    # a setting that leaves every reference page as it was is still said
    path = tampered(tmp_path, "readbench", lambda d: d["options"].update(
        newline_marker_color="#808080"))
    lines = run("recipe", "verify", path).output.splitlines()
    assert lines[1:3] == [
        "  the reference pages are the same, but the settings are not those the fingerprint "
        "was made with",
        '  why: setting page.newline_marker_color: the fingerprint was made with none, the '
        'recipe now gives "#808080"']


def test_edited_page_fields_and_configs_are_said_as_edits(tmp_path):
    def edit(data):
        data["references"][0]["pages"][0]["pixels"] = "0" * 64
        data["references"][1]["pages"][0]["width"] += 1
        data["made_with"]["config"]["page"]["ppi"] = 90
    result = run("recipe", "verify", tampered(tmp_path, "readbench", edit))
    assert result.exit_code == 1
    assert result.output.splitlines()[1:4] == [
        "  ref-options page 1: the same file, but the recipe's pixels are not its page's: the "
        "fingerprint was edited",
        "  ref-context page 1: the same file, but the recipe's width are not its page's: the "
        "fingerprint was edited",
        "  why: the recipe's made_with.config does not match its config_sha256: the "
        "fingerprint was edited"]


# each setting a shipped recipe gives, edited to another value it may hold
OTHER = {"style": {"readbench": "glyph", "glyph": "readbench", "pixelworld": "vtcbench",
                   "vtcbench": "pixelworld"},
         "ppi": lambda v: round(v * 1.5, 2), "page_size": {"768,768": "700,700",
                                                         "1600,1200": "1200,1600"},
         "crop": {"none": "content"}, "margin": {"10pt": "20pt"},
         "font": lambda v: ["Noto Sans"], "font_size": lambda v: v + 2,
         "line_spacing": lambda v: v + 0.2, "align": {"left": "justify"},
         "newlines": {"reflow": "keep"}, "fit_pages": lambda v: v + 1,
         "max_font_size": lambda v: v - 12, "target_ratio": lambda v: v + 1,
         "ratio_model": {"qwen2.5-vl": "glm-4.1v"}, "move_width": lambda v: not v,
         "scope": {"all": "context"}}


def edits(data):
    """(what, edit) for every field of a recipe file that decides a pixel or records one."""
    def put(path, value):
        def edit(d):
            for key in path[:-1]:
                d = d[key]
            d[path[-1]] = value
        return edit

    def other(key, value):
        rule = OTHER[key]
        return rule(value) if callable(rule) else rule[value]

    for key in ("style", "scope"):
        if key in data:
            yield key, put([key], other(key, data[key]))
    for section in ("options", "target"):
        for key, value in (data.get(section) or {}).items():
            if key != "tokenizer":
                yield f"{section}.{key}", put([section, key], other(key, value))
    if "page_size" not in (data.get("options") or {}):  # page_size sets the page's height
        yield "options.page_height", put(["options", "page_height"], 2.0) \
            if "options" in data else lambda d: d.update(options={"page_height": 2.0})
    yield "transforms", lambda d: d.update(transforms=["rotate:1"])

    def leaves(value, path):
        if isinstance(value, dict):
            for key, inner in value.items():
                yield from leaves(inner, [*path, key])
        else:
            yield path, value

    for path, value in leaves(data["made_with"], ["made_with"]):
        changed = value + 1 if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else "edited" if not isinstance(value, list) else [*value, "edited"]
        yield ".".join(map(str, path)), put(path, changed)
    for i, ref in enumerate(data["references"]):
        for j, page in enumerate(ref["pages"]):
            for key, value in page.items():
                changed = value + 1 if isinstance(value, int) else "0" * 64
                yield f"references[{i}].pages[{j}].{key}", put(["references", i, "pages", j,
                                                                 key], changed)
        for key, value in ref["item"].items():
            if key not in ("id", "answer"):  # an id names the item; an answer is not drawn
                changed = value + " more" if isinstance(value, str) else (
                    [*value[:-1], value[-1] + " more"] if isinstance(value, list) else value)
                yield f"references[{i}].item.{key}", put(["references", i, "item", key],
                                                         changed)


@pytest.mark.slow
def test_every_field_of_every_shipped_recipe_edited_is_caught():
    """Each field of each shipped recipe that decides a pixel, records what drew it or holds
    a reference page, edited one at a time: verify catches every edit. The drawing is
    redone only where the edit can change it (a setting or a reference item); an edit of
    what was recorded is compared with the pages drawn once."""
    from mmconvert.recipes import Drawer, Recipe
    from mmconvert.recipes.fingerprints import compare_pages, made_with, page_hash, verify

    caught, refused, missed = 0, 0, []
    for name, path in shipped().items():
        data = yaml.safe_load(path.read_text())
        recipe = load_recipe(name)
        drawer = Drawer(recipe)
        drawn = [[page_hash(p) for p in drawer.draw(ref.item, i).pages]
                 for i, ref in enumerate(recipe.references)]
        here = made_with(drawer)
        assert compare_pages(recipe, drawn, here).identical, name
        for what, edit in edits(data):
            copy = json.loads(json.dumps(data))
            edit(copy)
            edited = Recipe.model_validate(copy)
            redraw = not (what.startswith("made_with") or ".pages[" in what)
            try:
                verdict = verify(edited) if redraw else compare_pages(edited, drawn, here)
            except MMConvertError:  # the edit cannot draw (a scope a reference lacks): said
                refused += 1
                continue
            # a version or font that draws the same pages is a note, not a failure
            if verdict.identical and not (what.startswith("made_with.") and verdict.lines):
                missed.append(f"{name}: {what}")
            caught += 1
    assert missed == []
    assert caught > 600 and refused == 2


@pytest.mark.slow
def test_verify_goes_on_past_a_recipe_it_cannot_check(tmp_path):
    """vtcbench-ratio counts o200k tokens: without the file, one line says so, and the other
    recipes are still verified; a name with a control character reaches no terminal raw."""
    import os
    import subprocess
    import sys

    bad = tampered(tmp_path, "glyph", lambda d: d.update(name="evil\x1b]0;title\x07"),
                   file="evil.yaml")
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}  # no encoding kept by an earlier run
    result = subprocess.run([sys.executable, "-m", "mmconvert", "recipe", "verify",
                             "vtcbench-ratio", str(tmp_path / "missing.yaml"), "readbench",
                             str(bad)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = (result.stdout + result.stderr).splitlines()
    assert lines[0].startswith("vtcbench-ratio: not verified: --tokenizer tiktoken:o200k_base: "
                               "its file ")
    assert lines[1].startswith(f"{tmp_path / 'missing.yaml'}: not verified: no recipe")
    assert lines[2].startswith("readbench: identical (4 reference item(s)")
    assert lines[3].startswith("evil\\x1b]0;title\\x07: identical")
    assert lines[4] == "Error: 2 of 4 could not be verified"
    assert "\x1b" not in result.stdout + result.stderr


# id-less items written by us: a passage, options, a bare question, one in Chinese
IDLESS = [{"context": f"Passage {n}: the tide turned at {n} o'clock and the boats came in.",
           "question": f"When did the tide turn in passage {n}?"} for n in range(1, 4)] + [
    {"question": "Which is a prime?", "options": ["4", "6", "7", "9"], "answer": "C"},
    {"question": "Which planet is largest?", "options": ["Mars", "Jupiter", "Venus"],
     "answer": "B"},
    {"question": "What is 12 × 12?", "answer": ["144"]},
    {"question": "What colour is the sky on a clear day?", "answer": ["blue"]},
    {"context": "潮水在三点钟退去，船只陆续回港。", "question": "潮水何时退去？", "language": "zh"}]


def test_id_less_items_get_one_id_and_the_same_pixels_on_every_path(tmp_path):
    """Issue 53: pixelworld's style is drawn per item from its id, and an item without an id
    was named items-0000 by render(), from its content by the transform and by its row by the
    CLI, so 8 of 8 items differed by path. Every path now names it by its content."""
    from mmconvert.harness.vlmevalkit import RenderedDataset as KitDataset
    from mmconvert.items import content_id

    def digest(images):
        return [hashlib.sha256(f"{i.mode}{i.size}".encode() + i.tobytes()).hexdigest()
                for i in images]

    def file_digests(out):
        rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
        by_id = {row["id"]: [Image.open(out / e["path"]) for e in row["images"]
                             if e["role"] in ("page", "prompt")] for row in rows}
        return {key: digest(images) for key, images in by_id.items()}

    ids = [content_id(i.get("language"), i.get("context"), i.get("question"),
                      i.get("options")) for i in IDLESS]
    assert len(set(ids)) == len(IDLESS)
    items = tmp_path / "my-items.jsonl"
    items.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in IDLESS))
    paths = {}
    assert run("render", items, "--recipe", "pixelworld", "--out", tmp_path / "cli"
               ).exit_code == 0
    paths["cli"] = file_digests(tmp_path / "cli")
    mmconvert.convert({"corpus": "items"}, items=list(reversed(IDLESS)), recipe="pixelworld",
                      out=tmp_path / "api", progress=False)
    paths["convert(items=)"] = file_digests(tmp_path / "api")
    recipe = load_recipe("pixelworld")
    paths["render()"] = {k: digest(recipe.render(i)) for k, i in zip(ids, IDLESS, strict=True)}
    transform = recipe.transform()
    batch = {name: [i.get(name) for i in IDLESS] for name in
             ("context", "question", "options", "answer", "language")}
    paths["transform"] = {k: digest(images) for k, images in
                          zip(ids, transform(batch)["images"], strict=True)}
    dataset = TrainingDataset(list(reversed(IDLESS)), recipe)
    paths["TrainingDataset"] = {k: digest(dataset[len(IDLESS) - 1 - n]["images"])
                                for n, k in enumerate(ids)}
    kit = KitDataset(IDLESS[::2] + IDLESS[1::2], "pixelworld", cache_dir=tmp_path / "kit")
    paths["VLMEvalKit"] = {k: digest(kit.drawn({"id": k}).images()) for k in ids}
    for name, found in paths.items():
        assert sorted(found) == sorted(ids), name
        assert found == paths["cli"], name
    assert len({tuple(d) for d in paths["cli"].values()}) == len(IDLESS)


def test_id_less_rows_with_the_same_content_are_one_line(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(IDLESS[0]) + "\n" + json.dumps(IDLESS[0]) + "\n")
    result = run("render", items, "--out", tmp_path / "o")
    assert result.exit_code != 0
    assert "line 2: id 'item-" in result.output
    assert "(a row without an id is named by its content: give the rows ids)" in result.output


def test_run_json_names_the_recipe_on_every_path(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(REFERENCE_ITEMS[0]) + "\n")
    assert run("render", items, "--recipe", "glyph", "--out", tmp_path / "cli").exit_code == 0
    mmconvert.convert({"corpus": str(items)}, recipe="glyph", out=tmp_path / "api",
                      progress=False, log=lambda m: None)
    records = [json.loads((tmp_path / name / "run.json").read_text())["recipe"]
               for name in ("cli", "api")]
    assert records[0] == records[1] == {
        "name": "glyph", "given": "glyph", "fingerprint": "identical",
        "config_sha256": load_recipe("glyph").made_with["config_sha256"]}
    assert run("render", items, "--out", tmp_path / "none").exit_code == 0
    assert "recipe" not in json.loads((tmp_path / "none" / "run.json").read_text())
