"""A run's files in Parquet shards (``--store shards``) instead of one file per image.

A shard holds ``shard_rows`` consecutive manifest rows (the last one fewer), one Parquet row
each: the item's ``id``, its manifest ``row`` as JSON, its ``images`` (a list of Hugging Face
``Image`` values: the PNG or JPEG bytes and the run-relative name the row records), and its other
``files`` (layout, PDF) as (path, bytes). The schema carries the ``datasets`` feature metadata,
so ``datasets.load_dataset("parquet", data_files="RUN/shards/*.parquet")`` reads the images as
images. The manifest is the same as a files run's: a row names its files by the same paths,
and readers find them in the shards (``ShardReader``).

Shards are written in full, in manifest order: a shard goes to a temporary file row group by
row group, is synced and renamed into place, and only then are its rows appended to the
manifest. So a manifest row always has its shard, and a shard is always whole: a kill loses the
rows of the shard being written, which a resumed run makes again (the same bytes, so the same
shards). ``check`` finds, on resume, a shard that does not hold the manifest's next rows (torn,
written just before a kill and never recorded, or changed since: each row is compared with its
manifest line and each file's bytes with the row's sha256): it and every later shard are
removed, with their rows, and made again.

On a cluster (``--executor ray``) the workers write an item's files into the spool of the
run's attempt (``shards/.spool/<attempt>``) where they run, and only rows reach the driver; a
full shard's rows are packed into their shard by a task on the cluster (``pack``), several
shards at once, and the driver appends their rows in shard order once each is in place. The
shards are the same bytes. A run started again clears the spools: a pack task a killed run
left running then finds its spool gone and puts nothing in place, and its temporary file has a
name of its own.
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .errors import ItemError, first_line
from .manifest import dumps
from .rows import recorded_files

SHARDS = "shards"
SHARD_ROWS = 1000  # rows a shard (``--shard-rows``)
GROUP_ROWS = 64  # rows a Parquet row group: what one image read decodes at most
# a cluster run's files as its workers wrote them, each kept until its shard is packed
SPOOL = f"{SHARDS}/.spool"
PACKS_IN_FLIGHT = 8  # shards being packed on the cluster at once, at most
ABANDON_WAIT = 60.0  # seconds a stopped run waits for a shard being packed
_NAME = re.compile(r"shard-(\d{6})\.parquet")
# zstd for the names and the rows' JSON; PNG and JPEG bytes, already compressed, are stored as
# they are (on 34 occluded COCO photos, zstd over them saved 0.02 % and wrote 14x slower)
COMPRESSION = {"id": "zstd", "row": "zstd", "images.list.element.path": "zstd",
               "images.list.element.bytes": "none", "files.list.element.path": "zstd",
               "files.list.element.bytes": "zstd"}


def row_group_starts(metadata) -> list[int]:
    """The first row of each row group of a Parquet file (its ``FileMetaData``)."""
    starts, at = [], 0
    for group in range(metadata.num_row_groups):
        starts.append(at)
        at += metadata.row_group(group).num_rows
    return starts


def shard_name(index: int) -> str:
    return f"{SHARDS}/shard-{index:06d}.parquet"


def shard_files(root: Path) -> list[Path]:
    """The run's shards, in order."""
    folder = root / SHARDS
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if _NAME.fullmatch(p.name))


def is_sharded(root: Path) -> bool:
    return (root / SHARDS).is_dir()


def _schema():
    import pyarrow as pa

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    file = pa.struct([("path", pa.string()), ("bytes", pa.binary())])
    features = {"id": {"dtype": "string", "_type": "Value"},
                "row": {"dtype": "string", "_type": "Value"},
                # a list given as [feature]: the form every datasets version since 2 reads
                "images": [{"_type": "Image"}],
                "files": [{"path": {"dtype": "string", "_type": "Value"},
                           "bytes": {"dtype": "binary", "_type": "Value"}}]}
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    return pa.schema([("id", pa.string()), ("row", pa.string()), ("images", pa.list_(image)),
                      ("files", pa.list_(file))], metadata=metadata)


class _ShardFile:
    """One shard as it is written: its rows go in row groups to a temporary file, which
    ``close`` syncs and renames into place (so a shard on disk is always whole)."""

    def __init__(self, root: Path, index: int):
        self.final = root / shard_name(index)
        # a name of its own: a pack task of a killed run may still be writing the same shard
        self.temp = self.final.with_name(f".{self.final.name}.{uuid.uuid4().hex[:12]}.tmp")
        self._writer: Any = None  # a pyarrow ParquetWriter, once the first group is full
        self._group: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any], files: list[tuple[str, bytes]]) -> None:
        images = {entry["path"] for entry in row.get("images") or []}
        self._group.append({
            "id": row["id"],
            "row": dumps(row),  # the manifest's own line
            "images": [{"bytes": data, "path": rel} for rel, data in files if rel in images],
            "files": [{"path": rel, "bytes": data} for rel, data in files if rel not in images],
        })
        if len(self._group) >= GROUP_ROWS:
            self._write_group()

    def _write_group(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._group:
            return
        if self._writer is None:
            self.final.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.temp, _schema(), compression=COMPRESSION,
                                            use_dictionary=["id"], write_statistics=["id"])
        self._writer.write_table(pa.Table.from_pylist(self._group, schema=_schema()),
                                 row_group_size=GROUP_ROWS)
        self._group = []

    def close(self, still: Callable[[], bool] | None = None) -> bool:
        """Put the shard in place, unless ``still()`` says by then that its run is gone
        (then it is discarded); whether it was put in place."""
        self._write_group()
        if self._writer is None:
            return False
        self._writer.close()
        self._writer = None
        with open(self.temp, "rb") as handle:
            os.fsync(handle.fileno())
        if still is not None and not still():
            self.discard()
            return False
        os.replace(self.temp, self.final)
        directory = os.open(self.final.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return True

    def discard(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except OSError:
                pass
            self._writer = None
        self.temp.unlink(missing_ok=True)
        self._group = []


def new_spool() -> str:
    """The spool of one attempt at a run (run-relative): a run started again after a kill
    spools apart from any pack task the killed one left running, and clears the old spools."""
    return f"{SPOOL}/{uuid.uuid4().hex[:12]}"


def pack(root: str, spool: str, index: int,
         entries: list[tuple[dict[str, Any], list[str]]]) -> bool:
    """Shard ``index`` of the run at ``root`` from its rows' files in ``spool``, where a
    cluster's workers wrote them (a side task, run on the cluster); then those files go.
    A task left running by a killed run finds its spool cleared by the next attempt, and
    puts nothing in place: returns whether the shard was put in place."""
    folder = Path(root) / spool
    shard = _ShardFile(Path(root), index)
    try:
        for row, names in entries:
            shard.add(row, [(rel, (folder / rel).read_bytes()) for rel in names])
        placed = shard.close(still=folder.is_dir)
    except BaseException:
        shard.discard()
        raise
    for _, names in entries:
        for rel in names:
            (folder / rel).unlink(missing_ok=True)
    return placed


class ShardWriter:
    """Rows and their files into shards of ``rows`` rows; ``on_shard(rows)`` is called with
    each shard's manifest rows, in order, once the shard is on disk.

    A row comes with its files' bytes (``add(row, files)``: this process writes the shard as
    the rows come), or with the names of files a cluster's workers wrote into the spool
    (``add(row, [], spooled)``): a full shard's rows are then packed on the cluster by
    ``submit(pack, …)``, up to ``PACKS_IN_FLIGHT`` shards at once, so that the images' bytes
    never reach this process."""

    def __init__(self, root: Path, rows: int, on_shard,
                 submit: Callable[..., Future] | None = None, spool: str = ""):
        self.root, self.rows, self.on_shard, self.submit = root, rows, on_shard, submit
        self.spool = spool  # where this attempt's workers spool (``new_spool``)
        self.index = len(shard_files(root))  # ``check`` left shards 0 … index-1
        self._file: _ShardFile | None = None
        self._rows: list[dict[str, Any]] = []
        self._spooled: list[tuple[dict[str, Any], list[str]]] = []
        self._packing: deque[tuple[Future, list[dict[str, Any]], int]] = deque()
        self._gap = False  # a shard failed to pack: none after it is recorded

    def add(self, row: dict[str, Any], files: list[tuple[str, bytes]],
            spooled: list[str] | tuple[str, ...] = ()) -> None:
        if spooled:
            if self.submit is None or files:
                raise ValueError("spooled files need a cluster to pack them, and no bytes")
            self._spooled.append((row, list(spooled)))
        else:
            if self._file is None:
                self._file = _ShardFile(self.root, self.index)
            self._file.add(row, files)
        self._rows.append(row)
        if len(self._rows) >= self.rows:
            self._next()

    def _next(self) -> None:
        """The shard being filled is full (or the run ends): write it, or send it packing."""
        rows, self._rows = self._rows, []
        if self._spooled:
            assert self.submit is not None  # ``add`` spools only with a cluster to pack
            entries, self._spooled = self._spooled, []
            self._packing.append((self.submit(pack, str(self.root), self.spool, self.index,
                                              entries), rows, self.index))
            self.index += 1
            self._done(wait=len(self._packing) > PACKS_IN_FLIGHT)
        elif self._file is not None:
            self._file.close()
            self._file = None
            self.index += 1
            self.on_shard(rows)

    def _done(self, wait: bool) -> None:
        """Hand on the rows of the shards packed so far, in order; ``wait`` for the first
        one still packing when there are too many."""
        while self._packing and (self._packing[0][0].done() or wait):
            future, rows, index = self._packing.popleft()
            try:
                if not future.result():
                    raise OSError(f"{self.root / self.spool}: cleared while shard {index} "
                                  "was packing (another run in this folder?)")
            except BaseException:
                self._gap = True  # the later shards' rows must not be recorded
                raise
            self.on_shard(rows)
            wait = len(self._packing) > PACKS_IN_FLIGHT

    def finish(self) -> None:
        """Close the shard being written (a short one at the end of a run) and wait for the
        shards being packed, then hand their rows on."""
        if self._rows:
            self._next()
        while self._packing:
            self._done(wait=True)

    def abandon(self) -> None:
        """Drop the shard being written (its rows are made again on resume: stopping mid-shard
        keeps every shard the one an uninterrupted run writes). Shards already sent packing
        are waited for, and those packed in order keep their rows; a later one left on disk
        is removed on resume (``check``)."""
        if self._file is not None:
            self._file.discard()
            self._file = None
        self._rows, self._spooled = [], []
        recorded = not self._gap
        for future, rows, _ in self._packing:
            try:
                recorded = recorded and future.result(timeout=ABANDON_WAIT)
            except Exception:  # noqa: BLE001 - the error that stopped the run is the one to report
                recorded = False
            if recorded:
                self.on_shard(rows)
        self._packing.clear()


def open_shard(path: Path):
    """The shard at ``path`` as a ``pyarrow.parquet.ParquetFile``; a ValueError when it is not
    one of ours (another file's schema) or cannot be read (torn; pyarrow's ArrowInvalid is a
    ValueError too)."""
    import pyarrow.parquet as pq

    shard = pq.ParquetFile(path)
    names = set(shard.schema_arrow.names)
    if not {"id", "row", "images", "files"} <= names:
        raise ValueError(f"not an mmconvert shard (its columns: {', '.join(sorted(names))})")
    return shard


def shard_ids(path: Path) -> list[str] | None:
    """The ids a shard holds, in order, or None when it cannot be read (torn, or another
    file's)."""
    try:
        return open_shard(path).read(columns=["id"]).column("id").to_pylist()
    except (OSError, ValueError):
        return None


def holds(path: Path, lines: list[bytes]) -> bool:
    """Whether the shard at ``path`` is whole and holds exactly the manifest ``lines`` (its
    rows' own lines, in order) with the bytes their rows' sha256 name: a shard that was torn,
    never recorded, or changed since (an image's bytes, a row edited in the shard or in the
    manifest) does not."""
    import hashlib

    try:
        shard = open_shard(path)
        if shard.metadata.num_rows != len(lines) or not lines:
            return False
        pending = iter(lines)
        for group in range(shard.num_row_groups):
            for record in shard.read_row_group(group).to_pylist():
                line = next(pending)
                if record["row"].encode("utf-8") != line.rstrip(b"\n"):
                    return False
                row = json.loads(line)
                recorded = dict(recorded_files(row))
                stored = (record["images"] or []) + (record["files"] or [])
                if {e["path"] for e in record["images"] or []} != {
                        e["path"] for e in row["images"]}:
                    return False
                for entry in stored:
                    want = recorded.get(entry["path"])
                    if want and hashlib.sha256(entry["bytes"]).hexdigest() != want:
                        return False
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False  # torn, or not a shard of ours (pyarrow's errors are ValueErrors)
    return True


def check_shards(root: Path, ids: list[Any],
                 lines: Callable[[], Iterator[bytes]]) -> tuple[int, int]:
    """Keep the shards that hold the manifest's rows (``ids``, in order, and ``lines()``, the
    manifest's lines) from the first, checked row by row and byte by byte (``holds``); remove
    the first one that does not and every one after it. Returns (manifest rows the kept
    shards hold, shards removed)."""
    position, removed = 0, 0
    files = shard_files(root)
    manifest = lines()
    for index, path in enumerate(files):
        held = shard_ids(path) if path.name == Path(shard_name(index)).name else None
        whole = held is not None and bool(held) and \
            held == ids[position:position + len(held)] and \
            holds(path, [next(manifest) for _ in held])
        if not whole:
            for later in files[index:]:
                later.unlink(missing_ok=True)
                removed += 1
            break
        position += len(held or ())
    return position, removed


def _signature(path: Path) -> tuple[int, int, int]:
    """What tells a shard file from the one made again in its place."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


class ShardReader:
    """A sharded run's files by the names its rows record: an index of names to (shard, row)
    read from the shards' path columns, and the last few row groups read kept decoded."""

    def __init__(self, root: Path):
        self.root = root
        self._lock = threading.Lock()
        self._index: dict[str, tuple[Path, int]] = {}
        self._seen: dict[Path, tuple[int, int, int]] = {}  # each shard's signature
        self._groups: OrderedDict[tuple[Path, int], list[dict[str, Any]]] = OrderedDict()
        self._starts: dict[Path, list[int]] = {}
        self.broken: dict[Path, str] = {}  # shards that could not be read, and why

    def _refresh(self) -> None:
        present = set(shard_files(self.root))
        for gone in [path for path in self._seen if path not in present]:  # removed since
            self._forget(gone)
        for path in sorted(present):
            signature = _signature(path)
            if self._seen.get(path) == signature:
                continue
            self._forget(path)  # a shard made again: none of its old names or groups stay
            try:
                shard = open_shard(path)
                table = shard.read(columns=["images.list.element.path",
                                            "files.list.element.path"])
            except (OSError, ValueError) as err:  # torn: the others are still read
                self.broken[path] = first_line(err, 200)
                self._seen[path] = signature
                continue
            self.broken.pop(path, None)
            for number, (images, files) in enumerate(zip(
                    table.column("images").to_pylist(), table.column("files").to_pylist(),
                    strict=True)):
                for entry in (images or []) + (files or []):
                    self._index[entry["path"]] = (path, number)
            self._starts[path] = row_group_starts(shard.metadata)
            self._seen[path] = signature

    def _forget(self, path: Path) -> None:
        self._index = {name: where for name, where in self._index.items() if where[0] != path}
        for key in [k for k in self._groups if k[0] == path]:
            del self._groups[key]
        self._seen.pop(path, None)
        self.broken.pop(path, None)

    def _current(self, rel: str) -> bool:
        """Whether ``rel`` is indexed in a shard that is, on disk, the one indexed (a resumed
        run may have made it again while this process, a review server say, kept reading)."""
        found = self._index.get(rel)
        if found is None:
            return False
        try:
            return _signature(found[0]) == self._seen.get(found[0])
        except OSError:
            return False

    def holder(self, rel: str) -> Path | None:
        """The shard that holds ``rel``, or None."""
        with self._lock:
            if not self._current(rel):
                self._refresh()
            found = self._index.get(rel)
            return found[0] if found else None

    def read(self, rel: str) -> bytes | None:
        """The bytes of ``rel``, or None when no shard holds it."""
        import bisect

        import pyarrow.parquet as pq

        with self._lock:
            if not self._current(rel):
                self._refresh()
            if rel not in self._index:
                return None
            path, number = self._index[rel]
            starts = self._starts[path]
            group = bisect.bisect_right(starts, number) - 1
            key = (path, group)
            if key not in self._groups:
                table = pq.ParquetFile(path).read_row_group(group, columns=["images", "files"])
                self._groups[key] = table.to_pylist()
                while len(self._groups) > 4:
                    self._groups.popitem(last=False)
            self._groups.move_to_end(key)
            record = self._groups[key][number - starts[group]]
            for entry in (record["images"] or []) + (record["files"] or []):
                if entry["path"] == rel:
                    return entry["bytes"]
            return None


_READERS: dict[Path, ShardReader] = {}
_READERS_LOCK = threading.Lock()


def reader(root: Path) -> ShardReader:
    """The one ``ShardReader`` of a run folder in this process."""
    key = Path(root).resolve()
    with _READERS_LOCK:
        if key not in _READERS:
            _READERS[key] = ShardReader(key)
        return _READERS[key]


def read_stored(root: Path, rel: str, *, where: str, field: str, **context: str) -> bytes:
    """``rel`` from the run's shards; an ItemError naming ``where`` and ``field`` when no
    shard holds it, or a shard cannot be read."""
    try:
        data = reader(root).read(rel)
    except (OSError, ValueError) as err:
        raise ItemError(f"{root / SHARDS}: cannot read the shard holding {rel} ({err})",
                        where=where, field=field, **context) from None
    if data is None:
        broken = reader(root).broken
        why = "".join(f"; {path.name} cannot be read ({message})"
                      for path, message in sorted(broken.items())[:1])
        raise ItemError(f"{rel} is in no shard of {root / SHARDS}{why}", where=where,
                        field=field, **context)
    return data
