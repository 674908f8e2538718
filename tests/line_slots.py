"""Reading a page image's lines back from its pixels (tests and ``bench/sweep_speed.py``)."""

from __future__ import annotations

from mmconvert.imaging import decode


def line_extents(png: bytes, ppi: float, pitch: float, margin: float,
                 threshold: int = 160) -> list[tuple[float, float] | None]:
    """What a page image shows, line slot by line slot (``pitch`` points from the top margin):
    the left and right edge of the slot's ink in points, or None for a slot without ink.

    Measured on the pixels alone, this is how a sweep's line and page breaks are checked across
    PPIs: a word that moved to another line changes a slot's right edge by a word's width, far
    more than the pixel grid's rounding."""
    import numpy as np

    pixels = np.asarray(decode(png).convert("L")) < threshold
    scale = ppi / 72.0
    out: list[tuple[float, float] | None] = []
    top = margin
    while (top + pitch) * scale <= pixels.shape[0] + 1:
        rows = pixels[int(round(top * scale)):int(round((top + pitch) * scale))]
        columns = np.flatnonzero(rows.any(axis=0))
        out.append((columns[0] / scale, (columns[-1] + 1) / scale) if columns.size else None)
        top += pitch
    while out and out[-1] is None:
        out.pop()
    return out
