"""Page images: geometry at any PPI, cropping, PNG metadata, fidelity, determinism."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from mmconvert.errors import ItemError
from mmconvert.qa.textlayer import check_pdf
from mmconvert.renderers.page import PageOptions, PageRenderer, pixels
from tests.conftest import make_item

LONG = " ".join(f"word{i}" for i in range(3000))
HARD_CASES = {
    "cjk_no_spaces": "這是一段沒有空格的繁體中文句子，用來測試換行。简体中文也一样没有空格。"
                     "日本語の文章、カタカナ、ひらがな。한국어 문장도 있습니다.",
    "math": "∀ε>0 ∃δ>0: |x−a|<δ ⇒ |f(x)−f(a)|<ε; ∑ₖ₌₁ⁿ k² = n(n+1)(2n+1)/6; ∫₀^∞ e^{−x²}dx = √π/2;"
            " ∂u/∂t = α∇²u; A ⊆ B ∪ C; ¬(P ∧ Q) ≡ ¬P ∨ ¬Q; x ∈ ℝ, ℕ ⊂ ℤ ⊂ ℚ; ≤ ≥ ≠ ≈ ∞ ± × ÷",
    "long_tokens": "https://en.wikipedia.org/wiki/Methylenedioxymethamphetamine_" + "x" * 300 +
                   " 1-(3,4-dimethoxyphenyl)-2-methylaminopropane-" * 3 + "ACGT" * 120,
    "mixed_scripts": "Ελληνικά, Русский текст, Español ñ, Čeština, Türkçe ğ, Tiếng Việt ậ, "
                     "中文 mixed with English, 日本語とEnglish, 한국어 and Deutsch ß, "
                     "✓ ★ ☂ → ⇒ © ™ €",
    "whitespace": "tab\tseparated\tvalues\r\nwindows line\rold mac line\u00a0nbsp\u2003em"
                  " space\u200bzero width\u00adsoft hyphen  double  spaces\n\n\ntrailing   ",
    "cjk_extension_a_and_radicals": "CMMLU writes ⼀ (U+2F00) for 一 and history has 䜣 (U+4723);"
                                    " ⾏ ⻌ 㐀 䶵 〇 ㈠ ㍻ 﨎",
    "nfd": "Cafe\u0301 re\u0301sume\u0301 na\u0131\u0308ve A\u030a",
    # tabs that run past the line's end: the next word starts the next line, not past the edge
    "leading_tabs": "\t" * 60 + "Hello world, the text after many tabs." * 2 + "\t" * 40 + "end",
    "leading_tabs_shaped": "\t" * 60 + "नमस्ते दुनिया, यह बहुत सारे टैब के बाद का पाठ है।",
}


def png(page):
    return Image.open(io.BytesIO(page.png))


@pytest.mark.parametrize("ppi", [72, 92.9, 150, 300])
def test_full_page_pixel_size_is_round_inches_times_ppi(ppi):
    renderer = PageRenderer(PageOptions(ppi=ppi))
    result = renderer.render(make_item(context=LONG), "context")
    assert len(result.pages) > 1
    first = result.pages[0]
    assert (first.width, first.height) == (pixels(8.27, ppi), pixels(11.69, ppi))
    image = png(first)
    assert image.size == (first.width, first.height) and image.mode == "L"
    assert image.info["dpi"][0] == pytest.approx(ppi, abs=0.02)


def test_last_page_is_cropped_to_content_plus_margin(renderer):
    result = renderer.render(make_item(options=["one", "two", "three"]), "options")
    (page,) = result.pages
    # ReadBench's pitch: 1.2 x (ascent + descent) of Arial's metrics at 12 pt
    assert renderer.pitch == pytest.approx(1.2 * (1854 + 434) / 2048 * 12)  # 16.09
    # 3 lines of that pitch plus two 18 pt margins
    assert page.height == pixels((3 * renderer.pitch + 36) / 72, 92.9)
    data = png(page).load()
    assert all(data[x, page.height - 1] == 255 for x in range(page.width))


def test_layout_is_the_same_at_every_ppi():
    item = make_item(context=LONG + " " + HARD_CASES["mixed_scripts"])
    layouts = []
    for ppi in (72, 92.9, 300):
        renderer = PageRenderer(PageOptions(ppi=ppi))
        layout = renderer.layout(item, "context")
        layouts.append([[(r.x, r.text) for r in line.runs] for page in layout.pages
                        for line in page])
        result = renderer.render(item, "context")
        heights = [p.height for p in result.pages]
        assert heights[:-1] == [pixels(11.69, ppi)] * (len(heights) - 1)
    assert layouts[0] == layouts[1] == layouts[2]


def test_type_is_12pt_at_every_ppi():
    # the cap height of "H" in pixels scales linearly with the PPI (no whole-pixel rounding)
    heights = {}
    for ppi in (100, 300):
        page = PageRenderer(PageOptions(ppi=ppi)).render(make_item(options=["HHHH"]),
                                                         "options").pages[0]
        image = png(page)
        rows = [y for y in range(image.height)
                if any(image.getpixel((x, y)) < 128 for x in range(image.width // 4))]
        heights[ppi] = rows[-1] - rows[0] + 1
    assert heights[300] / heights[100] == pytest.approx(3.0, rel=0.08)


@pytest.mark.parametrize("case", sorted(HARD_CASES))
def test_every_character_is_in_the_text_layer_with_a_real_glyph(renderer, case):
    item = make_item(context=HARD_CASES[case])
    result = renderer.render(item, "context", want_pdf=True)
    report = check_pdf(result.pdf, HARD_CASES[case], renderer.margin_pt)
    assert report.expected > 15
    assert report.ok, report.summary()


@pytest.mark.parametrize("text", ["col1\tcol2\tcol3\nx\ty\tz", "x \ufffd y",
                                  "key 1\ufe0f\u20e3 then 2\ufe0f\u20e3 end"])
def test_the_text_layer_gives_tabs_replacement_marks_and_keycaps_back_in_order(renderer, text):
    """A tab is a stretched, undrawn space that reads back as the tab; U+FFFD is mapped to
    itself (MuPDF reads it as 'unknown' and gives the glyph id, which the check knows); a
    keycap's characters keep their order."""
    import pymupdf

    result = renderer.render(make_item(context=text), "context", want_pdf=True)
    report = check_pdf(result.pdf, text, renderer.margin_pt)
    assert report.ok, report.summary()
    with pymupdf.open(stream=result.pdf, filetype="pdf") as doc:
        read = doc[0].get_text().rstrip("\n")
    if "\ufffd" not in text:
        assert read == text


def test_the_text_layer_check_catches_characters_out_of_order(renderer):
    result = renderer.render(make_item(context="abc def"), "context", want_pdf=True)
    report = check_pdf(result.pdf, "acb def", renderer.margin_pt)
    assert not report.ok and report.out_of_order[0] == 1, report.summary()


def test_options_render_with_letters_and_question_stays_text(renderer):
    item = make_item(question="Which?", options=["alpha", "beta"])
    result = renderer.render(item, "options", want_pdf=True)
    report = check_pdf(result.pdf, "alpha beta", renderer.margin_pt, labels="A.B.")
    assert report.ok, report.summary()


def test_render_all_draws_context_question_and_options(renderer):
    item = make_item(context="Ctx.", question="Q?", options=["x", "y"])
    result = renderer.render(item, "all", want_pdf=True)
    assert check_pdf(result.pdf, "Ctx. Q? x y", renderer.margin_pt, labels="A.B.").ok


def test_a_character_no_font_has_is_an_error_naming_it(renderer):
    item = make_item(options=["fine", "hieroglyph \U00013000"], origin="f.csv line 3")
    with pytest.raises(ItemError) as err:
        renderer.render(item, "options")
    assert str(err.value) == ("f.csv line 3: field options[1]: no shipped font has a glyph for "
                              "U+13000 EGYPTIAN HIEROGLYPH A001 '\U00013000'")


def test_a_skin_tone_the_emoji_font_lacks_is_an_error_naming_it(renderer):
    with pytest.raises(ItemError, match=r"U\+1F3FD EMOJI MODIFIER FITZPATRICK TYPE-4"):
        renderer.render(make_item(options=["thumbs \U0001F44D\U0001F3FD"]), "options")


def test_control_characters_are_an_error(renderer):
    with pytest.raises(ItemError, match="field context: control character U\\+0007"):
        renderer.render(make_item(context="bell\x07"), "context")


def test_missing_part_is_an_error(renderer):
    with pytest.raises(ItemError, match="nothing to render: the item has no options"):
        renderer.render(make_item(question="q"), "options")


def test_rendering_is_deterministic(renderer):
    item = make_item(context=HARD_CASES["mixed_scripts"] * 20)
    first = renderer.render(item, "context", want_pdf=True)
    second = PageRenderer().render(item, "context", want_pdf=True)
    assert [p.png for p in first.pages] == [p.png for p in second.pages]
    assert first.pdf == second.pdf


def test_rgb_option():
    page = PageRenderer(PageOptions(color="rgb")).render(make_item(options=["x"]),
                                                         "options").pages[0]
    assert png(page).mode == "RGB"


def test_a_stored_layout_redraws_at_any_ppi_as_a_direct_render_would():
    item = make_item(context="A long context. " * 400, question="Why?")
    stored = PageRenderer(PageOptions(ppi=92.9)).render(item, "context").layout
    assert len(stored["pages"]) >= 2
    for ppi in (72, 150, 300):
        direct = PageRenderer(PageOptions(ppi=ppi)).render(item, "context")
        redrawn = PageRenderer(PageOptions(ppi=ppi)).redraw(stored)
        assert [p.png for p in redrawn] == [p.png for p in direct.pages]
        assert direct.layout == stored  # the layout itself does not depend on the PPI


def test_a_layout_set_in_other_geometry_is_refused():
    stored = PageRenderer().render(make_item(options=["a", "b"]), "options").layout
    with pytest.raises(ValueError, match="font_size"):
        PageRenderer(PageOptions(font_size=10)).redraw(stored)
    with pytest.raises(ValueError, match="font chain"):
        PageRenderer().redraw({**stored, "fonts": ["Arial"]})


@pytest.mark.parametrize("color", ["gray", "rgb"])
def test_page_pngs_hold_the_drawn_pixels_and_the_ppi(color):
    """A page's PNG (``drawing.pixels_png``: rows unfiltered, zlib-ng) decodes to the very
    pixmap MuPDF drew, and records the PPI in pHYs."""
    from mmconvert.renderers.drawing import mupdf

    renderer = PageRenderer(PageOptions(ppi=150, color=color))
    item = make_item(context="The lantern by the harbour was painted red. " * 80 + "中文 ∑ ✓")
    layout = renderer.layout(item, "context")
    widths, heights = renderer.page_sizes(layout)
    pix = renderer.draw_page(renderer.text_object(layout.pages[0]), widths[0], heights[0], 150)
    png = renderer.encode(pix, 150).png
    image = Image.open(io.BytesIO(png))
    assert image.mode == ("L" if color == "gray" else "RGB")
    assert image.size == (pix.w(), pix.h())
    assert image.tobytes() == bytes(mupdf().fz_pixmap_samples_memoryview(pix))
    assert image.info["dpi"] == pytest.approx((150, 150), abs=0.02)  # whole pixels a metre
    assert png == renderer.render(item, "context").pages[0].png


def test_pages_encoded_while_the_next_is_drawn_are_the_pages_made_one_by_one():
    """``rasterise_pages`` (each page encoded on a thread while the next one is drawn, with
    more pages than it holds drawn at once) gives each page's own ``rasterise``, in order."""
    from mmconvert.renderers.page import ENCODING_AHEAD

    renderer = PageRenderer(PageOptions(ppi=72, font_size=30))
    item = make_item(context=" ".join(f"Line {n} of the harbour's log." for n in range(400)))
    layout = renderer.layout(item, "context")
    widths, heights = renderer.page_sizes(layout)
    texts = [renderer.text_object(lines) for lines in layout.pages]
    assert len(texts) > ENCODING_AHEAD + 1
    one_by_one = [renderer.rasterise(t, w, h)
                  for t, w, h in zip(texts, widths, heights, strict=True)]
    assert len({page.png for page in one_by_one}) == len(texts)  # each page its own
    assert renderer.render(item, "context").pages == one_by_one
