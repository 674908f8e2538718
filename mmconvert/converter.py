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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from . import stages
from ._version import __version__, installed_version
from .api.errors import API_STAGE
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
from .corpora.files import InMemory
from .errors import BudgetReached, ItemError, MMConvertError, UsageError
from .executors import BACKEND, draws_here, executor_for, runs_here
from .items import Item, RenderPart
from .manifest import sync, write_json
from .progress import progress_bar
from .recipes.resolve import Resolved, resolve_config
from .renderers import renderer_class
from .resuming import reorder
from .rows import SCHEMA
from .runfolder import DEDUP, Failed, Made, Result, RunFolder, Stopped
from .selection import load_selection
from .shards import is_sharded
from .stages import RunSummary, make_job

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
            resolved: Resolved | None = None) -> RunSummary:
    """Do what ``mmconvert render`` (or another renderer's command, with ``api`` for a paid
    one) does; return the run's summary.

    ``config`` is its renderer's config model or a dict of its fields (``corpus``, a corpus
    name or a file; ``renderer`` names the renderer, the default one's when left out).
    ``items``, a list of dicts in the generic item schema (or ``Item`` objects), are the
    corpus instead (the config's ``corpus`` may then be left out). ``recipe`` (a shipped
    recipe's name or a recipe file) is the config the dict's fields go over. ``execution``
    (or ``out``, ``workers``, ``overwrite``, ``progress``, ``executor``, ``address``) says
    where and how it runs. Bad options are mmconvert's own one-line ``UsageError``.
    ``resolved``: the config as a caller put it together itself (``recipes.resolve.resolve_config``:
    the CLI, a curve's or frontier's point), for run.json's recipe and sources."""
    if items is not None and not isinstance(items, list):
        raise UsageError(f"items: a list of item dicts, not {type(items).__name__}")
    if config is not None and not isinstance(config, (RunConfig, dict)):
        raise UsageError("config: expected a mapping of option names to values, not "
                         f"{type(config).__name__}")
    # a config model: the fields its caller set, and its renderer (the model's own); its
    # defaults are not the caller's (given over a recipe, they silently undid its values)
    given = {"renderer": config.renderer,
             **config.model_dump(mode="json", exclude_unset=True)} \
        if isinstance(config, RunConfig) else dict(config or {})
    if items is not None:
        given.setdefault("corpus", InMemory.name)
    if resolved is None:
        resolved = resolve_config(
            [("call", given)], recipe=recipe, corpus=given.get("corpus", ""),
            renderer=given.get("renderer"),
            mismatch=f", not {given.get('renderer')}: leave renderer out, or the recipe",
            warn=log or (lambda m: print(m, file=sys.stderr)))
    config = config if isinstance(config, RunConfig) and recipe is None and items is None \
        else run_config(resolved.values, "config")
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
                        resolved=resolved)
    finally:
        BACKEND.reset(token)


def _convert(config: RunConfig, execution: ExecutionOptions, api: ApiOptions | None,
             log, corpus: Corpus | None = None,
             resolved: Resolved | None = None) -> RunSummary:
    """The run as its stages (``stages``): selection, resume, drawing, the sink, storage."""
    started = time.perf_counter()
    summary = RunSummary(out=execution.out, recipe=resolved.record if resolved else None,
                         sources=resolved.sources if resolved else None)
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
    selection, at_sink = stages.select_items(config, corpus, execution, job.renderer.drops_items,
                                       resuming, summary, log)
    for note in job.notes():
        summary.said(note, log)

    with folder.lock():  # one run at a time per folder; nothing is written before this
        _open_folder(folder, config, execution, api, job, selection, resuming, summary, log,
                     upgrade)
        resumed = stages.resume_folder(folder, selection, execution.on_change, summary, log)
        wanted = at_sink - len(resumed.made) if at_sink is not None else None
        if wanted is not None and wanted <= 0:
            stages.passed_to_limit(selection.items, resumed, summary)
        folder.skipped.append(*[s for s in selection.report.skipped
                                if (s["id"] or s["reason"]) not in resumed.done])
        # the selection's order, to put the changed items' rows back in it (kept only then:
        # a run of 100,000 items would hold every id)
        order: dict[str, int] | None = {} if resumed.changed else None
        todo = stages.tasks(selection.items, resumed, job, corpus, summary, order)
        try:
            with stages.storage(folder, config, execution, job):
                # the bar counts the items already done as the selection passes them
                results = _run_tasks(todo, config, execution, job, selection.count,
                                     lambda: summary.already_done, folder.spool)
                stages.sink(folder, results, config.on_error, summary, wanted, job.row_model)
        except (MMConvertError, OSError):
            folder.mark_failed(_run_info(config, summary, job, folder, status="failed"))
            raise
        if order is not None and not is_sharded(execution.out):
            reorder(folder, order)  # the changed items' rows were appended last
        summary.skipped += len(selection.report.skipped)
        summary.seconds = time.perf_counter() - started
        # every write of this run is in place: a temporary file left now is a killed run's
        # (a Ray pack task of a killed driver can outlive the resume's first sweep)
        folder.remove_partial_files()
        status = "stopped: budget" if summary.stopped else "complete"
        folder.write_info(_run_info(config, summary, job, folder, status=status))
        return summary


def _open_folder(folder: RunFolder, config: RunConfig, execution: ExecutionOptions,
                 api: ApiOptions | None, job, selection, resuming: bool,
                 summary: RunSummary, log, upgrade) -> None:
    """The folder made ready under its lock: checked again, created (``--overwrite``'s
    leftovers said), the dedup report and run.json ("running") written, and with
    ``--retry-failed`` the requests that failed forgotten."""
    folder.check(config.identity(), execution.overwrite, upgrade)  # again, under the lock
    if not execution.overwrite:  # a run the job cannot continue alike: one line
        job.resuming(folder.info())
    kept = folder.create(execution.overwrite)
    if kept:
        summary.said(f"{execution.out}: --overwrite left {len(kept)} file(s) no run recorded "
                     f"(the first: {kept[0]}); a run deletes only its own files", log)
    if selection.report.dedup is not None:
        write_json(execution.out / DEDUP, selection.report.dedup, indent=1)
    if selection.count and not resuming and draws_here(execution.workers, job.threads):
        # a fresh run with items to draw here: what its first item needs (the document
        # renderer's browser, 0.9 s) starts while run.json is made (its fonts' digests)
        job.warm()
    folder.write_info(_run_info(config, summary, job, folder, status="running"))
    if api is not None and api.retry_failed:
        folder.skipped.rewrite([r for r in folder.skipped.read()
                                if r.get("stage") != API_STAGE])


def preview(config: RunConfig, api: ApiOptions, *, log=None) -> tuple[list[str], str]:
    """``--dry-run`` of a renderer that calls a paid API: the prompts and the estimated cost
    of a run, calling nothing and writing nothing."""
    corpus = resolve(config.corpus)
    job = renderer_class(config.renderer).job(config, api, dry_run=True)
    items, _ = load_selection(config, corpus, log=log)
    return job.dry_run([(item, job.part(item, corpus), corpus.prompt_keys(item))
                        for item in items])


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
        **({"sources": summary.sources} if summary.sources else {}),
    }
    info.update(job.report(folder.rows))
    return info
