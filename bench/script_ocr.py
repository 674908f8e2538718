"""Tesseract on our renders of text in each script, at 300 PPI: the share of letters it misses
(letters and digits of the source that the reading lacks or got wrong, insertions free, as
``qa check`` counts them), and for each page whether any glyph is glyph 0 or past the margin.

    python bench/script_ocr.py [--ppi 300] [--unshaped]

Each page is read as ``qa check`` reads it: Tesseract's block mode (``--psm 6``), and its
sparse-text mode (``--psm 11``) when that misses less.

The texts are the hard cases of tests/renderers/test_shaping.py (right to left with numbers
and English, Persian, Hebrew, conjuncts, reordered vowel signs, Thai with no spaces, emoji,
mixed directions), each with the item's own language; every other script among its letters
is read by its own Tesseract language too (``qa.ocr.ocr_languages``). With ``--unshaped``
the same texts are also drawn one glyph per character, left to right (what a renderer
without shaping or bidi draws), for comparison.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "renderers"))

from test_shaping import HARD  # noqa: E402

from mmconvert.items import Item  # noqa: E402
from mmconvert.qa.ocr import errors, ocr, ocr_languages, readable  # noqa: E402
from mmconvert.qa.textlayer import check_pdf  # noqa: E402
from mmconvert.renderers.page import PageOptions, PageRenderer  # noqa: E402

LANGUAGE = {"ar": "ar", "fa": "fa", "he": "he", "hi": "hi", "bn": "bn", "ta": "ta", "th": "th",
            "emoji": "en", "mixed": "en"}


def unshaped_png(renderer: PageRenderer, text: str, folder: Path) -> Path:
    """The text drawn one glyph per character from the chain, left to right, in logical
    order, with the plain line breaker: no shaping, no bidi."""
    from mmconvert.renderers.layout import Block, LineBreaker, paginate

    breaker = LineBreaker(renderer.chain, renderer.size, renderer.text_width)
    layout = paginate(breaker.lines(Block(text)), renderer.lines_per_page, renderer.pitch)
    widths, heights = renderer.page_sizes(layout)
    page = renderer.rasterise(renderer.text_object(layout.pages[0]), widths[0], heights[0])
    path = folder / "unshaped.png"
    path.write_bytes(page.png)
    return path


def read(path: Path, langs: str, reference: str) -> int:
    """Letters missed by the better of Tesseract's block and sparse-text modes."""
    return min(errors(reference, readable(ocr(path, langs, psm=psm).text), free_insertions=True)
               for psm in (6, 11))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ppi", type=float, default=300)
    parser.add_argument("--unshaped", action="store_true")
    args = parser.parse_args()
    renderer = PageRenderer(PageOptions(ppi=args.ppi))
    print(f"{'case':6s} {'languages':14s} letters  missed  tofu  outside"
          + ("  unshaped missed" if args.unshaped else ""))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, sentence in HARD.items():
            text = sentence + " " + sentence
            item = Item(id=name, corpus="t", subset="t", split="test", context=text,
                        language=LANGUAGE[name])
            result = renderer.render(item, "context", want_pdf=True)
            report = check_pdf(result.pdf, text, renderer.margin_pt)
            path = folder / f"{name}.png"
            path.write_bytes(result.pages[0].png)
            langs = ocr_languages(item.language, text)
            reference = readable(text)
            missed = read(path, langs, reference)
            line = (f"{name:6s} {langs:14s} {len(reference):7d} {missed / len(reference):6.1%}"
                    f" {len(report.tofu):5d} {len(report.outside):8d}")
            if args.unshaped:
                try:
                    raw = unshaped_png(renderer, text, folder)
                    bad = read(raw, langs, reference)
                    line += f"  {bad / len(reference):15.1%}"
                except KeyError:
                    line += "  (no glyph)"
            print(line)


if __name__ == "__main__":
    main()
