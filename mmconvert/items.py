"""The Item every corpus loader yields, and what a corpus says about how to render it."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Any, Literal

RenderPart = Literal["options", "context", "all"]

LETTERS = string.ascii_uppercase
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class Item:
    """One benchmark item. ``answer`` is a letter for MCQ, else a list of accepted strings."""

    id: str
    corpus: str
    subset: str
    split: str
    language: str = "en"
    context: str | None = None
    question: str | None = None
    options: list[str] = field(default_factory=list)
    answer: str | list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # where the item came from, for error messages: "file.csv line 12"
    origin: str = ""
    # image-caption corpora: the image, as a file path or the encoded bytes of a dataset cell
    image: str | bytes | None = None

    def __post_init__(self) -> None:
        # ids name the item's files: every corpus's ids and subsets are checked here, once,
        # where items are made, so no row's data can steer a write out of the run folder
        check_name(self.subset, self.origin, "subset")
        check_name(self.id, self.origin, "id")

    @property
    def is_mcq(self) -> bool:
        return bool(self.options)


def option_letter(index: int) -> str:
    return LETTERS[index]


def is_safe_id(value: str) -> bool:
    return isinstance(value, str) and bool(_SAFE_ID.match(value)) and len(value) <= 200


def check_name(value: object, where: str, field: str) -> str:
    """``value`` if it can be part of a file name (an id, a subset), else an ItemError naming
    the field: letters, digits, '.', '_' and '-', starting with a letter or digit."""
    if not is_safe_id(value):  # type: ignore[arg-type]
        from .errors import ItemError

        shown = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
        raise ItemError(f"{field} {shown} is not file-name safe (letters, digits, '.', '_', '-'; "
                        "starting with a letter or digit; at most 200 characters)",
                        where=where, field=field)
    return value  # type: ignore[return-value]


def safe_name(stem: str, default: str = "items") -> str:
    """A name the user chose (a file's, a folder's) or a category, made usable as a subset:
    runs of other characters become '_'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._-")[:100] or default


def row_id(subset: str, row: int, width: int = 4) -> str:
    """The id rule: ``<subset>-<row>`` with the row zero-padded, counted before any filtering."""
    return f"{subset}-{row:0{width}d}"
