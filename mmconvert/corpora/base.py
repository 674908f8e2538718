"""What every corpus provides, and the report of what loading kept, dropped and skipped."""

from __future__ import annotations

import ast
import functools
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast, overload

from pydantic import BaseModel, ValidationError

from ..config import legacy_corpus_options
from ..errors import ItemError, MMConvertError, SourceError, UsageError, first_line
from ..items import LETTERS, Item, RenderPart, id_width, row_id, safe_name
from ..options import OPTIONS, first_error, flag_of
from ..parts import CORPORA
from ..registry import Registry
from ..rows import Row
from .sources import (
    SourceFile,
    SourceRow,
    check_text,
    discover,
    is_saved_dataset,
    load_hub,
    parse_json,
    read_saved,
    read_table,
    split_of_path,
)

OnError = Literal["fail", "skip"]


@dataclass
class LoadRequest:
    """What a corpus is asked to load; ``options``: its own corpus options, as its
    ``options_model`` (``load_request`` validates them; ``Corpus.options_of`` reads them)."""

    source: Path | None = None
    subsets: list[str] | None = None
    split: str | None = None
    on_error: OnError = "fail"
    seed: int = 0  # for corpora whose loading draws (GPQA's option order)
    options: CorpusOptions | None = None


@dataclass
class LoadReport:
    """Counts for the summary and run.json; skipped rows for skipped.jsonl."""

    rows: int = 0
    dropped: Counter = field(default_factory=Counter)
    skipped: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dedup: dict[str, Any] | None = None  # the dedup report, when --dedup ran

    def as_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "dropped": dict(sorted(self.dropped.items())),
                "skipped": len(self.skipped)}

    def skip(self, err: ItemError, on_error: str) -> None:
        """``err``'s item recorded as skipped; raised instead under ``--on-error fail``
        (unless it is always recorded)."""
        if on_error == "fail" and not err.always_recorded:
            raise err
        self.skipped.append({"id": err.item_id, "stage": err.stage, "reason": str(err)})


class CorpusOptions(BaseModel):
    """The options of one corpus: each corpus names its own model (a subclass), whose fields
    are the ``corpus_options`` section of a config and, once the corpus is named on the
    command line, its flags (``--<field>``, as ``options.cli`` says). ``extra="forbid"`` makes
    an option that does not apply a one-line error."""

    model_config = OPTIONS


def load_request(corpus: Corpus, values: dict[str, Any]) -> LoadRequest:
    """The request to load ``corpus`` with ``values`` (a selection's fields): the request's
    own fields, and its ``corpus_options`` as the corpus' own model."""
    values = legacy_corpus_options(values)
    own = {f.name for f in fields(LoadRequest)} - {"options"}
    return LoadRequest(**{k: v for k, v in values.items() if k in own},
                       options=check_corpus_options(corpus, values.get("corpus_options") or {}))


def check_corpus_options(corpus: Corpus, given: dict[str, Any]) -> CorpusOptions:
    """The corpus options ``given`` validated by the corpus' own model; an option given (not
    None or False) that the corpus does not take is one line naming its flag and the
    corpus's own."""
    model = corpus.options_model
    values = {k: v for k, v in given.items() if k in model.model_fields}
    unknown = [k for k, v in given.items() if k not in model.model_fields
               and v is not None and v is not False]
    if unknown:
        takes = [flag_of(k, info) for k, info in model.model_fields.items()]
        raise UsageError(f"{option_flag(unknown[0])} does not apply to {corpus.name} ("
                         + (f"its options: {', '.join(takes)}" if takes else
                            "it takes no corpus options") + ")")
    try:
        return model.model_validate(values)
    except ValidationError as err:
        first = first_error(err)
        name = str(first["loc"][0]) if first["loc"] else ""
        flag = flag_of(name, model.model_fields[name]) if name in model.model_fields else name
        raise UsageError(f"{corpus.name}: {flag}: {first['msg']}") from None


def option_flag(name: str) -> str:
    """The flag of corpus option ``name``: as the registered corpora that take it name it."""
    for corpus in CORPORA.names():
        try:
            model = CORPORA.get(corpus).options_model
        except UsageError:  # a broken plugin: its own line when it is used
            continue
        if name in model.model_fields:
            return flag_of(name, model.model_fields[name])
    return f"corpus_options.{name}"


def corpus_identity(corpus: Corpus, given: dict[str, Any]) -> dict[str, Any]:
    """The corpus options as a run records them: every field of the corpus's model, the
    defaults included, so that one run given them and one left at their defaults match."""
    return check_corpus_options(corpus, given).model_dump(mode="json")


def upgraded_identity(recorded: dict[str, Any], corpus: Corpus) -> dict[str, Any]:
    """A run's recorded identity as this version records it: a run folder made when the
    selection held the corpus options itself (or before it recorded them) resumes."""
    upgraded = legacy_corpus_options(recorded)
    if upgraded is recorded and "corpus_options" in recorded:
        return recorded
    try:
        options = corpus_identity(corpus, upgraded.get("corpus_options") or {})
    except UsageError:  # not this corpus's: the identities differ, as they do
        return upgraded
    return {**upgraded, "corpus_options": options}


OptionsT = TypeVar("OptionsT", bound=CorpusOptions)


class Corpus(Generic[OptionsT]):
    """A named corpus: where it lives on the hub and how its rows become Items. Generic in
    its options model (``Corpus[ReduxOptions]``), so ``options_of`` is typed as its own."""

    # what every corpus states and implements: checked when it loads
    REQUIRED: ClassVar[tuple[str, ...]] = ("name",)
    HOOKS: ClassVar[tuple[str, ...]] = ("load",)

    name: ClassVar[str]
    options_model: ClassVar[type[CorpusOptions]] = CorpusOptions
    hub_id: ClassVar[str | None] = None
    description: ClassVar[str] = ""
    render_part: ClassVar[RenderPart] = "options"
    # non-English items look for their prompts in lang-<language>/ first
    language_prompts: ClassVar[bool] = False
    default_split: ClassVar[str] = "test"
    subsets: ClassVar[tuple[str, ...]] = ()
    # a corpus named with an argument, ``NAME:ARGUMENT`` (lm-eval:TASK), names it here
    argument: ClassVar[str | None] = None

    def load(self, request: LoadRequest, report: LoadReport) -> Iterable[Item]:
        """The corpus' items in source order: a list, or an iterator that reads the source as
        it is consumed (the generic files), read once. A source that cannot be read at all is
        refused here, before the first item; ``report`` is complete once the items are."""
        raise NotImplementedError

    def options_of(self, request: LoadRequest) -> OptionsT:
        """The corpus options of ``request``, as this corpus' model (its defaults when the
        request carries none)."""
        options = request.options if request.options is not None else self.options_model()
        return cast(OptionsT, options)

    def part_for(self, item: Item) -> RenderPart:
        return self.render_part

    def scoring(self, row: Row) -> dict[str, Any] | None:
        """How the corpus' benchmark scores the item of manifest ``row``: the parts of its
        scoring spec (``scoring.answers``) beyond the answers (``kind``, ``metric`` and what
        the metric reads), or None for the generic rules (the option letter; SQuAD's exact
        match and token F1 of a free-form answer)."""
        return None

    def group(self, item: Item) -> str:
        """The group ``--sample N`` draws N items from (the subset, unless a corpus bins)."""
        return item.subset

    def prompt_keys(self, item: Item) -> tuple[str, ...]:
        """Template folders to look in before the shipped defaults, most specific first:
        ``lang-<language>/`` for a non-English item of a corpus with ``language_prompts``."""
        if self.language_prompts and item.language != "en":
            return (f"lang-{item.language}",)
        return ()


def load_items(corpus: Corpus, request: LoadRequest, report: LoadReport) -> Iterable[Item]:
    """``corpus.load``: a list stays a list, an iterator is read as it is consumed. What it
    gives that is not an Item, and (for a plugin) what it raises that is not mmconvert's own
    error, is one line naming the corpus and its package."""
    plugin = not type(corpus).__module__.startswith("mmconvert.")
    where = _plugin_label(corpus) if plugin else f"corpus {corpus.name!r}"
    try:
        items = corpus.load(request, report)
    except MMConvertError:
        raise
    except Exception as err:  # noqa: BLE001 - a plugin's failure is its one line
        if not plugin:
            raise
        raise UsageError(f"{where} failed to load ({first_line(err, 200, kind=True)})") \
            from None
    if isinstance(items, list):
        for item in items:
            _is_item(item, where)
        return items
    if not isinstance(items, Iterable) or isinstance(items, (str, bytes, dict)):
        raise UsageError(f"{where}: load gave {type(items).__name__}, not a list or an "
                         "iterator of Items")
    return _checked_items(iter(items), where, plugin)


def _checked_items(items: Iterator, where: str, plugin: bool) -> Iterator[Item]:
    while True:
        try:
            item = next(items)
        except StopIteration:
            return
        except MMConvertError:
            raise
        except Exception as err:  # noqa: BLE001 - a plugin's failure is its one line
            if not plugin:
                raise
            raise UsageError(f"{where} failed while loading "
                             f"({first_line(err, 200, kind=True)})") from None
        yield _is_item(item, where)


def _is_item(item: Any, where: str) -> Item:
    if not isinstance(item, Item):
        raise UsageError(f"{where}: load gave a {type(item).__name__}, not an "
                         "mmconvert.items.Item")
    return item


def _plugin_label(corpus: Corpus) -> str:
    return (f"plugin corpus {corpus.name!r} from package "
            f"{CORPORA.provider(getattr(corpus, 'name', '?'))!r}")


class RowGuard:
    """Counts and converts rows; under ``--on-error skip`` records a failure and goes on."""

    def __init__(self, request: LoadRequest, report: LoadReport):
        self.on_error = request.on_error
        self.report = report

    def convert_each(self, rows, fn, *args) -> Iterator[Item]:
        """``fn(row, *args)`` for each row, as the items are consumed: the items that
        converted."""
        return (item for row in rows if (item := self.convert(fn, row, *args)) is not None)

    def convert(self, fn, *args) -> Item | None:
        self.report.rows += 1
        try:
            return fn(*args)
        except ItemError as err:
            self.report.skip(err, self.on_error)
            return None


@overload
def text_field(data: dict, name: str, where: str, *,
               required: Literal[True] = True) -> str: ...


@overload
def text_field(data: dict, name: str, where: str, *, required: bool) -> str | None: ...


def text_field(data: dict, name: str, where: str, *, required: bool = True) -> str | None:
    """Field ``name`` of a row as text (a number as its text); missing, None or NaN: an
    ItemError when ``required``, else None."""
    value = data.get(name)
    if value is None or (isinstance(value, float) and value != value):  # None or NaN
        if required:
            raise ItemError("missing value", where=where, field=name)
        return None
    if not isinstance(value, str):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        else:
            raise ItemError(f"expected text, got {type(value).__name__}", where=where, field=name)
    return check_text(value, where, name)


def options_field(value: Any, where: str, field: str) -> list[str]:
    """A list of option strings, from a list or a JSON / Python-literal list in text."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ItemError("no options", where=where, field=field)
        try:
            value = parse_json(text)
        except ValueError as err:
            if "malformed" not in str(err):  # too deep, too many digits
                raise ItemError(str(err), where=where, field=field) from None
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, RecursionError, MemoryError):
                raise ItemError("not a list of options (expected a JSON or Python list)",
                                where=where, field=field) from None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not value:
        raise ItemError("no options", where=where, field=field)
    out = []
    for i, option in enumerate(value):
        if isinstance(option, (int, float)) and not isinstance(option, bool):
            option = str(option)
        if not isinstance(option, str):
            raise ItemError(f"option {i} is {type(option).__name__}, not text", where=where,
                            field=field)
        out.append(check_text(option, where, f"{field}[{i}]"))
    if len(out) > len(LETTERS):
        raise ItemError(f"{len(out)} options; at most {len(LETTERS)}", where=where, field=field)
    return out


def answer_letter(value: Any, n_options: int, where: str, field: str = "answer") -> str:
    """An MCQ answer as a letter, from a letter or a 0-based index."""
    letter = None
    if isinstance(value, bool):
        letter = None
    elif isinstance(value, int):
        letter = LETTERS[value] if 0 <= value < n_options else None
    elif isinstance(value, float) and value.is_integer():
        return answer_letter(int(value), n_options, where, field)
    elif isinstance(value, str):
        text = value.strip().strip("()").strip()
        if text.isdigit():
            return answer_letter(int(text), n_options, where, field)
        if len(text) == 1 and text.upper() in LETTERS[:n_options]:
            letter = text.upper()
    if letter is None:
        expected = (f"a letter A-{LETTERS[n_options - 1]} or an index 0-{n_options - 1} of the "
                    f"{n_options} options")
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ItemError(f"missing: expected {expected}", where=where, field=field)
        raise ItemError(f"{value!r} is not one of the {n_options} options (expected "
                        f"{expected})", where=where, field=field)
    return letter


# --- corpora made of named subsets (hub configs) ----------------------------------------

SPLIT_ALIASES = {"val": "validation", "validation": "val"}
# a subset's rows, or how to read them (a subset's local files are read when its turn comes)
Rows = list[SourceRow] | Callable[[], list[SourceRow]]


def numbered(rows: Iterable[SourceRow]) -> list[SourceRow]:
    """``rows`` numbered from 0 in the order given (the row-id rule)."""
    return [SourceRow(i, r.where, r.data, r.error) for i, r in enumerate(rows)]


def read_rows(rows: Rows) -> tuple[list[SourceRow], int]:
    """A group's rows (read now, if they are read when their turn comes) and the digits of
    its ids' numbers (at least 3)."""
    rows = rows() if callable(rows) else rows
    return rows, id_width(len(rows), 3)


class SubsetCorpus(Corpus[OptionsT]):
    """A corpus whose subsets are hub configs and, in a local copy, files or folders.

    Subclasses name their columns and turn one row into an Item (``item``); loading from the
    hub, a ``save_to_disk`` folder, hub-layout parquet or the original release files, the
    subset and split checks and the ``--on-error`` bookkeeping are done here once.
    """

    columns: ClassVar[tuple[tuple[str, ...], ...]] = ()  # accepted schemas (any one of them)
    csv_header: ClassVar[bool] = True
    subset_column: ClassVar[str | None] = None  # names the subset in one-file-for-all copies
    hub_single_config: ClassVar[str | None] = None  # all subsets live in this one config
    split_aliases: ClassVar[dict[str, str]] = SPLIT_ALIASES
    default_subsets: ClassVar[tuple[str, ...] | None] = None  # hub default, if not all

    def load(self, request: LoadRequest, report: LoadReport) -> Iterator[Item]:
        """The chosen subsets' items, a subset at a time: only one subset's rows are held
        (a release that keeps every subset in one file, MMLU's ``all``, is read whole), and
        its items are given as they are made. Missing subsets and sources are refused here,
        before the first item."""
        split = request.split or self.default_split
        self.check_subsets(request)
        groups = self.groups(request, split, report)
        if request.source is not None and not groups:
            raise SourceError(f"{request.source}: no {split} rows of {self.name} here "
                              f"({self.found_files(request.source)}); pass --source with a "
                              f"copy of {self.name}, or --split")
        wanted = request.subsets
        chosen = self.defaults(request)
        if not wanted and request.source is not None and chosen:
            # a whole local copy (LongBench's data.zip): the same default configs as the hub
            defaults = [s for s in chosen if s in groups]
            groups = {s: groups[s] for s in defaults} if defaults else groups
        if wanted:
            missing = [s for s in wanted if s not in groups]
            if missing:
                raise SourceError(f"{request.source}: no {split} rows for subset {missing[0]!r} "
                                  f"(found: {', '.join(sorted(groups)) or 'none'})")
            groups = {s: groups[s] for s in wanted}
        return self._items(groups, split, request, report)

    def _items(self, groups: dict[str, Rows], split: str, request: LoadRequest,
               report: LoadReport) -> Iterator[Item]:
        guard = RowGuard(request, report)
        for subset, rows in groups.items():
            rows, width = read_rows(rows)
            yield from (item for item in guard.convert_each(rows, self._item, subset, split,
                                                            width, request)
                        if self.keep(item, request, report))
        self.finish(request, report)

    def _item(self, row: SourceRow, subset: str, split: str, width: int,
              request: LoadRequest) -> Item:
        item_id = row_id(subset, row.index, width)
        try:
            return self.item(row.check(), row, subset, split, item_id, request)
        except ItemError as err:
            err.item_id = err.item_id or item_id
            raise

    def item(self, data: dict, row: SourceRow, subset: str, split: str, item_id: str,
             request: LoadRequest) -> Item:
        raise NotImplementedError

    def defaults(self, request: LoadRequest) -> tuple[str, ...] | None:
        """The subsets loaded when none is named (None: all of them)."""
        return self.default_subsets

    def keep(self, item: Item, request: LoadRequest, report: LoadReport) -> bool:
        """A corpus filter after conversion (MMLU-Redux error_type, LongBench length…)."""
        return True

    def finish(self, request: LoadRequest, report: LoadReport) -> None:
        """Notes for the summary, once every row is read."""

    # -- where rows come from

    def check_subsets(self, request: LoadRequest) -> None:
        unknown = [s for s in request.subsets or () if s not in self.subsets]
        if unknown and request.source is None and self.subsets:
            names: Registry[str] = Registry("subset")
            for s in self.subsets:
                names.register(s, s)
            raise UsageError(f"{self.name}: " + names.unknown_message(unknown[0]))

    def groups(self, request: LoadRequest, split: str,
               report: LoadReport | None = None) -> dict[str, Rows]:
        """Each subset's rows, or (local files) how to read them when their turn comes."""
        if request.source is None:
            return self.hub_groups(request.subsets or list(self.defaults(request)
                                                           or self.subsets), split)
        source = request.source
        if is_saved_dataset(source):
            return self.regroup({self.file_subset(source.name): read_saved(source, split)
                                 .get(split, [])})
        groups: dict[str, list[SourceRow]] = {}
        if source.is_dir():
            saved = [p for p in sorted(source.iterdir()) if is_saved_dataset(p)]
            if saved:
                for path in saved:
                    groups[self.file_subset(path.name)] = read_saved(path, split).get(split, [])
                return self.regroup(groups)
        every = discover(source, self.locate)
        found = [f for f in every if self.same_split(f.split, split)]
        files: dict[str, list[SourceFile]] = {}
        for one in self.one_format(source, found, every, report):
            files.setdefault(one.subset, []).append(one)
        lazy: dict[str, Rows] = {}
        for name, ones in files.items():
            if self.subset_column and name not in self.subsets:  # one file for all, maybe
                rows = [row for one in ones for row in self.read(one)]
                lazy.update(self.regroup({name: rows}))
            else:  # read when its turn comes
                lazy[name] = functools.partial(self._read_subset, ones)
        return lazy

    def _read_subset(self, ones: list[SourceFile]) -> list[SourceRow]:
        """A subset's rows, from its files, numbered from 0 in source order."""
        return numbered(row for one in ones for row in self.read(one))

    def one_format(self, source: Path, found: list[SourceFile], every: list[SourceFile],
                   report: LoadReport | None) -> list[SourceFile]:
        """The files of one format: a folder holding the corpus both as hub parquet and as
        release files would load every row twice under other ids. The hub parquet is loaded
        (the ids a hub load gives), and a note says how to load the other."""
        parquet = [f for f in found if f.path.suffix.lower() == ".parquet"]
        release = [f for f in found if f.path.suffix.lower() != ".parquet"]
        if not parquet or not release:
            return found
        folder = Path(os.path.commonpath([f.path.parent for f in every
                                          if f.path.suffix.lower() != ".parquet"]))
        other = (f"pass --source {folder}" if folder != source else
                 "move them to a folder of their own and pass it as --source")
        if report is not None:
            report.notes.append(
                f"{self.name}: {source} holds the corpus in two formats, hub parquet "
                f"({len(parquet)} file(s)) and release files ({len(release)} file(s)); loaded "
                f"the hub parquet; for the release files {other}")
        return parquet

    def found_files(self, source: Path) -> str:
        """What a folder holds, for a message that it holds none of this corpus."""
        try:
            files = discover(source, self.locate)
        except SourceError as err:
            return str(err).split(": ", 1)[-1]
        splits = sorted({f.split or "no split" for f in files})
        return f"{len(files)} table file(s), of split(s) {', '.join(splits)}"

    def hub_groups(self, subsets: list[str], split: str) -> dict[str, Rows]:
        if self.hub_id is None:
            raise SourceError(f"{self.name} has no hub copy: pass --source PATH")
        if self.hub_single_config is not None:
            rows = load_hub(self.hub_id, self.hub_single_config, split)
            groups = self.regroup({self.hub_single_config: rows})
            return {s: groups[s] for s in subsets if s in groups}
        return {s: functools.partial(load_hub, self.hub_id, s, split) for s in subsets}

    def locate(self, rel: Path) -> tuple[str, str | None]:
        stem, split = split_of_path(rel)
        return self.file_subset(stem), split

    def file_subset(self, stem: str) -> str:
        """The subset a file or folder name stands for."""
        return stem

    def same_split(self, found: str | None, split: str) -> bool:
        return found is None or found == split or self.split_aliases.get(found) == split

    def read(self, found: SourceFile) -> list[SourceRow]:
        is_csv = found.path.suffix.lower() == ".csv"
        rows = list(read_table(found.path, header=self.csv_header, delimiter=",") if is_csv
                    else read_table(found.path))
        if rows and not rows[0].error and self.columns and (self.csv_header or not is_csv):
            check_columns(rows[0].data, self.columns, str(found.path), self.name)
        return rows

    def regroup(self, groups: dict[str, list[SourceRow]]) -> dict[str, Rows]:
        """Split combined files (MMLU's ``all``, MMLU-Pro's one table) by their subset column;
        number each subset's rows from 0 in source order (the row-id rule)."""
        out: dict[str, list[SourceRow]] = {}
        for name, rows in groups.items():
            column = self.subset_column
            combined = column and name not in self.subsets and rows and column in rows[0].data
            for row in rows:
                key = name
                if column and combined and not row.error:
                    key = self.subset_of(row.data.get(column), row)
                out.setdefault(key, []).append(row)
        return {name: numbered(rows) for name, rows in out.items()}

    def subset_of(self, value: Any, row: SourceRow) -> str:
        if not isinstance(value, str) or not value.strip():
            raise SourceError(f"{row.where}: field {self.subset_column}: no subset name")
        return safe_name(value.strip(), "")


def check_columns(data: dict, schemas: tuple[tuple[str, ...], ...], where: str,
                  corpus: str) -> None:
    """One line naming the missing columns of the closest accepted schema."""
    best = min(schemas, key=lambda cols: sum(c not in data for c in cols))
    missing = [c for c in best if c not in data]
    if missing:
        raise SourceError(f"{where}: missing column(s) {', '.join(missing)} "
                          f"({corpus} expects {', '.join(best)}; found "
                          f"{', '.join(map(str, data)) or 'none'})")
