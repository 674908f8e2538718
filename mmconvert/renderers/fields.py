"""What a page of an item draws: the fields that become image, in order, each labelled as the
page shows it (an option's letter), and their text as a style sets it; what a render makes (its
pages' images, ink and layout record) and the most one item may draw. The page and document
renderers share them; a page's pixel count, and its stored layout file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import ItemError
from ..items import Item, RenderPart, option_letter
from ..runfolder import Output, item_file
from .fonts import FontChain
from .layout import control_characters, flow, normalise

# the most pixels one item's pages may hold (about 14 A4 pages at 1200 PPI, 2,700 at 92.9)
MAX_ITEM_MEGAPIXELS = 2_000


def over_pixel_limit(sizes: list[tuple[int, int]], ppi: float) -> str | None:
    """Why an item's pages of ``sizes`` (pixels) at ``ppi`` are refused before drawing: more
    than ``MAX_ITEM_MEGAPIXELS`` in all (a 2-million-character context at 1200 PPI is 365
    pages of 139 megapixels); None when they are not."""
    total = sum(width * height for width, height in sizes) / 1e6
    if total <= MAX_ITEM_MEGAPIXELS:
        return None
    return (f"{len(sizes)} page(s) at {ppi:g} PPI would be {total:,.0f} megapixels, over the "
            f"{MAX_ITEM_MEGAPIXELS:,}-megapixel limit of one item; lower --ppi, or shorten the "
            "text")


@dataclass
class PageImage:
    png: bytes
    width: int
    height: int


@dataclass
class PageInk:
    """What a page draws: its text, its coloured newline markers (None: no colour of their
    own) and the boxes behind its paragraphs, in points."""

    text: Any
    marker: Any
    boxes: list[tuple[float, float, float, float]]


@dataclass
class PageRender:
    pages: list[PageImage]
    pdf: bytes | None
    part: RenderPart
    lines: int
    layout: dict  # the stored layout (``layout_record``), from which any PPI is re-drawn


def image_fields(item: Item, part: RenderPart) -> list[tuple[str, str]]:
    """(field name, text) of the parts that become image, in drawing order."""
    fields: list[tuple[str, str]] = []
    if part in ("context", "all") and item.context:
        fields.append(("context", item.context))
    if part == "all" and item.question:
        fields.append(("question", item.question))
    if part in ("options", "all"):
        fields.extend((f"options[{i}]", o) for i, o in enumerate(item.options))
    return fields


@lru_cache(maxsize=256)
def flowed(raw: str, newlines: str, marker: str, gap: int) -> str:
    """A field's text as it is laid out (``normalise``, then ``flow``), made once for the
    layouts of one item at many sizes and widths (a vision budget's search)."""
    return flow(normalise(raw), newlines, marker, gap)


@lru_cache(maxsize=256)
def well_drawn(chain: FontChain, text: str) -> bool:
    """Whether ``text`` has no control character and a glyph in ``chain`` for each of its
    characters; where not, ``PageRenderer.blocks`` checks it again to say why."""
    if control_characters(text):
        return False
    try:
        chain.check(text)
    except ItemError:
        return False
    return True


def drawn_text(item: Item, part: RenderPart, params: dict[str, Any]) -> str:
    """The text a page of ``item`` draws for ``part`` with the style ``params`` (a row's
    recorded options): its fields in order, options with their letters, newlines as the
    style sets them."""
    newlines = params.get("newlines", "keep")
    marker = params.get("newline_marker", "")
    gap = params.get("paragraph_gap", 0)
    fields = [(name, text if newlines == "keep" and not gap
               else flow(normalise(text), newlines, marker, gap))
              for name, text in image_fields(item, part)]
    return "\n".join(text for _, text in label_fields(fields))


def label_fields(fields: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """Fields with the option letters the page draws before each option ("A. ")."""
    for name, text in fields:
        if name.startswith("options["):
            yield name, f"{option_letter(int(name[8:-1]))}. {text}"
        else:
            yield name, text


def layout_texts(record: dict[str, Any]) -> list[str]:
    """Each page's lines as a stored layout record (``layout_file``) draws them."""
    return ["\n".join("".join(run[2] for run in line) for line in page)
            for page in record["pages"]]


def layout_file(output: Output, item_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """A page item's layout (``layout/<id>.json``), which PPI sweeps re-draw."""
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    rel = item_file("layout", item_id, ".json")
    return {"path": rel, "pages": len(record["pages"]),
            "lines": sum(len(page) for page in record["pages"]), **output.file(rel, data)}
