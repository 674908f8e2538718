"""Rows as mmconvert's readers hand them over: typed (``mmconvert.rows.Row``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmconvert.renderers import row_renderer
from mmconvert.rows import ImageEntry, MaskedSpan, QuestionRow, RendererRecord, Row, as_row
from mmconvert.runfolder import open_run

# what a partial row of a test holds where it names nothing
PLAIN: dict[str, Any] = {"corpus": "", "subset": "", "split": "", "seed": 0, "prompt": "",
                         "text_prompt": "", "metadata": {}, "prompt_style": "cot",
                         "question": None, "context": None, "options": []}


def typed_rows(run: Path) -> list[Row]:
    """The run's manifest rows, each parsed with its renderer's row model."""
    return open_run(run).rows()


def typed(data: dict[str, Any], model: type[Row] | None = None) -> Row:
    """A test's row as the typed row a reader gets: validated when it is a whole row, else
    (a test's partial row, with only the fields its subject reads) built without checks."""
    try:
        return as_row(data, model)
    except Exception:  # noqa: BLE001 - a partial row: built field by field below
        pass
    if model is None:
        try:
            model = row_renderer(data).row_model
        except Exception:  # noqa: BLE001 - no renderer named: a question row
            model = QuestionRow
    fields = dict(data)
    if isinstance(fields.get("renderer"), dict):
        fields["renderer"] = RendererRecord.model_construct(**fields["renderer"])
    fields["images"] = [ImageEntry.model_construct(**i) for i in fields.get("images") or []]
    if "masked_spans" in fields:
        fields["masked_spans"] = [MaskedSpan.model_construct(**s)
                                  for s in fields["masked_spans"]]
    for name, value in PLAIN.items():
        if name in model.model_fields:
            fields.setdefault(name, value)
    row = model.model_construct(**fields)
    row._raw = data
    return row
