"""BABILong (Kuratov et al.): bAbI questions qa1-qa10 whose facts hide in PG-19 text of a set
length (configs 0k…16k and up; the task is the hub split). A local copy may be the hub's files
(``data/qa1/0k.json``, ``0k/qa1-….parquet``, ``save_to_disk``) or the raw bAbI task files
(``qa1_single-supporting-fact_test.txt``), which are BABILong's 0k config: each question's
context is the story's facts before it, joined with spaces."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ItemError, SourceError
from ..items import Item, row_id
from ..rows import QuestionRow, Row
from .base import (
    Corpus,
    CorpusOptions,
    LoadReport,
    LoadRequest,
    RowGuard,
    Rows,
    check_columns,
    numbered,
    read_rows,
    text_field,
)
from .sources import (
    SourceRow,
    decode_file,
    discover,
    is_saved_dataset,
    load_hub,
    read_saved,
    read_table,
)

LENGTHS = ("0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k", "256k", "512k", "1M")
DEFAULT_LENGTHS = ("0k", "1k", "2k", "4k", "8k", "16k")  # ReadBench's range
TASKS = tuple(f"qa{n}" for n in range(1, 11))
COLUMNS = (("input", "question", "target"),)
_RAW_TASK = re.compile(r"^(qa\d+)_[a-z-]+_(test|train)\.txt$")
_RAW_LINE = re.compile(r"^(\d+) (.*)$")


class BABILong(Corpus[CorpusOptions]):
    name = "babilong"
    hub_id = "RMT-team/babilong"
    description = "BABILong: bAbI qa1-qa10 hidden in 0k-16k of filler text (long context)"
    render_part = "context"
    default_split = "qa1..qa10"
    subsets = tuple(f"{length}-{task}" for length in LENGTHS for task in TASKS)

    def prompt_keys(self, item: Item) -> tuple[str, ...]:
        return (f"babilong/{item.metadata['task']}", "babilong")

    def scoring(self, row: Row) -> dict[str, Any]:
        """The BABILong paper's rule (``scoring.answers.babilong``)."""
        question = row.question if isinstance(row, QuestionRow) else None
        return {"kind": "free", "metric": "babilong", "question": question or "",
                "task": row.metadata.get("task", row.split)}

    def wanted(self, request: LoadRequest, available=None) -> list[tuple[str, str]]:
        """``--subset`` takes a length (``4k``), a task (``qa3``) or both (``4k-qa3``);
        ``--split`` a task, as on the hub. What is not named: ReadBench's 0k-16k × qa1-qa10
        from the hub, everything ``available`` in a local copy."""
        lengths: list[str] = []
        tasks: list[str] = []
        pairs: list[tuple[str, str]] = []
        for name in request.subsets or ():
            if name in LENGTHS:
                lengths.append(name)
            elif name in TASKS:
                tasks.append(name)
            elif name in self.subsets:
                length, task = name.split("-", 1)
                pairs.append((length, task))
            else:
                raise SourceError(f"babilong: unknown subset {name!r} (a length "
                                  f"{', '.join(LENGTHS)}, a task qa1…qa10, or both: 4k-qa3)")
        if request.split:
            if request.split not in TASKS:
                raise SourceError(f"babilong: unknown split {request.split!r} (qa1…qa10)")
            tasks.append(request.split)
        if pairs and not (lengths or tasks):
            return pairs
        if available is not None and not (lengths or tasks):
            return sorted(available, key=lambda p: (_order(LENGTHS)(p[0]), _order(TASKS)(p[1])))
        if available is not None:
            lengths = lengths or sorted({length for length, _ in available}, key=_order(LENGTHS))
            tasks = tasks or sorted({task for _, task in available}, key=_order(TASKS))
        lengths = lengths or list(DEFAULT_LENGTHS)
        tasks = tasks or list(TASKS)
        return pairs + [(length, task) for length in lengths for task in tasks
                        if (length, task) not in pairs]

    def load(self, request: LoadRequest, report: LoadReport) -> Iterator[Item]:
        """The chosen (length, task) groups' items, a group at a time: a group's file or hub
        config is read when its turn comes (a saved dataset's are read at once)."""
        groups: dict[tuple[str, str], Rows]
        if request.source is None:
            groups = {pair: functools.partial(load_hub, self.hub_id, pair[0], pair[1])
                      for pair in self.wanted(request)}
        else:
            found = self.local_groups(request.source)
            wanted = self.wanted(request, found)
            missing = [p for p in wanted if p not in found]
            if missing:
                raw = " (raw bAbI files are the 0k config only)" if all(
                    length == "0k" for length, _ in found) else ""
                raise SourceError(f"{request.source}: no rows for {'-'.join(missing[0])}{raw}; "
                                  f"found: {', '.join('-'.join(p) for p in sorted(found))}")
            groups = {p: found[p] for p in wanted}
        return self._items(groups, RowGuard(request, report))

    def _items(self, groups: dict[tuple[str, str], Rows], guard: RowGuard) -> Iterator[Item]:
        for (length, task), rows in groups.items():
            rows, width = read_rows(rows)
            yield from guard.convert_each(rows, self.item, length, task, width)

    def item(self, row: SourceRow, length: str, task: str, width: int) -> Item:
        subset = f"{length}-{task}"
        item_id = row_id(subset, row.index, width)
        try:
            data = row.check()
            context = text_field(data, "input", row.where)
            question = text_field(data, "question", row.where)
            target = text_field(data, "target", row.where)
        except ItemError as err:
            err.item_id = item_id
            raise
        metadata = {"task": task, "length": length}
        for key in ("supporting_facts", "story"):
            if key in data:
                metadata[key] = data[key]
        return Item(id=item_id, corpus=self.name, subset=subset, split=task, language="en",
                    context=context, question=question, answer=[target], metadata=metadata,
                    origin=row.where)

    # -- local copies

    def local_groups(self, source: Path) -> dict[tuple[str, str], Rows]:
        if not source.exists():
            raise SourceError(f"{source}: no such file or folder")
        raw = sorted(source.rglob("qa*_*.txt")) if source.is_dir() else [source]
        raw = [p for p in raw if _RAW_TASK.match(p.name) and p.name.endswith("_test.txt")]
        if raw:
            groups: dict[tuple[str, str], Rows] = {}
            for path in raw:
                named = _RAW_TASK.match(path.name)
                if named is None:  # found by the same pattern
                    continue
                task = named.group(1)
                if ("0k", task) not in groups:  # en/ and en-10k/ hold the same test questions
                    groups[("0k", task)] = functools.partial(read_babi, path)
            return groups
        if is_saved_dataset(source):
            return {(source.name, task): rows for task, rows in read_saved(source, None).items()}
        if source.is_dir():
            saved = [p for p in sorted(source.iterdir()) if is_saved_dataset(p)]
            if saved:
                return {(p.name, task): rows for p in saved
                        for task, rows in read_saved(p, None).items()}
        files: dict[tuple[str, str], list[Path]] = {}
        for found in discover(source, _hub_place):
            files.setdefault((found.subset, found.split or "qa1"), []).append(found.path)
        return {key: functools.partial(self._read_group, paths) for key, paths in files.items()}

    def _read_group(self, paths: list[Path]) -> list[SourceRow]:
        """A group's rows, from its hub-layout files, numbered from 0 in source order."""
        rows: list[SourceRow] = []
        for path in paths:
            read = list(read_table(path))
            if read and not read[0].error:
                check_columns(read[0].data, COLUMNS, str(path), self.name)
            rows += read
        return numbered(rows)


def _order(known: tuple[str, ...]):
    return lambda name: (known.index(name) if name in known else len(known), name)


def _hub_place(rel: Path) -> tuple[str, str | None]:
    """``data/qa1/0k.json`` → (0k, qa1); ``0k/qa1-00000-of-00001.parquet`` → (0k, qa1)."""
    stem = rel.name.split(".")[0]
    parent = rel.parts[-2] if len(rel.parts) > 1 else ""
    if parent in TASKS:
        return stem, parent
    task = stem.split("-")[0]
    return parent or "0k", task if task in TASKS else None


def read_babi(path: Path) -> list[SourceRow]:
    """Questions of a raw bAbI task file, each with the facts of its story before it."""
    rows: list[SourceRow] = []
    facts: list[str] = []
    story = -1
    for number, line in enumerate(decode_file(path).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        match = _RAW_LINE.match(line)
        if not match:
            rows.append(SourceRow(len(rows), where, {}, "not a bAbI line (<id> <text>)"))
            continue
        if match.group(1) == "1":
            facts, story = [], story + 1
        text = match.group(2)
        if "\t" not in text:
            facts.append(text.strip())
            continue
        parts = text.split("\t")
        if len(parts) < 2 or not parts[1].strip():
            rows.append(SourceRow(len(rows), where, {}, "question line without an answer"))
            continue
        rows.append(SourceRow(len(rows), where, {
            "input": " ".join(facts), "question": parts[0].strip(), "target": parts[1].strip(),
            "supporting_facts": parts[2].strip() if len(parts) > 2 else "", "story": story}))
    if not rows:
        raise SourceError(f"{path}: no bAbI questions in this file")
    return rows
