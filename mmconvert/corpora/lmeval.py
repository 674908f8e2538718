"""lm-evaluation-harness tasks as a corpus: ``mmconvert render lm-eval:TASK``.

The task (a task, a group or a tag) is built by lm-eval's own ``TaskManager``: its dataset
path, name and splits, ``process_docs``, ``doc_to_text``, ``doc_to_choice``,
``doc_to_target`` and groups are the task's, run by lm-eval. mmconvert only reads what the
built task gives for each of its evaluation docs:

- **multiple choice** becomes a lettered question: the choices are the options (drawn as
  option pages), the answer the letter of the task's target. A task whose choices are the
  bare letters and whose prompt lists the options (MMLU's and CMMLU's "A. …" lines) has its
  options read back from that prompt; the question is the prompt before them.
- **generation** keeps the task's target (the accepted answers) and is scored by ``eval``
  with the task's own filters and metrics (``process_results``), run by lm-eval.
- The question is the task's ``doc_to_text`` prompt without its trailing answer cue
  ("Answer:", "答案："); a prompt that opens with a long passage (a reading task) has the
  passage as the item's context. ``--render`` overrides what is drawn.
- Every row records the task, its version, group, split, doc index and lm-eval's own
  zero-shot prompt (``metadata.lm_eval``).

Data comes from the hub as the task says, or from ``--source``: a local copy of the task's
dataset in the hub's layout (``<config>/<split>-*.parquet``, ``<split>-*.jsonl``,
``data/<split>-*``, or ``<split>/<config>.csv`` as CMMLU's release has it), read by the
``datasets`` library's own builders.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from .._version import installed_version
from ..errors import ItemError, SourceError, UsageError, did_you_mean, first_line, needs
from ..items import LETTERS, Item, RenderPart, safe_name
from ..manifest import atomic_write, user_cache
from ..options import cli
from ..rows import Row
from .base import Corpus, CorpusOptions, LoadReport, LoadRequest, RowGuard, options_field
from .sources import hub_reachable, offline

TAKES = ("multiple_choice", "generate_until")
NOT_INSTALLED = needs("lm-eval:TASK", "lm-evaluation-harness", "lm-eval")
# the builder ``datasets`` reads each kind of file with
BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv",
            ".tsv": "csv", ".arrow": "arrow"}
# a trailing answer cue: a short last line ending in a colon ("Answer:", "A:", "答案：")
_CUE = re.compile(r"\n?[^\S\n]*([^\n]{0,24}[:：])[^\S\n]*$")
# a reading task's passage: at least this long, and twice the question after it
PASSAGE_CHARS = 400


class LmEvalOptions(CorpusOptions):
    language: str | None = Field(None, description="the items' language (the prompts of "
                                                   "lang-<language>/ first)",
                                 json_schema_extra=cli(default="en"))


def _lm_eval_tasks():
    try:
        import lm_eval.tasks
    except ImportError:
        raise UsageError(NOT_INSTALLED) from None
    for name in ("lm_eval", "lm-eval"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return lm_eval.tasks


@functools.lru_cache(maxsize=1)
def task_manager():
    """lm-eval's TaskManager over all its shipped tasks (about 6 s to index them), once: for
    groups and tags; a task alone is built by ``manager_for``, over its own folder."""
    return _lm_eval_tasks().TaskManager()


def _listing(folder: Path) -> str:
    """A digest of the task folder's files (names, sizes, times): the index cache's key."""
    import hashlib
    import os

    digest = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            stat = os.stat(path)
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def index_file(cache: Path, folder: Path) -> Path:
    """The file in ``cache`` that keeps the index of the lm-eval whose task folder is
    ``folder``: one for each installation, so that two environments (a project's and a fresh
    clone's) do not each index again over the other's, 6 s at every switch."""
    import hashlib

    return cache / f"lm-eval-index-{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}.json"


@functools.lru_cache(maxsize=1)
def task_index() -> dict[str, tuple[str, str | None, tuple[str, ...]]]:
    """Every lm-eval task, group and tag: name -> (kind, YAML path, tags). lm-eval indexes
    its 14,000 entries in about 6 s on every call; this keeps the index in mmconvert's cache
    folder (``$XDG_CACHE_HOME/mmconvert``), a file for each installation (``index_file``),
    under lm-eval's version and a digest of its task folder's listing, so a changed or
    upgraded lm-eval indexes again."""
    import json
    from importlib.util import find_spec

    # found, not imported: importing lm_eval.tasks (datasets, pandas) takes a second, which a
    # name the index has not (a typo) need not wait for
    spec = find_spec("lm_eval")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(NOT_INSTALLED)
    folder = Path(next(iter(spec.submodule_search_locations))) / "tasks"
    key = f"{installed_version('lm_eval') or '?'}:{_listing(folder)}"
    cache = index_file(user_cache(), folder)
    try:
        kept = json.loads(cache.read_text(encoding="utf-8"))
        if kept.get("key") == key:
            entries = {name: (kind, path, tuple(tags))
                       for name, (kind, path, tags) in kept["entries"].items()}
            if well_formed(entries, folder):
                return entries
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass  # none yet, unreadable or not well formed: indexed again
    entries = {name: (entry.kind.name, str(entry.yaml_path) if entry.yaml_path else None,
                      tuple(sorted(getattr(entry, "tags", None) or ())))
               for name, entry in task_manager().task_index.items()}
    try:
        atomic_write(cache, json.dumps({"key": key, "entries": entries}).encode("utf-8"))
    except OSError:
        pass  # a read-only home: indexed each time, as lm-eval does
    return entries


# the kinds of entry lm-eval's task index holds
INDEX_KINDS = frozenset({"TASK", "PY_TASK", "GROUP", "TAG"})


def task_name_ok(name: Any) -> bool:
    """Whether ``name`` is a name lm-eval's index gives (some hold '(' or '.'): printable,
    no path separator, not hidden."""
    return isinstance(name, str) and bool(name) and name.isprintable() and \
        not any(c in name for c in "/\\") and not name.startswith(".")


def well_formed(entries: dict[str, Any], folder: Path) -> bool:
    """Whether a kept index is one lm-eval could have made: printable names without path
    separators, known kinds, YAML paths inside lm-eval's task folder, tags of names. A file
    in the user's cache folder is trusted no further (a name holding a newline once became a
    line of the written harness module)."""
    import os

    root = os.path.normpath(str(folder)) + os.sep
    for name, (kind, path, tags) in entries.items():
        if not task_name_ok(name) or kind not in INDEX_KINDS or \
                not all(map(task_name_ok, tags)):
            return False
        if path is not None and (not isinstance(path, str) or
                                 not os.path.normpath(path).startswith(root)):
            return False
    return True


def manager_for(names: list[str]):
    """A TaskManager that can build ``names``: over only their folders when each is a task
    of one YAML file (a fraction of a second), else over all of lm-eval's tasks."""
    index = task_index()
    found = [index.get(name) for name in names]
    if not names or any(e is None or e[0] != "TASK" or e[1] is None for e in found):
        return task_manager()
    folders = sorted({str(Path(e[1]).parent) for e in found if e is not None and e[1]})
    return _folder_manager(tuple(folders))


@functools.lru_cache(maxsize=8)
def _folder_manager(folders: tuple[str, ...]):
    return _lm_eval_tasks().TaskManager(include_defaults=False, include_path=list(folders))


def task_config(name: str) -> dict[str, Any] | None:
    """The configuration of lm-eval task ``name`` read from its YAML with its includes and
    without its functions (nothing is imported or downloaded); None for a group, a tag or a
    task of Python code."""
    entry = task_index().get(name)
    if entry is None or entry[1] is None or entry[0] != "TASK":
        return None
    from lm_eval.tasks._yaml_loader import load_yaml

    try:
        config = load_yaml(Path(entry[1]), resolve_func=False)
    except Exception:  # noqa: BLE001 - lm-eval builds the task and says what is wrong
        return None
    return config if isinstance(config.get("task"), str) else None


def _splits(folder: Path, config: str | None) -> dict[str, list[str]]:
    """The data files of one dataset config in ``folder``, by split: ``<split>-*.ext`` and
    ``<split>.ext`` files (the hub's names), or ``<split>/<config>.ext`` (a release that keeps
    one file per config in each split's folder)."""
    found: dict[str, list[str]] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix.lower() in BUILDERS:
            split = path.name.split("-", 1)[0].split(".", 1)[0]
            found.setdefault(split, []).append(str(path))
        elif path.is_dir() and config:
            for ext in BUILDERS:
                if (path / f"{config}{ext}").is_file():
                    found.setdefault(path.name, []).append(str(path / f"{config}{ext}"))
    return found


def local_files(source: Path, path: str, config: str | None) -> dict[str, list[str]]:
    """A local copy's data files of hub dataset ``path`` config ``config``, by split; a
    SourceError naming what was looked for when there are none."""
    if not source.is_dir():
        raise SourceError(f"--source {source}: no such folder")
    places = [source / config] if config else []
    places += [source, source / "data"]
    for place in places:
        found = _splits(place, config)
        if found:
            return found
    looked = (f"{config}/<split>-*.parquet, " if config else "") + \
        "<split>-*.<parquet|jsonl|csv>, data/<split>-*" + \
        (f", <split>/{config}.csv" if config else "")
    raise SourceError(f"--source {source}: no local copy of {path}"
                      + (f" config {config}" if config else "") + f" (looked for {looked}, "
                      f"there or in a folder {path.replace('/', '-')} or "
                      f"{path.split('/')[-1]})")


@contextlib.contextmanager
def loading_with(load):
    """``datasets.load_dataset`` (which lm-eval's tasks call to fetch their data) replaced by
    ``load`` while this is open; ``load`` gets the original as its ``real`` argument."""
    import datasets

    real = datasets.load_dataset
    datasets.load_dataset = functools.partial(load, real=real)
    try:
        yield
    finally:
        datasets.load_dataset = real


def dataset_folder(source: Path, path: str, config: str | None) -> Path:
    """The folder under ``source`` holding hub dataset ``path``'s files: ``source`` itself
    (the dataset's own folder, ``ai2_arc/ARC-Easy`` or ``ai2_arc``), or its folder named
    after the hub id (``allenai-ai2_arc``, ``openai-gsm8k``) or that id's last part
    (``ai2_arc``, ``gsm8k``): the first that holds the files. One layout for ``render
    lm-eval:TASK --source`` and ``harness --source``, where a folder of several tasks'
    datasets is the usual one."""
    if not source.is_dir():
        raise SourceError(f"--source {source}: no such folder")
    for folder in (source, source / path.replace("/", "-"), source / path.split("/")[-1]):
        if folder.is_dir():
            try:
                local_files(folder, path, config)
            except SourceError:
                continue
            return folder
    local_files(source, path, config)  # raises, naming what was looked for
    return source


def dataset_source(source: Path | None):
    """A context in which the datasets lm-eval's tasks load come from ``source`` (a local
    copy in the hub's layout) when it is given, else from the hub; a hub that does not answer
    is one line saying to pass ``--source``."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()

    def load(path: str, name: str | None = None, *, real, **kwargs: Any):
        kwargs.pop("trust_remote_code", None)
        label = f"{path}" + (f" config {name}" if name else "")
        if source is not None:
            files = local_files(dataset_folder(source, path, name), path, name)
            builder = BUILDERS[Path(next(iter(files.values()))[0]).suffix.lower()]
            try:
                loaded = real(builder, data_files=files)
            except Exception as err:  # noqa: BLE001 - datasets' errors come in many classes
                raise SourceError(f"--source {source}: {label}: {first_line(err, 200)}") \
                    from None
            return _named_splits(loaded, f"--source {source}: {label}")

        try:
            if hub_reachable():
                return real(path, name, **kwargs)
            with offline():
                return real(path, name, **kwargs)
        except Exception as err:  # noqa: BLE001
            raise SourceError(f"cannot load {label} from the Hugging Face hub "
                              f"({first_line(err, 120)}); pass --source PATH with a local "
                              "copy in the hub's layout") from None

    return loading_with(load)


def _named_splits(loaded, where: str):
    """A local copy's splits, a split it lacks one line naming it and those it has (lm-eval
    reads its task's training split for few-shot examples: arc_easy said only KeyError:
    'train')."""
    import datasets

    if not isinstance(loaded, datasets.DatasetDict):
        return loaded

    class Splits(datasets.DatasetDict):
        def __getitem__(self, key):
            if isinstance(key, str) and key not in self:
                raise SourceError(f"{where}: no {key} split (it has {', '.join(self)}); the "
                                  f"task reads it: add its {key}-*.parquet (or .jsonl, .csv) "
                                  "files")
            return super().__getitem__(key)

    return Splits(loaded)


def without_cue(text: str) -> tuple[str, str]:
    """(the prompt without its trailing answer cue, the cue or '')."""
    found = _CUE.search(text)
    if not found or found.start() == 0 or not text[:found.start()].strip():
        return text.strip(), ""
    return text[:found.start()], found.group(1).strip()


def options_in_prompt(text: str, count: int) -> tuple[str, list[str]] | None:
    """(the question, the options) of a prompt that lists ``count`` lettered options as its
    last lines ("A. …" to the last letter), or None."""
    lines = text.split("\n")
    if len(lines) <= count:
        return None
    tail = lines[-count:]
    options = []
    for letter, line in zip(LETTERS, tail, strict=False):
        found = re.match(rf"\s*\(?{letter}[.)：:]\s?(.*)$", line)
        if not found:
            return None
        options.append(found.group(1))
    return "\n".join(lines[:-count]), options


def is_letters(choices: list) -> bool:
    return [str(c).strip().strip("()") for c in choices] == list(LETTERS[:len(choices)])


def split_passage(question: str) -> tuple[str | None, str]:
    """(passage, question) of a reading task's prompt: the paragraphs before the last, when
    they are long (``PASSAGE_CHARS``) and at least twice the last; else (None, question)."""
    head, sep, tail = question.rpartition("\n\n")
    if sep and len(head) >= PASSAGE_CHARS and len(head) >= 2 * len(tail) and tail.strip():
        return head.strip(), tail.strip()
    return None, question


class LmEval(Corpus[LmEvalOptions]):
    name = "lm-eval"
    argument = "TASK"
    options_model = LmEvalOptions
    description = "lm-evaluation-harness tasks: lm-eval:TASK (a task, group or tag)"
    render_part = "options"
    default_split = "test"

    def __init__(self, task: str | None = None):
        self.task = task

    def part_for(self, item: Item) -> RenderPart:
        return "context" if item.context else "options" if item.options else "all"

    def load(self, request: LoadRequest, report: LoadReport) -> Iterator[Item]:
        if not self.task:
            raise UsageError("lm-eval needs a task: lm-eval:TASK (for example lm-eval:arc_easy)")
        index = task_index()
        names = request.subsets or [self.task]
        for name in [self.task, *names]:
            if name not in index:
                raise UsageError(f"lm-eval has no task, group or tag {name!r}"
                                 + did_you_mean(name, list(index)))
            kind = (task_config(name) or {}).get("output_type", TAKES[0])
            if kind not in TAKES:  # said before any data is fetched
                raise UsageError(_refused(name, kind))
        with dataset_source(request.source):
            try:
                wanted = list(dict.fromkeys(names))
                loaded = manager_for(wanted).load(wanted)
            except (SourceError, UsageError):
                raise
            except Exception as err:  # noqa: BLE001 - a task that lm-eval cannot build
                raise SourceError(f"lm-eval cannot build {self.task}: "
                                  f"{first_line(err, 200, kind=True)}") from None
        parent = {child: group for group, children in loaded.get("group_map", {}).items()
                  for child in children}
        import lm_eval

        harness = getattr(lm_eval, "__version__", None)
        options = self.options_of(request)
        guard = RowGuard(request, report)
        return self._items(loaded, parent, harness, request, report, guard,
                           options.language or "en")

    def _items(self, loaded: dict[str, Any], parent: dict[str, str], harness: str | None,
               request: LoadRequest, report: LoadReport, guard: RowGuard,
               language: str) -> Iterator[Item]:
        """The tasks' items as they are read: a run with ``--limit 3`` reads three docs of
        a split of 300,000, not all of them (each doc's templates take about 5 ms)."""
        given = 0
        for name, task in loaded["tasks"].items():
            group = parent.get(name) or (self.task if self.task != name else None)
            for item in self._task_items(name, task, group, harness, request, guard,
                                         language):
                given += 1
                yield item
        if not given and not report.skipped:
            raise SourceError(f"lm-eval:{self.task}: its tasks have no docs to render")

    def _task_items(self, name: str, task, group: str | None, harness: str | None,
                    request: LoadRequest,
                    guard: RowGuard, language: str) -> Iterator[Item]:
        kind = task.config.output_type
        if kind not in TAKES:
            raise UsageError(_refused(name, kind))
        if task.config.doc_to_image is not None or task.config.doc_to_audio:
            raise UsageError(f"lm-eval task {name} already gives images or audio; mmconvert "
                             "takes text tasks")
        config = task.config
        split = request.split or (config.test_split if task.has_test_docs()
                                  else config.validation_split)
        reader = {config.training_split: task.training_docs,
                  config.validation_split: task.validation_docs,
                  config.test_split: task.test_docs}.get(split) if split else None
        docs = reader() if reader else None
        if docs is None:
            raise UsageError(f"lm-eval task {name} has no split {split!r}")
        subset = safe_name(name)
        source = {"task": name, "version": task.VERSION, "group": group, "output_type": kind,
                  "split": split, "dataset": task.config.dataset_path,
                  "config": task.config.dataset_name,
                  "harness": harness}
        if kind == "generate_until" and hasattr(task, "set_fewshot_seed"):
            # lm-eval's own (its default --fewshot_random_seed): each doc in order takes the
            # few-shot examples it takes in an lm-eval run of the whole split
            task.set_fewshot_seed(seed=LM_EVAL_FEWSHOT_SEED)
            check_fewshot(task, name, split)
        for index, doc in enumerate(docs):
            item_id = f"{subset}-{index:04d}"
            item = guard.convert(self.item, task, doc, index, item_id, subset, source,
                                 language)
            if item is not None:
                yield item

    def item(self, task, doc: dict, index: int, item_id: str, subset: str,
             source: dict[str, Any], language: str) -> Item:
        where = f"lm-eval task {source['task']} doc {index}"
        try:
            return self._item(task, doc, index, item_id, subset, source, language, where)
        except ItemError as err:
            err.item_id = err.item_id or item_id
            raise
        except (UsageError, SourceError):
            raise
        except Exception as err:  # noqa: BLE001 - the task's own templates and functions
            # failing on this doc (a Jinja template reading a field the row lacks): the row's
            # error, which --on-error skip records
            raise ItemError(f"the task cannot read this doc ({first_line(err, 200, kind=True)})",
                            where=where, field="doc", item_id=item_id) from None

    def _item(self, task, doc: dict, index: int, item_id: str, subset: str,
              source: dict[str, Any], language: str, where: str) -> Item:
        text = task.doc_to_text(doc)
        if not isinstance(text, str):
            raise UsageError(f"lm-eval task {source['task']}: doc_to_text gives a choice index "
                             "(a task that scores each choice as a continuation, like "
                             "WinoGrande); mmconvert takes tasks whose doc_to_text is the "
                             "question")
        target = task.doc_to_target(doc)
        question, cue = without_cue(text)
        lm_eval = {**source, "doc": index, "cue": cue,
                   "target_delimiter": task.config.target_delimiter,
                   "prompt": task.fewshot_context(doc, num_fewshot=0)}
        options: list[str] = []
        if source["output_type"] == "multiple_choice":
            choices = [str(c) for c in task.doc_to_choice(doc)]
            gold = _gold_index(target, choices, where)
            answer: str | list[str] = LETTERS[gold]
            lm_eval["choices"] = choices
            found = options_in_prompt(question, len(choices)) if is_letters(choices) else None
            if found:
                question, options = found
            else:
                options = choices
            options = options_field(options, where, "doc_to_choice")
        else:
            if task.config.doc_to_choice is not None and isinstance(target, int):
                target = task.doc_to_choice(doc)[target]
            answer = [str(t) for t in target] if isinstance(target, list) else [str(target)]
            lm_eval["target"] = answer
            lm_eval["doc_fields"] = doc  # the task's own scoring reads the doc
            lm_eval.update(generation(task))
        context, question = split_passage(question)
        if not question.strip() and not context:
            raise ItemError("the task's prompt is empty", where=where, field="doc_to_text")
        metadata: dict[str, Any] = {"lm_eval": lm_eval}
        if source["output_type"] == "generate_until":
            # asked as lm-eval asks it: its own few-shot prompt, whose examples show the form
            # its filters read ("#### 72"); the image prompt is the same with the drawn part
            # (the passage, or the question) in the image
            full = task.fewshot_context(doc, num_fewshot=lm_eval["num_fewshot"])
            drawn = context or question.strip()
            at = full.rfind(drawn) if drawn else -1
            if at >= 0:
                metadata["prompts"] = {"part": "context" if context else "all", "text": full,
                                       "image": full[:at] + IN_THE_IMAGE +
                                       full[at + len(drawn):]}
        return Item(id=item_id, corpus=self.name, subset=subset, split=source["split"],
                    language=language, context=context, question=question, options=options,
                    answer=answer, metadata=metadata, origin=where)

    def scoring(self, row: Row) -> dict[str, Any] | None:
        """A generation task is scored by the task's own filters and metrics (lm-eval's
        ``process_results`` on the stored doc), every filter reported and the task's first
        filter and metric its score; multiple choice by the option letter."""
        source = row.metadata.get("lm_eval") or {}
        if source.get("output_type") != "generate_until" or "doc_fields" not in source:
            return None
        return {"kind": "lm-eval", "metric": f"lm-eval:{source['task']}",
                "task": source["task"], "doc": source["doc_fields"],
                **({"primary": source["primary"]} if source.get("primary") else {}),
                **({"until": source["until"]} if source.get("until") else {})}


def check_fewshot(task, name: str, split: str) -> None:
    """A task whose few-shot split holds fewer docs than it draws examples from is one line
    naming the split, its rows and the count needed (lm-eval's sampler says only "Sample
    larger than population"); a doc of the evaluated split is never its own example, so that
    split needs one more."""
    wanted = int(task.config.num_fewshot or 0)
    if not wanted:
        return
    docs = task.fewshot_docs()
    if docs is None:
        return
    fewshot = task.config.fewshot_split or task.config.training_split or \
        task.config.validation_split
    needed = wanted + (1 if fewshot == split else 0)
    if len(docs) < needed:
        raise SourceError(f"lm-eval task {name}: its {wanted} few-shot example(s) are drawn "
                          f"from split {fewshot!r}, which has {len(docs)} row(s) here; it needs "
                          f"{needed} (a local copy with that split whole)")


# lm-eval's default --fewshot_random_seed (lm_eval.defaults.DEFAULT_OTHER_SEED)
LM_EVAL_FEWSHOT_SEED = 1234
# what a generation task's image prompt says in place of the part the image shows
IN_THE_IMAGE = "(see the image)"


def generation(task) -> dict[str, Any]:
    """What a generation task's scoring and prompt take from its config: its few-shot count,
    the stop sequences lm-eval asks the server for (``until``), and its primary score, the
    first filter's first metric (every filter is reported beside it)."""
    kwargs = task.config.generation_kwargs or {}
    until = kwargs.get("until") or []
    filters = [f.name for f in getattr(task, "_filters", [])] or ["none"]
    metrics = list(getattr(task, "_metric_fn_list", {})) or ["exact_match"]
    return {"num_fewshot": int(task.config.num_fewshot or 0),
            "until": [until] if isinstance(until, str) else [str(u) for u in until],
            "filters": filters, "primary": [filters[0], metrics[0]]}


def _refused(name: str, kind: str) -> str:
    return (f"lm-eval task {name} is a {kind} task; mmconvert takes {' and '.join(TAKES)} "
            "tasks")


def _gold_index(target: Any, choices: list[str], where: str) -> int:
    """The index of the task's target among its choices (an index, or a choice's text)."""
    if isinstance(target, list):
        if len(target) != 1:
            raise ItemError(f"{len(target)} gold choices; mmconvert letters one answer",
                            where=where, field="doc_to_target")
        target = target[0]
    if isinstance(target, str) and target in choices:
        return choices.index(target)
    if isinstance(target, str) and target.strip().isdigit():
        target = int(target.strip())
    if isinstance(target, int) and not isinstance(target, bool) and 0 <= target < len(choices):
        return target
    raise ItemError(f"target {target!r} is none of the {len(choices)} choices", where=where,
                    field="doc_to_target")
