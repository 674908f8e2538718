"""What a run's items hold and cost, counted as ``mmconvert stats`` counts them: the images an
item shows, the words on each, its vision tokens under each model's rule, its text tokens and
their ratio (eval's compression figures, frontiers and text budgets count with these).

Words are counted as the QA check counts them (``qa.checks.word_count``). Each page's words
come from the text its renderer records for it (a page run's stored layout, a document's PDF
text layer), so a page is counted with exactly the text drawn on it; where no text is recorded
per page, only the item's words are known, and its pages' are reported as unknown.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from .errors import ItemError
from .qa.checks import word_count
from .renderers import row_renderer
from .rows import ImageEntry, Row
from .runfolder import read_run_file
from .vision_tokens import image_tokens


def shown_images(row: Row) -> list[ImageEntry]:
    """The images the model is shown (not text-only twins): its ``profile.shown``."""
    return row.images_in(row_renderer(row).profile.shown)


def image_words(run: Path, row: Row) -> list[int | None]:
    """Words in each image the model is shown: each page's text as its renderer records it
    (``Renderer.page_texts``: a page run's stored layout, a document's PDF text layer); all
    the item's words when it shows one image. None for each image of an item that shows
    several and records no text per image (a run from before layouts were kept, a plugin's):
    its words are known for the whole item only (``item_words``), never guessed per image."""
    renderer = row_renderer(row)
    shown = shown_images(row)
    if not shown:
        return []
    try:
        texts = renderer.page_texts(row, lambda rel: read_run_file(run, rel))
    except (ItemError, OSError, ValueError, RuntimeError):  # a file gone or unreadable
        texts = None
    if texts is not None and len(texts) == len(shown):
        return [word_count(text) for text in texts]
    if len(shown) == 1:
        return [word_count(renderer.expected_text(row))]
    return [None] * len(shown)


def item_words(row: Row, per_image: list[int | None]) -> int:
    """The item's words: those of its images when each is known, else its whole text's."""
    if per_image and all(count is not None for count in per_image):
        return sum(count for count in per_image if count is not None)
    return word_count(row_renderer(row).expected_text(row))


def figures_of(given: list[float | None]) -> dict[str, float]:
    """Count, min, median, mean, max of the values there are (None: none to count)."""
    values = [v for v in given if v is not None]
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    return {"count": len(values), "min": ordered[0], "median": statistics.median(ordered),
            "mean": round(statistics.fmean(ordered), 2), "max": ordered[-1]}


def item_tokens(row: Row, rules: dict[str, Any], tokenizer=None) -> dict[str, Any]:
    """One item's vision tokens under ``rules`` for the images it shows and, with a
    tokenizer, its text tokens, its prompts' tokens and its ratio per model."""
    shown = shown_images(row)
    tokens = {name: image_tokens(rule, shown) for name, rule in rules.items()}
    item = {"id": row.id, "subset": row.subset, "images": len(shown),
            "tokens": tokens}
    if tokenizer is not None:
        text = tokenizer.count(row_renderer(row).expected_text(row))
        item["text_tokens"] = text
        item["prompt_tokens"] = {"image": tokenizer.count(row.prompt),
                                 "text": tokenizer.count(row.text_prompt)}
        item["ratio"] = {name: round(text / count, 4) if count else None
                         for name, count in tokens.items()}
    return item


def ratio_summary(per_item: list[dict[str, Any]], tokenizer, names: list[str]) -> dict[str, Any]:
    """Text tokens per item and the ratio (text tokens / vision tokens) per model, overall and
    by subset (an item whose images cost a model no token has no ratio for it)."""
    def ratios(items, name):
        return [i["ratio"][name] for i in items if i["ratio"][name] is not None]

    subsets = sorted({i["subset"] or "" for i in per_item})
    return {
        "tokenizer": tokenizer.record(),
        "text_tokens_per_item": figures_of([i["text_tokens"] for i in per_item]),
        "ratio": {name: figures_of(ratios(per_item, name)) for name in names},
        "ratio_by_subset": {subset: {name: figures_of(ratios(
            [i for i in per_item if (i["subset"] or "") == subset], name))
            for name in names} for subset in subsets},
    }
