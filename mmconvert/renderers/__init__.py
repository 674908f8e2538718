"""Renderers, registered by name and imported only when used."""

from __future__ import annotations

from ..registry import Registry

RENDERERS: Registry[type] = Registry("renderer")
RENDERERS.register("page", "mmconvert.renderers.page:PageRenderer")
RENDERERS.register("occlude", "mmconvert.renderers.occlude:CaptionOccluder")
