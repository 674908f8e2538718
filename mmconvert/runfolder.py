"""The run folder: its identity check, its lock, run.json, the manifest and skipped.jsonl,
and the sink that writes an item's files atomically before its row (in groups, or into
shards). Where a folder stands against a selection, for a resumed run, is ``resuming``."""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import ItemError, ItemFiltered, RunFolderError
from .items import check_name
from .locks import locked
from .manifest import (
    MANIFEST,
    QA,
    RUN_INFO,
    SKIPPED,
    JsonlLog,
    atomic_write,
    json_bytes,
    read_bytes,
    sync,
    write_json,
)
from .rows import FileRef, ImageEntry, Row, manifest_entries, read_row, recorded_files
from .shards import (
    SHARD_ROWS,
    SHARDS,
    SPOOL,
    ShardWriter,
    is_sharded,
    new_spool,
    read_stored,
)
from .shards import reader as shard_reader

DEDUP = "dedup.json"
LOCK = ".mmconvert.lock"
OWNED = (MANIFEST, SKIPPED, QA, RUN_INFO, DEDUP, "images", "pdf", "originals",
         "layout", "stats", SHARDS)


# the plots ``mmconvert stats`` writes into a run's stats/ (``stats.plot``)
STATS_PLOTS = ("images_per_item", "words_per_image", "image_sizes", "vision_tokens",
               "compression")
# files a run makes that no row records: its plots, its shards and their spool, and temporary
# files of writes a kill interrupted
_RUN_MADE = re.compile(rf"^(stats/({'|'.join(STATS_PLOTS)})\.png|shards/shard-\d{{6}}\.parquet"
                       r"|shards/\.spool/.+|(.+/)?\.[^/]+\.tmp)$")


def _made_by_a_run(rel: str) -> bool:
    return bool(_RUN_MADE.match(rel))


def identity_of(config: dict[str, Any]) -> dict[str, Any]:
    """A recorded config as a run identity: without ``on_error``, which decides how a run
    goes, not what it makes (run folders made before it left the identity recorded it)."""
    return {k: v for k, v in config.items() if k != "on_error"}


def item_file(folder: str, item_id: str, suffix: str) -> str:
    """The run-relative name of one of an item's files, ``<folder>/<id><suffix>``: the one
    place where an item's output names are made, always from a checked id."""
    check_name(item_id, f"item {item_id!r}" if isinstance(item_id, str) else "", "id")
    return f"{folder}/{item_id}{suffix}"


@functools.lru_cache(maxsize=64)
def _resolved(root: str) -> str:
    """The absolute path ``root`` resolved, once a run folder (a sink checks every file of
    every row against it: resolving the folder each time was most of its cost)."""
    return os.path.realpath(root)


def _realpath_under(base: str, rel: str) -> str:
    """``os.path.realpath(os.path.join(base, rel))`` for a resolved ``base`` and a ``rel``
    that ``run_name`` let through: only ``rel``'s own components are looked at (a file's two,
    not the eight or so of its whole path), and where one is a symbolic link the whole path is
    resolved as realpath resolves it."""
    path = base
    for part in rel.split("/"):
        if part in ("", "."):
            continue
        path = os.path.join(path, part)
        try:
            mode = os.lstat(path).st_mode
        except OSError:  # as realpath takes it: not a link, the rest joined as it is
            continue
        if stat.S_ISLNK(mode):
            return os.path.realpath(os.path.join(base, rel))
    return path


def run_name(rel: str | None, *, where: str = "", field: str = "path", **context: str) -> None:
    """Refuse ``rel`` (an ItemError naming ``where`` and ``field``) unless it is a relative
    POSIX path with no '..': a name a run's file may have (``inside`` also resolves it)."""
    parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
    if not parts or parts[0] == "/" or ".." in parts or "\\" in str(rel) or "\0" in str(rel):
        raise ItemError(f"{rel!r} is not a path inside the run folder", where=where,
                        field=field, **context)


def inside(root: Path, rel: str | None, *, where: str = "", field: str = "path",
           **context: str) -> Path:
    """``root / rel``, refused (an ItemError naming ``where`` and ``field``) unless ``rel`` is
    a relative POSIX path with no '..' that stays inside ``root`` once symlinks are resolved.
    Every file a run writes, and every file a manifest row names, goes through here
    (``context``: the ItemError's ``item_id`` and ``stage``)."""
    run_name(rel, where=where, field=field, **context)
    assert rel is not None  # refused above
    try:
        base = _resolved(os.path.abspath(root))
        target = _realpath_under(base, rel)
        try:
            os.stat(target)  # realpath leaves a symlink loop as it is; stat meets it
        except OSError as err:  # a file not yet written is fine; a loop is not
            if err.errno == errno.ELOOP:
                raise RuntimeError(f"Symlink loop from {err.filename!r}") from None
    except (OSError, RuntimeError) as err:  # a symlink loop, a name the system refuses
        raise ItemError(f"{rel!r} cannot be resolved ({err})", where=where, field=field,
                        **context) from None
    if not target.startswith(base.rstrip(os.sep) + os.sep):
        raise ItemError(f"{rel!r} leads outside the run folder {root} (to {target})",
                        where=where, field=field, **context)
    return root / rel


def read_run_file(root: Path, rel: str | None, *, where: str = "", field: str = "path",
                  **context: str) -> bytes:
    """The bytes of the file a row names ``rel`` in the run ``root``: the file inside the run
    folder, or, in a sharded run (``--store shards``), the shard's copy; otherwise an
    ItemError naming ``where`` and ``field``."""
    path = inside(root, rel, where=where, field=field, **context)
    assert rel is not None  # refused by ``inside``
    try:
        return read_bytes(path)  # a regular file only: a FIFO is refused, not waited on
    except FileNotFoundError:
        if is_sharded(root):
            return read_stored(root, rel, where=where, field=field, **context)
        raise ItemError(f"{path} is missing", where=where, field=field, **context) from None
    except RunFolderError as err:
        raise ItemError(str(err), where=where, field=field, **context) from None
    except OSError as err:
        raise ItemError(f"cannot read {path} ({err.strerror})", where=where, field=field,
                        **context) from None


def run_file_or_none(root: Path, rel: str) -> bytes | None:
    """``read_run_file``, or None when the file is missing, outside the run or unreadable
    (for readers that report a missing file in their own way: QA checks, the review page)."""
    try:
        return read_run_file(root, rel)
    except (ItemError, OSError, ValueError):  # ValueError: a name the system refuses
        return None


def read_recorded(root: Path, entry: ImageEntry | FileRef | dict[str, Any], *, where: str,
                  field: str, hashed: bool = False, **context: str) -> bytes:
    """The bytes of a file a manifest row records (the entry's ``path`` in the run ``root``,
    ``read_run_file``), and (always with ``hashed``, else when the entry has one) the same
    as its recorded sha256; otherwise an ItemError naming ``where`` and ``field``."""
    if not isinstance(entry, dict):
        entry = {"path": entry.path, "sha256": entry.sha256}
    path = root / str(entry.get("path"))
    data = read_run_file(root, entry.get("path"), where=where, field=field, **context)
    if (hashed or entry.get("sha256")) and \
            hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        where_held = str(path)
        if not path.exists() and is_sharded(root):  # it came out of a shard: name the shard
            holder = shard_reader(root).holder(str(entry.get("path")))
            where_held = f"{entry.get('path')} in {holder or root / SHARDS}"
        raise ItemError(f"{where_held} has changed since the run (sha256 differs)", where=where,
                        field=field, **context)
    return data


def write_file(root: Path, rel: str, data: bytes, *, durable: bool = True) -> None:
    """Write one of a run's files atomically, after checking it stays inside the folder."""
    atomic_write(inside(root, rel), data, durable=durable)


class Output:
    """What a worker returns for one item: its manifest row and the bytes of the files the row
    names. Workers write nothing; the run's one sink (``RunFolder.write``) does."""

    def __init__(self) -> None:
        # the manifest row: a dict, or an instance of the job's row model (which the
        # converter takes as the JSON its line holds)
        self.row: dict[str, Any] = {}
        self.files: list[tuple[str, bytes]] = []
        self.written: list[str] = []  # files a worker elsewhere already wrote (``write_into``)
        self.typed: Row | None = None  # the row as the sink checked it (``RunFolder.write``)

    def write_into(self, root: Path, *, under: str = "", durable: bool = True) -> None:
        """Write the files here, where the worker runs (a cluster node that reaches the run
        folder), atomically, and keep only their names: the sink then appends the row
        without the bytes crossing the cluster. ``under``: a folder of the run they go in
        (a sharded run's spool), under the names the row gives them."""
        for rel, data in self.files:
            write_file(root, f"{under}/{rel}" if under else rel, data, durable=durable)
        self.written += [rel for rel, _ in self.files]
        self.files = []

    def file(self, rel: str, data: bytes) -> dict[str, Any]:
        """Keep ``data`` for ``rel``; its sha256 for the row."""
        self.files.append((rel, data))
        return {"sha256": hashlib.sha256(data).hexdigest()}

    def image(self, rel: str, data: bytes, role: str, width: int, height: int,
              **extra: Any) -> dict[str, Any]:
        """Keep an image and describe it for the manifest's ``images``."""
        return {"path": rel, "role": role, "width": width, "height": height, **extra,
                **self.file(rel, data)}


# a group of rows made durable at once by ``RunFolder.grouped``: at most this many, or this long
GROUP_ROWS = 64
GROUP_SECONDS = 0.5

def open_run(path: Path, *, need_info: bool = False) -> RunFolder:
    """The run folder at ``path`` for reading; one line if it is not one."""
    path = Path(path)
    for wanted in (MANIFEST, RUN_INFO) if need_info else (MANIFEST,):
        if (path / wanted).exists() and not (path / wanted).is_file():
            raise RunFolderError(f"{path / wanted} is not a regular file (a FIFO, a device or "
                                 "a folder): not an mmconvert run folder")
        if not (path / wanted).is_file():
            raise RunFolderError(f"{path} has no {wanted}: not an mmconvert run folder")
    return RunFolder(path)


@dataclass(frozen=True)
class Made:
    """A worker's result: the item made, its row and the bytes of its files."""

    output: Output


@dataclass(frozen=True)
class Failed:
    """A worker's result: the item not made, and why (bad data, a rule's drop, a failed
    request), with the stage it failed at."""

    error: ItemError
    # the item's ``Item.fingerprint``, recorded with the skip: a resumed run tries an item
    # whose source changed since again (None: failed before it was an item)
    source: str | None = None


@dataclass(frozen=True)
class Stopped:
    """A worker's result: the item not started, since the run was stopped (the budget)."""

    reason: str


Result = Made | Failed | Stopped

def source_prints(rows: list[Row]) -> dict[str, str]:
    """The ``source_sha256`` of each row that records one, by id: what a run made from
    these rows (a sweep's variant, a transform) checks its own rows against."""
    return {row.id: row.source_sha256 for row in rows if row.source_sha256}


class RunFolder:
    def __init__(self, path: Path):
        self.path = path
        self.manifest = JsonlLog(path / MANIFEST)
        self.skipped = JsonlLog(path / SKIPPED)
        # rows waiting for their group's sync inside ``grouped``; None: each row at once
        self._pending: list[dict[str, Any]] | None = None
        self._since = 0.0
        self._shards: ShardWriter | None = None  # inside ``sharded``
        self.shards_removed = 0  # by ``resuming.take_stock``: torn or unrecorded shards

    def check(self, identity: dict[str, Any], overwrite: bool,
              upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        """Refuse a folder that holds another run (unless ``overwrite``) or other files.
        ``upgrade``: the recorded identity as this version records it (a folder made by an
        earlier version resumes)."""
        info_path = self.path / RUN_INFO
        foreign = (not info_path.exists() and self.path.is_dir()
                   and any(p.name != LOCK for p in self.path.iterdir()))
        if overwrite:
            if foreign:  # --overwrite removes what a run wrote, so only from a run folder
                raise RunFolderError(f"{self.path} is not empty and is not an mmconvert run "
                                     "folder (no run.json), so --overwrite will not clear it; "
                                     "choose another --out")
            return
        if info_path.exists():
            try:
                previous = json.loads(read_bytes(info_path).decode("utf-8")).get("config")
                previous = identity_of(previous or {})
                if upgrade is not None:
                    previous = upgrade(previous)
            except (json.JSONDecodeError, AttributeError):
                raise RunFolderError(f"{info_path}: damaged; use --overwrite to start "
                                     "again") from None
            if previous != identity:
                changed = sorted(k for k in set(previous or {}) | set(identity)
                                 if (previous or {}).get(k) != identity.get(k))
                raise RunFolderError(
                    f"{self.path} holds a run made with other options "
                    f"({', '.join(changed) or 'config'} "
                    f"{'differs' if len(changed) < 2 else 'differ'}); use --overwrite to "
                    "replace it "
                    "or --out to choose another folder")
        elif foreign:
            raise RunFolderError(f"{self.path} is not empty and is not an mmconvert run folder; "
                                 "choose another --out")

    def lock(self):
        """One run at a time in this folder (``locked``)."""
        return locked(self.path / LOCK, self.path)

    def create(self, overwrite: bool) -> list[str]:
        """Make the folder (with ``overwrite``, first clear what an earlier run wrote);
        returns the files ``clear`` left because no run recorded them."""
        kept = self.clear() if overwrite else []
        self.path.mkdir(parents=True, exist_ok=True)
        self.remove_partial_files()
        return kept

    def remove_partial_files(self) -> None:
        """Temporary files of writes a kill interrupted (their targets were never replaced):
        each ``.*.tmp`` file in the folder, its folders read an entry at a time (a glob lists
        a folder whole: 20 MB for the images of 100,000 items), links to folders not
        followed."""
        folders = [str(self.path)]
        while folders:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.name.startswith(".") and entry.name.endswith(".tmp") and \
                            len(entry.name) > 4:
                        try:
                            os.unlink(entry.path)
                        except FileNotFoundError:
                            pass

    def clear(self) -> list[str]:
        """Remove what an earlier run wrote, and nothing else: its own files (manifest,
        run.json, …), every file its rows record, its plots and shards, and the folders
        that leaves empty. Returns the files left (run-relative): a file of the user's in
        ``images/`` is not a run's to delete."""
        recorded = self._recorded()
        kept: list[str] = []
        for name in OWNED:
            target = self.path / name
            if target.is_symlink() or not target.exists():
                continue
            if not target.is_dir():
                target.unlink()
                continue
            for path in sorted(target.rglob("*"), reverse=True):  # files, then their folders
                rel = path.relative_to(self.path).as_posix()
                if path.is_dir() and not path.is_symlink():
                    if not any(path.iterdir()):
                        path.rmdir()
                elif rel in recorded or _made_by_a_run(rel):
                    path.unlink()
                else:
                    kept.append(rel)
            if not any(target.iterdir()):
                target.rmdir()
        return sorted(kept)

    def _recorded(self) -> set[str]:
        """The run-relative paths the manifest's rows record (a line that does not parse
        records nothing)."""
        found: set[str] = set()
        if not self.manifest.path.is_file():
            return found
        for raw in self.manifest.lines():
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            found.update(path for path, _ in recorded_files(row))
        return found

    def write_info(self, info: dict[str, Any]) -> None:
        write_json(self.path / RUN_INFO, info)

    def mark_failed(self, info: dict[str, Any]) -> None:
        """run.json with a failed run's status, even on a full disk: atomically when there is
        room, else over the old file in place (it needs no new blocks when no larger); a disk
        too full even for that leaves run.json as it was."""
        try:
            self.write_info(info)
        except OSError:
            try:
                with open(self.path / RUN_INFO, "r+b") as handle:
                    handle.write(json_bytes(info))
                    handle.truncate()
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError:
                pass

    def take(self, result: Result, on_error: str, *, item_id: str | None = None,
             stage: str | None = None, row_model: type | None = None) -> str:
        """The one sink of a worker's result, for render, sweep and transform alike: a made
        item is written; a failure is recorded in skipped.jsonl (as ``item_id`` and ``stage``
        when given, else the error's own) when it is always recorded (a rule's drop, a failed
        request) or ``on_error`` is skip, and raised otherwise. Returns what became of it:
        "made", "stopped", "filtered" (a rule), "failed" (a request) or "skipped".
        ``row_model``: the model a made row must fit (the job's; else the one of the renderer
        the row names)."""
        if isinstance(result, Made):
            self.write(result.output, row_model)
            return "made"
        if isinstance(result, Stopped):
            return "stopped"
        err = result.error
        if not (err.always_recorded or on_error == "skip"):
            raise err
        self.skipped.append({"id": item_id or err.item_id, "stage": stage or err.stage,
                             "reason": str(err),
                             **({"source_sha256": result.source} if result.source else {})})
        if isinstance(err, ItemFiltered):
            return "filtered"
        return "failed" if err.always_recorded else "skipped"

    @contextmanager
    def grouped(self) -> Iterator[None]:
        """Inside the block, ``write`` makes files and rows durable in groups (every
        ``GROUP_ROWS`` rows or ``GROUP_SECONDS``, and at the end): the files of a group,
        written atomically, are synced in one pass, then the group's rows are appended and
        synced. A row still never names a file that is not on disk; a kill loses at most the
        rows of one group, whose items a resumed run makes again (the same bytes)."""
        self._pending = []
        self._since = time.monotonic()
        try:
            yield
        except BaseException:
            try:  # keep what was made; the error that stopped the run is the one to report
                self._flush()
            except OSError:
                pass
            raise
        else:
            self._flush()
        finally:
            self._pending = None

    @contextmanager
    def sharded(self, rows: int = SHARD_ROWS,
                submit: Callable[..., Future] | None = None) -> Iterator[None]:
        """Inside the block, ``write`` puts files into Parquet shards of ``rows`` rows
        (``shards.ShardWriter``): a shard's rows reach the manifest once it is on disk. A
        shard cut short by an error is dropped, and its items are made again on resume.
        ``submit`` runs a side task on the cluster whose workers wrote their files into the
        spool (``Executor.submit``): it packs their shards there."""
        (self.path / SHARDS).mkdir(parents=True, exist_ok=True)
        self.clear_spools()  # a stopped run's, never packed
        self._shards = ShardWriter(self.path, rows, lambda made: self.manifest.append(*made),
                                   submit, new_spool())
        try:
            yield
        except BaseException:
            self._shards.abandon()
            raise
        else:
            self._shards.finish()
            self.clear_spools()
        finally:
            self._shards = None

    @property
    def spool(self) -> str:
        """Inside ``sharded``: where a cluster's workers spool their files (run-relative)."""
        return self._shards.spool if self._shards is not None else ""

    def _flush(self) -> None:
        if self._pending:
            sync()
            self.manifest.append(*self._pending)
            self._pending = []
        self._since = time.monotonic()

    def write(self, output: Output, row_model: type | None = None) -> None:
        """The sink: an item's files (atomically, inside the folder), then its manifest row,
        so a row never names a file that is not there. The row is checked first against
        ``row_model`` (the job's), or the row model of the renderer it names."""
        output.typed, found = read_row(output.row, row_model)
        if output.typed is None:
            found = found or ("row", "not a row")
            raise RunFolderError(f"{self.path / MANIFEST}: item {output.row.get('id')!r}: "
                                 f"field {found[0]}: {found[1]} (a row made by this version "
                                 "of mmconvert does not fit its schema: please report it)")
        if self._shards is not None:
            for rel, _ in output.files:
                inside(self.path, rel)  # the same names a files run would write
            for rel in output.written:  # spooled: nothing is written under the name itself
                run_name(rel)
                self._written(f"{self.spool}/{rel}")
            self._shards.add(output.row, output.files, output.written)
            return
        pending = self._pending
        for rel, data in output.files:
            write_file(self.path, rel, data, durable=pending is None)
        for rel in output.written:
            self._written(rel)
        if pending is None:
            self.manifest.append(output.row)
            return
        pending.append(output.row)
        if len(pending) >= GROUP_ROWS or time.monotonic() - self._since >= GROUP_SECONDS:
            self._flush()

    def clear_spools(self) -> None:
        """Remove the spool a cluster's workers wrote into (a stopped run's, never packed)."""
        shutil.rmtree(self.path / SPOOL, ignore_errors=True)

    def _written(self, rel: str) -> None:
        """Refuse a file a worker elsewhere reported written into the run but is not there."""
        if not inside(self.path, rel).is_file():
            raise RunFolderError(f"{self.path / rel}: a worker reported it written, but it is "
                                 "not there (does every worker reach the run folder at the "
                                 "same path?)")

    def rows(self) -> list[Row]:
        """The manifest's rows, each parsed with its renderer's row model: a row that does not
        fit is a one-line error naming the file, line and field."""
        if not self.manifest.path.exists():
            return []
        self.manifest.cut_torn_line()
        rows = []
        for _, row, problem in manifest_entries(self.manifest.path):
            if problem is not None or row is None:
                raise RunFolderError(str(problem))
            rows.append(row)
        return rows

    def info(self) -> dict[str, Any]:
        """run.json, or {} for a folder without one."""
        path = self.path / RUN_INFO
        if not path.is_file():
            return {}
        try:
            info = json.loads(read_bytes(path).decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise RunFolderError(f"{path}: not JSON ({getattr(err, 'msg', err)})") from None
        if not isinstance(info, dict):
            raise RunFolderError(f"{path}: not a JSON object")
        return info

    def done_ids(self) -> set[str]:
        """Items that need no more work: in the manifest, or recorded as skipped."""
        return {r["id"] for r in self.manifest.read()} | {r["id"] for r in self.skipped.read()}
