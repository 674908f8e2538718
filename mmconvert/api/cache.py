"""The response cache: every API response is stored, keyed by a hash of its request, the moment
it arrives and before anything reads it, so a response once received is never paid for again
(across re-runs, ``--overwrite`` and crashes).

One file per response, ``<root>/<key[:2]>/<key>.resp``: a one-line JSON header (the request
without secrets, HTTP status, request id, time received) then the response body exactly as
received. Files are written atomically; a kill leaves the old state or the whole new file.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..manifest import atomic_write, user_cache


def default_cache_dir() -> Path:
    """``$MMCONVERT_CACHE``, else ``$XDG_CACHE_HOME/mmconvert/responses`` (``~/.cache``)."""
    if os.environ.get("MMCONVERT_CACHE"):
        return Path(os.environ["MMCONVERT_CACHE"])
    return user_cache() / "responses"


def request_key(identity: dict[str, Any]) -> str:
    """The content address of a request: sha256 of its canonical JSON (endpoint, server,
    model, prompt, parameters, item id and seed)."""
    canonical = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    key: str
    header: dict[str, Any]
    body: bytes


class ResponseCache:
    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.resp"

    def get(self, key: str) -> CachedResponse | None:
        try:
            data = self.path(key).read_bytes()
        except FileNotFoundError:
            return None
        head, _, body = data.partition(b"\n")
        try:
            header = json.loads(head)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # not a file this cache wrote whole; ask again
        return CachedResponse(key, header, body)

    def __contains__(self, key: str) -> bool:
        return self.path(key).is_file()

    def put(self, key: str, header: dict[str, Any], body: bytes) -> CachedResponse:
        head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        atomic_write(self.path(key), head + b"\n" + body)
        return CachedResponse(key, header, body)
