"""The browser's PDF made stable and readable: its bytes normalised, its text layer in
reading order (right-to-left lines included), its pages cropped, then drawn at a PPI by
PyMuPDF."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any

from ..drawing import pixels_png
from ..fields import MAX_ITEM_MEGAPIXELS


def normalised(pdf: bytes, options=None) -> Any:
    """The browser's PDF with its text layer in reading order and its pages cut as
    ``options.crop`` says: the PyMuPDF document, left open. Its pages draw the pixels its
    bytes (``written``) draw, with its fonts loaded already (loading Chromium's Type 3 faces
    again from the bytes was most of a short item's drawing). A target's search measures
    the pages of most of its typesettings and never writes them."""
    import pymupdf

    doc: Any = pymupdf.open(stream=pdf, filetype="pdf")
    try:
        for page in doc:
            in_reading_order(doc, page, options)
        if options is not None and options.crop != "none":
            crop_pages(doc, options)
        return doc
    except BaseException:  # closed here, as the ``with`` it replaced closed it
        doc.close()
        raise


def written(doc) -> bytes:
    """A ``normalised`` document's bytes (before any page is drawn): without what changes
    from run to run (its dates) or names the page (its title), re-written compact."""
    doc.set_metadata({"producer": doc.metadata.get("producer") or "", "creator": "mmconvert",
                      "title": "", "author": "", "subject": "", "keywords": "",
                      "creationDate": "", "modDate": "", "trapped": ""})
    return doc.tobytes(garbage=3, deflate=True, no_new_id=True)


@contextmanager
def _opened(pdf):
    """``pdf`` (bytes, or a document ``normalised`` left open) as an open document; one
    opened here is closed after."""
    import pymupdf

    if not isinstance(pdf, (bytes, bytearray)):
        yield pdf
        return
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        yield doc


_BLOCK = re.compile(r"BT\n.*?\nET", re.S)
_SHOW = re.compile(r"(/(\S+) [-0-9.]+ Tf)|<([0-9A-Fa-f]*)> Tj|(\S+) Tj|TJ")
_MATRIX = " ".join([r"([-0-9.]+)"] * 6) + " Tm"  # a text matrix, its six numbers
_TM = re.compile(_MATRIX)


def in_reading_order(doc, page, options=None) -> None:
    """Rewrite ``page``'s content so that each line holding right-to-left runs shows its runs
    in reading order. Chromium writes a line's runs left to right as drawn, each
    right-to-left run marked ``ReversedChars``, which MuPDF's text extraction (and so the
    text-layer check, and a reader copying the text) does not honour: its Arabic or Hebrew
    words came out last word first. The runs' ``BT … ET`` blocks change order, and so do the
    glyphs inside a run read right to left (``_glyphs_reversed``), each keeping its own place
    on the page, so the page draws the same. The line's base
    direction is the one its ends allow (a left-to-right paragraph's first strong run is its
    leftmost, a right-to-left one's its rightmost); where both do, the side of the page the
    line keeps to (a paragraph sits at its start), then the direction of most of its runs; a
    line still undecided is left as drawn (the text-layer check then flags it for review)."""
    xrefs = page.get_contents()
    if len(xrefs) != 1:
        return
    content = doc.xref_stream(xrefs[0]).decode("latin-1")
    if "/ReversedChars" not in content:
        return
    top, right, bottom, left = options.margins() if options is not None else (0, 0, 0, 0)
    edges = (left, page.rect.width - right)
    chars = [(chr(c[0]), c[3], span["size"]) for span in page.get_texttrace()
             for c in span["chars"]]
    wide = {font[4]: font[2] == "Type0" for font in page.get_fonts()}
    blocks: list[dict[str, Any]] = []
    taken = 0
    for found in _BLOCK.finditer(content):
        font, glyphs = None, 0
        for show in _SHOW.finditer(found.group(0)):
            if show.group(1):
                font = show.group(2)
            elif show.group(3) is not None:
                glyphs += len(show.group(3)) // (4 if wide.get(font) else 2)
            else:  # a string or an array shown: not Chromium's form, left as drawn
                return
        matrix = _TM.search(found.group(0))
        mine = chars[taken:taken + glyphs]
        blocks.append({"span": found.span(), "text": "".join(c[0] for c in mine),
                       "y": float(matrix.group(6)) if matrix else None,
                       "x0": min((c[1][0] for c in mine), default=0.0),
                       "x1": max((c[1][2] for c in mine), default=0.0),
                       "size": max((c[2] for c in mine), default=0.0),
                       "reversed": "/ReversedChars" in found.group(0)})
        taken += glyphs
    if taken != len(chars):  # the glyphs do not match the text MuPDF reads: left as drawn
        return
    out: list[str] = []
    line: list[dict[str, Any]] = []
    at = 0

    def flush() -> None:
        if line:
            if any(b["reversed"] for b in line):
                order, backwards = _logical(line, edges)
                out.append("\n".join(
                    _glyphs_reversed(content[slice(*b["span"])]) if i in backwards
                    else content[slice(*b["span"])] for i, b in order))
            else:
                out.append("\n".join(content[slice(*b["span"])] for b in line))
            line.clear()

    for block in blocks:
        start = block["span"][0]
        between = content[at:start]
        # a line's runs, as long as nothing but text lies between them in the content and
        # no gap wider than a space parts them (a table's cells, a page's columns)
        if line and (between.strip() or block["y"] != line[-1]["y"] or block["y"] is None
                     or block["x0"] - line[-1]["x1"] > 0.6 * max(block["size"],
                                                                line[-1]["size"])):
            flush()
        if not line:
            out.append(between)
        line.append(block)
        at = block["span"][1]
    flush()
    out.append(content[at:])
    rewritten = "".join(out)
    if rewritten != content:
        doc.update_stream(xrefs[0], rewritten.encode("latin-1"))


def _direction(block: dict[str, Any]) -> str:
    """R (a right-to-left run), L (left-to-right letters), E (digits) or N (neither)."""
    import unicodedata

    if block["reversed"]:
        return "R"
    kinds = {unicodedata.bidirectional(c) for c in block["text"]}
    return ("R" if kinds & {"R", "AL"} else "L" if "L" in kinds
            else "E" if kinds & {"EN", "AN"} else "N")


def _logical(line: list[dict[str, Any]],
             edges: tuple[float, float]) -> tuple[list[tuple[int, dict]], set[int]]:
    """A line's runs, given left to right, in reading order: reversed in a right-to-left
    line but for its left-to-right stretches (letters and digits, with what lies between
    them), or in a left-to-right line its right-to-left stretches reversed. Also the runs
    read right to left, whose own glyphs are to be put in reading order: the right-to-left
    runs and the neutral ones among them."""
    kinds = [_direction(b) for b in line]
    strong = [k for k in kinds if k in ("L", "R")]
    may_ltr, may_rtl = strong[0] == "L", strong[-1] == "R"
    if may_ltr and may_rtl:  # the side the line keeps to, then the most runs
        gap_left = line[0]["x0"] - edges[0]
        gap_right = edges[1] - line[-1]["x1"]
        if abs(gap_left - gap_right) > 2 * line[0]["size"]:
            may_ltr, may_rtl = gap_left < gap_right, gap_right < gap_left
        else:
            rtl, ltr = kinds.count("R"), kinds.count("L")
            may_ltr, may_rtl = ltr > rtl, rtl > ltr
    if may_ltr == may_rtl:
        return list(enumerate(line)), set()
    right_to_left = may_rtl
    inner = ("L", "E") if right_to_left else ("R",)
    order = list(range(len(line)))
    stretches, current = [], []
    for index, kind in enumerate(kinds):  # maximal stretches of the inner direction
        if kind in inner:
            current.append(index)
        elif kind == "N" and current:
            current.append(index)
        else:
            stretches.append(current)
            current = []
    stretches.append(current)
    inside: set[int] = set()
    for stretch in stretches:
        while stretch and kinds[stretch[-1]] == "N":  # neutrals at its end are outside it
            stretch.pop()
        inside.update(stretch)
        if len(stretch) > 1:
            order[stretch[0]:stretch[-1] + 1] = order[stretch[0]:stretch[-1] + 1][::-1]
    if right_to_left:  # reversing the whole line puts the stretches reversed above back
        order = order[::-1]
        backwards = {i for i, k in enumerate(kinds) if k == "R" or (k == "N"
                                                                    and i not in inside)}
    else:
        backwards = {i for i in inside if kinds[i] in ("R", "N")}
    return [(i, line[i]) for i in order], backwards


def _number(value: float) -> str:
    """A number as a content stream writes it, with all the precision it had."""
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


_GLYPH = re.compile(r"^(?:(/Span<<.*>> BDC)|(EMC)|(/\S+ [-0-9.]+ Tf)|(" + _MATRIX +
                    r")|(?:([-0-9.]+) ([-0-9.]+) Td )?(<[0-9A-Fa-f]*> Tj)|(/ReversedChars BMC))$")


def _glyphs_reversed(block: str) -> str:
    """A ``BT … ET`` block of one glyph a ``Tj`` (Chromium's form) with its glyphs written in
    the opposite order, each at its own place, and no ReversedChars mark; the block as it
    is when it holds anything else."""
    lines = block.split("\n")[1:-1]
    units: list[dict[str, Any]] = []
    span = font = matrix = None
    start = (0.0, 0.0)
    for line in lines:  # the ReversedChars mark and its end are dropped
        found = _GLYPH.match(line)
        if not found:
            return block
        if found.group(1):
            span = found.group(1)
        elif found.group(2):  # the end of a glyph's Span, or of the ReversedChars mark
            if span is not None and units and units[-1]["span"] is span:
                units[-1]["closed"] = True
            span = None
        elif found.group(3):
            font = found.group(3)
        elif found.group(4):
            matrix = [float(found.group(k)) for k in range(5, 11)]
            start = (matrix[4], matrix[5])
        elif found.group(13):
            if matrix is None or font is None or len(found.group(13)) > 12:
                return block
            if found.group(11) is not None:  # Td: from the line's start, in text space
                tx, ty = float(found.group(11)), float(found.group(12))
                start = (start[0] + matrix[0] * tx + matrix[2] * ty,
                         start[1] + matrix[1] * tx + matrix[3] * ty)
            units.append({"span": span, "font": font, "at": start, "show": found.group(13),
                          "closed": False})
    if not units or matrix is None or \
            any(u["span"] is not None and not u["closed"] for u in units):
        return block
    a, b, c, d = matrix[:4]
    out = ["BT"]
    for unit in reversed(units):
        if unit["span"]:
            out.append(unit["span"])
        out += [unit["font"], " ".join(_number(v) for v in (a, b, c, d, *unit["at"])) + " Tm",
                unit["show"]]
        if unit["span"]:
            out.append("EMC")
    return "\n".join([*out, "ET"])


def crop_pages(doc, options) -> None:
    """Cut the pages as the page renderer does: the last one ``crop_pad`` (or one bottom
    margin) below its lowest ink, and with ``content`` each one ``crop_pad`` (or four right
    margins) right of its rightmost ink. The page's own background (what covers the area
    inside the margins) is not ink."""
    import pymupdf

    top, right, bottom, left = options.margins()
    pad_right, pad_bottom = cut_pads(options)
    for number, page in enumerate(doc):
        width, height = page.rect.width, page.rect.height
        frame = pymupdf.Rect(left + 1, top + 1, width - right - 1, height - bottom - 1)
        ink = pymupdf.Rect()
        for kind, box in page.get_bboxlog():
            box = pymupdf.Rect(box)
            if box.is_empty or (kind == "fill-path" and box.contains(frame)):
                continue
            ink |= box
        if ink.is_empty:
            continue
        if number == len(doc) - 1:
            height = min(height, ink.y1 + pad_bottom)
        if options.crop == "content":
            width = min(width, ink.x1 + pad_right)
        page.set_cropbox(pymupdf.Rect(0, 0, width, height))


def cut_pads(options) -> tuple[float, float]:
    """The room ``crop_pages`` leaves right of a page's rightmost ink and below its lowest,
    in points: ``crop_pad``, or four right margins and one bottom margin."""
    _, right, bottom, _ = options.margins()
    pad = options.crop_pad
    return (4 * right if pad is None else pad, bottom if pad is None else pad)


def rect_pixels(width: float, height: float, ppi: float) -> tuple[int, int]:
    """The pixel size of a page ``width`` by ``height`` points at ``ppi``, as ``rasterise``
    draws it."""
    import pymupdf

    box = pymupdf.Rect(0, 0, width, height) * pymupdf.Matrix(ppi / 72, ppi / 72)
    return box.irect.width, box.irect.height


def page_pixels(pdf, ppi: float) -> list[tuple[int, int]]:
    """The pixel size of each page of the PDF (bytes, or ``normalised``'s open document) at
    ``ppi``, as ``rasterise`` draws them."""
    with _opened(pdf) as doc:
        return [rect_pixels(page.rect.width, page.rect.height, ppi) for page in doc]


def rasterise(pdf, ppi: float, color: str) -> list[tuple[bytes, int, int]]:
    """The PDF's pages (bytes, or ``normalised``'s open document) as PNGs at ``ppi``; a
    ValueError, before any is drawn, when they would pass the pixel limit of one item (a
    render's, and a sweep's to another PPI)."""
    import pymupdf

    pages = []
    with _opened(pdf) as doc:
        total = sum(page.rect.width * page.rect.height for page in doc) * (ppi / 72) ** 2 / 1e6
        if total > MAX_ITEM_MEGAPIXELS:
            raise ValueError(f"{len(doc)} page(s) at {ppi:g} PPI would be {total:,.0f} "
                             f"megapixels, over the {MAX_ITEM_MEGAPIXELS:,}-megapixel limit "
                             "of one item; lower --ppi, or shorten the text")
        for page in doc:
            pix = page.get_pixmap(matrix=pymupdf.Matrix(ppi / 72, ppi / 72), alpha=False,
                                  colorspace=pymupdf.csGRAY if color == "gray"
                                  else pymupdf.csRGB)
            pages.append((pixels_png(pix.samples_mv, pix.width, pix.height, pix.n, pix.stride,
                                     ppi), pix.width, pix.height))
    return pages
