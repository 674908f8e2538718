"""A small typed registry per kind of part, with lazy ``"module:attr"`` entries."""

from __future__ import annotations

import difflib
import importlib
from typing import Generic, TypeVar

from .errors import UsageError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names to parts. Entries are registered once, as objects or as ``"module:attr"`` strings
    that are imported on first use, so heavy optional dependencies stay unimported."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, target: T | str) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = target

    def names(self) -> list[str]:
        return sorted(self._entries)

    def registered(self) -> list[str]:
        """The names in the order they were registered."""
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def get(self, name: str) -> T:
        try:
            target = self._entries[name]
        except KeyError:
            raise UsageError(self.unknown_message(name)) from None
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
            self._entries[name] = target
        return target

    def unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, self.names(), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown {self.kind} {name!r} (known: {', '.join(self.names())}){hint}"
