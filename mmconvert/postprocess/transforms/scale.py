"""Resize by a factor with a named Pillow filter. Upscaling is plain resampling: it adds pixels,
not detail (VisTW upscaled with a super-resolution model; this does not)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...imaging import Resampling, scale, scale_box
from .base import Transform, TransformOptions


class ScaleOptions(TransformOptions):
    factor: float = Field(gt=0, le=16, description="each side times this")
    resample: Resampling = Field("lanczos", description="Pillow filter")


class Scale(Transform[ScaleOptions]):
    name = "scale"
    options_model = ScaleOptions
    limits = (0, 16, "a scale factor in (0, 16]")
    description = "resize by a factor with a named Pillow filter"
    example = "0.5"
    primary = "factor"
    axis = folder = "scale"
    sweep_settings = {"resample": "resample"}
    identity = 1.0

    def apply(self, image, params: dict[str, Any]):
        return scale(image, self.options.factor, self.options.resample)

    def move_box(self, box, params, before, after):
        return scale_box(box, before, after)

    def scale_ppi(self) -> float:
        return self.options.factor
