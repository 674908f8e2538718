"""The hub's common multiple-choice schemas, read from a local file as lettered items.

A file in one of these schemas (the columns its hub dataset has) becomes items with the
question, the options and the answer letter the schema means; each item records the schema and
the source columns it was read from (``metadata.source_schema``). A row whose answer is not one
of its options is a one-line error naming the row and the column (or a recorded skip with
``--on-error skip``): never an item without an answer.

=========================  ================================================  ==================
schema                     columns                                           datasets
=========================  ================================================  ==================
``choices-answerKey``      question or question_stem, choices {text, label}  ARC, OpenBookQA,
                           (a dict of lists, or a list of {text, label}),    CommonsenseQA
                           answerKey (one of the labels)
``endings-label``          ctx (or ctx_a + ctx_b), endings, label (0-based)  HellaSwag
``sol-label``              goal, sol1, sol2, label (0-based)                 PIQA
``option-answer``          sentence, option1, option2, answer (1 or 2)       WinoGrande
``choices-answer``         question, choices (a list), answer (0-based, or   MMLU (cais/mmlu),
                           a letter)                                         MedMCQA-style
=========================  ================================================  ==================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ItemError
from ..items import LETTERS
from .base import answer_letter, options_field, text_field


@dataclass(frozen=True)
class Read:
    """What a schema makes of one row."""

    question: str | None
    context: str | None
    options: list[str]
    answer: str
    columns: dict[str, str | list[str]]  # item field -> the source column(s)


def _labels(choices: Any, where: str) -> tuple[list[str], list[str]]:
    """(texts, labels) of a choices column: {"text": [...], "label": [...]} or a list of
    {"text", "label"}."""
    if isinstance(choices, dict):
        texts, labels = choices.get("text"), choices.get("label")
    elif isinstance(choices, list) and all(isinstance(c, dict) for c in choices):
        texts = [c.get("text") for c in choices]
        labels = [c.get("label") for c in choices]
    else:
        raise ItemError("expected {text: [...], label: [...]}", where=where, field="choices")
    if not isinstance(texts, list) or not isinstance(labels, list) or not texts \
            or len(texts) != len(labels):
        raise ItemError("choices.text and choices.label must be lists of one length",
                        where=where, field="choices")
    return (options_field(texts, where, "choices.text"),
            [str(label).strip() for label in labels])


def choices_answer_key(data: dict, where: str) -> Read:
    stem = "question" if isinstance(data.get("question"), str) else "question_stem"
    options, labels = _labels(data.get("choices"), where)
    key = str(data.get("answerKey") or "").strip()
    if key not in labels:
        raise ItemError(f"{key!r} is not one of the choices' labels ({', '.join(labels)})",
                        where=where, field="answerKey")
    return Read(text_field(data, stem, where), None, options, LETTERS[labels.index(key)],
                {"question": stem, "options": "choices.text", "answer": "answerKey"})


def endings_label(data: dict, where: str) -> Read:
    columns: str | list[str]
    if isinstance(data.get("ctx"), str):
        context, columns = text_field(data, "ctx", where), "ctx"
    else:
        parts = [text_field(data, name, where, required=False) or "" for name in ("ctx_a",
                                                                                  "ctx_b")]
        context, columns = " ".join(p for p in parts if p), ["ctx_a", "ctx_b"]
    options = options_field(data.get("endings"), where, "endings")
    return Read(context, None, options, answer_letter(data.get("label"), len(options), where,
                                                      "label"),
                {"question": columns, "options": "endings", "answer": "label"})


def sol_label(data: dict, where: str) -> Read:
    options = [text_field(data, "sol1", where), text_field(data, "sol2", where)]
    return Read(text_field(data, "goal", where), None, options,
                answer_letter(data.get("label"), 2, where, "label"),
                {"question": "goal", "options": ["sol1", "sol2"], "answer": "label"})


def option_answer(data: dict, where: str) -> Read:
    options = [text_field(data, "option1", where), text_field(data, "option2", where)]
    answer = str(data.get("answer") or "").strip()
    if answer not in ("1", "2"):
        raise ItemError(f"{answer!r} is not 1 or 2 (WinoGrande numbers its options from 1)",
                        where=where, field="answer")
    return Read(text_field(data, "sentence", where), None, options, LETTERS[int(answer) - 1],
                {"question": "sentence", "options": ["option1", "option2"],
                 "answer": "answer"})


def choices_answer(data: dict, where: str) -> Read:
    options = options_field(data.get("choices"), where, "choices")
    return Read(text_field(data, "question", where), None, options,
                answer_letter(data.get("answer"), len(options), where),
                {"question": "question", "options": "choices", "answer": "answer"})


# (name, the columns that identify it, the reader), tried in order
SCHEMAS = (
    ("choices-answerKey", ("choices", "answerKey"), choices_answer_key),
    ("endings-label", ("endings", "label"), endings_label),
    ("sol-label", ("goal", "sol1", "sol2", "label"), sol_label),
    ("option-answer", ("sentence", "option1", "option2", "answer"), option_answer),
    ("choices-answer", ("question", "choices", "answer"), choices_answer),
)


def schema_of(columns) -> tuple[str, Any] | None:
    """The hub schema a row's columns are in (name, reader), or None: a row with an
    ``options`` column is in mmconvert's own schema."""
    if "options" in columns:
        return None
    for name, needs, reader in SCHEMAS:
        if all(column in columns for column in needs):
            return name, reader
    return None


def source_columns(read: Read) -> set[str]:
    found = set()
    for value in read.columns.values():
        found.update([value] if isinstance(value, str) else value)
    return {column.split(".")[0] for column in found}
