"""Gaussian blur: out-of-focus capture, a common reading-robustness ablation."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Transform, TransformOptions


class BlurOptions(TransformOptions):
    sigma: float = Field(gt=0, le=50, description="standard deviation in pixels")


class Blur(Transform[BlurOptions]):
    name = "blur"
    options_model = BlurOptions
    description = "Gaussian blur of a sigma in pixels"
    example = "1.5"
    primary = "sigma"
    axis = folder = "blur"
    identity = 0.0

    def apply(self, image, params: dict[str, Any]):
        from PIL import ImageFilter

        if image.mode == "P":
            image = image.convert("RGB")
        return image.filter(ImageFilter.GaussianBlur(self.options.sigma))
