"""The executor contract: one ordered map over items.

``Executor.map(make_worker, tasks)`` yields ``worker(task)`` for every task, in task order,
where ``worker = make_worker()`` is built once per worker (a process, or once for inline and
thread backends). ``make_worker`` must be picklable (a module-level function, or a
``functools.partial`` of one) so that a process or a cluster node can build its own. Workers
return results (rows and the bytes of their files); they write nothing: the caller's one sink
does, in task order, so output is the same for any backend and any worker count.

A failure or an interrupt cancels what has not started and waits for what has.

``Executor.submit(fn, *args)`` runs one side task where the workers run (a sharded run's shard
packing, on a cluster) and gives a ``concurrent.futures.Future``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future
from typing import Any, ClassVar


class Executor:
    name: ClassVar[str]
    description: ClassVar[str]
    # runs on a cluster at an address (``--executor NAME [--ray-address ...]``), not one of
    # this machine's own executors, which ``local`` chooses among
    cluster: ClassVar[bool] = False

    def __init__(self, workers: int = 1):
        self.workers = max(1, workers)

    def map(self, make_worker: Callable[[], Callable[[Any], Any]],
            tasks: Iterable[Any], *,
            remote: Callable[[Any], Any] | None = None) -> Generator[Any, None, None]:
        """``remote``, when given, is applied to each result where the worker runs, if that
        is another machine's process (a cluster executor): there it writes the result's
        files into a folder every worker reaches, so that only the row travels back. Local
        executors leave it to the caller's sink; the caller must treat both the same."""
        raise NotImplementedError

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """A side task, ``fn(*args)``, where the workers run: in this process for the local
        executors (done when this returns), on the cluster for a cluster executor. ``fn`` and
        ``args`` must be picklable; the Future gives its result or raises its exception."""
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except Exception as err:  # noqa: BLE001 - the Future carries it to the caller
            future.set_exception(err)
        return future


class ClusterExecutor(Executor):
    """An executor that runs on a cluster at an address (``--executor NAME [--ray-address
    ...]``). ``executor_for`` makes it with ``workers`` workers, the cluster's ``address``
    (None: a local cluster), the ``threads`` each worker runs for work that waits on the
    network, and ``gpu`` for work a GPU speeds up."""

    cluster = True

    def __init__(self, workers: int = 1, *, address: str | None = None,
                 threads: int | None = None, gpu: bool = False):
        super().__init__(workers)
        self.address, self.threads, self.gpu = address, threads, gpu
