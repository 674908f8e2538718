"""The Item every corpus loader yields, and what a corpus says about how to render it."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import ItemError

RenderPart = Literal["options", "context", "all"]

LETTERS = string.ascii_uppercase
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# how deeply an item's metadata may nest (a manifest row is read back by json, and every
# reader walks it)
MAX_DEPTH = 64


class StoredImage:
    """An image left where the corpus keeps it (a cell of a Parquet file), so that the driver
    reads only the text and the worker that draws the item reads the image: ``load()`` gives
    the encoded bytes or a file path, or raises an ItemError naming the row and field."""

    def load(self) -> str | bytes:
        raise NotImplementedError

    def name(self) -> str:
        """What names the image where it is kept (a file name, a row of a file), for the
        item's fingerprint; no bytes are read."""
        return type(self).__name__


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
    # image-caption corpora: the image, as a file path, the encoded bytes of a dataset cell, or
    # a cell left in its file (``StoredImage``) for the worker that draws it to read
    image: str | bytes | StoredImage | None = None

    def __post_init__(self) -> None:
        # ids name the item's files: every corpus's ids and subsets are checked here, once,
        # where items are made, so no row's data can steer a write out of the run folder
        check_name(self.subset, self.origin, "subset")
        check_name(self.id, self.origin, "id")
        # and everything an item carries into its manifest row is plain JSON text: no lone
        # surrogate (the row could not be written), dates, bytes and decimals as text
        for name in ("context", "question", "options", "answer"):
            plain(getattr(self, name), self.origin, name)
        self.metadata = plain(self.metadata, self.origin, "metadata")

    def fingerprint(self) -> str:
        """sha256 of the source fields the item is drawn from (its text, options, answer,
        metadata, language and place, and its image: the bytes of one held in memory, the
        file name of one left where the corpus keeps it), which its manifest row records as
        ``source_sha256``: a resumed run draws an item whose source changed again instead of
        serving its old row."""
        import hashlib
        import json

        image = self.image
        if isinstance(image, (bytes, bytearray, memoryview)):
            image = "sha256:" + hashlib.sha256(bytes(image)).hexdigest()
        elif image is not None:
            image = image.name() if isinstance(image, StoredImage) else str(image)
            image = image.replace("\\", "/").rsplit("/", 1)[-1]
        fields = [self.corpus, self.subset, self.split, self.language, self.context,
                  self.question, self.options, self.answer, self.metadata, image]
        text = json.dumps(fields, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_SURROGATE = re.compile("[\ud800-\udfff]")


def plain(value: Any, where: str, field: str, level: int = 0) -> Any:
    """``value`` as JSON can hold it: dates and times in ISO form, decimals and other scalars
    as text, bytes as UTF-8 text (or ``base64:…``), NumPy values as Python ones; a lone
    surrogate (text that cannot be written as UTF-8) is an ItemError naming the field, and
    so is a value nested past ``MAX_DEPTH`` levels (``level``: how deep this one is)."""
    if level > MAX_DEPTH:
        raise ItemError(f"nested deeper than {MAX_DEPTH} levels", where=where,
                        field=field.split(".", 1)[0].split("[", 1)[0])
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        found = None if value.isascii() else _SURROGATE.search(value)
        if found:
            raise ItemError(f"a lone surrogate U+{ord(found.group()):04X} at character "
                            f"{found.start()} (not a character; the text was encoded wrongly)",
                            where=where, field=field)
        return value
    if isinstance(value, dict):
        return {plain(str(k), where, field): plain(v, where, f"{field}.{k}", level + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, where, f"{field}[{i}]", level + 1) for i, v in enumerate(value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        try:
            return plain(data.decode("utf-8"), where, field, level)
        except (UnicodeDecodeError, ValueError):
            import base64

            return "base64:" + base64.b64encode(data).decode("ascii")
    if hasattr(value, "isoformat"):  # datetime, date, time, pandas Timestamp
        return value.isoformat()
    if hasattr(value, "tolist"):  # NumPy scalars and arrays
        return plain(value.tolist(), where, field, level)
    return str(value)  # Decimal, UUID, …


def base_language(code: str | None) -> str:
    """``zh-TW`` -> ``zh``; unset -> ``en``."""
    return (code or "en").split("-")[0].lower()


def option_letter(index: int) -> str:
    return LETTERS[index]


def is_safe_id(value: str) -> bool:
    return isinstance(value, str) and bool(_SAFE_ID.match(value)) and len(value) <= 200


def check_name(value: object, where: str, field: str) -> str:
    """``value`` if it can be part of a file name (an id, a subset), else an ItemError naming
    the field: letters, digits, '.', '_' and '-', starting with a letter or digit."""
    if not is_safe_id(value):  # type: ignore[arg-type]
        shown = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
        raise ItemError(f"{field} {shown} is not file-name safe (letters, digits, '.', '_', '-'; "
                        "starting with a letter or digit; at most 200 characters)",
                        where=where, field=field)
    return value  # type: ignore[return-value]


def safe_name(stem: str, default: str = "items") -> str:
    """A name the user chose (a file's, a folder's) or a category, made usable as a subset:
    runs of other characters become '_'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._-")[:100] or default


def id_width(rows: int, least: int = 4) -> int:
    """The digits of the row numbers in the ids of a group of ``rows`` rows (``row_id``):
    enough for the last row, and at least ``least``."""
    return max(least, len(str(rows - 1)))


def content_id(language: str | None, context: str | None, question: str | None,
               options: list[str] | None) -> str:
    """The id of an item that gives none, on every path (a file, ``convert(items=)``,
    ``load_recipe().render()``, the training transform, the harness datasets): ``item-`` and
    16 hex digits of the sha256 of what is drawn of it (its language, context, question and
    options), so that its id, and the seeded draws that follow from it, depend on neither its
    file's name, its row, its batch nor the worker that draws it."""
    import hashlib
    import json

    text = json.dumps([language or "en", context, question, list(options or [])],
                      ensure_ascii=False, separators=(",", ":"))
    return "item-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def row_id(subset: str, row: int, width: int = 4) -> str:
    """The id rule: ``<subset>-<row>`` with the row zero-padded, counted before any filtering."""
    return f"{subset}-{row:0{width}d}"
