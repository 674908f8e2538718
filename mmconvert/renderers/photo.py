"""The photo an occlusion stands its caption under: opened lazily (a huge one refused before
it is decoded), then decoded upright, on white and at the width drawn."""

from __future__ import annotations

import io
import warnings

from ..errors import ItemError, first_line
from ..imaging import on_white
from ..items import StoredImage


def open_image(source, where: str, max_pixels: int):
    """The image opened lazily (header only); a huge one is refused before decoding."""
    from PIL import Image, UnidentifiedImageError

    if source is None:
        raise ItemError("the item has no image", where=where, field="image")
    if isinstance(source, StoredImage):  # left in the corpus' file: read here, in the worker
        source = source.load()
    name = "the image" if isinstance(source, bytes) else str(source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(source) if isinstance(source, bytes) else source)
    except FileNotFoundError:
        raise ItemError(f"image file {name} not found", where=where, field="image") from None
    except Image.DecompressionBombError:
        raise ItemError(f"{name} is larger than {max_pixels / 1e6:g} megapixels; refused "
                        "before decoding", where=where, field="image") from None
    except (UnidentifiedImageError, OSError, ValueError) as err:
        raise ItemError(f"{name} is not a readable image ({first_line(err, 120)})", where=where,
                        field="image") from None
    width, height = image.size
    if width * height > max_pixels:
        raise ItemError(f"{name} is {width}x{height} ({width * height / 1e6:.1f} megapixels), "
                        f"over the {max_pixels / 1e6:g}-megapixel limit; refused before "
                        "decoding", where=where, field="image")
    return image


def photo_size(image) -> tuple[int, int]:
    """Width and height as shown (EXIF orientations 5-8 swap them)."""
    width, height = image.size
    if image.getexif().get(0x0112, 1) in (5, 6, 7, 8):
        return height, width
    return width, height


def scaled_height(size: tuple[int, int], width: int) -> int:
    return max(1, round(size[1] * width / size[0]))


# photos above this many pixels are reduced by a whole factor right after decoding (JPEGs are
# already decoded at a reduced scale): a 49-megapixel PNG peaked at 608 MB (848 MB with alpha)
REDUCE_ABOVE = 16_000_000


def decode_photo(image, width: int, where: str):
    """Decoded, upright, RGB on white, resized to ``width`` px wide."""
    from PIL import Image, ImageOps

    shown = photo_size(image)
    height = scaled_height(shown, width)
    try:
        if image.format == "JPEG":
            image.draft("RGB", (width, height) if shown == image.size else (height, width))
        image.load()
        if image.width * image.height > REDUCE_ABOVE:
            # a huge photo (formats without scaled decoding, e.g. PNG): shrink it by a whole
            # factor at once, keeping at least twice the target size, before any copy
            factor = max(1, min(image.width // (2 * width),
                                image.height // (2 * max(1, height if shown == image.size
                                                         else width))))
            if factor > 1:
                image = image.reduce(factor)
        image = ImageOps.exif_transpose(image)
    except (OSError, SyntaxError, ValueError) as err:
        raise ItemError(f"truncated or damaged image ({first_line(err, 120)})", where=where,
                        field="image") from None
    image = on_white(image).convert("RGB")
    return image.resize((width, height), Image.Resampling.LANCZOS)
