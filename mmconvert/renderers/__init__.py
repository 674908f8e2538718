"""Renderers, registered by name and imported only when used. Each implements the contract of
``renderers.base.Renderer``; the rest of mmconvert asks it instead of testing its name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..manifest import MANIFEST, RUN_INFO, JsonlLog
from ..registry import Registry

if TYPE_CHECKING:
    from ..config import ApiOptions, RunConfig
    from ..jobs import Job
    from .base import Renderer

RENDERERS: Registry[type[Renderer]] = Registry("renderer", "mmconvert.renderers",
                                                "mmconvert.renderers.base:Renderer")
RENDERERS.register("page", "mmconvert.renderers.page:PageRenderer")
RENDERERS.register("occlude", "mmconvert.renderers.occlude:CaptionOccluder")
RENDERERS.register("generate", "mmconvert.renderers.generate:ImageApiRenderer")
RENDERERS.register("document", "mmconvert.renderers.document:DocumentRenderer")
# the renderer of ``mmconvert render`` and of a config that names none
DEFAULT = "page"


def renderer_class(name: Any, where: str = "") -> type[Renderer]:
    """The registered renderer called ``name``; an unknown one is a one-line error (naming
    ``where``, e.g. the manifest line) with a did-you-mean."""
    if not isinstance(name, str) or name not in RENDERERS:
        message = RENDERERS.unknown_message(str(name))
        raise UsageError(f"{where}: {message}" if where else message)
    return RENDERERS.get(name)


def row_renderer(row: dict[str, Any], where: str = "") -> type[Renderer]:
    """The renderer class a manifest row names."""
    renderer = row.get("renderer") if isinstance(row, dict) else None
    return renderer_class(renderer.get("name") if isinstance(renderer, dict) else None,
                          f"{where}: field renderer.name" if where else "")


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


def from_row(row: dict[str, Any]) -> Renderer:
    """The renderer that drew ``row``, built from its recorded name and parameters."""
    return row_renderer(row).from_params(row["renderer"]["params"])


def job_for(config: RunConfig, api: ApiOptions | None = None) -> Job:
    """The job of the renderer ``config`` names."""
    return renderer_class(config.renderer).job(config, api)
