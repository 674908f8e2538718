"""Turn clockwise. Right angles are exact pixel moves; other angles are resampled bicubically
onto a canvas grown to hold the whole image, the corners filled with the image's commonest
border colour (recorded as the image's ``background``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from ...imaging import background, rotate, rotate_box
from .base import Transform, TransformOptions


class RotateOptions(TransformOptions):
    degrees: float = Field(description="clockwise")

    @field_validator("degrees")
    @classmethod
    def _turn(cls, value: float) -> float:
        return value % 360


def shown(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


class Rotate(Transform[RotateOptions]):
    name = "rotate"
    options_model = RotateOptions
    description = "turn clockwise (exact at right angles, bicubic on a grown canvas otherwise)"
    example = "90"
    primary = "degrees"
    axis = folder = "rotate"
    identity = 0.0
    records_params = False  # the fill is the image's "background"

    def sample(self, draw, image) -> dict[str, Any]:
        if self.options.degrees % 90 == 0:
            return {}
        fill = background(image.convert("RGB") if image.mode == "P" else image)
        return {"fill": list(fill) if isinstance(fill, tuple) else fill}

    def apply(self, image, params: dict[str, Any]):
        fill = params.get("fill")
        return rotate(image, self.options.degrees,
                      tuple(fill) if isinstance(fill, list) else fill)[0]

    def move_box(self, box, params, before, after):
        return rotate_box(box, self.options.degrees, before, after)

    def step(self, params: dict[str, Any]) -> dict[str, Any]:
        degrees = self.options.degrees
        return {"op": "rotate", "degrees": shown(degrees), "direction": "clockwise",
                "resample": "none" if degrees % 90 == 0 else "bicubic"}

    def image_extra(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"background": params["fill"]} if "fill" in params else {}
