"""Reading a run folder for export: its manifest streamed row by row, the items QA left in, and
each item as a flat record the formats share.

Nothing here writes to the run folder (a torn last line is reported, not cut off). A manifest
line that does not parse, or an image that is missing or changed, stops the export with one line
naming it; with ``on_error="skip"`` it is recorded in the export's ``export-skipped.jsonl``
instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ItemError
from ..manifest import MANIFEST
from ..qa.events import kept
from ..renderers import row_renderer, run_renderer
from ..renderers.base import Renderer
from ..rows import ImageEntry, Row, manifest_entries, row_options
from ..runfolder import inside, open_run, read_recorded
from ..scoring.spec import spec_of


@dataclass
class Record:
    """One exported item: the manifest row and where it came from."""

    line: int
    row: Row

    @property
    def id(self) -> str:
        return self.row.id

    def split(self, files: dict[int, Any]) -> tuple[list[Any], list[Any]]:
        """``files`` (by image index) of the images the model is shown, and of their
        text-only twins (its ``profile.twins``)."""
        twins = row_renderer(self.row).profile.twins
        entries = self.row.images
        return ([files[i] for i, e in enumerate(entries) if e.role not in twins],
                [files[i] for i, e in enumerate(entries) if e.role in twins])

    @property
    def scoring(self) -> dict[str, Any]:
        """The item's scoring spec: what ``mmconvert_answers.score`` scores a reply by."""
        return spec_of(self.row)

    @property
    def options(self) -> list[str]:
        return [str(o) for o in row_options(self.row)]

    @property
    def answers(self) -> list[str]:
        """Accepted answers as strings: an MCQ's letter, or each accepted string."""
        answer = self.row.answer
        if answer is None:
            return []
        return [str(a) for a in answer] if isinstance(answer, list) else [str(answer)]

    @property
    def category(self) -> str:
        metadata = self.row.metadata
        for key in ("category", "subject", "subset"):
            if metadata.get(key):
                return str(metadata[key])
        return str(self.row.subset or self.row.corpus or "")


@dataclass
class RunSource:
    """A run folder opened for export."""

    run: Path
    on_error: str = "fail"
    reject_votes: int = 1
    accepted_only: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    left_out: Counter = field(default_factory=Counter)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    keep: set[str] = field(default_factory=set)
    count: int = 0  # items that will be exported (before images are checked)
    awaiting_review: int = 0  # of those, items an OCR check flagged that no reviewer has seen
    # the renderer options the exported rows share, as recorded (``note_params``); None
    # before the first row
    params: dict[str, Any] | None = None
    max_options: int = 0
    # each exported item's scoring spec (``scoring.spec.spec_of``), in export order:
    # noted as its images are checked, written to the export's scoring.jsonl
    scoring: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self):
        self.info = open_run(self.run).info()
        ids, options = [], {}
        for _, row, error in self._lines():
            if error is not None or row is None:
                continue  # reported in order by records()
            ids.append(row.id)
            options[row.id] = len(row_options(row))
        own = kept(self.run, ids, reject_votes=self.reject_votes,
                   accepted_only=self.accepted_only)
        keep, self.left_out, awaiting = own.ids, own.left_out, own.awaiting_review
        base = self.base_run()
        if base is not None and (base / "qa.jsonl").is_file():
            # a sweep variant: what was rejected in its base run is left out of it too
            inherited = kept(base, keep, reject_votes=self.reject_votes,
                             accepted_only=self.accepted_only)
            keep = inherited.ids
            self.left_out.update(inherited.left_out)
            awaiting = (awaiting | inherited.awaiting_review) & set(keep)
        self.keep = set(keep)
        self.count = len(keep)
        self.awaiting_review = len(awaiting)
        self.max_options = max((options[i] for i in keep), default=0)

    def note_params(self, row: Row) -> None:
        """Keep the renderer options that every exported row so far recorded alike."""
        recorded = row.params
        self.params = dict(recorded) if self.params is None else {
            k: v for k, v in self.params.items() if recorded.get(k) == v}

    def base_run(self) -> Path | None:
        base = self.info.get("base") if self.info.get("variant") else None
        return (self.run / base).resolve() if base else None

    @property
    def renderer(self) -> type[Renderer]:
        """The renderer the run was made with (its contract: roles, twins)."""
        return run_renderer(self.run, self.info)

    def _lines(self) -> Iterator[tuple[int, Row | None, ItemError | None]]:
        return manifest_entries(self.run / MANIFEST)

    def fail_or_skip(self, err: ItemError, line: int, item_id: str | None) -> None:
        if self.on_error != "skip":
            raise err
        self.skipped.append({"line": line, "id": item_id, "reason": str(err)})

    def records(self) -> Iterator[Record]:
        """The kept items in manifest order (bad lines stop the export or are skipped)."""
        for line, row, error in self._lines():
            if error is not None:
                self.fail_or_skip(error, line, None)
                continue
            if row is not None and row.id in self.keep:
                yield Record(line, row)

    def image_path(self, record: Record, index: int, entry: ImageEntry) -> Path:
        """The image file of ``entry``; a one-line error (or a skip) if it is missing."""
        field = f"images[{index}].path"
        path = inside(self.run, entry.path, where=self._where(record), field=field,
                      item_id=record.id, stage="export")
        if not path.is_file():
            raise ItemError(f"{path} is missing", where=self._where(record),
                            field=field, item_id=record.id, stage="export")
        return path

    def image_bytes(self, record: Record, index: int, entry: ImageEntry) -> bytes:
        """The image's bytes, checked against the manifest's sha256."""
        return read_recorded(self.run, entry, where=self._where(record),
                             field=f"images[{index}].path", item_id=record.id, stage="export")

    def _where(self, record: Record) -> str:
        return f"{self.run / MANIFEST} line {record.line}: item {record.id}"

    def checked(self, record: Record, read: bool = True):
        """``(record, {index: bytes or path})`` for each image, or None after a skip."""
        files: dict[int, Any] = {}
        try:
            for index, entry in enumerate(record.row.images):
                files[index] = (self.image_bytes(record, index, entry) if read
                                else self.image_path(record, index, entry))
        except ItemError as err:
            self.fail_or_skip(err, record.line, record.id)
            return None
        self.scoring.append((record.id, record.scoring))
        return files
