"""The one place a run's config is put together (``resolve_config``): a recipe's config, then a
config file's, then the flags' or a caller's, each merged over the last key by key, with where
each field's value came from; every command and call that draws asks it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from . import Recipe, load_recipe, merged
from .fingerprints import fingerprint_note, run_record


@dataclass
class Resolved:
    """A run's config as ``resolve_config`` put it together: ``values`` (the config's fields,
    merged), ``sources`` (each field set, dotted, and where its value came from), the
    ``recipe``, its fingerprint's ``note`` (None: identical, or none) and what run.json
    records of it (``record``)."""

    values: dict[str, Any]
    sources: dict[str, str]
    recipe: Recipe | None = None
    note: str | None = None
    record: dict[str, Any] | None = None


def resolve_config(layers: list[tuple[str, dict[str, Any]]], *,
                   recipe: str | Path | Recipe | None = None, corpus: str = "",
                   renderer: str | None = None, mismatch: str = "", drop: tuple[str, ...] = (),
                   warn=None, checked: bool = True) -> Resolved:
    """The one place a run's config is put together, for every command and call that draws:
    the recipe's config for ``corpus`` (``recipe``: a shipped name, a file, or a loaded
    ``Recipe``), its fields named in ``drop`` (dotted) taken out, then each of ``layers``
    (``(source, values)``: a config file's, the flags', a caller's) merged over it key by key,
    later over earlier. A recipe drawn by a renderer other than ``renderer`` (when given) is
    one line ending in ``mismatch``; its fingerprint is checked (``checked``; not while its
    own references are drawn) and its note said through ``warn``."""
    found = load_recipe(recipe) if isinstance(recipe, (str, Path)) else recipe
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    note = record = None
    if found is not None:
        if renderer is not None and found.renderer != renderer:
            raise UsageError(f"recipe {found.name} is drawn by the {found.renderer} "
                             f"renderer{mismatch}")
        values = found.config_values(corpus)
        for dotted in drop:
            *parents, last = dotted.split(".")
            held: dict[str, Any] = values
            for part in parents:
                inner = held.get(part)
                held = inner if isinstance(inner, dict) else {}
            held.pop(last, None)
        layers = [(f"recipe {found.name}", values), *layers]
        values = {}
        note = fingerprint_note(found, recipe if isinstance(recipe, (str, Path)) else None) \
            if checked else None
        if note and warn is not None:
            warn(f"warning: {note}")
        record = run_record(found, recipe if isinstance(recipe, (str, Path)) else found.name,
                            note)
    for source, layer in layers:
        values = merged(values, layer)
        sources.update(dict.fromkeys(_leaves(layer), source))
    return Resolved(values, dict(sorted(sources.items())), found, note, record)


def _leaves(values: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of ``values``' fields that hold a value (a section's own fields, not
    the section)."""
    out = []
    for key, value in values.items():
        if isinstance(value, dict) and value:
            out += _leaves(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}")
    return out

