"""Run-folder files: atomic file writes and crash-safe JSONL logs.

A JSONL log is appended one whole line at a time and fsync'd; a line torn by a kill is cut off
when the log is next opened, so a re-run continues from the last complete row.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import RunFolderError

MANIFEST = "manifest.jsonl"
SKIPPED = "skipped.jsonl"
QA = "qa.jsonl"
RUN_INFO = "run.json"

# mkstemp makes 0600 files; written files get the mode open() would give them. The umask is
# read once, at import, because reading it means setting it (not safe in threads).
_UMASK = os.umask(0o022)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


def no_link(path: Path) -> None:
    """Refuse, in one line, a ``path`` that is a symbolic link: mmconvert writes nothing
    through a link (a run folder's ``stats`` or ``qa.jsonl`` pointing elsewhere would make it
    write there)."""
    if os.path.islink(path):
        raise RunFolderError(f"{path} is a symbolic link (to {os.readlink(path)}); mmconvert "
                             "writes nothing through a link: remove it, or choose another "
                             "folder")


def no_links_in(folder: Path) -> None:
    """Refuse a folder mmconvert is about to write into when any entry in it, or any folder
    entry one level down (``images/``, ``stats/``, ``shards/.spool``), is a symbolic link.
    The folder itself may be reached through links (``--out`` on another disk)."""
    try:
        top = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in top:
        no_link(Path(entry.path))
        if entry.is_dir(follow_symlinks=False):
            with os.scandir(entry.path) as inner:
                for sub in inner:
                    if sub.is_symlink() and os.path.isdir(sub.path):
                        no_link(Path(sub.path))


def open_regular(path: Path):
    """``path`` opened for reading in binary, if it is a regular file: it is opened without
    blocking, so a FIFO or a device where a run's file should be is one line at once instead
    of a reader waiting for ever (FileNotFoundError passes through)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    only_regular(fd, path, "reads a run's files only from")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def only_regular(fd: int, path: Path, what: str) -> None:
    """Refuse (closing ``fd``) a file that is not a regular one: a FIFO would block its
    reader or writer for ever."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunFolderError(f"{path} is not a regular file (a FIFO, a device or a folder); "
                             f"mmconvert {what} regular files")


def read_bytes(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (``open_regular``)."""
    with open_regular(path) as handle:
        return handle.read()


def open_for_append(path: Path) -> int:
    """A descriptor of ``path`` (created if missing) for reading and appending, never
    through a symbolic link."""
    path.parent.mkdir(parents=True, exist_ok=True)
    no_link(path.parent)
    return open_in_place(path, os.O_APPEND, "appends only to")


def open_in_place(path: Path, flags: int, what: str, mode: int = FILE_MODE) -> int:
    """A read-write descriptor of ``path`` (created if missing, ``flags`` added) for a
    write in place: refused in one line when ``path`` is a symbolic link, not a regular
    file, or a hard link (the write would land in a file elsewhere)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | flags, mode)
    except OSError as err:
        if err.errno == errno.ELOOP:
            no_link(path)
        raise
    only_regular(fd, path, what)
    no_hard_link(fd, path)
    return fd


def no_hard_link(fd: int, path: Path) -> None:
    """Refuse (closing ``fd``) a file that has other names: writing into it in place would
    change a file elsewhere that shares its data (a hard link)."""
    links = os.fstat(fd).st_nlink
    if links > 1:
        os.close(fd)
        raise RunFolderError(f"{path} has {links} names (a hard link to a file elsewhere); "
                             "mmconvert writes into no file in place that another name "
                             "shares: remove it, or choose another folder")


def whole_lines_end(fd: int, size: int) -> int:
    """Where the last whole line of the file ``fd`` (``size`` bytes) ends: after its last
    newline, found reading back from the end a block at a time (a line torn by a kill may
    be longer than any block); 0 when there is none."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def json_bytes(data: Any, indent: int = 2) -> bytes:
    """``data`` as readable UTF-8 JSON (what ``write_json`` writes)."""
    return (json.dumps(data, ensure_ascii=False, indent=indent) + "\n").encode("utf-8")


def write_json(path: Path, data: Any, indent: int = 2) -> None:
    """``data`` as readable UTF-8 JSON, written atomically."""
    atomic_write(path, json_bytes(data, indent))


def user_cache() -> Path:
    """mmconvert's folder in the user's cache: ``$XDG_CACHE_HOME/mmconvert`` (``~/.cache``),
    where what is costly to rebuild and cheap to check is kept between processes."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mmconvert"


_TEMPORARY = [0]  # this process's count of temporary files made


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside ``path`` (``.NAME.<pid>-<n>.tmp``, which a resumed run removes), opened
    for writing: created, never an existing file or link followed (mkstemp's random names
    where one is taken)."""
    _TEMPORARY[0] += 1
    tmp = os.path.join(path.parent, f".{path.name}.{os.getpid()}-{_TEMPORARY[0]}.tmp")
    try:
        return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), tmp
    except FileExistsError:
        return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never half.
    ``durable``: on disk before the call returns (fsync); without it the rename is still
    atomic, and the caller makes a group of files durable at once (``sync``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    no_link(path.parent)  # the file itself, a link or not, is replaced, never written through
    fd, tmp = _temporary(path)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(err, OSError) and err.filename is None:  # a full disk: name the file
            err.filename = str(path)
        raise


def sync() -> None:
    """Everything written so far on disk (one pass for a group of files, where an fsync each
    would cost about a millisecond a file). An fsync of each of a group's files and folders
    instead, so as not to wait on other writers, was measured slower, beside a writer most of
    all: ext4 commits its journal at each fsync (``bench/sync_load.py``)."""
    if hasattr(os, "sync"):
        os.sync()


def dumps(row: dict[str, Any]) -> str:
    """One JSONL line of ``row``: UTF-8 text as it is, except in a row holding a lone
    surrogate (a bad source row recorded in skipped.jsonl can), which is written with
    escapes, as JSON allows, since UTF-8 cannot carry it."""
    text = json.dumps(row, ensure_ascii=False, separators=(", ", ": "))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(row, separators=(", ", ": "))
    return text


def _lines(rows) -> str:
    return "".join(dumps(r) + "\n" for r in rows)


def parse_row(line: bytes | str) -> Any:
    """One JSONL line's value; a ValueError saying "not a JSON row (why)" for a line that is
    not JSON (or not UTF-8)."""
    try:
        return json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        reason = getattr(err, "msg", None) or str(err)
        raise ValueError(f"not a JSON row ({reason})") from None


class JsonlLog:
    """An append-only JSONL file of whole rows."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> list[dict[str, Any]]:
        """All complete rows; a torn last line (from a kill) is removed from the file."""
        return [row for _, row in self.read_numbered()]

    def read_numbered(self) -> list[tuple[int, dict[str, Any]]]:
        """(line number, row) of every complete row; a torn last line is removed."""
        return list(self._numbered())

    def ids(self) -> list[Any]:
        """The ``id`` of every complete row, in order, read a line at a time (a run's rows
        are never all in memory at once); a torn last line is removed, as ``read`` does."""
        return [row.get("id") if isinstance(row, dict) else None
                for _, row in self._numbered()]

    def lines(self) -> Iterator[bytes]:
        """The non-blank lines, as bytes, a line at a time (after ``ids`` or ``read``, which
        cut a torn last line)."""
        if not self.path.exists():
            return
        with open_regular(self.path) as handle:
            for line in handle:
                if line.strip():
                    yield line

    def _numbered(self) -> Iterator[tuple[int, Any]]:
        """(line number, row) of every complete row, parsed a line at a time, after a torn
        last line (from a kill) is cut from the file."""
        if not self.path.exists():
            return
        self.cut_torn_line()
        with open_regular(self.path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, parse_row(line)
                except ValueError as err:
                    raise RunFolderError(f"{self.path} line {number}: {err}; the file is "
                                         "damaged") from None

    def cut_torn_line(self) -> None:
        """Remove what follows the last newline (a row a kill tore), reading from the end;
        the file is opened for writing only when there is something to cut."""
        with open_regular(self.path) as handle:
            size = os.fstat(handle.fileno()).st_size
            end = whole_lines_end(handle.fileno(), size)
        if end < size:
            fd = open_for_append(self.path)
            try:
                os.ftruncate(fd, end)
            finally:
                os.close(fd)

    def rewrite(self, rows: list[dict[str, Any]]) -> None:
        """Replace the whole log (atomically) with ``rows``."""
        atomic_write(self.path, _lines(rows).encode("utf-8"))

    def append(self, *rows: dict[str, Any]) -> None:
        if not rows:
            return
        data = _lines(rows).encode("utf-8")
        with os.fdopen(open_for_append(self.path), "ab") as handle:
            size = handle.tell()
            try:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as err:  # a full disk: leave no torn line, and give its room back
                handle.truncate(size)
                err.filename = err.filename or str(self.path)
                raise
