"""ReadBench's page geometry is the default: width cut to the widest line plus four margins,
1.2 x (ascent + descent) line pitch, wrapped option lines at the margin; the other looks are
options, recorded in the manifest."""

from __future__ import annotations

import json

import pytest

from bench.readbench_geometry import option_text, our_sizes, readbench_sizes, within
from mmconvert.corpora import LoadReport, LoadRequest, resolve
from mmconvert.errors import UsageError
from mmconvert.items import Item
from mmconvert.renderers.page import PageOptions, PageRenderer, pixels

from ..conftest import REDUX_CSV, SAMPLE
from ..test_cli import run

# wrapped differently, because ReadBench's type is whole pixels: 15 px at 92.9 PPI is
# 11.63 pt, so its lines hold 3 % more text than 12 pt ones
WRAPPED_BY_WHOLE_PIXEL_TYPE = {"high_school_biology-004", "high_school_biology-019",
                               "high_school_biology-034", "high_school_biology-043",
                               "high_school_biology-060"}


@pytest.fixture(scope="module")
def redux():
    items = list(resolve("mmlu-redux").load(LoadRequest(source=REDUX_CSV), LoadReport()))
    assert len(items) == 185
    return items


@pytest.mark.parametrize("ppi", [92.9, 300])
def test_page_sizes_are_readbench_s_on_the_185_redux_items(redux, ppi):
    renderer = PageRenderer(PageOptions(ppi=ppi))
    outside, ratios = set(), []
    for item in redux:
        ours = our_sizes(renderer, item)
        theirs = readbench_sizes(option_text(item.options), ppi)
        assert len(ours) == len(theirs) == 1
        ratios.append(ours[0][0] / theirs[0][0])
        if not within(ours[0], theirs[0]):
            outside.add(item.id)
            # the only difference is a line more: the height, never the width
            assert ours[0][0] / theirs[0][0] <= 1.05 and ours[0][1] > theirs[0][1]
    assert outside == (WRAPPED_BY_WHOLE_PIXEL_TYPE if ppi == 92.9 else set())
    assert 1.0 <= min(ratios) and max(ratios) <= 1.05


def item(*options: str) -> Item:
    return Item(id="x-1", corpus="t", subset="x", split="test", question="Q?",
                options=list(options), answer="A")


LONG_OPTION = "a long option that wraps " * 12


def test_width_is_the_widest_line_plus_four_margins_and_crop_restores_a4():
    renderer = PageRenderer()
    layout = renderer.layout(item("one", "two"), "options")
    widest = max(line.runs[-1].end for line in layout.pages[0])
    (width,), (height,) = renderer.page_sizes(layout)
    assert width == pytest.approx(18 + widest + 4 * 18)
    assert height == pytest.approx(36 + 2 * renderer.pitch)
    whole = PageRenderer(PageOptions(crop="none")).render(item("one", "two"), "options")
    bottom = PageRenderer(PageOptions(crop="bottom")).render(item("one", "two"), "options")
    content = renderer.render(item("one", "two"), "options")
    assert (whole.pages[0].width, whole.pages[0].height) == (768, pixels(11.69, 92.9))
    assert (bottom.pages[0].width, bottom.pages[0].height) == (768, content.pages[0].height)
    assert content.pages[0].width == pixels(width / 72, 92.9) < 768
    # a long line is never cut: the page keeps its full width
    assert renderer.render(item(LONG_OPTION), "options").pages[0].width == 768


def test_wrapped_option_lines_start_at_the_margin_unless_hanging():
    plain = PageRenderer().layout(item(LONG_OPTION), "options").pages[0]
    hanging = PageRenderer(PageOptions(indent="hanging")).layout(item(LONG_OPTION),
                                                                 "options").pages[0]
    assert len(plain) > 1 and plain[1].runs[0].x == 0
    breaker = PageRenderer().breaker
    assert hanging[1].runs[0].x == pytest.approx(sum(breaker.advance(c) for c in "A. "))


def test_line_pitch_option_gives_the_old_pitch():
    renderer = PageRenderer(PageOptions(line_pitch=14.4))
    assert renderer.pitch == 14.4
    (page,) = renderer.render(item("one", "two", "three"), "options").pages
    assert page.height == pixels((3 * 14.4 + 36) / 72, 92.9)
    assert PageRenderer(PageOptions(line_spacing=1.0)).pitch == pytest.approx(
        (1854 + 434) / 2048 * 12)


def test_version_1_params_are_refused_with_the_flags_that_restore_them():
    from mmconvert.config import build

    with pytest.raises(UsageError, match="page renderer 1's options .* --crop bottom "
                                         "--line-pitch 14.4 --indent hanging"):
        build(PageOptions, {"crop_last": True}, "row")


def test_the_manifest_records_the_geometry(tmp_path):
    out = tmp_path / "run"
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", out, "--crop", "bottom",
                 "--line-pitch", "14.4", "--indent", "hanging")
    assert result.exit_code == 0, result.output
    row = json.loads((out / "manifest.jsonl").read_text().splitlines()[0])
    params = row["renderer"]["params"]
    assert (params["crop"], params["line_pitch"], params["indent"]) == ("bottom", 14.4,
                                                                        "hanging")
    assert row["renderer"]["version"] == "4" and row["images"][0]["width"] == 768
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "bad",
                 "--crop", "left")
    assert result.exit_code == 2 and "'left' is not one of" in result.output
