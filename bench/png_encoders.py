"""PNG encoders measured on the occluder's own images, before choosing one: milliseconds per
image and kilobytes per file for the stacked (RGB photo over caption) and text-only (gray)
images of English captions, each decoded again to check that every pixel survives.

    python bench/png_encoders.py [--source DIR] [--items 200]

Candidates: Pillow (which tries every row filter; its zlib is zlib-ng in compatibility mode),
one fixed row filter (Sub or Paeth) written by us and deflated by the standard library's zlib
or by the zlib-ng package, and fpng when it is installed (``pip install fpng``; it writes RGB
only, so gray images go through RGB). ``mmconvert.renderers.drawing.encode_png`` is the one
marked "chosen".
"""

from __future__ import annotations

import argparse
import io
import struct
import sys
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.occlude_speed import caption_options, load_items  # noqa: E402
from mmconvert.renderers import occlude as occlude_module  # noqa: E402
from mmconvert.renderers.drawing import encode_png  # noqa: E402


def occluder_images(source: Path, count: int):
    """The (stacked, text-only) Pillow images the occluder would encode for ``count``
    captions."""
    images = []
    keep = occlude_module.encode_png
    occlude_module.encode_png = lambda image: (images.append(image.copy()), b"")[1]
    try:
        occluder = occlude_module.CaptionOccluder()
        for item in load_items(source, count):
            try:
                occluder.render(item, seed=0)
            except occlude_module.ItemError:
                continue
    finally:
        occlude_module.encode_png = keep
    return images


def pillow(**options):
    def encode(image):
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", **options)
        return buffer.getvalue()
    return encode


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def fixed_filter(kind: str, deflate):
    """Our own writer: one filter on every row, then ``deflate``."""
    def encode(image):
        pixels = np.asarray(image)
        height, width = pixels.shape[:2]
        channels = 1 if pixels.ndim == 2 else pixels.shape[2]
        rows = pixels.reshape(height, -1).astype(np.int16)
        left = np.zeros_like(rows)
        left[:, channels:] = rows[:, :-channels]
        if kind == "sub":
            predicted, code = left, 1
        else:  # paeth
            up = np.zeros_like(rows)
            up[1:] = rows[:-1]
            corner = np.zeros_like(rows)
            corner[1:, channels:] = rows[:-1, :-channels]
            guess = left + up - corner
            a, b, c = np.abs(guess - left), np.abs(guess - up), np.abs(guess - corner)
            predicted = np.where((a <= b) & (a <= c), left, np.where(b <= c, up, corner))
            code = 4
        raw = np.empty((height, rows.shape[1] + 1), dtype=np.uint8)
        raw[:, 0] = code
        raw[:, 1:] = (rows - predicted) & 255
        header = struct.pack(">IIBBBBB", width, height, 8, 0 if channels == 1 else 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", deflate(raw.tobytes())) + chunk(b"IEND", b""))
    return encode


def deflater(module, level: int, strategy: int = 0):
    def deflate(data: bytes) -> bytes:
        stream = module.compressobj(level, 8, 15, 8, strategy)
        return stream.compress(data) + stream.flush()
    return deflate


def candidates():
    from zlib_ng import zlib_ng

    out = {
        "Pillow, level 1, Z_RLE (before)": pillow(compress_level=1, compress_type=3),
        "Pillow, level 6 (its default)": pillow(compress_level=6),
        "Sub + zlib level 1": fixed_filter("sub", deflater(zlib, 1)),
        "Sub + zlib-ng level 1": fixed_filter("sub", deflater(zlib_ng, 1)),
        "Sub + zlib-ng level 1, Z_RLE": fixed_filter("sub", deflater(zlib_ng, 1, 3)),
        "Paeth + zlib-ng level 1, Z_RLE": fixed_filter("paeth", deflater(zlib_ng, 1, 3)),
        "chosen: drawing.encode_png": encode_png,
    }
    try:
        import fpng
    except ImportError:
        print("  (fpng not installed: pip install fpng to measure it)")
    else:
        out["fpng"] = lambda image: fpng.from_pil(image.convert("RGB"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    caption_options(parser, 200)
    args = parser.parse_args()
    from PIL import Image

    images = occluder_images(args.source, args.items)
    groups = {"stacked": [i for i in images if i.mode == "RGB"],
              "text-only": [i for i in images if i.mode == "L"]}
    print(f"{len(groups['stacked'])} stacked and {len(groups['text-only'])} text-only images "
          f"from {args.source}")
    for name, encode in candidates().items():
        parts = []
        for label, group in groups.items():
            encode(group[0])  # warm
            started = time.perf_counter()
            files = [encode(image) for image in group]
            seconds = time.perf_counter() - started
            same = all(np.array_equal(np.asarray(Image.open(io.BytesIO(f)).convert(i.mode)),
                                      np.asarray(i)) for f, i in zip(files, group, strict=True))
            parts.append(f"{label} {1000 * seconds / len(group):5.2f} ms "
                         f"{sum(map(len, files)) / len(files) / 1024:6.1f} KB"
                         + ("" if same else " PIXELS DIFFER"))
        print(f"  {name:34s} " + "   ".join(parts))


if __name__ == "__main__":
    main()
