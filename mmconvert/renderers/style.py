"""The values a page style is made of: lengths with units, colours, named page sizes, and how
a source's newlines are kept. ``styles.py`` reads style files and draws them per item."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any

from pydantic import BeforeValidator

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


def _joins_without_space(before: str, after: str) -> bool:
    """Lines of Chinese or Japanese are joined with no space between them."""
    return bool(before and after) and (unicodedata.east_asian_width(before[-1]) in "WF"
                                       or unicodedata.east_asian_width(after[0]) in "WF")


def flow(text: str, newlines: str, marker: str, gap: int = 0) -> str:
    """A field's text as the page sets it: ``keep``: every newline a line break; ``reflow``:
    a blank line ends a paragraph, and the newlines inside one become spaces (none between
    CJK lines), so hard-wrapped text fills the line; ``marker``: each newline drawn as
    ``marker`` and the text run on (Glyph's newline markup). ``gap``: blank lines set
    between paragraphs (kept or reflowed)."""
    if "\n" not in text:
        return text
    if newlines == "keep":
        return text.replace("\n", "\n" * (gap + 1)) if gap else text
    if newlines == "marker":
        return text.replace("\n", marker)
    paragraphs = []
    for paragraph in re.split(r"\n[ \t]*\n\s*", text):
        lines = [line.strip(" \t") for line in paragraph.split("\n")]
        joined = ""
        for line in lines:
            if not line:
                continue
            joined += ("" if not joined or _joins_without_space(joined, line) else " ") + line
        paragraphs.append(joined)
    return ("\n" * (gap + 1)).join(p for p in paragraphs if p)
