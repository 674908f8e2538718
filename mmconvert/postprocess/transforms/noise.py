"""Seeded noise: Gaussian (``sigma`` in grey levels) or salt and pepper (``amount``, the share
of pixels set to black or white). The generator's seed is drawn per image from (run seed, item,
image, step) and recorded, so the noise is the same on every machine."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from .base import Transform, TransformOptions


class NoiseOptions(TransformOptions):
    level: float = Field(gt=0, le=255, description="gaussian: sigma in grey levels (0-255); "
                                                   "salt-pepper: share of pixels, in (0, 1]")
    kind: Literal["gaussian", "salt-pepper"] = "gaussian"

    @model_validator(mode="after")
    def _level(self):
        if self.kind == "salt-pepper" and self.level > 1:
            raise ValueError("salt-pepper takes a share of pixels in (0, 1]")
        return self


class Noise(Transform[NoiseOptions]):
    name = "noise"
    options_model = NoiseOptions
    description = "seeded Gaussian or salt-and-pepper noise"
    example = "8"
    primary = "level"
    axis = folder = "noise"
    identity = 0.0

    def sample(self, draw, image) -> dict[str, Any]:
        return {"seed": draw.getrandbits(63)}

    def apply(self, image, params: dict[str, Any]):
        import numpy as np
        from PIL import Image

        if image.mode not in ("L", "RGB"):
            image = image.convert("RGB")
        pixels = np.asarray(image, dtype=np.float64)
        generator = np.random.Generator(np.random.PCG64(params["seed"]))
        if self.options.kind == "gaussian":
            pixels = pixels + generator.normal(0.0, self.options.level, pixels.shape)
        else:
            chosen = generator.random(pixels.shape[:2])
            pixels = pixels.copy()
            pixels[chosen < self.options.level / 2] = 0
            pixels[(chosen >= self.options.level / 2) & (chosen < self.options.level)] = 255
        return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), image.mode)
