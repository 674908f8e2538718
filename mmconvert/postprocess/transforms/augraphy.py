"""Named presets of the Augraphy library's ink, paper and scanner degradations (the optional
``augraphy`` extra), the usual way to test reading robustness against printed-and-scanned
documents.

The augmentations are called one after another on the image, not through Augraphy's
``AugraphyPipeline``: the pipeline writes a copy of every input image into
``$PWD/augraphy_cache/``, a write outside the run folder. Augraphy draws from the global
``random``, NumPy and OpenCV generators; they are seeded with a seed drawn per image from (run
seed, item, image, step), which is recorded, and the ``random`` and NumPy states are restored
after the call (OpenCV's cannot be read back; mmconvert draws nothing from it). The presets use
augmentations that give the same pixels in every process for one seed (``DirtyRollers`` and
``BadPhotoCopy`` do not, with the numba of this environment, and are left out)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ...errors import UsageError, needs
from .base import Transform, TransformOptions

Preset = Literal["ink", "paper", "scanner", "fax", "all"]


def _augmentations(preset: str) -> list:
    import augraphy as a

    ink = [a.InkBleed(intensity_range=(0.4, 0.7), kernel_size=(5, 5), severity=(0.3, 0.4)),
           a.LowInkRandomLines(count_range=(5, 10)), a.InkMottling()]
    paper = [a.NoiseTexturize(sigma_range=(3, 10), turbulence_range=(2, 5)),
             a.BrightnessTexturize()]
    scanner = [a.SubtleNoise(subtle_range=10), a.DirtyDrum(), a.Jpeg(quality_range=(50, 95))]
    return {"ink": ink, "paper": paper, "scanner": scanner, "fax": [a.Faxify()],
            "all": ink + paper + scanner}[preset]


class AugraphyOptions(TransformOptions):
    preset: Preset = Field(description="ink, paper, scanner, fax, or all three "
                                                 "of ink, paper and scanner")


class Augraphy(Transform[AugraphyOptions]):
    name = "augraphy"
    options_model = AugraphyOptions
    description = "Augraphy's ink, paper, scanner or fax degradations (extra: augraphy)"
    example = "scanner"
    primary = "preset"
    axis = folder = "augraphy"

    def __init__(self, options: AugraphyOptions):
        super().__init__(options)
        try:
            import augraphy  # noqa: F401
        except ImportError:
            raise UsageError(needs("the augraphy transform", "Augraphy", "augraphy")) from None

    def sample(self, draw, image) -> dict[str, Any]:
        return {"seed": draw.randrange(1, 2**31 - 1)}  # Augraphy ignores a seed of 0

    def apply(self, image, params: dict[str, Any]):
        import random

        import cv2
        import numpy as np
        from PIL import Image

        mode = "L" if image.mode in ("L", "1", "LA") else "RGB"
        pixels = np.asarray(image.convert(mode))
        if mode == "RGB":
            pixels = cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
        states = random.getstate(), np.random.get_state()
        random.seed(params["seed"])
        np.random.seed(params["seed"])
        cv2.setRNGSeed(params["seed"])
        try:
            out = pixels
            for augmentation in _augmentations(self.options.preset):
                out = augmentation(out, force=True)
        finally:
            random.setstate(states[0])
            np.random.set_state(states[1])
        if out.ndim == 3:
            out = cv2.cvtColor(out, cv2.COLOR_BGR2GRAY if mode == "L" else cv2.COLOR_BGR2RGB)
        return Image.fromarray(np.ascontiguousarray(out), mode)
