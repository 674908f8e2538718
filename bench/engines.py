"""Which engine draws pages fastest: the measurement behind the page renderer's design.

    python bench/engines.py

Renders the same text to 92.9-PPI grayscale PNG pages with
  (a) mmconvert's renderer: own line breaking in points, glyph runs drawn by MuPDF directly;
  (b) PyMuPDF Story (HTML + CSS with ``overflow-wrap: break-word``), PDF then rasterised;
  (c) reportlab (canvas, ``simpleSplit`` wrapping), PDF then rasterised by PyMuPDF;
and prints pages/s. Only (a) has a per-character font chain with a tofu check; (b) falls back
to MuPDF's Noto/Droid fonts on its own, (c) has no fallback (a CJK character draws as tofu).
"""

from __future__ import annotations

import html
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render_speed import context_items, sample_items, text_of  # noqa: E402
from mmconvert.renderers.fonts import FONT_DIR  # noqa: E402
from mmconvert.renderers.page import PageRenderer  # noqa: E402

PPI = 92.9
PAGE_W, PAGE_H, MARGIN = 8.27 * 72, 11.69 * 72, 18.0
FONT = FONT_DIR / "LiberationSans-Regular.ttf"


def rasterise(pdf: bytes) -> int:
    import pymupdf

    pages = 0
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        for page in doc:
            pix = page.get_pixmap(matrix=pymupdf.Matrix(PPI / 72, PPI / 72),
                                  colorspace=pymupdf.csGRAY)
            pix.tobytes("png")
            pages += 1
    return pages


def story_pdf(text: str) -> bytes:
    import pymupdf

    css = (f"@font-face {{font-family: lib; src: url({FONT.name});}} "
           "body {font-family: lib; font-size: 12pt; line-height: 1.2; margin: 0; "
           "overflow-wrap: break-word;} p {margin: 0;}")
    body = "".join(f"<p>{html.escape(p) or '&nbsp;'}</p>" for p in text.split("\n"))
    story = pymupdf.Story(html=body, user_css=css, archive=pymupdf.Archive(str(FONT_DIR)))
    buffer = io.BytesIO()
    writer = pymupdf.DocumentWriter(buffer)
    mediabox = pymupdf.Rect(0, 0, PAGE_W, PAGE_H)
    where = mediabox + (MARGIN, MARGIN, -MARGIN, -MARGIN)
    more = True
    while more:
        device = writer.begin_page(mediabox)
        more, _ = story.place(where)
        story.draw(device)
        writer.end_page()
    writer.close()
    return buffer.getvalue()


def reportlab_pdf(text: str) -> bytes:
    from reportlab.lib.utils import simpleSplit
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    if "Lib" not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont("Lib", str(FONT)))
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=(PAGE_W, PAGE_H))
    y = PAGE_H - MARGIN - 12
    for paragraph in text.split("\n"):
        for line in simpleSplit(paragraph, "Lib", 12, PAGE_W - 2 * MARGIN) or [""]:
            if y < MARGIN:
                c.showPage()
                y = PAGE_H - MARGIN - 12
            c.setFont("Lib", 12)
            c.drawString(MARGIN, y, line)
            y -= 14.4
    c.showPage()
    c.save()
    return buffer.getvalue()


def measure(label, items, part, fn) -> None:
    started = time.perf_counter()
    pages = sum(fn(item, part) for item in items)
    seconds = time.perf_counter() - started
    print(f"  {label:<34} {pages / seconds:8.1f} pages/s  ({pages} pages)")


def main() -> None:
    renderer = PageRenderer()
    engines = {
        "mmconvert (layout + MuPDF draw)": lambda i, p: len(renderer.render(i, p).pages),
        "PyMuPDF Story -> raster": lambda i, p: rasterise(story_pdf(text_of(i, p))),
        "reportlab -> PyMuPDF raster": lambda i, p: rasterise(reportlab_pdf(text_of(i, p))),
    }
    for title, items, part in (("MCQ option blocks (shipped sample x10)", sample_items(10),
                                "options"),
                               ("8k-word contexts (x3)", context_items(3, 8000), "context")):
        print(title)
        for label, fn in engines.items():
            fn(items[0], part)  # warm-up
            measure(label, items, part, fn)


if __name__ == "__main__":
    main()
