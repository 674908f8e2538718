"""The executor contract: one ordered map over items.

``Executor.map(make_worker, tasks)`` yields ``worker(task)`` for every task, in task order,
where ``worker = make_worker()`` is built once per worker (a process, or once for inline and
thread backends). ``make_worker`` must be picklable (a module-level function, or a
``functools.partial`` of one) so that a process or a cluster node can build its own. Workers
return results (rows and the bytes of their files); they write nothing: the caller's one sink
does, in task order, so output is the same for any backend and any worker count.

A failure or an interrupt cancels what has not started and waits for what has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar


class Executor:
    name: ClassVar[str]
    description: ClassVar[str]

    def __init__(self, workers: int = 1):
        self.workers = max(1, workers)

    def map(self, make_worker: Callable[[], Callable[[Any], Any]],
            tasks: Iterable[Any], *,
            remote: Callable[[Any], Any] | None = None) -> Iterator[Any]:
        """``remote``, when given, is applied to each result where the worker runs, if that
        is another machine's process (a cluster executor): there it writes the result's
        files into a folder every worker reaches, so that only the row travels back. Local
        executors leave it to the caller's sink; the caller must treat both the same."""
        raise NotImplementedError
