"""What every corpus provides, and the report of what loading kept, dropped and skipped."""

from __future__ import annotations

import ast
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..errors import ItemError
from ..items import LETTERS, Item, RenderPart
from .sources import check_text

OnError = Literal["fail", "skip"]


@dataclass
class LoadRequest:
    source: Path | None = None
    subsets: list[str] | None = None
    split: str | None = None
    keep_flagged: bool = False
    on_error: OnError = "fail"


@dataclass
class LoadReport:
    """Counts for the summary and run.json; skipped rows for skipped.jsonl."""

    rows: int = 0
    dropped: Counter = field(default_factory=Counter)
    skipped: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "dropped": dict(sorted(self.dropped.items())),
                "skipped": len(self.skipped)}


class Corpus:
    """A named corpus: where it lives on the hub and how its rows become Items."""

    name: ClassVar[str]
    hub_id: ClassVar[str | None] = None
    description: ClassVar[str] = ""
    render_part: ClassVar[RenderPart] = "options"
    default_split: ClassVar[str] = "test"
    subsets: ClassVar[tuple[str, ...]] = ()

    def load(self, request: LoadRequest, report: LoadReport) -> list[Item]:
        raise NotImplementedError


class RowGuard:
    """Runs a row conversion; under ``--on-error skip`` records the failure and goes on."""

    def __init__(self, request: LoadRequest, report: LoadReport):
        self.on_error = request.on_error
        self.report = report

    def convert(self, fn, *args) -> Item | None:
        try:
            return fn(*args)
        except ItemError as err:
            if self.on_error == "fail":
                raise
            self.report.skipped.append({"id": err.item_id, "stage": "load", "reason": str(err)})
            return None


def text_field(data: dict, name: str, where: str, *, required: bool = True) -> str | None:
    value = data.get(name)
    if value is None or (isinstance(value, float) and value != value):  # None or NaN
        if required:
            raise ItemError("missing value", where=where, field=name)
        return None
    if not isinstance(value, str):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        else:
            raise ItemError(f"expected text, got {type(value).__name__}", where=where, field=name)
    return check_text(value, where, name)


def options_field(value: Any, where: str, field: str) -> list[str]:
    """A list of option strings, from a list or a JSON / Python-literal list in text."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ItemError("no options", where=where, field=field)
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise ItemError("not a list of options (expected a JSON or Python list)",
                                where=where, field=field) from None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        raise ItemError("no options", where=where, field=field)
    out = []
    for i, option in enumerate(value):
        if isinstance(option, (int, float)) and not isinstance(option, bool):
            option = str(option)
        if not isinstance(option, str):
            raise ItemError(f"option {i} is {type(option).__name__}, not text", where=where,
                            field=field)
        out.append(check_text(option, where, f"{field}[{i}]"))
    if len(out) > len(LETTERS):
        raise ItemError(f"{len(out)} options; at most {len(LETTERS)}", where=where, field=field)
    return out


def answer_letter(value: Any, n_options: int, where: str, field: str = "answer") -> str:
    """An MCQ answer as a letter, from a letter or a 0-based index."""
    letter = None
    if isinstance(value, bool):
        letter = None
    elif isinstance(value, int):
        letter = LETTERS[value] if 0 <= value < n_options else None
    elif isinstance(value, float) and value.is_integer():
        return answer_letter(int(value), n_options, where, field)
    elif isinstance(value, str):
        text = value.strip().strip("()").strip()
        if text.isdigit():
            return answer_letter(int(text), n_options, where, field)
        if len(text) == 1 and text.upper() in LETTERS[:n_options]:
            letter = text.upper()
    if letter is None:
        raise ItemError(f"answer {value!r} is not one of the {n_options} options "
                        f"(a letter A-{LETTERS[n_options - 1]} or an index 0-{n_options - 1})",
                        where=where, field=field)
    return letter
