"""VLMEvalKit export: one TSV of the kit's custom-dataset form.

Columns: ``index``, ``image`` (base64; an item with several images holds the list as the kit's
``toliststr`` reads it, ``['…', '…']``), ``question``, one column per option letter, ``answer``,
``category``, then ``id``, ``prompt`` and ``text_prompt`` (the multimodal prompt and its
text-only twin), for occlusions ``text_only_image``, and ``scoring``: the item's scoring spec,
which ``mmconvert_vlmevalkit.py`` (a dataset class for the kit, beside the TSV) and
``score.py`` score predictions by, as ``mmconvert eval`` does.

The option columns hold the option text because the kit scores multiple-choice answers with
them; its default prompt would also show them as text. When the options are what the image
shows (ReadBench's short MCQ), prompt with the ``prompt`` column instead. A row without options
(BABILong, LongBench, occlusions) has its full prompt, instruction included, as ``question``,
which is all the kit sends; an occlusion's ``answer`` is its list of covered spans as a Python
list literal, which the kit's VCR scorer evaluates.
"""

from __future__ import annotations

import base64
import csv
import json
from pathlib import Path

from ..items import option_letter
from ..rows import QuestionRow
from .hf import write_template
from .source import RunSource


def _cell(images: list[bytes]) -> str:
    encoded = [base64.b64encode(data).decode("ascii") for data in images]
    if len(encoded) == 1:
        return encoded[0]
    return "[" + ", ".join(f"'{e}'" for e in encoded) + "]"


def export_vlmevalkit(source: RunSource, staging: Path, out: Path, name: str, **_) -> int:
    """one VLMEvalKit TSV (base64 images, option columns, text twin)"""
    letters = [option_letter(i) for i in range(source.max_options)]
    twins = bool(source.renderer.profile.twins)
    spans = source.renderer.profile.answer_spans
    header = (["index", "image", "question", *letters, "answer", "category", "id", "prompt",
               "text_prompt"] + (["text_only_image"] if twins else []) + ["scoring"])
    count = 0
    staging.mkdir(parents=True, exist_ok=True)
    with open(staging / f"{name}.tsv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        for record in source.records():
            files = source.checked(record)
            if files is None:
                continue
            shown, twin = record.split(files)
            options = record.options + [""] * (len(letters) - len(record.options))
            answers = record.answers
            row = record.row
            # the kit prompts a multiple-choice row with its question and option columns, any
            # other row with the question alone: there it is the full prompt, instruction
            # included
            question = row.question if isinstance(row, QuestionRow) and record.options \
                else row.prompt
            if spans:  # the kit's VCR reader evaluates the answer as a Python list
                answer = repr([str(a) for a in answers])
            else:
                answer = answers[0] if answers else ""
            writer.writerow([count, _cell(shown), question, *options, answer, record.category,
                             record.id, row.prompt, row.text_prompt]
                            + ([_cell(twin) if twin else ""] if twins else [])
                            + [json.dumps(record.scoring, ensure_ascii=False, sort_keys=True)])
            count += 1
    write_template(staging, "mmconvert_vlmevalkit.py")
    return count
