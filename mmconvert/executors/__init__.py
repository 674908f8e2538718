"""Executors, registered by name: one ordered map over items (``executors.base.Executor``)
that render, occlude, generate, sweep, transform and qa check all run through."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import UsageError

# the registry, and where the work runs, are ``parts``' (below the configs that name them)
from ..parts import BACKEND, EXECUTORS, LOCAL
from ..parts import backends as backends
from ..parts import use as use
from .base import ClusterExecutor

if TYPE_CHECKING:
    from .base import Executor

def runs_here() -> bool:
    """Whether this invocation's work runs on this machine's own executors (not a cluster)."""
    return BACKEND.get()[0] == LOCAL


def worker_count(workers: int) -> int:
    """``workers`` as a count: 0 is one per core of this machine."""
    return workers or os.cpu_count() or 1


def draws_here(workers: int, threads: int | None = None) -> bool:
    """Whether a run of ``workers`` (0: one per core) runs every task in this process, however
    many there are: this machine's executors, one worker, no threads."""
    return runs_here() and not threads and worker_count(workers) == 1


def executor_for(workers: int, tasks: int, *, threads: int | None = None,
                 gpu: bool = False) -> Executor:
    """The executor for ``tasks`` tasks: the local one (``local_executor``), or the chosen
    cluster executor with ``workers`` workers (0: one per core of this machine), each running
    ``threads`` threads when the work waits on the network. ``gpu``: work a GPU speeds up,
    which without one uses every core of its machine by itself (embedding): in this process
    here; on a cluster, one worker per GPU when it has GPUs."""
    name, address = BACKEND.get()
    if name == LOCAL:
        if gpu:
            return EXECUTORS.get("inline")(1)
        return local_executor(workers, tasks, threads=threads)

    chosen = EXECUTORS.get(name)
    if not issubclass(chosen, ClusterExecutor):
        raise UsageError(f"--executor {name}: not a cluster executor (a ClusterExecutor)")
    return chosen(worker_count(workers), address=address, threads=threads, gpu=gpu)


def local_executor(workers: int, tasks: int, *, threads: int | None = None) -> Executor:
    """The executor for ``tasks`` tasks on this machine: ``threads`` threads for work that
    waits on the network, else ``workers`` processes (0: one per core), inline for one."""
    if threads:
        return EXECUTORS.get("thread")(min(threads, max(1, tasks)))
    workers = worker_count(workers)
    if workers == 1 or tasks <= 1:
        return EXECUTORS.get("inline")(1)
    return EXECUTORS.get("process")(min(workers, tasks))

