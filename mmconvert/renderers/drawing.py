"""Drawing helpers that page renders and occlusions share: MuPDF, black text on a device, the
PPI in a PNG, and a fast PNG encoder for Pillow images."""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache
from typing import TYPE_CHECKING

from ..executors.local import side_threads
from ..units import is_gray, rgb

if TYPE_CHECKING:
    from concurrent.futures import Executor


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
    fill_text(device, text, "#000000", True)


def fill_text(device, text, colour: str, gray: bool) -> None:
    """Draw ``text`` in ``colour`` (#rrggbb; on a gray device, a gray's level) on ``device``
    and finish the device."""
    m = mupdf()
    values = list(rgb(colour))
    space, values = (m.fz_device_gray(), values[:1]) if gray else (m.fz_device_rgb(), values)
    m.fz_fill_text(device, text, m.FzMatrix(), space, values, 1.0, color_params())
    m.fz_close_device(device)


def paint(pix, colour: str, gray: bool) -> None:
    """Fill a new pixmap with the page's colour (#rrggbb)."""
    m = mupdf()
    if is_gray(colour):
        m.fz_clear_pixmap_with_value(pix, int(colour[1:3], 16))
    else:  # an RGB pixmap without alpha: its samples are the colour's bytes, pixel by pixel
        samples = m.fz_pixmap_samples_memoryview(pix)
        samples[:] = bytes.fromhex(colour[1:]) * (len(samples) // 3)


def paint_box(pix, colour: str, box: tuple[int, int, int, int]) -> None:
    """Fill the pixel box (left, top, right, bottom; cut to the pixmap) with ``colour``."""
    import numpy as np

    m = mupdf()
    width, height, channels = pix.w(), pix.h(), pix.n()
    left, top = max(0, box[0]), max(0, box[1])
    right, bottom = min(width, box[2]), min(height, box[3])
    if right <= left or bottom <= top:
        return
    samples = np.frombuffer(m.fz_pixmap_samples_memoryview(pix), dtype=np.uint8)
    pixels = samples.reshape(height, width, channels)
    values = bytes.fromhex(colour[1:])
    pixels[top:bottom, left:right] = values[:1] if channels == 1 else list(values)


def set_png_ppi(png: bytes, ppi: float) -> bytes:
    """Write the PPI into the PNG's pHYs chunk (whole pixels per metre), replacing MuPDF's."""
    chunk = _phys_chunk(ppi)
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


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_COLOR_TYPES = {"L": (1, 0), "RGB": (3, 2)}  # mode: (channels, PNG colour type)


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def _phys_chunk(ppi: float) -> bytes:
    """The pHYs chunk of ``ppi`` (whole pixels per metre)."""
    ppm = round(ppi / 0.0254)
    return _png_chunk(b"pHYs", struct.pack(">IIB", ppm, ppm, 1))


def png_deflater():
    """zlib-ng's module (a pinned dependency: the PNGs' bytes depend on it)."""
    from zlib_ng import zlib_ng

    return zlib_ng


PAGE_PNG_LEVEL = 6  # zlib-ng's level for page PNGs
ENCODER_THREADS = 2


def encoders() -> Executor:
    """This process's threads that encode an item's drawn pages while its next page is drawn
    (zlib-ng lets go of the GIL while it deflates; MuPDF's drawing keeps it)."""
    return side_threads("png", ENCODER_THREADS)


def pixels_png(samples, width: int, height: int, channels: int, stride: int,
               ppi: float) -> bytes:
    """8-bit gray (``channels`` 1) or RGB (3) pixels, rows ``stride`` bytes apart in
    ``samples``, as a PNG that records ``ppi``: each row unfiltered, the rows deflated by
    zlib-ng at ``PAGE_PNG_LEVEL``.

    Rows of text on paper repeat, row to row and glyph to glyph, and deflate finds the
    repeats without a filter (MuPDF's own writer leaves them unfiltered too). On Glyph-style
    pages this takes 3.3 ms a page where MuPDF's writer takes 8.6, for files 1.6 % smaller
    (``python bench/glyph_speed.py``).
    """
    row = width * channels
    view = memoryview(samples)
    # each row after its filter byte (0, none): the rows joined by that byte, after an empty
    # first part (one copy of the pixels; a byte prepended to each row first took 5x as long)
    rows: list[bytes | memoryview] = [b""]
    rows += [view[start:start + row] for start in range(0, height * stride, stride)]
    data = png_deflater().compress(b"\x00".join(rows), PAGE_PNG_LEVEL)
    header = struct.pack(">IIBBBBB", width, height, 8, 0 if channels == 1 else 2, 0, 0, 0)
    return (PNG_SIGNATURE + _png_chunk(b"IHDR", header) + _phys_chunk(ppi)
            + _png_chunk(b"IDAT", data) + _png_chunk(b"IEND", b""))


def pixmap_image(pix, ppi: float):
    """A drawn 8-bit gray or RGB pixmap as a Pillow image (its pixels copied): the pixels
    ``pixels_png`` would write, with the PPI in ``info["dpi"]``."""
    from PIL import Image

    mode = "L" if pix.n() == 1 else "RGB"
    image = Image.frombytes(mode, (pix.w(), pix.h()),
                            bytes(mupdf().fz_pixmap_samples_memoryview(pix)), "raw", mode,
                            pix.stride(), 1)
    image.info["dpi"] = (ppi, ppi)
    return image


def encode_png(image) -> bytes:
    """An 8-bit gray or RGB Pillow image as a PNG: every row filtered with Sub (each byte
    less the same channel of the pixel to its left), deflated by zlib-ng at level 1 with
    run-length matching (Z_RLE).

    Pillow's encoder tries every filter on every row; one fixed filter and zlib-ng's fast
    path take a third of its time on a captioned COCO photo, for files about 8 % larger
    (``python bench/png_encoders.py``). zlib-ng is pinned: the files' bytes depend on it.
    """
    import numpy as np

    zlib_ng = png_deflater()
    if image.mode not in _PNG_COLOR_TYPES:
        raise ValueError(f"encode_png takes L or RGB images, not {image.mode}")
    channels, color_type = _PNG_COLOR_TYPES[image.mode]
    width, height = image.size
    rows = np.asarray(image).reshape(height, width * channels)
    raw = np.empty((height, width * channels + 1), dtype=np.uint8)
    raw[:, 0] = 1  # filter type 1, Sub
    raw[:, 1:channels + 1] = rows[:, :channels]
    np.subtract(rows[:, channels:], rows[:, :-channels], out=raw[:, channels + 1:])
    deflate = zlib_ng.compressobj(1, zlib_ng.DEFLATED, zlib_ng.MAX_WBITS,
                                  zlib_ng.DEF_MEM_LEVEL, zlib_ng.Z_RLE)
    data = deflate.compress(raw.tobytes()) + deflate.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (PNG_SIGNATURE + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", data)
            + _png_chunk(b"IEND", b""))
