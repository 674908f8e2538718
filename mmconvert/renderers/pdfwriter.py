"""The vector PDF of laid-out pages, written directly: one content stream a page, every font
a HarfBuzz subset (``hb.subset``, glyph ids kept) embedded as a CID font with Identity
encoding, widths and a ToUnicode map of the glyphs drawn.

A plain run is one ``TJ`` of its glyphs at the font's own advances (the advances the layout
used); a shaped glyph is placed on its own, inside a marked-content span whose ActualText
holds its share of its grapheme's characters (``spread``), so that extraction gives back the
source text where a glyph alone cannot (joining forms, ligatures, conjuncts, reordered and
split vowel signs). A glyph that two characters share in one document (U+2F8F and U+FA08)
takes an ActualText too, so each reads back as itself.

Nothing in the file depends on the time or on chance: the same pages give the same bytes.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field

from ..units import rgb
from .fonts import SILENT, FontChain
from .layout import marked_run
from .shaping import glyph_clusters

_COMPRESSION = 6
REPLACEMENT = "\ufffd"


@dataclass
class PdfLine:
    baseline: float  # y of the baseline, points from the page's top
    runs: list  # layout.Run, x from ``left``


@dataclass
class PdfPage:
    width: float  # before ``scale``
    height: float
    left: float
    lines: list[PdfLine] = field(default_factory=list)
    scale: float = 1.0  # the page and its text squeezed or stretched across
    ink: str = "#000000"  # the text's colour
    paper: str = "#ffffff"  # the page's
    marks: frozenset = frozenset()  # characters of a newline marker drawn in ``mark_ink``
    mark_ink: str | None = None
    boxes: list = field(default_factory=list)  # (left, top, right, bottom) behind paragraphs
    box_ink: str | None = None


def spread(glyphs: int, text: str) -> list[str]:
    """A grapheme's characters over its glyphs, in drawing order, matched from the end: the
    last glyph takes the last character, the one before it the character before, and the
    first glyph whatever is left; with fewer characters than glyphs the first glyphs take
    nothing. So a vowel sign drawn after its consonant keeps its own character, a glyph
    drawn before its consonant (Bengali ে of কো, Devanagari ि of कि) gives the consonant, and
    a conjunct's half form takes the virama with it (स् of स्था): in drawing order, the
    characters come out in logical order."""
    chars = list(text)
    if len(chars) >= glyphs:
        head = len(chars) - glyphs + 1
        return ["".join(chars[:head]), *chars[head:]]
    return [""] * (glyphs - len(chars)) + chars


class _Font:
    """One font of the chain as used in one document: glyphs, widths, ToUnicode."""

    def __init__(self, index: int, chain: FontChain, face):
        self.index = index
        self.chain = chain
        self.font = chain.fonts[index]
        self.name = chain.specs[index].name
        self.face = face
        self.upem = self.face.upem
        self.unicode: dict[int, str] = {}  # glyph id -> the character it stands for
        self.gids: set[int] = {0}
        self.shaped: set[int] = set()  # glyph ids drawn as shaped glyphs

    def plain_glyph(self, char: str) -> tuple[int, bool]:
        """(glyph id of ``char``, whether its ToUnicode entry names another character, so
        that it needs an ActualText)."""
        gid = self.chain.glyph_id(self.index, char)
        self.gids.add(gid)
        known = self.unicode.setdefault(gid, char)
        # U+FFFD in a ToUnicode map reads as "unknown": readers fall back to the glyph's own
        # name (MuPDF gave U+023C); an ActualText gives it back
        return gid, known != char or char == REPLACEMENT


def _ink_first(text: str) -> str:
    """``text`` with the characters that draw nothing (bidi marks, joiners, variation
    selectors) at its start moved after its first drawn character: a reader matches an
    ActualText's first and last characters against its glyphs', and an invisible one in front
    (a left-to-right mark before a letter) makes it drop the letter. Any other stays where it
    is, so a keycap (1 U+FE0F U+20E3) reads back in its own order."""
    lead = len(text) - len(text.lstrip("".join(SILENT)))
    if not lead or lead == len(text):
        return text
    return text[lead] + text[:lead] + text[lead + 1:]


def _hex(text: str) -> bytes:
    return ("\ufeff" + text).encode("utf-16-be").hex().upper().encode()


def _num(value: float) -> bytes:
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return (text if text not in ("-0", "") else "0").encode()


def _actual(text: str) -> bytes:
    return b"/Span<</ActualText<" + _hex(text) + b">>>BDC\n"


def _paper(page: PdfPage) -> list[bytes]:
    """What a page draws before its text: its paper's colour, its horizontal scale, its
    boxes, and the text's ink."""
    out = []
    if page.paper != "#ffffff":
        out.append(b"%s %s %s rg 0 0 %s %s re f\n" % (*map(_num, rgb(page.paper)),
                                                       _num(page.width * page.scale),
                                                       _num(page.height)))
    if page.scale != 1.0:
        out.append(b"%s 0 0 1 0 0 cm\n" % _num(page.scale))
    for left, top, right, bottom in page.boxes:
        out.append(b"%s %s %s rg %s %s %s %s re f\n" % (
            *map(_num, rgb(page.box_ink or page.ink)), _num(left), _num(page.height - bottom),
            _num(right - left), _num(bottom - top)))
    if page.ink != "#000000" or page.boxes:
        out.append(b"%s %s %s rg\n" % tuple(map(_num, rgb(page.ink))))
    return out


def content_stream(page: PdfPage, size: float, fonts: dict[int, _Font], chain: FontChain,
                   face_of) -> bytes:
    """A page's text: glyph ids as two-byte codes, y up from the page's bottom."""
    out = _paper(page)
    out.append(b"BT\n")
    inked = page.ink

    def ink(run) -> None:
        nonlocal inked
        if not page.marks:
            return
        wanted = (page.mark_ink or page.ink) if marked_run(run, page.marks) else page.ink
        if wanted != inked:
            out.append(b"%s %s %s rg\n" % tuple(map(_num, rgb(wanted))))
            inked = wanted
    current = None

    def select(font_index: int) -> None:
        nonlocal current
        if font_index != current:
            out.append(b"/F%d %s Tf\n" % (font_index, _num(size)))
            current = font_index

    for line in page.lines:
        y = page.height - line.baseline
        for run in line.runs:
            if run.font not in fonts:
                fonts[run.font] = _Font(run.font, chain, face_of(run.font))
            font = fonts[run.font]
            ink(run)
            x = page.left + run.x
            if run.glyphs is None:
                select(run.font)
                glyphs: list[bytes] = []
                start = x
                advance = 0.0
                for char in run.text:
                    gid, shared = font.plain_glyph(char)
                    width = chain.glyph(char)[1] * size  # the run's font is the chain's
                    if shared:  # its own ActualText, at its own place
                        if glyphs:
                            out.append(b"1 0 0 1 %s %s Tm\n[<%s>]TJ\n" % (
                                _num(start), _num(y), b"".join(glyphs)))
                            glyphs = []
                        out.append(_actual(char) + b"1 0 0 1 %s %s Tm\n[<%04X>]TJ\nEMC\n" % (
                            _num(x + advance), _num(y), gid))
                        start = x + advance + width
                    else:
                        glyphs.append(b"%04X" % gid)
                    advance += width
                if glyphs:
                    out.append(b"1 0 0 1 %s %s Tm\n[<%s>]TJ\n" % (_num(start), _num(y),
                                                                 b"".join(glyphs)))
                continue
            if not run.glyphs:
                if "\t" in run.text:
                    # a tab: a space glyph stretched to the tab stop (no ink, no gap that a
                    # reader would take for a new line) that reads back as the tab
                    select(run.font)
                    gid, _ = font.plain_glyph(" ")
                    stretch = (run.end - run.x) / max(chain.glyph(" ")[1] * size, 1e-6)
                    out.append(_actual(run.text) + b"%s 0 0 1 %s %s Tm\n[<%04X>]TJ\nEMC\n" % (
                        _num(stretch), _num(x), _num(y), gid))
                continue
            select(run.font)
            shares: list[str] = []
            for count, text in glyph_clusters(run):
                shares += spread(count, _ink_first(text))
            for (gid, dx, dy, _), share in zip(run.glyphs, shares, strict=True):
                font.gids.add(gid)
                font.shaped.add(gid)
                out.append(_actual(share) + b"1 0 0 1 %s %s Tm\n[<%04X>]TJ\nEMC\n" % (
                    _num(x + dx), _num(y + dy), gid))
    out.append(b"ET\n")
    return b"".join(out)


def write_pdf(pages: list[PdfPage], chain: FontChain, size: float, face_of) -> bytes:
    """The PDF of ``pages`` (``face_of(index)``: the HarfBuzz face of a chain font): fonts
    subset to the glyphs drawn, streams deflated."""
    fonts: dict[int, _Font] = {}
    contents = [content_stream(page, size, fonts, chain, face_of) for page in pages]
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    def stream(data: bytes, extra: bytes = b"") -> int:
        packed = zlib.compress(data, _COMPRESSION)
        return add(b"<</Length %d/Filter/FlateDecode%s>>stream\n" % (len(packed), extra)
                   + packed + b"\nendstream")

    catalog = add(b"")  # filled in below
    pages_ref = add(b"")
    font_refs = {}
    for index in sorted(fonts):
        font_refs[index] = _embed(fonts[index], add, stream)
    resources = b"<</Font<<" + b"".join(b"/F%d %d 0 R" % (i, ref)
                                         for i, ref in font_refs.items()) + b">>>>"
    kids = []
    for page, content in zip(pages, contents, strict=True):
        content_ref = stream(content)
        kids.append(add(b"<</Type/Page/Parent %d 0 R/MediaBox[0 0 %s %s]/Resources%s"
                        b"/Contents %d 0 R>>" % (pages_ref, _num(page.width * page.scale),
                                                 _num(page.height), resources, content_ref)))
    objects[catalog - 1] = b"<</Type/Catalog/Pages %d 0 R>>" % pages_ref
    objects[pages_ref - 1] = (b"<</Type/Pages/Count %d/Kids[" % len(kids)
                              + b" ".join(b"%d 0 R" % k for k in kids) + b"]>>")
    out = [b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"]
    offsets = []
    position = len(out[0])
    for number, body in enumerate(objects, start=1):
        offsets.append(position)
        chunk = b"%d 0 obj\n" % number + body + b"\nendobj\n"
        out.append(chunk)
        position += len(chunk)
    xref = [b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)]
    xref += [b"%010d 00000 n \n" % offset for offset in offsets]
    out += xref
    out.append(b"trailer\n<</Size %d/Root %d 0 R>>\nstartxref\n%d\n%%%%EOF\n"
               % (len(objects) + 1, catalog, position))
    return b"".join(out)


def _embed(font: _Font, add, stream) -> int:
    """Objects of one subset font; the reference of its Type0 font dictionary."""
    import uharfbuzz as hb

    gids = sorted(font.gids)
    subset_input = hb.SubsetInput()
    for gid in gids:
        subset_input.glyph_set.add(gid)
    # glyph ids kept, so the codes in the content stay valid; a CFF font's charset made the
    # identity, so that its CIDs are those glyph ids too
    subset_input.flags = (hb.SubsetFlags.RETAIN_GIDS | hb.SubsetFlags.NO_HINTING
                          | hb.SubsetFlags.CFF_IDENTITY_CHARSET)
    for table in ("GSUB", "GPOS", "GDEF", "BASE", "JSTF", "MATH", "COLR", "CPAL", "SVG "):
        subset_input.drop_table_tag_set.add(int.from_bytes(table.encode("ascii"), "big"))
    data = hb.subset(font.face, subset_input).blob.data
    cff = data[:4] == b"OTTO"
    digest = hashlib.sha256(font.name.encode() + b":" + b",".join(b"%d" % g for g in gids))
    tag = bytes(65 + b % 26 for b in digest.digest()[:6])
    # a PDF name: letters, digits and hyphens only ("Noto Sans CJK SC (supplement)")
    name = tag + b"+" + "".join(c for c in font.name if c.isascii() and (c.isalnum() or c == "-")
                                ).encode("ascii")
    file_ref = stream(data, b"/Subtype/OpenType" if cff else b"/Length1 %d" % len(data))
    spec = font.font
    ascent, descent = spec.ascender * 1000, spec.descender * 1000
    bbox = spec.bbox
    descriptor = add(
        b"<</Type/FontDescriptor/FontName/%s/Flags 4/FontBBox[%s %s %s %s]/ItalicAngle 0"
        b"/Ascent %s/Descent %s/CapHeight %s/StemV 80/%s %d 0 R>>" % (
            name, _num(bbox.x0 * 1000), _num(bbox.y0 * 1000), _num(bbox.x1 * 1000),
            _num(bbox.y1 * 1000), _num(ascent), _num(descent), _num(ascent),
            b"FontFile3" if cff else b"FontFile2", file_ref))
    hb_font = hb.Font(font.face)
    mark = hb.OTLayoutGlyphClass.MARK

    def width(gid: int) -> float:
        # a mark takes no room (shaping gives it no advance): its width is 0, so that its
        # box in the text layer is where it is drawn, not an advance further on
        if gid in font.shaped and hb.ot_layout_get_glyph_class(font.face, gid) == mark:
            return 0.0
        return hb_font.get_glyph_h_advance(gid) * 1000 / font.upem

    widths = b" ".join(b"%d[%s]" % (g, _num(width(g))) for g in gids)
    cid = add(b"<</Type/Font/Subtype/%s/BaseFont/%s/CIDSystemInfo<</Registry(Adobe)"
              b"/Ordering(Identity)/Supplement 0>>/FontDescriptor %d 0 R/W[%s]%s>>" % (
                  b"CIDFontType0" if cff else b"CIDFontType2", name, descriptor, widths,
                  b"" if cff else b"/CIDToGIDMap/Identity"))
    to_unicode = stream(_cmap(font.unicode))
    return add(b"<</Type/Font/Subtype/Type0/BaseFont/%s/Encoding/Identity-H"
               b"/DescendantFonts[%d 0 R]/ToUnicode %d 0 R>>" % (name, cid, to_unicode))


def _cmap(unicode: dict[int, str]) -> bytes:
    entries = sorted(unicode.items())
    lines = [b"/CIDInit/ProcSet findresource begin 12 dict begin begincmap",
             b"/CIDSystemInfo<</Registry(Adobe)/Ordering(UCS)/Supplement 0>>def",
             b"/CMapName/Adobe-Identity-UCS def/CMapType 2 def",
             b"1 begincodespacerange <0000><FFFF> endcodespacerange"]
    for start in range(0, len(entries), 100):
        chunk = entries[start:start + 100]
        lines.append(b"%d beginbfchar" % len(chunk))
        lines += [b"<%04X><%s>" % (gid, char.encode("utf-16-be").hex().upper().encode())
                  for gid, char in chunk]
        lines.append(b"endbfchar")
    lines.append(b"endcmap CMapName currentdict/CMap defineresource pop end end")
    return b"\n".join(lines)
