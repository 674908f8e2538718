"""The code face as TrueType for the browser. Chromium's PDF writer (Skia) does not embed CFF
outlines: it writes a CFF face as a Type 3 font, each glyph a drawing procedure, which MuPDF
runs glyph by glyph whenever it reads the page (a short item with a code block: 13 ms to find
its ink and 13 ms to draw it, against 4 and 5 ms as TrueType). The same outlines as quadratic
curves (fontTools' cu2qu, within one font unit) are embedded as TrueType.

Only the code face: monospaced text is laid out by its advances alone, which the conversion
keeps, so its pages are the same to within a gray level or so. Chromium's MathML layout also
reads glyphs' ink boxes, and the math face converted set limits and scripts visibly otherwise
(an upper limit over the sign), so it stays CFF (Type 3).

The conversion takes about a third of a second a face; its result is kept in the user's cache
folder under the face's sha256, fontTools' version and ``VERSION``, and the kept file's own
sha256, which is checked when it is read (a file damaged since is converted again)."""

from __future__ import annotations

import functools
import hashlib
import io

from ..._version import installed_version
from ...manifest import atomic_write, user_cache

# the largest distance between a cubic curve and its quadratic approximation, in font units
# (Fira Mono has 1,000 an em: 0.02 of a pixel at 12 pt and 92.9 PPI)
MAX_ERROR = 1.0
VERSION = 1  # of the conversion below: a face kept by another is converted again


@functools.lru_cache(maxsize=8)
def truetype(data: bytes) -> bytes:
    """``data`` (an OpenType face) with its CFF outlines as TrueType ones; ``data`` itself
    when it has none. Read from the user's cache folder, else converted and kept there."""
    if data[:4] != b"OTTO":
        return data

    folder = user_cache() / "faces"
    stem = (f"{hashlib.sha256(data).hexdigest()[:16]}-fonttools{installed_version('fonttools')}"
            f"-v{VERSION}")
    # a file's name ends with its own sha256: checked in a millisecond, where reading the
    # face's tables with fontTools to check theirs took 50 ms a face at each start
    for path in sorted(folder.glob(f"{stem}-*.ttf")):
        try:
            kept = path.read_bytes()
        except OSError:
            continue  # unreadable: converted again
        if path.name == _name(stem, kept):
            return kept
    made = to_truetype(data)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / _name(stem, made), made, durable=False)
    except OSError:
        pass  # a read-only home: converted in each process
    return made


def _name(stem: str, face: bytes) -> str:
    return f"{stem}-{hashlib.sha256(face).hexdigest()[:16]}.ttf"


def to_truetype(data: bytes) -> bytes:
    """An OpenType CFF face as TrueType: each glyph's cubic curves as quadratic ones (turned
    round: TrueType's outer contours run clockwise), every other table as it was, and the
    head table's dates kept, so that the bytes depend on the face alone."""
    from fontTools.pens.cu2quPen import Cu2QuPen
    from fontTools.pens.ttGlyphPen import TTGlyphPen
    from fontTools.ttLib import TTFont, newTable

    face = TTFont(io.BytesIO(data), recalcTimestamp=False)
    order = face.getGlyphOrder()
    glyphs = face.getGlyphSet()
    glyf = newTable("glyf")
    glyf.glyphOrder = order
    glyf.glyphs = {}
    for name in order:
        pen = TTGlyphPen(glyphs)
        glyphs[name].draw(Cu2QuPen(pen, MAX_ERROR, reverse_direction=True))
        glyf[name] = pen.glyph()
    face["glyf"] = glyf
    face["loca"] = newTable("loca")
    maxp = face["maxp"]  # version 1.0, as TrueType outlines need: no hinting
    maxp.tableVersion = 0x00010000
    for field in ("maxTwilightPoints", "maxStorage", "maxFunctionDefs", "maxInstructionDefs",
                  "maxStackElements", "maxSizeOfInstructions", "maxComponentElements"):
        setattr(maxp, field, 0)
    maxp.maxZones = 1
    face["head"].glyphDataFormat = 0
    post = face["post"]  # glyph names kept (a CFF face's are in its CFF table)
    post.formatType = 2.0
    post.extraNames = []
    post.mapping = {}
    post.glyphOrder = order
    del face["CFF "]
    if "VORG" in face:
        del face["VORG"]
    face.sfntVersion = "\x00\x01\x00\x00"
    out = io.BytesIO()
    face.save(out)
    return out.getvalue()
