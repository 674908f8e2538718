"""Local files in the generic item schema: JSONL, JSON, CSV or Parquet with the fields
``id``, ``question``, ``options``, ``answer``, ``context``, ``language`` (and optionally
``subset``, ``split``, ``metadata``, and ``metric``: how a free-form answer is scored, one
of ``scoring.answers.FREE_METRICS``, kept as ``metadata.metric``). A ``context`` may be a
dialogue, a list of chat turns (``[{"role": ..., "content": ...}]``): its text is the turns
as "role: content" paragraphs, and the turns themselves are kept in ``metadata.turns`` (the
document renderer draws them).
A file in one of the hub's common multiple-choice schemas (ARC's ``choices`` and
``answerKey``, HellaSwag's ``endings`` and ``label``, PIQA's, WinoGrande's, MMLU's) is read as
that schema says (``schemas``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ItemError, SourceError
from ..items import Item, RenderPart, check_name, content_id, row_id, safe_name
from ..scoring.answers import FREE_METRICS, gold_number
from .base import (
    Corpus,
    CorpusOptions,
    LoadReport,
    LoadRequest,
    RowGuard,
    answer_letter,
    options_field,
    text_field,
)
from .schemas import schema_of, source_columns
from .sources import TABLE_SUFFIXES, SourceRow, read_table

KNOWN_FIELDS = ("id", "question", "options", "answer", "context", "language", "subset", "split",
                "metadata", "metric")


def _common(data: dict, where: str) -> dict[str, Any]:
    return {"split": text_field(data, "split", where, required=False) or "test",
            "language": text_field(data, "language", where, required=False) or "en"}


def dialogue(value: list, where: str) -> list[dict[str, str]]:
    """A context given as chat turns: each a {"role", "content"} of text; one line naming the
    turn otherwise."""
    turns = []
    for number, turn in enumerate(value):
        field = f"context[{number}]"
        if not isinstance(turn, dict):
            raise ItemError(f"a dialogue turn is {{\"role\", \"content\"}}, got "
                            f"{type(turn).__name__}", where=where, field=field)
        turns.append({"role": text_field(turn, "role", where) or "",
                      "content": text_field(turn, "content", where) or ""})
    if not turns:
        raise ItemError("an empty dialogue", where=where, field="context")
    return turns


def turn_text(turn: dict[str, str]) -> str:
    """A chat turn as a dialogue's text twin writes it: "role: content"."""
    return f"{turn['role']}: {turn['content']}"


def metric_field(value: Any, options: list[str], answer: Any, where: str) -> str | None:
    """The metric a row names for its free-form answer (None when it names none), checked:
    a known one, on an item without options, and ``numeric`` only when every accepted answer
    is a number; else an ItemError naming the row and field."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value not in FREE_METRICS:
        shown = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
        raise ItemError(f"unknown metric {shown} (known: {', '.join(FREE_METRICS)})",
                        where=where, field="metric")
    if options:
        raise ItemError(f"metric {value!r} scores a free-form answer; this item has "
                        f"{len(options)} options, scored by their letter", where=where,
                        field="metric")
    if value == "numeric":
        for text in answer or []:
            if gold_number(text) is None:
                raise ItemError(f"answer {text!r} is not a number, and the metric is numeric",
                                where=where, field="answer")
    return value


def is_table_path(name: str) -> bool:
    return Path(name).suffix.lower() in TABLE_SUFFIXES


class LocalFile(Corpus[CorpusOptions]):
    name = "file"
    description = "a local JSONL/CSV/Parquet file in the generic item schema"
    render_part = "options"
    default_split = "test"

    def __init__(self, path: Path):
        self.path = path
        self.label = safe_name(path.stem)

    def part_for(self, item: Item) -> RenderPart:
        """The context when there is one, else the options; an item with neither (a
        free-form question) shows its question."""
        return "context" if item.context else "options" if item.options else "all"

    def load(self, request: LoadRequest, report: LoadReport) -> Iterator[Item]:
        if not self.path.is_file():
            raise SourceError(f"{self.path}: no such file")
        return self._items(request, report)

    def _first_row_of(self, item_id: str, request: LoadRequest) -> str:
        """Where the first row with ``item_id`` is (read again, for a repeat's message)."""
        guard = RowGuard(request, LoadReport())
        for row in self.read():
            item = guard.convert(self.item, row, request)
            if item is not None and item.id == item_id:
                return row.where
        return "an earlier row"

    def _items(self, request: LoadRequest, report: LoadReport) -> Iterator[Item]:
        """The file's items as its rows are read (only the ids seen are held, to refuse a
        repeated one)."""
        guard = RowGuard(request, report)
        seen: set[str] = set()  # the ids (the first row of one that repeats is found again)
        for row in self.read():
            if row.index == 0 and not row.error:
                known = set(KNOWN_FIELDS) | self.schema_columns(row)
                unknown = [k for k in row.data if k not in known]
                if "question" not in row.data and "context" not in row.data and \
                        schema_of(row.data) is None:
                    raise SourceError(f"{self.path}: no question or context column "
                                      f"(generic fields: {', '.join(KNOWN_FIELDS)})")
                if unknown:
                    report.notes.append(f"{self.path}: kept unknown column(s) "
                                        f"{', '.join(unknown)} in metadata")
            item = guard.convert(self.item, row, request)
            if item is None:
                continue
            if item.id in seen:
                named = "" if row.data.get("id") not in (None, "") else \
                    " (a row without an id is named by its content: give the rows ids)"
                raise SourceError(f"{row.where}: id {item.id!r} repeats "
                                  f"{self._first_row_of(item.id, request)}{named}")
            seen.add(item.id)
            if request.subsets and item.subset not in request.subsets:
                report.dropped["subset"] += 1
                continue
            if request.split and item.split != request.split:
                report.dropped["split"] += 1
                continue
            yield item

    def read(self) -> Iterator[SourceRow]:
        return read_table(self.path)

    @staticmethod
    def schema_columns(row: SourceRow) -> set[str]:
        """The columns a row in a hub schema is read from (none for the generic schema)."""
        found = schema_of(row.data)
        if found is None:
            return set()
        try:
            return source_columns(found[1](row.data, row.where))
        except ItemError:  # the row's own error is raised when it is read
            return set()

    def item(self, row: SourceRow, request: LoadRequest) -> Item:
        """The row's item; one without an id is named by its content (``items.content_id``),
        the same on every path that reads items in this schema."""
        where = row.where
        item_id = row_id(self.label, row.index)  # an id-less bad row's name in skipped.jsonl
        try:
            data = row.check()
            subset = text_field(data, "subset", where, required=False) or self.label
            raw_id = data.get("id")
            given = None if raw_id is None or raw_id == "" else \
                check_name(str(raw_id), where, "id")
            item_id = given or item_id
            return self._item(data, where, given, subset)
        except ItemError as err:
            err.item_id = err.item_id or item_id
            raise

    def _item(self, data: dict, where: str, given: str | None, subset: str) -> Item:
        found = schema_of(data)
        if found is not None:
            return self._schema_item(data, where, given, subset, *found)
        question = text_field(data, "question", where, required=False)
        raw_context = data.get("context")
        turns = dialogue(raw_context, where) if isinstance(raw_context, list) else None
        context = "\n\n".join(map(turn_text, turns)) if turns \
            else text_field(data, "context", where, required=False)
        raw_options = data.get("options")
        # absent, empty text or an empty list: an item without options
        empty = raw_options is None or (isinstance(raw_options, str) and raw_options.strip()
                                        in ("", "[]")) or (isinstance(raw_options, list)
                                                           and not raw_options)
        options = [] if empty else options_field(raw_options, where, "options")
        raw_answer = data.get("answer")
        answer: str | list[str] | None
        if options:
            answer = answer_letter(raw_answer, len(options), where)
        elif raw_answer in (None, ""):
            answer = None
        elif isinstance(raw_answer, str):
            answer = [raw_answer]
        elif hasattr(raw_answer, "__iter__"):
            answer = [str(a) for a in raw_answer]
        else:
            answer = [str(raw_answer)]
        if not question and not context:
            raise ItemError("neither question nor context", where=where, field="question")
        kept = data.get("metadata")
        metadata = dict(kept) if isinstance(kept, dict) else {}
        metric = metric_field(data.get("metric"), options, answer, where)
        if metric:
            metadata["metric"] = metric
        if turns:
            metadata["turns"] = turns
        for key, value in data.items():
            if key not in KNOWN_FIELDS:
                metadata[key] = value
        common = _common(data, where)
        item_id = given or content_id(common["language"], context, question, options)
        return Item(id=item_id, corpus=self.label, subset=subset, **common,
                    context=context, question=question, options=options, answer=answer,
                    metadata=metadata, origin=where)

    def _schema_item(self, data: dict, where: str, given: str | None, subset: str, name: str,
                     reader) -> Item:
        """A row in one of the hub's MCQ schemas (``schemas``), its source recorded."""
        read = reader(data, where)
        metric_field(data.get("metric"), read.options, read.answer, where)
        used = source_columns(read)
        metadata = dict(data["metadata"]) if isinstance(data.get("metadata"), dict) else {}
        metadata.update({k: v for k, v in data.items()
                         if k not in KNOWN_FIELDS and k not in used})
        metadata["source_schema"] = {"name": name, "columns": read.columns}
        common = _common(data, where)
        item_id = given or content_id(common["language"], read.context, read.question,
                                      read.options)
        return Item(id=item_id, corpus=self.label, subset=subset, **common,
                    context=read.context, question=read.question, options=read.options,
                    answer=read.answer, metadata=metadata, origin=where)


class InMemory(LocalFile):
    """Items given as a list of dicts in the generic item schema (``mmconvert.convert(...,
    items=[...])``), read as a file of them is: a dict without an id is named by its content
    (``items.content_id``)."""

    name = "items"
    description = "items given in memory, as a list of dicts in the generic item schema"

    def __init__(self, rows: list[Any]):
        super().__init__(Path("items"))
        self.rows = rows

    def load(self, request: LoadRequest, report: LoadReport) -> Iterator[Item]:
        return self._items(request, report)

    def read(self) -> Iterator[SourceRow]:
        for index, data in enumerate(self.rows):
            if isinstance(data, Item):
                data = {"id": data.id, "subset": data.subset, "split": data.split,
                        "language": data.language, "context": data.context,
                        "question": data.question, "options": data.options,
                        "answer": data.answer, "metadata": data.metadata}
            yield SourceRow(index, f"items[{index}]", data if isinstance(data, dict) else {},
                      None if isinstance(data, dict) else
                      f"an item is a dict of its fields, not {type(data).__name__}")
