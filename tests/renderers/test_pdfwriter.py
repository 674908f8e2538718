"""The vector PDF writer (renderers/pdfwriter.py): a well-formed file, subset fonts, the same
bytes every time, and a text layer that reads back as the source."""

from __future__ import annotations

import pymupdf

from mmconvert.items import Item
from mmconvert.qa.textlayer import check_pdf
from mmconvert.renderers.page import PageRenderer
from tests.renderers.test_shaping import HARD


def render(text: str):
    renderer = PageRenderer()
    item = Item(id="t", corpus="t", subset="t", split="test", context=text)
    return renderer, renderer.render(item, "context", want_pdf=True)


def test_the_file_is_well_formed_small_and_the_same_every_time():
    text = " ".join(HARD.values()) + " CJK ⼀ 䜣 㐀 math ∑ café " + "Latin prose. " * 400
    renderer, first = render(text)
    _, second = render(text)
    assert first.pdf == second.pdf
    with pymupdf.open("pdf", first.pdf) as doc:
        assert not doc.is_repaired  # MuPDF parsed it without repairing anything
        assert doc.page_count == len(first.pages)
        fonts = {font[3].split("+", 1)[1] for page in doc for font in page.get_fonts()}
    # the CJK supplement is CFF-based: embedded as OpenType with an identity charset
    assert {"LiberationSans", "NotoNaskhArabic", "NotoSansCJKSCsupplement", "NotoEmoji"} <= fonts
    # every font subset to the glyphs drawn: far below Liberation Sans' 410 kB alone
    assert len(first.pdf) < 250_000
    assert check_pdf(first.pdf, text, renderer.margin_pt).ok


def test_a_glyph_two_characters_share_reads_back_as_each_of_them():
    # U+2F00 KANGXI RADICAL ONE and U+4E00 share one glyph in the CJK font
    renderer, result = render("一 ⼀")
    with pymupdf.open("pdf", result.pdf) as doc:
        assert doc[0].get_text().split() == ["一", "⼀"]
    assert check_pdf(result.pdf, "一 ⼀", renderer.margin_pt).ok


def test_pages_are_cropped_boxes_with_their_text_at_the_drawn_place():
    renderer, result = render("Hello")
    with pymupdf.open("pdf", result.pdf) as doc:
        page = doc[0]
        assert abs(page.rect.width - result.layout["widths"][0]) < 1e-3
        ((x0, _, _, _, word, *_),) = page.get_text("words")
    assert word == "Hello" and abs(x0 - renderer.margin_pt) < 0.5
