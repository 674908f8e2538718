"""Post-processing transforms, registered by name and imported only when used. Each
implements ``transforms.base.Transform``; sweeps vary them one axis at a time and
``mmconvert transform`` applies a chain of them to any run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...parts import TRANSFORMS as TRANSFORMS

if TYPE_CHECKING:
    from .base import Transform

def transform_class(name: str) -> type[Transform]:
    """The registered transform called ``name``; unknown: one line with a did-you-mean."""
    return TRANSFORMS.get(name)


# the most steps a config's or a recipe's transforms may chain
MAX_STEPS = 64


def checked_steps(steps: list[str]) -> list[str]:
    """A config's or a recipe's ``transforms`` (``NAME:VALUE`` steps), each parsed once to
    check it (a bad one is ``parse_step``'s one line); returned as given. More than
    ``MAX_STEPS`` is one line too (100,000 blurs ran for minutes)."""
    if len(steps) > MAX_STEPS:
        raise UsageError(f"transforms: {len(steps):,} steps; at most {MAX_STEPS} (a chain "
                         "longer than any degradation needs)")
    for step in steps:
        parse_step(step, "transforms:")
    return steps


def parse_step(text: str, where: str = "--apply") -> Transform:
    """A step as the CLI writes it: ``NAME:VALUE`` sets the transform's main option
    (``blur:1.5``, ``jpeg:75``, ``augraphy:scanner``), ``NAME:key=value,key=value`` any of its
    options (``noise:level=0.05,kind=salt-pepper``)."""
    name, _, spec = text.partition(":")
    cls = transform_class(name.strip())
    values: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, eq, value = part.partition("=")
        if eq:
            values[key.strip().replace("-", "_")] = value.strip()
        elif cls.primary in values:
            raise UsageError(f"{where} {text}: give one value, or key=value pairs")
        else:
            values[cls.primary] = part
    if cls.primary not in values:
        raise UsageError(f"{where} {text}: needs a value for {cls.primary} "
                         f"(e.g. {name}:{cls.example})")
    return cls.build(values, f"{where} {text}")


def in_order() -> list[type[Transform]]:
    """Every registered transform that loads, in the order registered (a sweep's axis
    order); a plugin that does not load is said on stderr and left out."""
    return TRANSFORMS.usable()
