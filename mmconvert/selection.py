"""Which items a run works on: load -> corpus filters -> shuffle -> dedup -> sample -> limit,
streamed (``stream_selection``) or as a list (``load_selection``). The converter, ``dedup`` and
the benches take their items from here."""

from __future__ import annotations

import itertools
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .config import DedupOptions, Selection
from .corpora import Corpus, LoadReport, resolve
from .corpora.base import load_items, load_request
from .corpora.choices import shuffle_options
from .corpora.dedup import DedupReport, dedup_positions
from .corpora.nonce import nonce_item
from .errors import ItemError
from .items import Item
from .seeds import rng


def select(items: list[Item], sample: int | None, limit: int | None, seed: int,
           group=lambda item: item.subset) -> list[Item]:
    """``--sample N`` per subset (or per the corpus' own groups, e.g. LongBench's length bins;
    seeded, source order kept), then ``--limit N`` overall."""
    counts = Counter(group(item) for item in items) if sample is not None else None
    return list(selected(items, counts, sample, limit, seed, group))


def selected(items: Iterable[Item], counts: Counter | None, sample: int | None,
             limit: int | None, seed: int, group=lambda item: item.subset) -> Iterator[Item]:
    """``select`` as a stream: ``counts`` (items per group, from a first pass) decide which
    positions of each group ``--sample`` keeps, so nothing is held but the chosen positions."""
    if sample is not None:
        assert counts is not None  # a sample is drawn from its groups' counts
        picks = {key: None if count <= sample else
                 set(rng(seed, "sample", key).sample(range(count), sample))
                 for key, count in counts.items()}
        seen: Counter = Counter()

        def chosen(item: Item) -> bool:
            key = group(item)
            position = seen[key]
            seen[key] += 1
            wanted = picks.get(key, set())
            return wanted is None or position in wanted

        items = (item for item in items if chosen(item))
    return itertools.islice(items, limit) if limit is not None else iter(items)


def load_selection(config: Selection, corpus: Corpus | None = None, *, log=None,
                   progress: bool = False, dedup_file: Path | None = None,
                   reuse_dedup: bool = True) -> tuple[list[Item], LoadReport]:
    """Load → corpus filters → shuffle → dedup → sample → limit: the items a run works on, as
    a list (``stream_selection`` gives them one at a time); the load's notes are logged.

    The dedup report comes back as ``report.dedup``; a resumed run that finds one made with
    the same options at ``dedup_file`` reads it back instead of embedding the corpus again.
    """
    log = log or (lambda message: print(message, file=sys.stderr))
    selection = stream_selection(config, corpus, progress=progress, dedup_file=dedup_file,
                                 reuse_dedup=reuse_dedup, log=log)
    for note in selection.report.notes:
        log(note)
    return list(selection.items), selection.report


@dataclass
class Selected:
    """What ``stream_selection`` found: the chosen items, read one at a time as they are
    consumed; how many there are; the load's report (complete); and, when asked for, the id
    of every item the corpus gave with its ``Item.fingerprint`` (to check a resumed run's
    manifest against: an item outside the selection, or one whose source changed)."""

    items: Iterator[Item]
    count: int
    report: LoadReport
    ids: dict[str, str] | None = None


def stream_selection(config: Selection, corpus: Corpus | None = None, *, log=None,
                     progress: bool = False, dedup_file: Path | None = None,
                     reuse_dedup: bool = True, ids: bool = False) -> Selected:
    """Load → corpus filters → shuffle → dedup → sample → limit, holding no list of the
    corpus (for a corpus that loads lazily, as the generic files do).

    A first pass reads the whole source (with ``--limit N`` and no ``--sample``, its first N
    items): every bad row is met (raised, or recorded under ``--on-error skip``) before any
    work, and only each group's count (for ``--sample``) and, with ``ids``, the ids are
    kept. The items are then read again as they are consumed (a corpus whose ``load`` builds
    a list anyway is read once, and its list kept).
    ``--dedup`` embeds the items in the first pass, holding their ids and embeddings (which
    it compares all together), not the items."""
    log = log or (lambda message: print(message, file=sys.stderr))
    corpus = corpus or resolve(config.corpus)
    request = load_request(corpus, config.model_dump())

    def shuffled(items: Iterable[Item], record: LoadReport | None = None) -> Iterator[Item]:
        """The items as drawn: options shuffled, words made nonce; a skipped item recorded in
        ``record`` (the first pass's report; a later pass's are not kept)."""
        items = iter(items)
        seed = config.shuffle_seed
        if seed is not None:
            items = (item if "original_options" in item.metadata
                     else shuffle_options(item, seed) for item in items)
        if config.nonce is not None:  # the words replaced, before anything is drawn
            items = nonced(items, config.nonce, config.on_error, record or LoadReport())
        return items

    report = LoadReport()
    first = load_items(corpus, request, report)
    held = first if isinstance(first, list) else None  # a corpus that builds a list: read once

    def again() -> Iterator[Item]:
        return shuffled(held if held is not None else load_items(corpus, request,
                                                                 LoadReport()))

    def chosen(items: Iterable[Item], counts: Counter) -> Iterator[Item]:
        return selected(items, counts, config.sample, config.limit, config.seed,
                        corpus.group)

    if config.dedup is not None:
        groups: list[str] = []  # each item's --sample group, by position
        prints: dict[str, str] | None = {} if ids else None  # each item's fingerprint
        passes = itertools.chain([lambda: shuffled(first, report)], itertools.repeat(again))

        def read() -> Iterator[Item]:  # the first pass, then the source read again
            groups.clear()
            return _noting(next(passes)(), groups, corpus.group, prints)

        keep, dedup = _dedup(read, config.dedup, dedup_file, reuse_dedup, progress, log)
        report.dropped["dedup"] += dedup["removed_count"]
        report.dedup = dedup
        report.notes.append(DedupReport.summary_line(dedup))
        counts = Counter(group for i, group in enumerate(groups) if keep(i))
        kept = (item for i, item in enumerate(again()) if keep(i))
        return Selected(chosen(kept, counts), _count(counts, config), report,
                        {i: prints[i] for i in dedup["kept"]} if prints is not None else None)
    counts = Counter()
    seen: dict[str, str] | None = {} if ids else None
    # with --limit N and no --sample, only the first N items can be chosen: the first pass
    # reads no further (a split of 300,000 docs with --limit 3 read all of them), and the
    # rows past them, never drawn, are not met
    reach = config.limit if config.sample is None else None
    for item in itertools.islice(shuffled(first, report), reach):
        counts[corpus.group(item)] += 1
        if seen is not None:
            seen[item.id] = item.fingerprint()
    return Selected(chosen(again(), counts), _count(counts, config), report, seen)


def nonced(items: Iterable[Item], seed: int, on_error: str,
           record: LoadReport) -> Iterator[Item]:
    """``items`` with their words replaced by nonce words (``corpora.nonce``); an item that
    cannot be (a word of another script) stops the run, or under ``--on-error skip`` is left
    out and recorded in ``record`` (``LoadReport.skip``, as a row that does not load)."""
    for item in items:
        if "nonce" in item.metadata:
            yield item
            continue
        try:
            made = nonce_item(item, seed)
        except ItemError as err:
            record.skip(err, on_error)
            continue
        yield made


def _count(counts: Counter, config: Selection) -> int:
    """How many items ``selected`` gives from groups of ``counts`` items."""
    count = sum(min(n, config.sample) for n in counts.values()) if config.sample is not None \
        else sum(counts.values())
    return count if config.limit is None else min(count, config.limit)


def _noting(items: Iterable[Item], groups: list[str], group,
            prints: dict[str, str] | None = None) -> Iterator[Item]:
    """``items``, each one's group appended to ``groups`` (and its fingerprint put in
    ``prints``, when given) as it passes."""
    if prints is not None:
        prints.clear()
    for item in items:
        groups.append(group(item))
        if prints is not None:
            prints[item.id] = item.fingerprint()
        yield item


def _dedup(read: Callable[[], Iterable[Item]], options: DedupOptions, path: Path | None,
           reuse: bool, progress: bool, log) -> tuple[Callable[[int], bool], dict]:
    """The dedup of the items ``read()`` gives (each call reads them again from the start):
    whether it keeps the item at a position, and its report. A report saved at ``path`` with
    the same options, and whose items are these, is reused instead of embedding again."""
    if reuse and path is not None and path.is_file():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            saved = None
        if saved and saved.get("options") == options.identity():
            removed_ids = {r["id"] for r in saved["removed"]}
            count, removed = 0, set()
            for position, item in enumerate(read()):
                count += 1
                if item.id in removed_ids:
                    removed.add(position)
            if saved.get("items") == count and len(removed) == len(removed_ids):
                log(f"dedup: reusing {path}")
                return (lambda position: position not in removed), saved
    report, removed = dedup_positions(read(), options, progress=progress, log=log)
    return (lambda position: position not in removed), report.as_dict()
