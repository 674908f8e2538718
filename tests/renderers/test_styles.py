"""Page styles as data: the style fields keep every character inside the page in every
script, style files are drawn per item from (seed, id), presets load, bad input is one line."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from mmconvert.errors import UsageError
from mmconvert.qa.textlayer import check_pdf
from mmconvert.renderers.page import PageJob, PageOptions, PageRenderer, RenderConfig, pixels
from mmconvert.renderers.style_files import load_style, presets
from mmconvert.rows import PageRow
from tests.conftest import make_item
from tests.test_cli import run
from tests.typed import typed

FONT_DIR = Path(__file__).resolve().parents[2] / "mmconvert" / "renderers" / "fonts"
TEXTS = {
    "latin": ("The lantern by the harbour was painted red, and the river stone beside it kept "
              "the archive's signal copper bright. " * 6 + "\nA second line.\n\nAnd a "
              "paragraph after a blank line, long enough to wrap on any page we draw. " * 3),
    "arabic": "القاهرة هي عاصمة مصر، وعدد سكانها 22 مليون نسمة (Cairo) وهي مدينة كبيرة جدا. " * 3
              + "\nسطر ثان.\n\n" + "وهذه فقرة ثانية بعد سطر فارغ. " * 4,
    "cjk": "这是一段没有空格的中文句子，用来测试换行和对齐。日本語の文章、カタカナ。" * 4
           + "\n第二行。\n" + "这是一段没有空格的中文句子。" * 3,
    "devanagari": "भारत की राजधानी नई दिल्ली है। क्षत्रिय कृपया स्थान " * 5 + "\nदूसरी पंक्ति।\n\n"
                  + "भारत की राजधानी नई दिल्ली है। " * 4,
}
FIELDS = {
    "justify": {"align": "justify", "first_line_indent": 24},
    "center": {"align": "center"},
    "right": {"align": "right", "left_indent": 10, "right_indent": 40},
    "spacing-scale": {"letter_spacing": 1.5, "horizontal_scale": 0.7},
    "stretch": {"horizontal_scale": 1.6, "align": "justify"},
    "sides": {"margin_top": 0, "margin_left": 1.2, "margin_right": 0.1, "margin_bottom": 0.8,
              "crop": "none"},
    "glyph-crop": {"crop_pad": 10, "line_fit": "pitch", "line_pitch": 10, "font_size": 9,
                   "margin": "16pt", "page_size": "595,842", "ppi": 72},
    "reflow": {"newlines": "reflow", "paragraph_gap": 1},
    "marker": {"newlines": "marker", "newline_marker": " ¶ "},
    "colour": {"color": "rgb", "text_color": "#203060", "background": "#f8f0dc"},
    "two-columns": {"columns": 2, "align": "justify", "font_size": 9},
    "marker-paragraph-colours": {"newlines": "marker", "newline_marker": " ⏎ ", "color": "rgb",
                                 "newline_marker_color": "red", "paragraph_color": "#eef3f8",
                                 "columns": 2, "letter_spacing": 0.5},
    "three-columns": {"columns": 3, "column_gap": "8mm", "font_size": 8, "crop": "bottom",
                      "page_size": "letter"},
}


@pytest.mark.parametrize("script", sorted(TEXTS))
@pytest.mark.parametrize("case", sorted(FIELDS))
def test_every_style_field_keeps_every_character_inside_the_page(case, script):
    """The text layer holds every character of the source (as the style sets it: a marker
    drawn, newlines reflowed), in order, with a real glyph, and none past the margins."""
    renderer = PageRenderer(PageOptions(**FIELDS[case]))
    item = make_item(context=TEXTS[script])
    result = renderer.render(item, "context", want_pdf=True)
    row = {**dataclasses.asdict(item),
           "renderer": {"params": {**renderer.options.model_dump(mode="json"),
                                   "render": "context"}}}
    expected = PageRenderer.expected_text(typed(row, PageRow))
    report = check_pdf(result.pdf, expected, renderer.insets())
    assert report.ok, f"{case}/{script}: {report.summary()}"
    if case == "marker":
        assert "¶" in expected
    scale = renderer.options.horizontal_scale
    for page, width in zip(result.pages, result.layout["widths"], strict=True):
        assert page.width == pixels(width * scale / 72, renderer.options.ppi)


def test_alignment_puts_lines_where_it_says():
    item = make_item(context=TEXTS["latin"])
    ink = {}
    for align in ("left", "right", "center", "justify"):
        renderer = PageRenderer(PageOptions(align=align, crop="none"))
        layout = renderer.layout(item, "context")
        lines = [line for line in layout.pages[0] if line.runs]
        ends = [max(run.end for run in line.runs) for line in lines]
        starts = [min(run.x for run in line.runs) for line in lines]
        ink[align] = (starts, ends, [line.last for line in lines])
        edge = renderer.breaker.width
        if align == "right":
            assert all(abs(end - edge) < 1e-6 for end in ends)
        if align == "center":
            assert all(abs((start + end) / 2 - edge / 2) < 1e-6
                       for start, end in zip(starts, ends, strict=True))
        if align == "justify":  # every line but a paragraph's last reaches the edge
            assert all(abs(end - edge) < 1e-6 for end, last in zip(ends, ink[align][2],
                                                                    strict=True) if not last)
            assert any(end < edge - 1 for end in ends)
    assert all(start == 0 for start in ink["left"][0])


def test_right_to_left_lines_mirror_and_centre():
    item = make_item(context=TEXTS["arabic"])
    left = PageRenderer(PageOptions(crop="none")).layout(item, "context").pages[0]
    right = PageRenderer(PageOptions(crop="none", align="right")).layout(item, "context")
    centre = PageRenderer(PageOptions(crop="none", align="center")).layout(item, "context")
    edge = PageRenderer(PageOptions()).breaker.width
    # left and right are the same for a right-to-left paragraph: set from the right
    assert [[r.x for r in line.runs] for line in left] == \
        [[r.x for r in line.runs] for line in right.pages[0]]
    last = centre.pages[0][-1]
    start, end = min(r.x for r in last.runs), max(r.end for r in last.runs)
    assert abs((start + end) / 2 - edge / 2) < 1e-6


def test_the_default_style_keeps_readbench_geometry_and_identity():
    """The fields this version added leave a default run's identity as it was, so runs made
    before them resume; any of them set is part of the identity."""
    config = RenderConfig(corpus="x")
    identity = config.identity()
    assert "style" not in identity
    assert set(identity["page"]) == {"ppi", "font_size", "line_spacing", "line_pitch",
                                     "margin", "page_width", "page_height", "color", "render",
                                     "crop", "indent"}
    assert RenderConfig(corpus="x", page={"align": "justify"}).identity()["page"]["align"] \
        == "justify"


def test_a_style_is_drawn_per_item_from_seed_and_id():
    config = RenderConfig(corpus="x", style="wild", seed=3)
    job = PageJob(config)
    items = [make_item(id=f"i{n}", context="Some text to set.") for n in range(12)]
    first = [job.renderer_for(item).options for item in items]
    again = [PageJob(RenderConfig(corpus="x", style="wild", seed=3)).renderer_for(item).options
             for item in items]
    other_seed = [PageJob(RenderConfig(corpus="x", style="wild", seed=4)).renderer_for(item)
                  .options for item in items]
    assert first == again
    assert first != other_seed
    assert len({o.model_dump_json() for o in first}) == len(items)
    # an item's draw does not depend on which other items the run holds
    alone = PageJob(config).renderer_for(items[7]).options
    assert alone == first[7]


def test_flags_given_beside_a_style_win_and_the_rest_comes_from_it():
    config = RenderConfig(corpus="x", style="glyph", page={"font_size": 11, "margin": 0.5})
    assert config.page.font_size == 11 and config.page.margin == 0.5
    assert config.page.ppi == 72 and config.page.line_pitch == 10
    assert config.page.page_width == pytest.approx(595 / 72)
    assert config.style["name"] == "glyph" and config.style["draws"] == {}
    # a recorded config validates to itself (resuming reads run.json back)
    again = RenderConfig.model_validate(config.model_dump(mode="json"))
    assert again.identity() == config.identity()
    wild = RenderConfig(corpus="x", style="wild", page={"font_size": 10})
    assert "font_size" not in wild.style["draws"] and "align" in wild.style["draws"]
    assert RenderConfig.model_validate(wild.model_dump(mode="json")).identity() == \
        wild.identity()


def test_every_preset_loads_and_lists(tmp_path):
    assert set(presets()) == {"readbench", "glyph", "pixelworld", "vtcbench", "wild"}
    for name in presets():
        style, fixed = load_style(name)
        assert style.name == name and len(style.sha256) == 64
    glyph = load_style("glyph")[1]
    assert glyph["ppi"] == 72 and glyph["font_size"] == 9 and glyph["line_pitch"] == 10
    assert glyph["crop_pad"] == 10 and glyph["font"] == ["Noto Sans"]
    result = run("list", "styles")
    assert result.exit_code == 0, result.output
    for name in presets():
        assert name in result.output


@pytest.mark.parametrize("text, message", [
    ("font_sise: 3\n", "'font_sise' is not a page style field; did you mean 'font_size'?"),
    ("font_size: {uniform: [14, 9]}\n", "font_size: uniform range [14, 9] is the wrong way"),
    ("text_color: [blak]\n", "text_color: 'blak' is not a colour"),
    ("font_size: {uniform: [9, 70]}\npage_size: a5\nmargin: {uniform: [1, 2.5]}\n",
     "too little for 70 pt type"),
    ("align: {choice: [left, right], weights: [1]}\n", "align: weights [1.0]: one weight"),
    ("font_size: {int: [9.5, 12]}\n", "int range [9.5, 12]: whole numbers"),
    ("font_size: {gauss: [9, 12]}\n", "font_size: a draw is one of choice, uniform"),
    ("- a\n- b\n", "a style file is a mapping of page style fields"),
    ("page_size: a9\n", "is not a page size"),
])
def test_a_bad_style_file_is_one_line_naming_the_file_and_field(tmp_path, text, message):
    path = tmp_path / "style.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as err:
        load_style(str(path))
    assert str(path) in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_render_with_a_style_file_records_each_items_values_and_refuses_another(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"q{n}", "question": f"Question {n}?",
                                         "options": ["yes", "no"], "answer": "A"}) + "\n"
                             for n in range(6)), encoding="utf-8")
    style = tmp_path / "style.yaml"
    style.write_text("font_size: {uniform: [9, 14], round: 1}\nalign: [left, center]\n"
                     "font: {choice: [Liberation Serif, Fira Mono]}\n", encoding="utf-8")
    out = tmp_path / "run"
    result = run("render", items, "--style", style, "--out", out)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    sizes = {row["renderer"]["params"]["font_size"] for row in rows}
    assert len(sizes) > 1 and all(9 <= s <= 14 for s in sizes)
    for row in rows:
        params = row["renderer"]["params"]
        assert params["font"] in (["Liberation Serif"], ["Fira Mono"])
        assert len(params["font_sha256"]) == 1
        # the row is a recipe: its params draw the same page again
        page = PageRenderer.from_params(params).render(
            make_item(id=row["id"], question=row["question"], options=row["options"]),
            "options").pages[0]
        assert page.png == (out / row["images"][0]["path"]).read_bytes()
    again = tmp_path / "again"
    assert run("render", items, "--style", style, "--out", again).exit_code == 0
    assert (again / "manifest.jsonl").read_bytes() == (out / "manifest.jsonl").read_bytes()
    recorded = json.loads((out / "run.json").read_text())["config"]["style"]
    assert recorded["name"] == str(style) and set(recorded["draws"]) == {"font_size", "align",
                                                                          "font"}
    # the same style resumes (nothing to do); another is refused
    assert run("render", items, "--style", style, "--out", out).exit_code == 0
    style.write_text("font_size: {uniform: [9, 15], round: 1}\n", encoding="utf-8")
    refused = run("render", items, "--style", style, "--out", out)
    assert refused.exit_code != 0 and "style differs" in refused.output


def test_font_files_lead_the_chain_with_their_hashes(tmp_path):
    font = tmp_path / "Serif.ttf"
    shutil.copy(FONT_DIR / "LiberationSerif-Regular.ttf", font)
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "q", "question": "Q?", "options": ["café 中文", "b"],
                                 "answer": "A"}) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    result = run("render", items, "--font", font, "--out", out)
    assert result.exit_code == 0, result.output
    # the file lacks the Chinese: one line names the file and the character, the chain draws it
    assert f"{font}: no glyph for U+4E2D" in result.output
    info = json.loads((out / "run.json").read_text())
    assert info["fonts"][0]["path"] == str(font) and info["fonts"][0]["name"] == "Serif.ttf"
    row = json.loads((out / "manifest.jsonl").read_text())
    import hashlib

    assert row["renderer"]["params"]["font"] == [str(font)]
    assert row["renderer"]["params"]["font_sha256"] == [
        hashlib.sha256(font.read_bytes()).hexdigest()]
    image = Image.open(io.BytesIO((out / row["images"][0]["path"]).read_bytes()))
    plain = run("render", items, "--out", tmp_path / "plain")
    assert plain.exit_code == 0
    assert (tmp_path / "plain" / row["images"][0]["path"]).read_bytes() != \
        (out / row["images"][0]["path"]).read_bytes()
    assert image.size[0] > 0


@pytest.mark.parametrize("args, message", [
    (["--font", "/no/such/face.ttf"], "/no/such/face.ttf: no such font file"),
    (["--font", str(FONT_DIR / "LICENSE-ComicNeue.txt")],
     "LICENSE-ComicNeue.txt: not a font file MuPDF can read"),
    (["--font", "Noto Sams"], "did you mean 'Noto Sans'?"),
    (["--style", "glyhp"], "did you mean 'glyph'?"),
    (["--text-color", "red"], "text_color #ff0000 is not a gray"),
    (["--margin", "4"], "too little for 12 pt type"),
    (["--text-color", "reddish"], "'reddish' is not a colour"),
])
def test_bad_style_flags_are_one_line_before_drawing(tmp_path, args, message):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "q", "question": "Q?", "options": ["a", "b"],
                                 "answer": "A"}) + "\n", encoding="utf-8")
    result = run("render", items, *args, "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "run" / "images").exists()


def test_columns_fill_one_after_another_inside_their_bounds():
    renderer = PageRenderer(PageOptions(columns=3, crop="none"))
    item = make_item(context=TEXTS["latin"] * 12)
    layout = renderer.layout(item, "context")
    page = layout.pages[0]
    assert len(page) == 3 * renderer.column_lines
    for index, line in enumerate(page):
        column = index // renderer.column_lines
        low = column * renderer.column_step
        for placed in line.runs:
            assert low - 1e-6 <= placed.x and placed.end <= low + renderer.column_width + 1e-6
    one = PageRenderer(PageOptions(crop="none")).render(item, "context")
    three = renderer.render(item, "context")
    assert len(three.pages) < len(one.pages)
    assert PageRenderer(PageOptions(columns=3, crop="none")).redraw(three.layout)[0].png == \
        three.pages[0].png
    with pytest.raises(ValueError, match="other columns"):
        PageRenderer(PageOptions(crop="none")).redraw(three.layout)


def test_a_coloured_marker_and_paragraph_boxes_are_drawn_and_redrawn():
    from mmconvert.errors import ItemError

    options = PageOptions(newlines="marker", newline_marker=" ¶ ", newline_marker_color="red",
                          paragraph_color="#eef3f8", color="rgb", crop="none")
    renderer = PageRenderer(options)
    item = make_item(context="First paragraph line.\nSecond line.\n\nA new paragraph.")
    result = renderer.render(item, "context")
    image = Image.open(io.BytesIO(result.pages[0].png)).convert("RGB")
    colours = {colour for _, colour in image.getcolors(1 << 20)}
    assert (0xee, 0xf3, 0xf8) in colours  # the paragraph box
    assert any(r > 200 and g < 80 and b < 80 for r, g, b in colours)  # the red marker
    marked = [run for line in renderer.layout(item, "context").pages[0] for run in line.runs
              if run.text == "¶"]
    assert len(marked) == 3  # each marker its own run
    assert PageRenderer(options).redraw(result.layout)[0].png == result.pages[0].png
    plain = PageRenderer(PageOptions(newlines="marker", newline_marker=" ¶ ", color="rgb",
                                     crop="none")).render(item, "context")
    assert plain.pages[0].png != result.pages[0].png
    with pytest.raises(ItemError, match="holds '¶', a character of the coloured newline"):
        renderer.render(make_item(context="A ¶ sign.\nNext."), "context")


def test_a_drawn_ppi_is_the_ppi_each_image_records(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"q{n}", "question": "Q?", "options": ["a", "b"],
                                         "answer": "A"}) + "\n" for n in range(6)),
                     encoding="utf-8")
    style = tmp_path / "style.yaml"
    style.write_text("ppi: [72, 150]\n", encoding="utf-8")
    out = tmp_path / "run"
    assert run("render", items, "--style", style, "--out", out).exit_code == 0
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert {row["renderer"]["params"]["ppi"] for row in rows} == {72.0, 150.0}
    for row in rows:
        assert row["images"][0]["ppi"] == row["renderer"]["params"]["ppi"]


def test_a_swept_page_width_wins_over_the_named_page_size_it_replaces(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "q", "context": "Some text to set. " * 80}) + "\n",
                     encoding="utf-8")
    out = tmp_path / "run"
    assert run("render", items, "--style", "glyph", "--crop", "none", "--out", out) \
        .exit_code == 0
    result = run("sweep", out, "--vary-style", "page_width:5", "--out", tmp_path / "s")
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "s" / "page_width-5" / "manifest.jsonl").read_text())
    assert row["renderer"]["params"]["page_width"] == 5.0
    assert row["images"][0]["width"] == 5 * 72
