"""The units a page style is made of and the one PPI rule: lengths with units, colours, named
page sizes, the PPI every command takes (``renderers.style_files`` reads style files and draws
them per item)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

POINTS_PER = {"pt": 1.0, "in": 72.0, "mm": 72 / 25.4, "cm": 72 / 2.54}

# ISO 216 and the North American sizes, in points (width, height)
PAGE_SIZES: dict[str, tuple[float, float]] = {
    "a3": (841.89, 1190.55), "a4": (595.28, 841.89), "a5": (419.53, 595.28),
    "b5": (498.9, 708.66), "letter": (612.0, 792.0), "legal": (612.0, 1008.0),
}

_LENGTH = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(pt|in|mm|cm)\s*$")


def _length_in(unit: str):
    """A validator taking a number (already in ``unit``) or a string with its unit ("10pt",
    "0.5in", "12mm", "1cm") and giving the length in ``unit``."""

    def convert(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        found = _LENGTH.match(value)
        if not found:
            try:
                return float(value)
            except ValueError:
                raise ValueError(f"{value!r} is not a length (a number in {unit}, or one "
                                 "with a unit: 10pt, 0.5in, 12mm, 1cm)") from None
        return float(found.group(1)) * POINTS_PER[found.group(2)] / POINTS_PER[unit]

    return BeforeValidator(convert)


Inches = Annotated[float, _length_in("in")]
Points = Annotated[float, _length_in("pt")]

_NAMED_COLOURS = {"black": "#000000", "white": "#ffffff", "gray": "#808080",
                  "grey": "#808080", "red": "#ff0000", "green": "#008000", "blue": "#0000ff",
                  "navy": "#000080", "maroon": "#800000", "beige": "#f5f5dc",
                  "ivory": "#fffff0"}
_HEX = re.compile(r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")


def _colour(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = _NAMED_COLOURS.get(value.strip().lower(), value.strip())
    found = _HEX.match(text)
    if not found:
        raise ValueError(f"{value!r} is not a colour (#rgb, #rrggbb, or one of "
                         f"{', '.join(_NAMED_COLOURS)})")
    digits = found.group(1)
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    return "#" + digits.lower()


Colour = Annotated[str, BeforeValidator(_colour)]


def rgb(colour: str) -> tuple[float, float, float]:
    """``#rrggbb`` as three values from 0 to 1."""
    return tuple(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))  # type: ignore[return-value]


def is_gray(colour: str) -> bool:
    return colour[1:3] == colour[3:5] == colour[5:7]


def pixels(inches: float, ppi: float) -> int:
    """Pixel count of a length: inches x PPI rounded half up (1240.5 px -> 1241)."""
    return math.floor(inches * ppi + 0.5 + 1e-9)


def page_size(value: str) -> tuple[float, float]:
    """A named size (``PAGE_SIZES``) or ``W,H`` in points, as (width, height) in points."""
    text = value.strip().lower()
    if text in PAGE_SIZES:
        return PAGE_SIZES[text]
    parts = re.split(r"\s*[,x×]\s*", text)
    try:
        width, height = (float(part) for part in parts)
    except ValueError:
        raise ValueError(f"{value!r} is not a page size (one of {', '.join(PAGE_SIZES)}, or "
                         "W,H in points: 595,842)") from None
    if not (72 < width <= 2880 and 72 < height <= 2880):
        raise ValueError(f"page size {value!r}: each side must be over 72 pt (1 in) and at "
                         "most 2880 pt (40 in)")
    return width, height


def page_inches(value: str) -> tuple[float, float]:
    """``page_size``'s (width, height), in inches."""
    width, height = page_size(value)
    return width / POINTS_PER_INCH, height / POINTS_PER_INCH


POINTS_PER_INCH = 72.0


def _ppi(value: float) -> float:
    """The one PPI rule, for render, sweep and every other command that takes a PPI."""
    if not 10 < value <= 1200:  # NaN fails too
        raise ValueError(f"{value:g} is not a PPI over 10 and at most 1200")
    return value


PPI = Annotated[float, AfterValidator(_ppi)]
