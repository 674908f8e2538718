"""Re-encode as baseline JPEG at a quality and chroma subsampling."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Transform, TransformOptions


class JpegOptions(TransformOptions):
    quality: int = Field(ge=1, le=100)
    subsampling: Literal["4:4:4", "4:2:2", "4:2:0"] = "4:2:0"


class Jpeg(Transform[JpegOptions]):
    name = "jpeg"
    options_model = JpegOptions
    limits = (0, 100, "a JPEG quality between 1 and 100")
    description = "re-encode as JPEG at a quality and chroma subsampling"
    example = "75"
    primary = "quality"
    axis = "jpeg_quality"
    folder = "jpeg"
    sweep_settings = {"jpeg_subsampling": "subsampling"}
    encodes = "jpeg"

    def apply(self, image, params: dict[str, Any]):
        return image  # the encoding is the step (see imaging.encode)
