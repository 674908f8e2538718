"""The executors of one machine: inline (this process), process (a pool of worker processes,
which die with their parent), thread (for work that waits on the network)."""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor as PoolExecutor
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .base import Executor


class InlineExecutor(Executor):
    name = "inline"
    description = "one task after another, in this process"

    def map(self, make_worker, tasks, *, remote=None):
        worker = make_worker()
        for task in tasks:
            yield worker(task)


def _windowed(pool: PoolExecutor, call: Callable[[Any], Any], tasks: Iterable[Any],
              window: int, stop: Callable[[], None] | None = None) -> Iterator[Any]:
    """``call`` over ``tasks`` in ``pool``, results in task order, at most ``window`` tasks
    submitted ahead (a long run does not queue every task at once). When the caller stops
    early (an error, or the iterator closed), the tasks not started are cancelled and those
    running are waited for, or ended by ``stop`` when it is given."""
    pending: deque = deque()
    with pool:
        try:
            for task in tasks:
                pending.append(pool.submit(call, task))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BaseException:
            for future in pending:
                future.cancel()
            if stop is not None:
                stop()
            pool.shutdown(wait=True, cancel_futures=True)
            raise


class ThreadExecutor(Executor):
    name = "thread"
    description = "a pool of threads sharing one worker (network-bound work: generate, OCR)"

    def map(self, make_worker, tasks, *, remote=None):
        worker = make_worker()
        pool = ThreadPoolExecutor(max_workers=self.workers)
        yield from _windowed(pool, worker, tasks, 4 * self.workers)


_WORKER: dict[str, Callable[[Any], Any]] = {}
_SIDE_THREADS: dict[str, tuple[int, ThreadPoolExecutor]] = {}


def side_threads(name: str, count: int) -> ThreadPoolExecutor:
    """This process's pool of ``count`` threads named ``name``, for work a task hands off
    inside itself (a page encoded while the next one is drawn). Made once a process: a forked
    worker makes its own, the parent's threads not being in it."""
    made = _SIDE_THREADS.get(name)
    if made is None or made[0] != os.getpid():
        made = _SIDE_THREADS[name] = (os.getpid(), ThreadPoolExecutor(
            count, thread_name_prefix=f"mmconvert-{name}"))
    return made[1]


def _die_with_parent() -> None:
    """Ask Linux to end this worker when its parent process dies (a kill -9 of the run)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def _start(make_worker, parent: int) -> None:
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    _WORKER["worker"] = make_worker()


def _call(task):
    return _WORKER["worker"](task)


class ProcessExecutor(Executor):
    name = "process"
    description = "a pool of worker processes, each building its own worker"

    def map(self, make_worker, tasks, *, remote=None, end_early: bool = False):
        """``end_early``: when the caller stops before the last result (an error, or the
        iterator closed), the workers are ended at once rather than their running tasks
        waited for: for tasks that are each a whole run (a curve's next point), which a
        killed run resumes."""
        # imported here: multiprocessing's machinery costs a one-worker run 12 ms to import
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_start,
                                   initargs=(make_worker, os.getpid()))
        yield from _windowed(pool, _call, tasks, 4 * self.workers,
                             (lambda: _end_workers(pool)) if end_early else None)


def _end_workers(pool) -> None:
    """Kill the pool's worker processes (Python 3.14 names this ``terminate_workers``); each
    worker's own workers die with it (``_die_with_parent``)."""
    ending = getattr(pool, "terminate_workers", None)
    if ending is not None:
        ending()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()
