"""Orchestration only: load → sample → limit → render → write, resumable and parallel.

What "render" means is the job's (``jobs.py``): A4 pages, or the caption occluder.

Workers render and write their own image files (atomically); the main process appends manifest
rows strictly in item order, so the manifest is byte-identical for any ``--workers`` and a
killed run leaves a manifest that is a complete prefix of the finished one.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ._version import __version__
from .config import (
    ApiOptions,
    ExecutionOptions,
    RunConfig,
    build,
    run_config,
    show_progress,
)
from .corpora import Corpus, resolve
from .corpora.base import corpus_identity, upgraded_identity
from .errors import BudgetReached, ItemError, MMConvertError, UsageError
from .executors import BACKEND, draws_here, executor_for, runs_here
from .items import Item, RenderPart
from .manifest import MANIFEST, sync, write_json
from .progress import progress_bar
from .renderers import job_for, renderer_class
from .rows import SCHEMA
from .runfolder import DEDUP, Failed, Made, Result, RunFolder, Stopped
from .scoring.spec import unscorable
from .selection import load_selection, stream_selection
from .shards import is_sharded


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
    # the recipe the run was drawn with (``recipes.run_record``), which run.json records
    recipe: dict[str, Any] | None = None

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


# --- worker side -------------------------------------------------------------------------

class JobWorker:
    """Builds the worker of a run (``job.run`` behind ``_run_item``): in this process from the
    job already made (a generate job's client and budget are shared by its threads), in
    another process from the config, since only the config is pickled."""

    def __init__(self, config: RunConfig, job=None):
        self.config, self.job = config, job
        self.api = job.api_options if job is not None else None

    def __getstate__(self):
        # the config, and how to reach the APIs (no key: keys are read from the
        # environment of the process that calls)
        return {"config": self.config, "api": self.api}

    def __setstate__(self, state):
        self.config, self.job, self.api = state["config"], None, state.get("api")

    def __call__(self):
        return functools.partial(_run_group, self.job or make_job(self.config, self.api))


def make_job(config: RunConfig, api: ApiOptions | None = None):
    """The job of ``config``'s renderer; with ``transforms`` (a recipe's), each item's images
    go through them as they are drawn."""
    job = job_for(config, api)
    if not config.transforms:
        return job
    from .postprocess.transforms import parse_step

    return TransformedJob(job, [parse_step(step, "transforms:") for step in config.transforms])


class TransformedJob:
    """A job whose images go through ``steps`` as each item is drawn: the row is the one
    ``mmconvert transform`` makes of the drawn row (the new images, the steps in its
    ``postprocess`` history), the item's other files kept."""

    def __init__(self, job, steps):
        self._job, self._steps = job, steps

    def __getattr__(self, name: str):
        return getattr(self._job, name)

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]):
        from .postprocess.imaging import decode
        from .postprocess.sweep import post

        output = self._job.run(item, part, prompt_keys)
        row = output.row if isinstance(output.row, dict) else \
            output.row.model_dump(mode="json", exclude_unset=True)
        files = dict(output.files)
        made = post(row, self._steps, [(entry, decode(files[entry["path"]]))
                                       for entry in row["images"]])
        drawn = {entry["path"] for entry in row["images"]}
        made.files += [(rel, data) for rel, data in output.files if rel not in drawn]
        return made


def _run_group(job, tasks: list[tuple[Item, RenderPart, tuple[str, ...]]]) -> list[Result]:
    """A group of consecutive tasks: the job prepares their items together, then each is
    run (a failure to prepare is met again, per item, when the item runs)."""
    with contextlib.suppress(ItemError):
        job.prepare([task[0] for task in tasks])
    return [_run_item(job, task) for task in tasks]


def _run_item(job, task: tuple[Item, RenderPart, tuple[str, ...]]) -> Result:
    """Render one item: Made, Failed (its ItemError), or Stopped when the budget allows no
    more requests."""
    item, part, prompt_keys = task
    try:
        output = job.run(item, part, prompt_keys)
        if isinstance(output.row, BaseModel):  # a typed row: as its manifest line holds it
            output.row = output.row.model_dump(mode="json", exclude_unset=True)
        output.row["source_sha256"] = item.fingerprint()
        return Made(output)
    except ItemError as err:
        err.item_id = err.item_id or item.id
        if err.stage == "load":
            err.stage = "render"
        return Failed(err, item.fingerprint())
    except BudgetReached as err:
        return Stopped(str(err))


def _write_remotely(out: str, under: str, results: list[Result]) -> list[Result]:
    """On a cluster worker: write a group's made items' files into the run folder there,
    synced in one pass before their rows go back (as the local sink syncs a group), or
    ``under`` its spool for a sharded run (synced with their shard)."""
    made = [result.output for result in results if isinstance(result, Made)]
    for output in made:
        output.write_into(Path(out), under=under, durable=False)
    if made and not under:
        sync()
    return results


# --- main side ---------------------------------------------------------------------------


def convert(config: RunConfig | dict | None = None, *, items: list[dict] | None = None,
            recipe: str | Path | None = None, out: Path | str | None = None, workers: int = 1,
            overwrite: bool = False, progress: bool | None = None, log=None,
            api: ApiOptions | dict | None = None, executor: str | None = None,
            address: str | None = None,
            execution: ExecutionOptions | None = None,
            recipe_record: dict[str, Any] | None = None) -> RunSummary:
    """Do what ``mmconvert render`` (or another renderer's command, with ``api`` for a paid
    one) does; return the run's summary.

    ``config`` is its renderer's config model or a dict of its fields (``corpus``, a corpus
    name or a file; ``renderer`` names the renderer, the default one's when left out).
    ``items``, a list of dicts in the generic item schema (or ``Item`` objects), are the
    corpus instead (the config's ``corpus`` may then be left out). ``recipe`` (a shipped
    recipe's name or a recipe file) is the config the dict's fields go over. ``execution``
    (or ``out``, ``workers``, ``overwrite``, ``progress``, ``executor``, ``address``) says
    where and how it runs. Bad options are mmconvert's own one-line ``UsageError``.
    ``recipe_record``: the recipe a caller that merged one itself drew with (the CLI), for
    run.json."""
    from .corpora.files import InMemory

    if items is not None and not isinstance(items, list):
        raise UsageError(f"items: a list of item dicts, not {type(items).__name__}")
    if config is not None and not isinstance(config, (RunConfig, dict)):
        raise UsageError("config: expected a mapping of option names to values, not "
                         f"{type(config).__name__}")
    given = config.model_dump(mode="json") if isinstance(config, RunConfig) else \
        dict(config or {})
    if items is not None:
        given.setdefault("corpus", InMemory.name)
    if recipe is not None:
        from .recipes import fingerprint_note, load_recipe, merged

        found = load_recipe(recipe)
        if given.get("renderer") not in (None, found.renderer):
            raise UsageError(f"recipe {found.name} is drawn by the {found.renderer} renderer, "
                             f"not {given['renderer']}: leave renderer out, or the recipe")
        given = merged(found.config_values(given.get("corpus", "")), given)
        note = fingerprint_note(found, recipe)
        if note:
            (log or (lambda m: print(m, file=sys.stderr)))(f"warning: {note}")
        from .recipes import run_record

        recipe_record = run_record(found, recipe, note)
    config = config if isinstance(config, RunConfig) and recipe is None and items is None \
        else run_config(given, "config")
    api_options: ApiOptions | None = build(ApiOptions, api, "api") if isinstance(api, dict) \
        else api
    if execution is None:
        if executor is None:
            executor, address = BACKEND.get()
        execution = build(ExecutionOptions, {
            "out": out, "workers": workers, "overwrite": overwrite, "progress": progress,
            "executor": executor, "address": address}, "execution")
    if execution.out.exists() and not execution.out.is_dir():
        raise UsageError(f"out {execution.out}: a file, not a folder for the run")
    token = BACKEND.set((execution.executor, execution.address))
    try:
        return _convert(config, execution, api_options,
                        log or (lambda m: print(m, file=sys.stderr)),
                        corpus=InMemory(items) if items is not None else None,
                        recipe=recipe_record)
    finally:
        BACKEND.reset(token)


def _convert(config: RunConfig, execution: ExecutionOptions, api: ApiOptions | None,
             log, corpus: Corpus | None = None,
             recipe: dict[str, Any] | None = None) -> RunSummary:
    started = time.perf_counter()
    summary = RunSummary(out=execution.out, recipe=recipe)

    corpus = corpus or resolve(config.corpus)
    # the corpus options as its model reads them, defaults included (what run.json records)
    config = config.model_copy(update={
        "corpus_options": corpus_identity(corpus, config.corpus_options)})
    job = make_job(config, api)  # fails early on bad options, model, key
    summary.unit = job.unit
    folder = RunFolder(execution.out)

    def upgrade(recorded):
        return upgraded_identity(recorded, corpus)
    folder.check(config.identity(), execution.overwrite, upgrade)

    # a folder with rows: the selection's ids are kept, to check its manifest against
    resuming = not execution.overwrite and folder.manifest.path.is_file() and \
        folder.manifest.path.stat().st_size > 0
    # ``--limit`` counts items that become output: for a renderer that may drop an item by a
    # rule while it makes it (the occluder's short captions), the selection goes on past the
    # limit and the sink stops once the limit's items are in the manifest
    at_sink = config.limit is not None and job.renderer.drops_items
    selected = config.model_copy(update={"limit": None}) if at_sink else config
    selection = stream_selection(selected, corpus, log=log,
                                 progress=show_progress(execution.progress),
                                 dedup_file=execution.out / DEDUP,
                                 reuse_dedup=not execution.overwrite, ids=resuming)
    if at_sink and config.limit is not None:
        selection.count = min(selection.count, config.limit)
    report = selection.report
    for note in report.notes:
        log(note)
    summary.selected = selection.count
    summary.load = report.as_dict()
    summary.notes.extend(report.notes)
    for note in job.notes():
        log(note)
        summary.notes.append(note)

    with folder.lock():  # one run at a time per folder; nothing is written before this
        folder.check(config.identity(), execution.overwrite, upgrade)  # again, under the lock
        if not execution.overwrite:  # a run the job cannot continue alike: one line
            job.resuming(folder.info())
        kept = folder.create(execution.overwrite)
        if kept:
            note = (f"{execution.out}: --overwrite left {len(kept)} file(s) no run recorded "
                    f"(the first: {kept[0]}); a run deletes only its own files")
            log(note)
            summary.notes.append(note)
        if report.dedup is not None:
            write_json(execution.out / DEDUP, report.dedup, indent=1)

        if selection.count and not resuming and draws_here(execution.workers, job.threads):
            # a fresh run with items to draw here: what its first item needs (the document
            # renderer's browser, 0.9 s) starts while run.json is made (its fonts' digests)
            job.warm()
        folder.write_info(_run_info(config, summary, job, folder, status="running"))
        if api is not None and api.retry_failed:
            from .api.errors import API_STAGE

            folder.skipped.rewrite([r for r in folder.skipped.read()
                                    if r.get("stage") != API_STAGE])
        repaired, done, made = folder.resume(selection.ids)
        changed = (folder.refresh(selection.ids, execution.on_change)
                   if selection.ids is not None else [])
        if changed:
            if is_sharded(execution.out):  # the shards from the first changed one on go
                repaired, done, made = folder.resume(selection.ids)
            else:
                done, made = done - set(changed), made - set(changed)
            note = (f"{execution.out}: {len(changed)} item(s) changed in the source since they "
                    f"were drawn (the first: {changed[0]}): drawn again")
            log(note)
            summary.notes.append(note)
            summary.changed = len(changed)
        if at_sink and config.limit is not None and len(made) >= config.limit:
            # the limit's items are all made: count the selection's items already done
            # (until every one in the manifest has passed), and make nothing
            left = set(made)
            for item in selection.items:
                if not left:
                    break
                summary.already_done += item.id in done
                left.discard(item.id)
        selection.ids = None
        if folder.shards_removed:
            note = (f"{execution.out / 'shards'}: removed {folder.shards_removed} shard(s) torn, "
                    "changed since, or never recorded in the manifest, from the first such on; "
                    "their items are made again")
            log(note)
            summary.notes.append(note)
        if repaired:
            note = (f"{execution.out / MANIFEST}: removed {repaired} repeated row(s) (two runs "
                    "once wrote into this folder)")
            log(note)
            summary.notes.append(note)
        new_skips = [s for s in report.skipped if (s["id"] or s["reason"]) not in done]
        folder.skipped.append(*new_skips)

        # the selection's order, to put the changed items' rows back in it (kept only then: a
        # run of 100,000 items would hold every id)
        order: dict[str, int] = {}

        def todo() -> Iterator[tuple[Item, RenderPart, tuple[str, ...]]]:
            for item in selection.items:
                if changed:
                    order.setdefault(item.id, len(order))
                if item.id in done:
                    summary.already_done += 1
                else:
                    yield item, job.part(item, corpus), corpus.prompt_keys(item)

        try:
            # files and rows made durable in groups; not for work that waits on the network
            # (generate), whose rows must be on disk as soon as each paid response is
            grouped: contextlib.AbstractContextManager[Any]
            if config.store == "shards":
                # a shard is packed where the workers run (``Executor.submit``)
                grouped = folder.sharded(config.shard_rows,
                                         executor_for(execution.workers, 1).submit)
            elif job.threads:
                grouped = contextlib.nullcontext()
            else:
                grouped = folder.grouped()
            with grouped:
                # the bar counts the items already done as the selection passes them
                wanted = config.limit - len(made) if at_sink and config.limit is not None \
                    else None
                _sink(folder, _run_tasks(todo(), config, execution, job, selection.count,
                                         lambda: summary.already_done, folder.spool),
                      config, summary, wanted, job.row_model)
        except (MMConvertError, OSError):
            folder.mark_failed(_run_info(config, summary, job, folder, status="failed"))
            raise
        if changed and not is_sharded(execution.out):
            folder.in_order(order)  # the changed items' rows were appended last
        summary.skipped += len(report.skipped)
        summary.seconds = time.perf_counter() - started
        # every write of this run is in place: a temporary file left now is a killed run's
        # (a Ray pack task of a killed driver can outlive the resume's first sweep)
        folder.remove_partial_files()
        status = "stopped: budget" if summary.stopped else "complete"
        folder.write_info(_run_info(config, summary, job, folder, status=status))
        return summary


def preview(config: RunConfig, api: ApiOptions, *, log=None) -> tuple[list[str], str]:
    """``--dry-run`` of a renderer that calls a paid API: the prompts and the estimated cost
    of a run, calling nothing and writing nothing."""
    corpus = resolve(config.corpus)
    job = renderer_class(config.renderer).job(config, api, dry_run=True)
    items, _ = load_selection(config, corpus, log=log)
    return job.dry_run([(item, job.part(item, corpus), corpus.prompt_keys(item))
                        for item in items])


def _sink(folder: RunFolder, results, config: RunConfig, summary: RunSummary,
          wanted: int | None = None, row_model: type[BaseModel] | None = None) -> None:
    """Each result in task order: a made item into the folder (its row checked against the
    job's ``row_model``), a skip recorded, a stop counted, an error raised; once ``wanted``
    items are made (``--limit``), the work still under way is cancelled. Task order makes the
    items the same for any worker count."""
    if wanted is not None and wanted <= 0:
        results.close()
        return
    for result in results:
        fate = folder.take(result, config.on_error, row_model=row_model)
        if fate == "made":
            row = result.output.row
            summary.rendered += 1
            summary.images += len(row["images"])
            summary.no_answer += unscorable(row) is not None
            if wanted is not None and summary.rendered >= wanted:
                results.close()
                return
        elif fate == "stopped":
            summary.not_done += 1
            summary.stopped = summary.stopped or result.reason
        elif fate == "filtered":
            summary.filtered[result.error.rule] += 1
        elif fate == "failed":
            summary.failed += 1
        else:
            summary.skipped += 1


def _run_tasks(tasks: Iterator, config: RunConfig, execution: ExecutionOptions, job,
               total: int | None = None, passed: Callable[[], int] | None = None,
               spool: str = ""):
    """Results in task order, through the executor for this run: inline, processes, or (for a
    job that waits on the network) threads sharing ``job``. Tasks go in groups of
    ``job.batch``, cut in task order, as they come. ``spool``: where a sharded run's workers
    on a cluster write their files (``RunFolder.spool``)."""
    threads, api = job.threads, job.api_options
    if api is not None and api.budget is not None and not runs_here():
        raise UsageError("--budget is kept by one process, and --executor ray runs the "
                         "requests in several; leave out one or the other")
    groups = iter(lambda: list(itertools.islice(tasks, job.batch)), [])
    # enough groups to choose the executor (one group: inline; fewer than the workers: as
    # many processes as groups)
    head = list(itertools.islice(groups, max(1, threads or execution.workers or
                                             os.cpu_count() or 1)))
    executor = executor_for(execution.workers, len(head), threads=threads)
    # a run's workers on a cluster write their files where they run (a sharded run's into
    # its spool, which the cluster packs into shards): only rows travel back
    remote = functools.partial(_write_remotely, str(execution.out.resolve()), spool)
    results = executor.map(JobWorker(config, job), itertools.chain(head, groups),
                           remote=remote)
    try:
        yield from progress_bar((result for group in results for result in group), total,
                                show_progress(execution.progress), passed)
    finally:
        results.close()  # a sink that stops early (``--limit``) cancels the work under way


def _versions() -> dict[str, str]:
    from ._version import installed_version

    out = {"mmconvert": __version__, "python": platform.python_version()}
    for name in ("pymupdf", "pymupdf-fonts", "zlib-ng", "pillow", "pydantic", "datasets",
                 "spacy", "openai"):
        out[name] = installed_version(name) or "not installed"
    return out


def _run_info(config: RunConfig, summary: RunSummary, job, folder: RunFolder,
              status: str) -> dict[str, Any]:
    info = {
        "status": status,
        "schema": SCHEMA,
        "config": config.identity(),
        "on_error": config.on_error,
        "versions": _versions(),
        "fonts": job.fonts(),
        "load": summary.load,
        "notes": summary.notes,
        "items": summary.selected,
        **({"recipe": summary.recipe} if summary.recipe is not None else {}),
    }
    info.update(job.report(folder.manifest.read))
    return info
