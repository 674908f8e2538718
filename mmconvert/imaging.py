"""What is done to one decoded image, by sweeps and transforms and by the renderers that put
a drawing on white: scale it, rotate it, or re-encode it as JPEG.

Each operation takes a decoded Pillow image and returns a new one; ``encode`` writes the result
in the file format the image came in (or JPEG). Boxes recorded on an image (an occlusion's
bands) move with it: ``scale_box`` and ``rotate_box`` give the box that covers the same pixels
afterwards (for right angles exactly; for other angles the axis-aligned box around the turned
one).
"""

from __future__ import annotations

import io
import math
from collections import Counter
from typing import Any, Literal, get_args

Resampling = Literal["nearest", "box", "bilinear", "hamming", "bicubic", "lanczos"]
RESAMPLING: tuple[str, ...] = get_args(Resampling)
SUBSAMPLING = {"4:4:4": 0, "4:2:2": 1, "4:2:0": 2}


def decode(data: bytes):
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def scaled_size(width: int, height: int, factor: float) -> tuple[int, int]:
    """Each side times ``factor``, rounded half up, at least one pixel."""
    return (max(1, math.floor(width * factor + 0.5)), max(1, math.floor(height * factor + 0.5)))


def scale(image, factor: float, resample: str):
    """``image`` resized by ``factor`` with the named Pillow filter. Upscaling is plain
    resampling: it adds pixels, not detail (VisTW upscaled with a super-resolution model)."""
    from PIL import Image

    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    filters = {name: getattr(Image.Resampling, name.upper()) for name in RESAMPLING}
    width, height = image.size
    return image.resize(scaled_size(width, height, factor), filters[resample])


def background(image):
    """The commonest colour of the image's outermost pixels: what rotation fills with."""
    width, height = image.size
    rgb = image.convert("RGB") if image.mode not in ("L", "RGB") else image
    pixels = rgb.load()
    border: Counter[Any] = Counter()
    for x in range(width):
        border[pixels[x, 0]] += 1
        border[pixels[x, height - 1]] += 1
    for y in range(height):
        border[pixels[0, y]] += 1
        border[pixels[width - 1, y]] += 1
    return min(border.items(), key=lambda kv: (-kv[1], str(kv[0])))[0]


def rotate(image, degrees: float, fill=None):
    """``image`` turned ``degrees`` clockwise. Right angles are exact pixel moves; any other
    angle is resampled bicubically onto a canvas grown to hold the whole image, the new corners
    filled with ``fill`` (default: ``background(image)``). Returns (image, fill used or None)."""
    from PIL import Image

    turns = {90: Image.Transpose.ROTATE_270, 180: Image.Transpose.ROTATE_180,
             270: Image.Transpose.ROTATE_90}
    degrees = degrees % 360
    if degrees == 0:
        return image.copy(), None
    if degrees in turns:
        return image.transpose(turns[int(degrees)]), None
    if image.mode == "P":
        image = image.convert("RGB")
    fill = background(image) if fill is None else fill
    return image.rotate(-degrees, resample=Image.Resampling.BICUBIC, expand=True,
                        fillcolor=fill), fill


def scale_box(box: list[int], before: tuple[int, int], after: tuple[int, int]) -> list[int]:
    fx, fy = after[0] / before[0], after[1] / before[1]
    return clamp([math.floor(box[0] * fx), math.floor(box[1] * fy), math.ceil(box[2] * fx),
                  math.ceil(box[3] * fy)], after)


def rotate_box(box: list[int], degrees: float, before: tuple[int, int],
               after: tuple[int, int]) -> list[int]:
    """The box around ``box`` turned ``degrees`` clockwise about the image centre, in the
    turned image (whose centre is that of the grown canvas)."""
    theta = math.radians(degrees % 360)
    cos, sin = round(math.cos(theta), 12), round(math.sin(theta), 12)
    cx, cy = before[0] / 2, before[1] / 2
    nx, ny = after[0] / 2, after[1] / 2
    xs, ys = [], []
    for x in (box[0], box[2]):
        for y in (box[1], box[3]):
            dx, dy = x - cx, y - cy
            xs.append(nx + cos * dx - sin * dy)
            ys.append(ny + sin * dx + cos * dy)
    return clamp([math.floor(min(xs) + 1e-9), math.floor(min(ys) + 1e-9),
                  math.ceil(max(xs) - 1e-9), math.ceil(max(ys) - 1e-9)], after)


def clamp(box: list[int], size: tuple[int, int]) -> list[int]:
    width, height = size
    return [min(max(box[0], 0), width), min(max(box[1], 0), height),
            min(max(box[2], 0), width), min(max(box[3], 0), height)]


def on_white(image):
    """``image`` with its transparency flattened onto white, as RGB (a palette image
    whether or not it has a transparent colour, which is the same for an opaque one); an image
    without an alpha channel unchanged. A JPEG has no alpha; a page is read on paper."""
    if image.mode not in ("RGBA", "LA", "PA", "P"):
        return image
    from PIL import Image

    rgba = image.convert("RGBA")
    flat = Image.new("RGB", rgba.size, "white")
    flat.paste(rgba, mask=rgba.getchannel("A"))
    return flat


def encode(image, fmt: str, *, ppi: float | None = None, quality: int = 95,
           subsampling: str = "4:2:0") -> bytes:
    """``image`` as PNG (zlib level 6) or JPEG (baseline, ``quality``, chroma
    ``subsampling``); the PPI, if any, is written into the file."""
    buffer = io.BytesIO()
    if fmt == "png":
        image.save(buffer, format="PNG")
        data = buffer.getvalue()
        if ppi is not None:
            from .renderers.drawing import set_png_ppi

            data = set_png_ppi(data, ppi)
        return data
    image = on_white(image)
    if image.mode not in ("L", "RGB"):
        image = image.convert("RGB")
    extra = {"dpi": (round(ppi), round(ppi))} if ppi else {}
    image.save(buffer, format="JPEG", quality=quality, subsampling=SUBSAMPLING[subsampling],
               **extra)
    return buffer.getvalue()
