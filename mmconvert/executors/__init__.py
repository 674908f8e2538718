"""Executors, registered by name: one ordered map over items (``executors.base.Executor``)
that render, occlude, generate, sweep, transform and qa check all run through."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..registry import Registry

if TYPE_CHECKING:
    from .base import Executor

EXECUTORS: Registry[type[Executor]] = Registry("executor")
EXECUTORS.register("inline", "mmconvert.executors.local:InlineExecutor")
EXECUTORS.register("process", "mmconvert.executors.local:ProcessExecutor")
EXECUTORS.register("thread", "mmconvert.executors.local:ThreadExecutor")


def local_executor(workers: int, tasks: int, *, threads: int | None = None) -> Executor:
    """The executor for ``tasks`` tasks on this machine: ``threads`` threads for work that
    waits on the network, else ``workers`` processes (0: one per core), inline for one."""
    if threads:
        return EXECUTORS.get("thread")(min(threads, max(1, tasks)))
    workers = workers or os.cpu_count() or 1
    if workers == 1 or tasks <= 1:
        return EXECUTORS.get("inline")(1)
    return EXECUTORS.get("process")(min(workers, tasks))
