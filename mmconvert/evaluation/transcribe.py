"""``eval --probe transcribe``: what the model is asked (``TRANSCRIBE_PROMPT``), the text each
item's pages hold (``transcribed_text``; each page's own, ``pages_to_read``, where the renderer
records it, so that a page is asked alone as Fox's pages are), and an item read a page at a
time made one outcome again (``read_by_page``). ``scoring.transcription`` scores a reply."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import cast

from ..errors import UsageError
from ..renderers import renderer_class
from ..rows import Row
from ..runfolder import read_run_file
from ..scoring.spec import Scored
from ..scoring.transcription import transcription_scores
from .results import Outcome

# what --probe transcribe asks of each item's shown pages
TRANSCRIBE_PROMPT = ("Transcribe all the text in the image(s) exactly as it is written, line by "
                     "line, in reading order. Write only the text: no comments, no formatting.")


def transcribed_text(row: Row) -> str:
    """The text an item's shown pages hold (its renderer's ``expected_text``); a renderer
    that states none is one line."""
    renderer = renderer_class(row.renderer.name)
    try:
        return renderer.expected_text(row)
    except NotImplementedError:
        raise UsageError(f"--probe transcribe: the {renderer.name} renderer states no "
                         "expected text for its pages, so a transcription has nothing to be "
                         "scored against") from None


# a page's request id: the item's id, PAGE_MARK and the page's number ("astronomy-000#2");
# an item id never holds the mark (``items.is_safe_id``)
PAGE_MARK = "#"


# what an evaluated row carries (``Row.carried``): each of its pages' own text
# (``with_pages``), read once when the evaluation is planned
PAGES = "page_texts"


def with_pages(run: Path, row: Row) -> Row:
    """``row`` carrying its pages' own texts (``PAGES``) when it is to be asked a page at a
    time (``pages_to_read``); as it is otherwise."""
    texts = pages_to_read(run, row)
    return row if texts is None else row.carrying(PAGES, texts)


def pages_to_read(run: Path, row: Row) -> list[str] | None:
    """For ``--probe transcribe``: the text of each of an item's shown pages, when it has
    more than one and its renderer records each page's text (``Renderer.page_texts``), so
    that each page is asked and scored alone, as Fox's pages are; None: the item is asked
    whole (one page, or pages whose own text is not recorded)."""
    renderer = renderer_class(row.renderer.name)
    shown = row.images_in(renderer.profile.shown)
    if len(shown) < 2:
        return None
    where = f"{run / 'manifest.jsonl'} item {row.id}"
    texts = renderer.page_texts(row, lambda rel: read_run_file(run, rel, where=where,
                                                               field="layout"))
    return texts if texts is not None and len(texts) == len(shown) else None


def read_by_page(row: Row, pages: dict[int, Outcome]) -> Outcome:
    """An item transcribed a page at a time, as one outcome: its replies joined in page
    order, scored against the item's whole text, each page's own scores in ``pages``; a page
    whose request failed fails the item (its error, with the page's number)."""
    ordered = [pages[number] for number in sorted(pages)]
    first = ordered[0]
    response = "\n\n".join(o.response or "" for o in ordered)
    failed = next(((n, o) for n, o in sorted(pages.items()) if o.scored is None), None)
    if failed is not None:
        number, outcome = failed
        return replace(first, response=response, scored=None,
                       error=f"page {number}: {outcome.error or 'no score'}")
    read = transcription_scores(transcribed_text(row), response)
    each = [{"page": number, "score": cast(Scored, o.scored).value,
             **cast(Scored, o.scored).extra} for number, o in sorted(pages.items())]
    return replace(first, response=response, error=None, scored=Scored(
        read.precision or 0.0, None, read.recall is not None,
        {**read.as_dict(), "pages": each}))
