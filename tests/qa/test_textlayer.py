"""The text-layer check catches what it is for: missing text, tofu, glyphs past the margin."""

from __future__ import annotations

import pymupdf

from mmconvert.qa.textlayer import check_pdf
from mmconvert.renderers.fonts import FONT_DIR

LIBERATION = str(FONT_DIR / "LiberationSans-Regular.ttf")


def pdf_with(text: str, x: float, fontfile: str = LIBERATION) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595.44, height=200)
    writer = pymupdf.TextWriter(page.rect)
    writer.append((x, 40), text, font=pymupdf.Font(fontfile=fontfile), fontsize=12)
    writer.write_text(page)
    return doc.tobytes()


def test_a_good_page_passes():
    assert check_pdf(pdf_with("Hello", 18), "Hello", 18).ok


def test_missing_and_unexpected_characters():
    report = check_pdf(pdf_with("Helo", 18), "Hello", 18)
    assert not report.ok and report.missing == {"l": 1} and report.summary() == "missing l"


def test_glyph_past_the_right_margin():
    report = check_pdf(pdf_with("Hello world", 560), "Hello world", 18)
    assert report.outside and not report.missing
    assert report.summary().endswith("glyph(s) past the margin")


def test_tofu_is_reported():
    # what a renderer without a fallback chain makes: U+4E2D drawn with glyph 0 of Liberation
    mupdf = pymupdf.mupdf
    text = mupdf.FzText()
    mupdf.fz_show_glyph(text, pymupdf.Font(fontfile=LIBERATION).this,
                        mupdf.FzMatrix(12, 0, 0, -12, 18, 40), 0, ord("中"), 0, 0,
                        mupdf.FZ_BIDI_LTR, mupdf.FZ_LANG_UNSET)
    doc = pymupdf.open()
    pdf = mupdf.PdfDocument(doc.this)
    mediabox = mupdf.FzRect(0, 0, 595.44, 200)
    device, resources, contents = mupdf.pdf_page_write(pdf, mediabox)
    mupdf.fz_fill_text(device, text, mupdf.FzMatrix(), mupdf.fz_device_gray(), [0.0], 1.0,
                       mupdf.FzColorParams())
    mupdf.fz_close_device(device)
    mupdf.pdf_insert_page(pdf, -1, mupdf.pdf_add_page(pdf, mediabox, 0, resources, contents))
    report = check_pdf(doc.tobytes(), "中", 18)
    # glyph 0 reads back as U+FFFD, so the source character also counts as missing
    assert report.tofu == ["\ufffd"] and report.missing == {"中": 1} and not report.ok
