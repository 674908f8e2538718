"""A small typed registry per kind of part, with lazy ``"module:attr"`` entries, and the parts
other packages provide through entry points (``[project.entry-points."mmconvert.renderers"]``
and the like), read on first use and imported only when used.

A plugin that cannot be used is one line naming it and its package, never a traceback and
never a silent skip: a name that clashes with a part already registered is left out, said once
on stderr and listed by ``mmconvert list``; one that fails to import, or is not the kind of
part its group holds, is refused when it is used, with that line.
"""

from __future__ import annotations

import functools
import importlib
import sys
import types
from typing import Any, Generic, TypeVar

from .errors import UsageError, did_you_mean

T = TypeVar("T")
BUILT_IN = "mmconvert"


@functools.lru_cache(maxsize=1)
def _entry_points():
    """Every installed distribution's entry points, scanned once a process (about 8 ms a
    scan here; each registry would otherwise scan again)."""
    from importlib.metadata import entry_points

    return entry_points()


class Registry(Generic[T]):
    """Names to parts. Entries are registered once, as objects or as ``"module:attr"`` strings
    that are imported on first use, so heavy optional dependencies stay unimported.
    ``group``: the entry-point group other packages register parts in; ``contract``: a
    ``"module:attr"`` base class every part must subclass (or, for None, any callable)."""

    def __init__(self, kind: str, group: str | None = None, contract: str | None = None):
        self.kind, self.group, self.contract = kind, group, contract
        self._entries: dict[str, T | str] = {}
        self._providers: dict[str, str] = {}  # name -> the package that provides it
        self.broken: list[str] = []  # one line per plugin left out (a clash)
        self._plugins_read = group is None

    def register(self, name: str, target: T | str) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = target
        self._providers[name] = BUILT_IN

    def _read_plugins(self) -> None:
        """The group's entry points, once: each a lazy entry under its name and package."""
        if self._plugins_read:
            return
        self._plugins_read = True
        for point in sorted(_entry_points().select(group=self.group), key=lambda p: p.name):
            package = point.dist.name if point.dist is not None else "an unknown package"
            if point.name in self._entries:
                line = (f"plugin {self.kind} {point.name!r} from package {package!r} is not "
                        f"used: {self._providers[point.name]!r} already provides a "
                        f"{self.kind} of that name")
                self.broken.append(line)
                print(f"mmconvert: {line}", file=sys.stderr)
                continue
            self._entries[point.name] = point.value
            self._providers[point.name] = package

    def provider(self, name: str) -> str:
        """The package that provides ``name`` (``mmconvert`` for a built-in part)."""
        self._read_plugins()
        return self._providers.get(name, BUILT_IN)

    def names(self) -> list[str]:
        self._read_plugins()
        return sorted(self._entries)

    def built_in(self) -> list[str]:
        """The names of mmconvert's own parts, sorted: what the reference and the tests list,
        whatever plugins this environment holds."""
        return sorted(name for name, provider in self._providers.items()
                      if provider == BUILT_IN)

    def registered(self) -> list[str]:
        """The names in the order they were registered (plugins after the built-ins)."""
        self._read_plugins()
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        self._read_plugins()
        return name in self._entries

    def usable(self) -> list[T]:
        """Every part that loads, in registration order; a plugin that does not is said once
        on stderr (and listed by ``mmconvert list``) and left out, so the others still work
        (a sweep orders its axes over every transform)."""
        parts = []
        for name in self.registered():
            try:
                parts.append(self.get(name))
            except UsageError as err:
                line = f"{err} (not used)"
                if line not in self.broken:
                    self.broken.append(line)
                    print(f"mmconvert: {line}", file=sys.stderr)
        return parts

    def get(self, name: str) -> T:
        self._read_plugins()
        try:
            target = self._entries[name]
        except KeyError:
            raise UsageError(self.unknown_message(name)) from None
        if isinstance(target, str):
            target = self._load(name, target)
            self._entries[name] = target
        return target

    def _load(self, name: str, target: str) -> Any:
        """Import ``target``; a plugin that cannot be loaded, or is not a part of this kind,
        is one line naming it and its package."""
        module, _, attr = target.partition(":")
        package = self._providers.get(name, BUILT_IN)
        if package == BUILT_IN:
            return getattr(importlib.import_module(module), attr)
        where = f"plugin {self.kind} {name!r} from package {package!r} ({target})"
        try:
            loaded = importlib.import_module(module)
            for part in attr.split("."):
                loaded = getattr(loaded, part)
        except BaseException as err:  # noqa: BLE001 - any failure of a plugin is its own line
            # sys.exit() or KeyboardInterrupt at a plugin's import too: they would end the
            # command (exit 0 having done nothing, or "Aborted!") on the plugin's behalf
            detail = " ".join(f"{type(err).__name__}: {err}".split()).removesuffix(":")[:200]
            raise UsageError(f"{where} cannot be loaded ({detail})") from None
        problem = self._breach(loaded)
        if problem:
            raise UsageError(f"{where} {problem}")
        return loaded

    def _breach(self, loaded: Any) -> str | None:
        """Why ``loaded`` is not a part of this kind, or None."""
        if self.contract is None:
            return None if callable(loaded) else "is not callable"
        module, _, attr = self.contract.partition(":")
        base = getattr(importlib.import_module(module), attr)
        if not (isinstance(loaded, type) and issubclass(loaded, base)):
            return f"is not a subclass of {base.__module__}.{base.__qualname__}"
        return contract_breach(loaded, base)

    def unknown_message(self, name: str) -> str:
        return (f"unknown {self.kind} {name!r} (known: {', '.join(self.names())})"
                f"{did_you_mean(name, self.names())}")


def contract_breach(cls: type, base: type) -> str | None:
    """What ``cls`` lacks of its kind's contract, in a few words, or None: the members its
    base declares without a default (``base.REQUIRED``) and the methods it must implement
    (``base.HOOKS``), found when the part loads rather than when a command reaches them."""
    lacking = [name for name in getattr(base, "REQUIRED", ()) if not hasattr(cls, name)]
    lacking += [f"{name}()" for name in getattr(base, "HOOKS", ())
                if not any(name in klass.__dict__ for klass in cls.__mro__
                           if klass is not base and issubclass(klass, base))]
    if lacking:
        return (f"lacks {', '.join(lacking)}, which every {base.__qualname__} states "
                "(docs/plugins.md)")
    # what the kind checks of a part beyond its members (a renderer's profile, the
    # capabilities it declares)
    check = getattr(base, "breach", None)
    return check.__func__(cls) if isinstance(check, types.MethodType) else None
