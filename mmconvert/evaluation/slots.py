"""One ``--concurrency`` shared by an evaluation's condition processes.

``mmconvert eval`` runs each condition in a process of its own, since inspect's bookkeeping
takes about a core's worth of CPU at a few hundred requests a second. Those processes used to
split ``--concurrency`` evenly between them, so a condition answered from the response cache
(a curve's whole text at its second point, its text cut to a budget the whole text fits) held
its share of the slots idle while the others waited: at 3 conditions and 32 slots, the images
went 10 at a time. Now every process may keep the whole ``--concurrency`` in flight, and each
request first takes one of the evaluation's slots, a semaphore its processes inherit, so the
server never sees more than ``--concurrency`` at once and no slot waits on a finished
condition.

A slot is taken before inspect's ``generate`` and given back after it, retries included, so
the wait for a slot is not counted against ``--timeout``'s bound on an attempt; a judge's
request (``--judge-model``, made while the answer is scored) takes one too.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

# the longest pause between two tries for a slot: well under any request's own time, and
# about 50 tries a second for a request that waits
LONGEST_PAUSE = 0.02


class Slots:
    """``count`` requests in flight among this process and the processes it forks later."""

    def __init__(self, count: int):
        self.count = count
        self._semaphore = multiprocessing.BoundedSemaphore(count)

    @asynccontextmanager
    async def taken(self) -> AsyncIterator[None]:
        """Hold one slot for the body: waits, without blocking the event loop, while all
        are taken."""
        import anyio

        pause = 0.001
        while not self._semaphore.acquire(block=False):
            await anyio.sleep(pause)
            pause = min(2 * pause, LONGEST_PAUSE)
        try:
            yield
        finally:
            self._semaphore.release()


__all__ = ["Slots"]
