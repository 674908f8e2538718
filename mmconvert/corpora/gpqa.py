"""GPQA (Rein et al.): graduate-level questions with one correct and three incorrect answers.

The four answers become options in an order drawn from (run seed, record id), so the order is
the same on every machine and run (ReadBench's public code seeds with Python's salted
``hash()``, which changes from one process to the next).
"""

from __future__ import annotations

from ..errors import ItemError
from ..items import Item, is_safe_id
from .base import CorpusOptions, SubsetCorpus, text_field
from .choices import shuffle_options

ANSWER_COLUMNS = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
                  "Incorrect Answer 3")
KEPT_COLUMNS = ("High-level domain", "Subdomain", "Writer's Difficulty Estimate")


class GPQA(SubsetCorpus[CorpusOptions]):
    name = "gpqa"
    hub_id = "Idavidrein/gpqa"
    description = "GPQA: graduate-level science questions, 4 options shuffled per record (MCQ)"
    render_part = "options"
    default_split = "train"  # the hub's only split
    subsets = ("gpqa_diamond", "gpqa_main", "gpqa_extended", "gpqa_experts")
    default_subsets = ("gpqa_diamond",)
    columns = (("Question", *ANSWER_COLUMNS, "Record ID"),)

    def item(self, data, row, subset, split, item_id, request) -> Item:
        where = row.where
        record = text_field(data, "Record ID", where).strip()
        if not is_safe_id(record):
            raise ItemError(f"record id {record!r} is not file-name safe", where=where,
                            field="Record ID")
        item_id = f"{subset}-{record}"
        question = text_field(data, "Question", where).strip()
        # answers carry stray surrounding whitespace and newlines in the release
        options = [text_field(data, column, where).strip() for column in ANSWER_COLUMNS]
        metadata = {"record_id": record}
        for column in KEPT_COLUMNS:
            if isinstance(data.get(column), str) and data[column].strip():
                metadata[column.lower().replace("'", "").replace(" ", "_").replace("-", "_")] = (
                    data[column].strip())
        item = Item(id=item_id, corpus=self.name, subset=subset, split=split, language="en",
                    question=question, options=options, answer="A", metadata=metadata,
                    origin=where)
        return shuffle_options(item, request.seed, stage="gpqa-options", key=record)
