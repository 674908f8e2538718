"""The text baseline at the image's budget (``--modality text-budget``): each item asked as text
cut to as many text tokens as its pages cost in vision tokens for one model.

An item's pages hold its drawn text (the context, options or whole prompt, as its renderer drew
it: ``expected_text``), which costs ``N`` vision tokens under the model's rule. The baseline
keeps the question and the options whole and cuts the context, with the tokenizer, so that the
drawn text it keeps is at most ``N`` tokens: its head, its tail, or both ends around a cut
middle (``--budget-cut``). So a score reads "image at N vision tokens" beside "text at N
tokens"; the full text twin stays the reference line. An item whose drawn text already fits, or
whose pages hold no context to cut, is asked whole; each item's record says what was kept.
"""

from __future__ import annotations

from typing import Any, Literal

from ..counting import figures_of, item_tokens
from ..errors import UsageError
from ..rows import QuestionRow, Row
from ..vision_tokens import rules_for

Cut = Literal["head", "tail", "ends"]
# what the row carries in memory (``Row.carried``): the cut prompt and its record
FIELD = "text_budget"


def check_budget_options(tokenizer: str | None, models: list[str] | None) -> str:
    """The model whose vision tokens are the budget (the first --ratio-model); one line when
    the tokenizer or the model is missing."""
    if not tokenizer:
        raise UsageError("--modality text-budget cuts the text with a tokenizer: give "
                         "--tokenizer (a tokenizer.json, a folder, a hub id in the local cache, "
                         "or tiktoken:NAME)")
    if not models:
        raise UsageError("--modality text-budget: give --ratio-model, the model whose vision "
                         "tokens are each item's budget")
    return models[0]


def budgeted(row: Row, tokenizer, model: str, cut: Cut) -> Row:
    """``row`` carrying its text baseline (``FIELD``): the prompt (the text twin with the
    context cut) and a record of the budget and what was kept."""
    counted = item_tokens(row, rules_for([model]), tokenizer)
    vision, drawn = counted["tokens"][model], counted["text_tokens"]
    text_prompt = row.text_prompt
    record: dict[str, Any] = {"model": model, "cut": cut, "vision_tokens": vision,
                              "drawn_tokens": drawn}
    context = (row.context if isinstance(row, QuestionRow) else None) or ""
    part = row.params.get("render")
    prompt = text_prompt
    if vision is None:
        record["reason"] = f"{model}'s processor refuses these pages: asked whole"
    elif drawn <= vision:
        record["reason"] = "the drawn text fits the budget: asked whole"
    elif part == "options" or not context:
        record["reason"] = "the pages hold no context to cut (question and options stay whole)"
    elif context not in text_prompt:
        record["reason"] = "the text twin does not hold the context as drawn: asked whole"
    else:
        context_tokens = tokenizer.count(context)
        rest = drawn - context_tokens  # the drawn question and options: kept whole
        kept = tokenizer.cut(context, max(0, vision - rest), cut)
        prompt = text_prompt.replace(context, kept, 1)
        record["context_tokens"] = context_tokens
        record["kept_context_tokens"] = tokenizer.count(kept)
        if rest > vision:
            record["reason"] = ("the question and options alone take more tokens than the "
                                "budget; the context is cut out")
    kept_tokens = drawn - record["context_tokens"] + record["kept_context_tokens"] \
        if "kept_context_tokens" in record else drawn
    record["kept_tokens"] = kept_tokens
    record["kept_share"] = round(kept_tokens / drawn, 4) if drawn else None
    return row.carrying(FIELD, {"prompt": prompt, **record})


def summary(rows: list[Row], tokenizer, cut: Cut) -> dict[str, Any]:
    """results.json's account of the baseline: the model and tokenizer, the cut, and the
    budgets and what was kept, over the items."""

    records = [row.carried(FIELD) for row in rows if row.carried(FIELD) is not None]
    cut_items = [r for r in records if "kept_context_tokens" in r]
    return {"model": records[0]["model"] if records else None, "tokenizer": tokenizer.record(),
            "cut": cut, "items": len(records), "cut_items": len(cut_items),
            "vision_tokens": figures_of([r["vision_tokens"] for r in records]),
            "kept_tokens": figures_of([r["kept_tokens"] for r in records]),
            "kept_share": figures_of([r["kept_share"] for r in records]),
            "whole": {reason: sum(1 for r in records if r.get("reason") == reason)
                      for reason in sorted({r["reason"] for r in records if "reason" in r
                                            and "kept_context_tokens" not in r})}}
