"""One process at a time in a folder: ``locked`` holds the kernel's lock on a file in it
while a block runs (a run, an evaluation, an export, a harness's tasks), or stops at once with
one line naming the holder."""

from __future__ import annotations

import fcntl
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import RunFolderError
from .manifest import no_link, no_links_in, open_in_place

# a killed run's worker processes share its lock (they were forked holding it) and die a moment
# after it, with PR_SET_PDEATHSIG: the seconds a lock whose recorded holder is dead is waited for
DEAD_HOLDER_GRACE = 5.0


def _gone(holder: str) -> bool:
    """Whether the process a lock file names (``pid N, …``) no longer exists."""
    found = re.match(r"pid (\d+),", holder)
    if found is None:
        return False
    try:
        os.kill(int(found.group(1)), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


@contextmanager
def locked(path: Path, what: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` while the block runs, or stop at once with
    one line naming the run that holds it. The lock is the kernel's (``flock``): it goes with
    the process that held it, so a lock file left by a killed run never blocks the next one
    (a dead holder's worker processes, which share the lock, are waited for a moment).
    The file is removed when the block ends (so a finished folder holds only its outputs);
    a lock taken on a file that was removed meanwhile is dropped and taken again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    no_link(path.parent)
    if path.parent.resolve() == Path(what).resolve():
        no_links_in(Path(what))  # nothing the block writes goes through a link
    deadline = time.monotonic() + DEAD_HOLDER_GRACE
    while True:
        fd = open_in_place(path, 0, "locks only", 0o666)  # the lock's note is written in it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 1000, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)  # (the CLI shows any control character in it escaped)
            if _gone(holder) and time.monotonic() < deadline:
                time.sleep(0.05)  # a killed run's worker processes, still exiting
                continue
            raise RunFolderError(f"{what} is in use by another mmconvert run ({holder}); wait "
                                 "for it to finish, or choose another --out") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed it as we opened it: take the new one
    try:
        command = " ".join(["mmconvert", *sys.argv[1:]])[:300]
        note = f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}: {command}"
        os.ftruncate(fd, 0)
        os.pwrite(fd, note.encode("utf-8", "replace"), 0)
        yield
    finally:
        path.unlink(missing_ok=True)  # still holding the lock, so no one else has it
        os.close(fd)
