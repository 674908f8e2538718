"""The one place a run's config is put together (``resolve_config``): a recipe's config, then a
config file's, then the flags' or a caller's, each merged over the last key by key, with where
each field's value came from; every command and call that draws asks it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..units import page_inches
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
        values = merged(_sides_settled(values, layer, sources), layer)
        sources.update(dict.fromkeys(_leaves(layer), source))
    return Resolved(values, dict(sorted(sources.items())), found, note, record)


SIDES = ("page_width", "page_height")


def _sides_settled(values: dict[str, Any], layer: dict[str, Any], sources: dict[str, str],
                   prefix: str = "") -> dict[str, Any]:
    """``values`` (not changed: a section may be a recipe's own) with a later source's
    page_width or page_height over an earlier one's named ``page_size`` (a recipe's letter,
    ``--page-height 5``) settled: the size gives way to its two sides, each recorded as coming
    from where the size did, so that the later side wins as any later value does and the other
    side stays the size's. (A named size sets both sides: the later one was silently lost.)
    Each section of ``layer`` is checked on the way (``_sides_agree``)."""
    out = dict(values)
    for key, value in layer.items():
        if isinstance(value, dict):
            held = out.get(key)
            settled = _sides_settled(held if isinstance(held, dict) else {}, value, sources,
                                     f"{prefix}{key}.")
            if isinstance(held, dict):
                out[key] = settled
    _sides_agree(layer, prefix)
    named = out.get("page_size")
    if named is None or not any(side in layer for side in SIDES):
        return out
    try:
        width, height = page_inches(str(named))
    except ValueError:
        return out  # the config's own check names a size it cannot read
    from_where = sources.pop(f"{prefix}page_size", None)
    del out["page_size"]
    out.update(page_width=width, page_height=height)
    if from_where is not None:
        sources.update({f"{prefix}{side}": from_where for side in SIDES})
    return out


# how far a side given beside a named page size may be from the size's own and still be the
# same page (A4 is 8.2639 in wide, often written 8.27)
SAME_SIDE = 0.01


def _sides_agree(section: dict[str, Any], prefix: str) -> None:
    """One source's section giving a named page size and another side (``--page-size letter
    --page-height 5``) is one line: the size would set both sides, and the side be lost."""
    named = section.get("page_size")
    if named is None:
        return
    try:
        sides = page_inches(str(named))
    except ValueError:
        return  # the config's own check names a size it cannot read
    for name, side in zip(SIDES, sides, strict=True):
        given = section.get(name)
        if isinstance(given, (int, float)) and abs(given - side) > SAME_SIDE:
            raise UsageError(f"{prefix}page_size {named} is {sides[0]:g} x {sides[1]:g} in, "
                             f"and {prefix}{name} is {given:g}: give page_size or page_width "
                             "and page_height, not both")


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

