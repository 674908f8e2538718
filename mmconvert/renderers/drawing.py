"""Drawing helpers that page renders and occlusions share: MuPDF, black text on a device, and
the PPI in a PNG."""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache


@lru_cache(maxsize=1)
def mupdf():
    import pymupdf

    return pymupdf.mupdf


@lru_cache(maxsize=1)
def color_params():
    return mupdf().FzColorParams()


def show_runs(text, fonts, runs, size: float, left: float, baseline: float) -> None:
    """Add a line's runs to ``text`` (an ``fz_text``), baseline at ``baseline``, x from
    ``left``: a plain run as its characters' own glyphs, a shaped run (``Run.glyphs``) as
    HarfBuzz placed them."""
    m = mupdf()
    for run in runs:
        font = fonts[run.font].this
        if run.glyphs is None:
            trm = m.FzMatrix(size, 0, 0, -size, left + run.x, baseline)
            m.fz_show_string(text, font, trm, run.text, 0, 0, m.FZ_BIDI_LTR, m.FZ_LANG_UNSET)
            continue
        x = left + run.x
        for gid, dx, dy, cluster in run.glyphs:
            trm = m.FzMatrix(size, 0, 0, -size, x + dx, baseline - dy)
            m.fz_show_glyph(text, font, trm, gid, ord(run.text[cluster]), 0, 0, m.FZ_BIDI_LTR,
                            m.FZ_LANG_UNSET)


def fill_black(device, text) -> None:
    """Draw ``text`` in black on ``device`` (a pixmap or a PDF page) and finish the device."""
    m = mupdf()
    m.fz_fill_text(device, text, m.FzMatrix(), m.fz_device_gray(), [0.0], 1.0, color_params())
    m.fz_close_device(device)


def set_png_ppi(png: bytes, ppi: float) -> bytes:
    """Write the PPI into the PNG's pHYs chunk (whole pixels per metre), replacing MuPDF's."""
    ppm = round(ppi / 0.0254)
    data = struct.pack(">IIB", ppm, ppm, 1)
    chunk = struct.pack(">I", len(data)) + b"pHYs" + data
    chunk += struct.pack(">I", zlib.crc32(b"pHYs" + data) & 0xFFFFFFFF)
    pos = 8
    ihdr_end = None
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind = png[pos + 4:pos + 8]
        end = pos + 12 + length
        if kind == b"pHYs":
            return png[:pos] + chunk + png[end:]
        if kind == b"IHDR":
            ihdr_end = end
        if kind == b"IDAT":
            break
        pos = end
    assert ihdr_end is not None, "not a PNG"
    return png[:ihdr_end] + chunk + png[ihdr_end:]
