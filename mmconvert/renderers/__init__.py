"""Renderers, registered by name and imported only when used. Each implements the contract of
``renderers.base.Renderer``; the rest of mmconvert asks it instead of testing its name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..manifest import MANIFEST, RUN_INFO, JsonlLog

# the registry is ``parts``' (below the configs and rows that name a renderer)
from ..parts import DEFAULT as DEFAULT
from ..parts import RENDERERS as RENDERERS
from ..parts import renderer_class
from ..parts import row_renderer as row_renderer

if TYPE_CHECKING:
    from ..config import ApiOptions, RunConfig
    from ..jobs import Job
    from ..rows import Row
    from .base import Renderer

def run_renderer(folder: Path, info: dict[str, Any]) -> type[Renderer]:
    """The renderer a run was made with: the one its run.json names, or, in a folder written
    before run.json named it, the one its first manifest row names."""
    import json

    name = (info.get("config") or {}).get("renderer")
    if name is not None:
        return renderer_class(name, str(folder / RUN_INFO))
    first = next(JsonlLog(folder / MANIFEST).lines(), None)
    try:
        row = json.loads(first) if first else None
    except ValueError:
        row = None
    return row_renderer(row if isinstance(row, dict) else {}, f"{folder / MANIFEST} line 1")


def from_row(row: Row) -> Renderer:
    """The renderer that drew ``row``, built from its recorded name and parameters."""
    return row_renderer(row).from_params(row.params)


def job_for(config: RunConfig, api: ApiOptions | None = None) -> Job:
    """The job of the renderer ``config`` names."""
    return renderer_class(config.renderer).job(config, api)
