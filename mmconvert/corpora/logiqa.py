"""LogiQA (Liu et al., 2020; 8-line text files) and LogiQA 2.0 (JSON lines), English or
Chinese: a passage, a question and four options, as LogicOCR draws them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from ..errors import ItemError, SourceError, UsageError
from ..items import Item, id_width, row_id
from ..options import cli
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
from .sources import SourceRow, decode_file, load_hub, read_jsonl

LANGUAGES = ("en", "zh")
_ITEM_NUMBER = re.compile(r"^\s*(\d+)\s*[.．、]\s*")


# an option's own letter before its text: "A.", "A．", "A、", "A:", "A：", "A)" (its form is
# the separator); a letter and a space alone is not a prefix ("A manufacturer has…" is text)
_LETTER_PREFIX = re.compile(r"^\s*([A-Z])\s*([.．、:：)])\s*")


def strip_letters(options: list[str]) -> list[str]:
    """``options`` without their letters when every option starts with its own letter in one
    form (``A.xxx``, ``B.xxx``, …, or ``A、``, ``A:``, ``A)``); otherwise unchanged: a prefix
    that only some options have, or that is not their own letter, is text."""
    matched = [_LETTER_PREFIX.match(option) for option in options]
    found = [match for match in matched if match is not None]
    if not options or len(found) < len(options):
        return list(options)
    forms = {match.group(2).replace("．", ".").replace("：", ":") for match in found}
    letters = [match.group(1) for match in found]
    if len(forms) != 1 or letters != list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:len(options)]):
        return list(options)
    return [option[match.end():] for option, match in zip(options, found, strict=True)]


class LogiQAOptions(CorpusOptions):
    language: Literal["en", "zh"] | None = Field(None, description="the items' language: en "
                                                                   "or zh",
                                                 json_schema_extra=cli(default="en"))


class _LogiQABase(Corpus[LogiQAOptions]):
    options_model = LogiQAOptions
    render_part = "context"
    default_split = "test"
    subsets = LANGUAGES
    files: ClassVar[dict[tuple[str, str], tuple[str, ...]]] = {}  # (language, split) → names
    hub_config: ClassVar[str | None] = None

    language_prompts = True

    def load(self, request: LoadRequest, report: LoadReport) -> Iterator[Item]:
        language = self.options_of(request).language or "en"
        if language not in LANGUAGES:
            raise UsageError(f"{self.name}: --language {language!r} (en or zh)")
        if request.subsets and request.subsets != [language]:
            raise UsageError(f"{self.name}: subsets are the languages; use --language")
        split = request.split or self.default_split
        if request.source is None:
            if language != "en" or self.hub_id is None:
                raise SourceError(f"{self.name}: the Chinese set has no hub copy; pass "
                                  f"--source with {self.files[(language, split)][0]}")
            rows = self.hub_rows(split)
        else:
            rows = self.local_rows(request.source, language, split)
        guard = RowGuard(request, report)
        width = id_width(len(rows))
        # items as they are made (the file's rows are held: their count names the ids)
        return guard.convert_each(rows, self._item, language, split, width)

    def hub_rows(self, split: str) -> list[SourceRow]:
        assert self.hub_id is not None  # both LogiQA corpora name theirs
        return load_hub(self.hub_id, self.hub_config, split)

    def local_file(self, source: Path, language: str, split: str) -> Path:
        if source.is_file():
            return source
        if not source.is_dir():
            raise SourceError(f"{source}: no such file or folder")
        names = self.files.get((language, split))
        if not names:
            raise SourceError(f"{self.name}: no {language} {split} split")
        for name in names:
            found = sorted(source.rglob(name))
            if found:
                return found[0]
        raise SourceError(f"{source}: no {' or '.join(names)} in this folder "
                          f"({self.name} {language} {split})")

    def local_rows(self, source: Path, language: str, split: str) -> list[SourceRow]:
        raise NotImplementedError

    def item(self, data: dict[str, Any], row: SourceRow, language: str, split: str,
             item_id: str) -> Item:
        """One row's item (each release's own layout)."""
        raise NotImplementedError

    def _item(self, row: SourceRow, language: str, split: str, width: int) -> Item:
        item_id = row_id(language, row.index, width)
        try:
            return self.item(row.check(), row, language, split, item_id)
        except ItemError as err:
            err.item_id = err.item_id or item_id
            raise

    def make(self, item_id, language, split, context, question, options, answer, metadata,
             where) -> Item:
        options = strip_letters(options)
        return Item(id=item_id, corpus=self.name, subset=language, split=split,
                    language=language, context=context, question=question, options=options,
                    answer=answer, metadata=metadata, origin=where)


class LogiQA(_LogiQABase):
    name = "logiqa"
    hub_id = "lucasmccabe/logiqa"
    description = "LogiQA: logical reasoning passages with 4 options, en or zh (MCQ)"
    files = {("en", "test"): ("Test.txt",), ("en", "validation"): ("Eval.txt",),
             ("en", "train"): ("Train.txt",), ("zh", "test"): ("zh_test.txt",),
             ("zh", "validation"): ("zh_eval.txt",), ("zh", "train"): ("zh_train.txt",)}

    def local_rows(self, source, language, split) -> list[SourceRow]:
        return read_eight_lines(self.local_file(source, language, split))

    def item(self, data, row, language, split, item_id) -> Item:
        where = row.where
        if "query" in data:  # hub mirror: context, query, options, correct_option
            context = text_field(data, "context", where)
            question = text_field(data, "query", where)
            options = options_field(data.get("options"), where, "options")
            answer = answer_letter(data.get("correct_option"), len(options), where,
                                   "correct_option")
            return self.make(item_id, language, split, context, question, options, answer,
                             {}, where)
        context = data["context"]
        metadata = {}
        number = _ITEM_NUMBER.match(context) if language == "zh" else None
        if number:  # the Chinese files number their passages: "35.某乡镇…"
            metadata["number"] = int(number.group(1))
            context = context[number.end():]
        options = data["options"]
        answer = answer_letter(data["label"], len(options), where, "label")
        return self.make(item_id, language, split, context, data["question"], options, answer,
                         metadata, where)


def read_eight_lines(path: Path) -> list[SourceRow]:
    """LogiQA's text format: per item a blank line, the answer letter, the passage, the
    question and four options."""
    lines = decode_file(path).split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    rows: list[SourceRow] = []
    for start in range(0, len(lines), 8):
        block = [line.rstrip("\r") for line in lines[start:start + 8]]
        where = f"{path} line {start + 1}"
        index = len(rows)
        if len(block) < 8:
            rows.append(SourceRow(index, where, {}, "a LogiQA item has 8 lines; the file ends "
                                                    f"after {len(block)}"))
            break
        if block[0].strip():
            rows.append(SourceRow(index, where, {}, "a LogiQA item starts with a blank line; the "
                                              f"file is out of step at line {start + 1}"))
            break
        label = block[1].strip()
        if label.lower() not in ("a", "b", "c", "d"):
            rows.append(SourceRow(index, f"{path} line {start + 2}", {},
                            f"answer line {label!r} is not a letter a-d"))
            continue
        rows.append(SourceRow(index, f"{path} line {start + 2}", {
            "label": label.upper(), "context": block[2], "question": block[3],
            "options": block[4:8]}))
    if not rows:
        raise SourceError(f"{path}: no LogiQA items in this file")
    return rows


class LogiQA2(_LogiQABase):
    name = "logiqa2"
    hub_id = "baber/logiqa2"  # a community mirror with the release's fields
    hub_config = "logiqa2"
    description = "LogiQA 2.0: logical reasoning passages with 4 options, en or zh (MCQ)"
    files = {("en", "test"): ("test.txt", "test.jsonl"), ("en", "validation"): ("dev.txt",),
             ("en", "train"): ("train.txt",), ("zh", "test"): ("test_zh.txt",),
             ("zh", "validation"): ("dev_zh.txt",), ("zh", "train"): ("train_zh.txt",)}

    def local_rows(self, source, language, split) -> list[SourceRow]:
        return list(read_jsonl(self.local_file(source, language, split)))  # JSON lines in .txt

    def item(self, data, row, language, split, item_id) -> Item:
        where = row.where
        native = data.get("id", data.get("example_id"))
        if isinstance(native, int) and not isinstance(native, bool):
            item_id = f"{language}-{native}"
        context = text_field(data, "text", where)
        question = text_field(data, "question", where)
        options = options_field(data.get("options"), where, "options")
        answer = answer_letter(data.get("answer"), len(options), where)
        metadata = {"native_id": native}
        types = data.get("type")
        if isinstance(types, dict):
            metadata["reasoning_types"] = sorted(k for k, v in types.items() if v)
        return self.make(item_id, language, split, context, question, options, answer,
                         metadata, where)

