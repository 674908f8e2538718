"""Text-layer check of a page render: every source character is in the PDF's text layer, drawn
with a real glyph (glyph id 0 is a tofu box), inside the page's margins."""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from ..renderers.fonts import SILENT
from ..renderers.layout import normalise
from ..renderers.pdfwriter import REPLACEMENT

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
    # where the characters read back leave the source's order: (position, source, read back)
    out_of_order: tuple[int, str, str] | None = None
    # tabs in the source, tabs read back: a tab is in the text layer where it stands, except
    # at the end of a line, where it is dropped as a space at a wrap is
    tabs: tuple[int, int] = (0, 0)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.tofu or self.outside
                    or self.out_of_order or self.tabs[1] > self.tabs[0])

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
        if self.out_of_order:
            at, want, got = self.out_of_order
            parts.append(f"out of order from character {at}: {want!r} read back as {got!r}")
        if self.tabs[1] > self.tabs[0]:
            parts.append(f"{self.tabs[0]} tab(s) in the source, {self.tabs[1]} read back")
        return "; ".join(parts) or "ok"


def check_pdf(pdf: bytes, expected_text: str, margin_pt: float | tuple[float, float, float],
              *, labels: str = "", tolerance: float = 0.5) -> TextLayerReport:
    """Compare the PDF's text layer with ``expected_text`` (plus ``labels``, e.g. "A.B.").
    No glyph may lie within ``margin_pt`` of a page's left, right or bottom edge (one
    margin, or the three: ``PageRenderer.insets``)."""
    import pymupdf

    left, right_in, bottom_in = (margin_pt if isinstance(margin_pt, tuple)
                                 else (margin_pt,) * 3)

    report = TextLayerReport()
    want = visible_characters(expected_text) + visible_characters(labels)
    report.expected = sum(want.values())
    got: Counter = Counter()
    read: list[str] = []  # the visible characters read back, in order
    tabs = 0
    # U+FFFD drawn (the glyph trace has it), which get_text() gives as the glyph's id
    fallback: Counter = Counter()
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        for page in doc:
            right = page.rect.width - right_in + tolerance
            bottom = page.rect.height - bottom_in + tolerance
            # the characters: extraction, which reads a shaped cluster's ActualText (its
            # source characters) where the glyphs alone would give presentation forms
            # source characters) where the glyphs alone would give presentation forms; text
            # past the page's edge counts too (it is reported as outside below)
            flags = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_MEDIABOX_CLIP
            for char in page.get_text("text", flags=flags, clip=pymupdf.INFINITE_RECT()):
                char = _READ_BACK.get(char, char)
                tabs += char == "\t"
                if _seen(char):
                    got[char] += 1
                    read.append(char)
            # the glyphs: none is glyph 0 (tofu), none lies past the margins
            for span in page.get_texttrace():
                for code, glyph, (x, y), bbox in span["chars"]:
                    if chr(code) == REPLACEMENT:
                        fallback[chr(glyph)] += 1
                    if glyph == 0:
                        report.tofu.append(chr(code))
                    if (x < left - tolerance or y > bottom
                            or x + (bbox[2] - bbox[0]) > right):
                        report.outside.append(chr(code))
    report.missing = want - got
    report.extra = got - want
    _pair_shared_glyphs(report)
    _pair_replacement(report, fallback)
    report.tabs = (normalise(expected_text).count("\t"), tabs)
    # the order is checked where the page draws the text as it stands (option labels are
    # drawn among the options, so a labelled page is checked by its counts alone)
    if not (labels or report.missing or report.extra):
        report.out_of_order = _first_difference(
            [c for c in normalise(expected_text) if _seen(c)], read)
    return report


def _first_difference(want: list[str], got: list[str]) -> tuple[int, str, str] | None:
    """Where ``got`` leaves the order of ``want`` (characters a shared glyph or U+FFFD
    read back as another are taken as read), or None."""
    for at, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b and unicodedata.normalize("NFKC", a) != unicodedata.normalize("NFKC", b) \
                and a != REPLACEMENT:
            return at, "".join(want[at:at + 8]), "".join(got[at:at + 8])
    return None


def _pair_replacement(report: TextLayerReport, fallback: Counter) -> None:
    """U+FFFD is in the text layer (ToUnicode and ActualText, and MuPDF's glyph trace reads
    it), but MuPDF's text extraction takes U+FFFD for "no mapping" and gives the glyph's id
    instead: that read-back of a glyph the trace names U+FFFD is the replacement character."""
    for other, count in fallback.items():
        n = min(report.missing.get(REPLACEMENT, 0), report.extra.get(other, 0), count)
        if n:
            report.missing[REPLACEMENT] -= n
            report.extra[other] -= n
            report.shared_glyphs[(REPLACEMENT, other)] += n
    report.missing += Counter()
    report.extra += Counter()


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
