"""A render run's stages, each a unit with its own tests (``tests/test_stages.py``), which
``converter._convert`` runs in this order:

1. **selection** (``select_items``): the items, streamed, sampled and limited; past the limit when
   the renderer may leave an item out while it draws it (the limit is then counted at the
   sink);
2. **resume** (``resume_folder``): where the folder stands: the ids that need no more work, the ids
   its manifest holds, the items changed in the source since they were drawn (forgotten, so
   that they are drawn again) and the repeated rows removed;
3. **drawing** (``make_job``, ``tasks``): the job that draws each item (its images put
   through the config's transforms), and the task of each selected item not done, in the
   selection's order;
4. **the sink** (``sink``): each result, in task order, into the folder, until the limit;
5. **storage** (``storage``): files and rows made durable in groups, or packed into shards.

The run's figures (``RunSummary``) are counted by its own methods only, which the stages
call.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from . import resuming
from .config import ApiOptions, ExecutionOptions, RunConfig, show_progress
from .corpora import Corpus
from .executors import executor_for
from .imaging import decode
from .items import Item, RenderPart
from .manifest import MANIFEST
from .postprocess.sweep import post
from .postprocess.transforms import parse_step
from .renderers import job_for
from .runfolder import DEDUP, Result, RunFolder
from .scoring.spec import unscorable
from .selection import Selected, stream_selection
from .shards import is_sharded

Task = tuple[Item, RenderPart, tuple[str, ...]]


@dataclass
class RunSummary:
    out: Path
    selected: int = 0
    rendered: int = 0
    already_done: int = 0
    skipped: int = 0
    filtered: Counter = field(default_factory=Counter)  # rules' drops, by rule
    failed: int = 0
    no_answer: int = 0  # made, but with no gold answer to score against
    changed: int = 0  # recorded, but changed in the source since: drawn again
    not_done: int = 0
    stopped: str | None = None
    images: int = 0
    unit: str = "image"
    seconds: float = 0.0
    load: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the recipe the run was drawn with (``recipes.fingerprints.run_record``), which run.json
    # records
    recipe: dict[str, Any] | None = None
    # each config field set and where its value came from (``recipes.resolve``): run.json's
    sources: dict[str, str] | None = None

    # --- counting: the stages' only way to change the figures ---

    def passed_done(self) -> None:
        """A selected item the folder already holds went by."""
        self.already_done += 1

    def took(self, fate: str, result: Result) -> None:
        """What the sink made of one result (``RunFolder.take``'s answer)."""
        if fate == "made":
            row = result.output.typed  # type: ignore[union-attr]
            assert row is not None  # the sink checked it
            self.rendered += 1
            self.images += len(row.images)
            self.no_answer += unscorable(row) is not None
        elif fate == "stopped":
            self.not_done += 1
            self.stopped = self.stopped or result.reason  # type: ignore[union-attr]
        elif fate == "filtered":
            self.filtered[result.error.rule] += 1  # type: ignore[union-attr]
        elif fate == "failed":
            self.failed += 1
        else:
            self.skipped += 1

    def said(self, note: str, log) -> None:
        """A note for the user, said now and kept in run.json."""
        log(note)
        self.notes.append(note)

    def line(self) -> str:
        text = (f"{self.rendered} item(s) rendered ({self.images} {self.unit}(s)) into "
                f"{self.out} in {self.seconds:.1f} s")
        if self.changed:
            text += f" ({self.changed} drawn again: their source changed)"
        if self.already_done:
            text += f"; {self.already_done} already done"
        if self.no_answer:
            text += (f"; {self.no_answer} item(s) have no gold answer (eval reports them "
                     "unscored)")
        if self.filtered:
            rules = ", ".join(f"{n} {rule}" for rule, n in sorted(self.filtered.items()))
            text += (f"; {sum(self.filtered.values())} left out by a rule ({rules}; see "
                     "skipped.jsonl)")
        if self.failed:
            text += (f"; {self.failed} failed at the API (see skipped.jsonl; --retry-failed "
                     "tries them again)")
        if self.skipped:
            text += f"; {self.skipped} skipped (see skipped.jsonl)"
        if self.not_done:
            text += f"; {self.not_done} not done: {self.stopped}"
        return text


# --- 1. selection --------------------------------------------------------------------------

def select_items(config: RunConfig, corpus: Corpus, execution: ExecutionOptions, drops_items: bool,
           resuming: bool, summary: RunSummary, log) -> tuple[Selected, int | None]:
    """The selection streamed (its ids kept when ``resuming``, to check the manifest against)
    and the limit the sink counts: ``--limit`` when the renderer ``drops_items`` (the
    selection then goes on past it), else None (the selection stops at it)."""
    at_sink = config.limit if drops_items else None
    selected = config.model_copy(update={"limit": None}) if at_sink is not None else config
    selection = stream_selection(selected, corpus, log=log,
                                 progress=show_progress(execution.progress),
                                 dedup_file=execution.out / DEDUP,
                                 reuse_dedup=not execution.overwrite, ids=resuming)
    if at_sink is not None:
        selection.count = min(selection.count, at_sink)
    report = selection.report
    for note in report.notes:
        summary.said(note, log)
    summary.selected = selection.count
    summary.load = report.as_dict()
    return selection, at_sink


# --- 2. resume -----------------------------------------------------------------------------

@dataclass
class Resumed:
    """Where a folder stands for this run: ``done``, the ids that need no more work (made or
    skipped); ``made``, the ids its manifest holds; ``changed``, the items drawn again since
    their source changed (their records forgotten), in the order the folder had them."""

    done: set[str]
    made: set[str]
    changed: list[str]


def resume_folder(folder: RunFolder, selection: Selected, on_change: str, summary: RunSummary,
           log) -> Resumed:
    """The folder's state against the selection (``resuming.take_stock``): repeated rows
    removed, rows outside the selection refused, the items changed in the source since
    forgotten so that they are drawn again (``--on-change refuse``: one line instead), and
    each thing done to the folder said."""
    repaired, done, made = resuming.take_stock(folder, selection.ids)
    changed = resuming.refresh(folder, selection.ids, on_change) \
        if selection.ids is not None else []
    if changed:
        if is_sharded(folder.path):  # the shards from the first changed one on go
            repaired, done, made = resuming.take_stock(folder, selection.ids)
        else:
            done, made = done - set(changed), made - set(changed)
        summary.said(f"{folder.path}: {len(changed)} item(s) changed in the source since "
                     f"they were drawn (the first: {changed[0]}): drawn again", log)
        summary.changed = len(changed)
    selection.ids = None  # checked: not held through the run
    if folder.shards_removed:
        summary.said(f"{folder.path / 'shards'}: removed {folder.shards_removed} shard(s) "
                     "torn, changed since, or never recorded in the manifest, from the first "
                     "such on; their items are made again", log)
    if repaired:
        summary.said(f"{folder.path / MANIFEST}: removed {repaired} repeated row(s) (two "
                     "runs once wrote into this folder)", log)
    return Resumed(done, made, changed)


# --- 3. drawing ----------------------------------------------------------------------------

def make_job(config: RunConfig, api: ApiOptions | None = None):
    """The job of ``config``'s renderer (what a worker does with each item); with
    ``transforms`` (a recipe's), each item's images go through them as they are drawn."""
    job = job_for(config, api)
    if not config.transforms:
        return job
    return TransformedJob(job, [parse_step(step, "transforms:") for step in config.transforms])


class TransformedJob:
    """A job whose images go through ``steps`` as each item is drawn: the row is the one
    ``mmconvert transform`` makes of the drawn row (the new images, the steps in its
    ``postprocess`` history), the item's other files kept."""

    def __init__(self, job, steps):
        self._job, self._steps = job, steps

    def __getattr__(self, name: str):
        return getattr(self._job, name)

    def pictures(self, item: Item, part: RenderPart) -> None:
        """None: the steps act on the drawn files (a JPEG step on its encoding)."""
        return None

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]):
        output = self._job.run(item, part, prompt_keys)
        row = output.row if isinstance(output.row, dict) else \
            output.row.model_dump(mode="json", exclude_unset=True)
        files = dict(output.files)
        made = post(row, self._steps, [(entry, decode(files[entry["path"]]))
                                       for entry in row["images"]])
        drawn = {entry["path"] for entry in row["images"]}
        made.files += [(rel, data) for rel, data in output.files if rel not in drawn]
        return made


def tasks(items: Iterable[Item], resumed: Resumed, job, corpus: Corpus, summary: RunSummary,
          order: dict[str, int] | None = None) -> Iterator[Task]:
    """The task of each item not done, in the selection's order; each done item counted as it
    passes. ``order``: filled with each item's place in the selection (kept only when
    changed items' rows must be put back in it)."""
    for item in items:
        if order is not None:
            order.setdefault(item.id, len(order))
        if item.id in resumed.done:
            summary.passed_done()
        else:
            yield item, job.part(item, corpus), corpus.prompt_keys(item)


def passed_to_limit(items: Iterable[Item], resumed: Resumed, summary: RunSummary) -> None:
    """With the limit counted at the sink and already reached: the selection's items done
    counted until every one the manifest holds has passed; nothing is drawn."""
    left = set(resumed.made)
    for item in items:
        if not left:
            return
        if item.id in resumed.done:
            summary.passed_done()
        left.discard(item.id)


# --- 4. the sink ---------------------------------------------------------------------------

def sink(folder: RunFolder, results, on_error: str, summary: RunSummary,
         wanted: int | None = None, row_model: type[BaseModel] | None = None) -> None:
    """Each result in task order into the folder (a made row checked against the job's
    ``row_model``; a skip recorded; an error raised), counted; once ``wanted`` items are
    made (``--limit`` at the sink), the work still under way is cancelled. Task order makes
    the items the same for any worker count."""
    if wanted is not None and wanted <= 0:
        results.close()
        return
    for result in results:
        fate = folder.take(result, on_error, row_model=row_model)
        summary.took(fate, result)
        if fate == "made" and wanted is not None and summary.rendered >= wanted:
            results.close()
            return


# --- 5. storage ----------------------------------------------------------------------------

def storage(folder: RunFolder, config: RunConfig, execution: ExecutionOptions,
            job) -> contextlib.AbstractContextManager[Any]:
    """How the made items are stored: packed into shards where the workers run
    (``--store shards``); files and rows made durable in groups; or each as it comes, for
    work that waits on the network (generate), whose rows must be on disk as soon as each
    paid response is."""
    if config.store == "shards":
        return folder.sharded(config.shard_rows, executor_for(execution.workers, 1).submit)
    if job.threads:
        return contextlib.nullcontext()
    return folder.grouped()
