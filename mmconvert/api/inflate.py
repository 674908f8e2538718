"""A response body's gzip or deflate encoding undone in steps, against a cap on what it
inflates to: httpx would inflate a compression bomb whole (1 MiB of gzip is 1 GiB of body).
The API client's response hook and ``eval``'s capped transport both read through it."""

from __future__ import annotations

import zlib
from collections.abc import Callable

# the encodings an ``Inflater`` undoes (the only ones asked for)
ENCODINGS = ("gzip", "x-gzip", "deflate")


class Inflater:
    """Feed it a body's chunks as they arrive; each gives its inflated bytes, and one that
    takes the whole past ``cap`` bytes raises ``over()`` instead."""

    def __init__(self, encoding: str, cap: int, over: Callable[[], Exception]):
        self.cap, self.over, self.size = cap, over, 0
        self._inflate = zlib.decompressobj(
            16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS)

    def feed(self, chunk: bytes) -> bytes:
        part = self._inflate.decompress(chunk, self.cap + 1 - self.size)
        return self._counted(part, bool(self._inflate.unconsumed_tail))

    def flush(self) -> bytes:
        return self._counted(self._inflate.flush(), False)

    def _counted(self, part: bytes, more: bool) -> bytes:
        self.size += len(part)
        if self.size > self.cap or more:
            raise self.over()
        return part
