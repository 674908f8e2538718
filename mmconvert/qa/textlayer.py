"""Text-layer check of a page render: every source character is in the PDF's text layer, drawn
with a real glyph (glyph id 0 is a tofu box), inside the page's margins."""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from ..renderers.fonts import SILENT
from ..renderers.layout import normalise

# what get_text() may give back for a character we drew
_READ_BACK = {"\u00a0": " ", "\u2007": " ", "\u202f": " "}


def _seen(char: str) -> bool:
    """Whether ``char`` leaves ink (every Unicode space separator is ``isspace()`` too; bidi
    controls and variation selectors are default ignorables)."""
    return not char.isspace() and char not in SILENT


def visible_characters(text: str) -> Counter:
    """The characters of ``text`` that must be seen: NFC, no white space or invisibles."""
    return Counter(c for c in normalise(text) if _seen(c))


@dataclass
class TextLayerReport:
    expected: int = 0
    missing: Counter = field(default_factory=Counter)
    extra: Counter = field(default_factory=Counter)
    # (source, read back) pairs that share one glyph, e.g. U+2F8F KANGXI RADICAL WALK and
    # U+FA08: the PDF's ToUnicode map can name only one of them; NFKC makes them equal
    shared_glyphs: Counter = field(default_factory=Counter)
    tofu: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.tofu or self.outside)

    def summary(self) -> str:
        parts = []
        if self.missing:
            parts.append("missing " + "".join(sorted(self.missing.elements()))[:40])
        if self.extra:
            parts.append("unexpected " + "".join(sorted(self.extra.elements()))[:40])
        if self.tofu:
            parts.append(f"{len(self.tofu)} tofu glyph(s)")
        if self.outside:
            parts.append(f"{len(self.outside)} glyph(s) past the margin")
        return "; ".join(parts) or "ok"


def check_pdf(pdf: bytes, expected_text: str, margin_pt: float, *, labels: str = "",
              tolerance: float = 0.5) -> TextLayerReport:
    """Compare the PDF's text layer with ``expected_text`` (plus ``labels``, e.g. "A.B.")."""
    import pymupdf

    report = TextLayerReport()
    want = visible_characters(expected_text) + visible_characters(labels)
    report.expected = sum(want.values())
    got: Counter = Counter()
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        for page in doc:
            right = page.rect.width - margin_pt + tolerance
            bottom = page.rect.height - margin_pt + tolerance
            # the characters: extraction, which reads a shaped cluster's ActualText (its
            # source characters) where the glyphs alone would give presentation forms
            # source characters) where the glyphs alone would give presentation forms; text
            # past the page's edge counts too (it is reported as outside below)
            flags = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_MEDIABOX_CLIP
            for char in page.get_text("text", flags=flags, clip=pymupdf.INFINITE_RECT()):
                char = _READ_BACK.get(char, char)
                if _seen(char):
                    got[char] += 1
            # the glyphs: none is glyph 0 (tofu), none lies past the margins
            for span in page.get_texttrace():
                for code, glyph, (x, y), bbox in span["chars"]:
                    if glyph == 0:
                        report.tofu.append(chr(code))
                    if (x < margin_pt - tolerance or y > bottom
                            or x + (bbox[2] - bbox[0]) > right):
                        report.outside.append(chr(code))
    report.missing = want - got
    report.extra = got - want
    _pair_shared_glyphs(report)
    return report


def _pair_shared_glyphs(report: TextLayerReport) -> None:
    for char in list(report.missing):
        key = unicodedata.normalize("NFKC", char)
        for other in list(report.extra):
            if unicodedata.normalize("NFKC", other) == key:
                n = min(report.missing[char], report.extra[other])
                report.missing[char] -= n
                report.extra[other] -= n
                report.shared_glyphs[(char, other)] += n
    report.missing += Counter()  # drop zero counts
    report.extra += Counter()
