"""The transform contract: a post-processing step applied to any image of any run.

Each transform validates its options with one pydantic model (``extra="forbid"``), draws its
random parameters in ``sample`` from a generator seeded by (run seed, item, image, step), and
applies them in a pure ``apply`` to the image and in ``move_box`` to each box recorded on it
(an occlusion's bands). ``step`` is what the row's ``postprocess`` history records: enough,
with the base image, to make the result again bit for bit.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel

from ...config import build
from ...options import OPTIONS


class TransformOptions(BaseModel):
    model_config = OPTIONS


OptionsT = TypeVar("OptionsT", bound=TransformOptions)


class Transform(Generic[OptionsT]):
    """Base of every registered transform, generic in its options model (``self.options`` is
    typed as its own)."""

    # what every transform states and implements: checked when it loads
    REQUIRED: ClassVar[tuple[str, ...]] = ("name", "options_model", "primary", "axis",
                                           "folder", "description", "example")
    HOOKS: ClassVar[tuple[str, ...]] = ("apply",)

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    options_model: ClassVar[type[TransformOptions]]
    # the option a bare value sets ("blur:1.5" is sigma 1.5) and a sweep varies
    primary: ClassVar[str]
    # a sweep's key for that axis (sweep.json, the variants' run.json) and its folder prefix
    axis: ClassVar[str]
    folder: ClassVar[str]
    # the sweep's own names for the other options (``--resample`` for scale's resample)
    sweep_settings: ClassVar[dict[str, str]] = {}
    # the value of ``primary`` that leaves an image as it is (a sweep lists the base for it)
    identity: ClassVar[float | None] = None
    # "jpeg" when the result must be stored as JPEG
    encodes: ClassVar[str | None] = None
    # (low, high, what) a sweep value of ``primary`` must keep to: low < value <= high
    limits: ClassVar[tuple[float, float, str] | None] = None
    description: ClassVar[str]
    # a value of ``primary`` for messages ("blur:1.5")
    example: ClassVar[str]
    # sampled parameters go into the row's history (False: the step records them otherwise)
    records_params: ClassVar[bool] = True

    def __init__(self, options: OptionsT):
        self.options = options

    @classmethod
    def build(cls, values: dict[str, Any], where: str = "") -> Transform[Any]:
        """The transform with ``values`` as options; a bad value is a one-line error."""
        return cls(cast(OptionsT, build(cls.options_model, values, where or cls.name,
                                       whole=cls.primary)))

    def sample(self, draw: random.Random, image) -> dict[str, Any]:
        """The parameters for one image: drawn from ``draw`` (seeded by run seed, item, image
        and step), or read off the image itself; {} when there are none."""
        return {}

    def apply(self, image, params: dict[str, Any]):
        """The transformed image (pure: the same image and params give the same pixels)."""
        raise NotImplementedError

    def move_box(self, box: list[int], params: dict[str, Any], before: tuple[int, int],
                 after: tuple[int, int]) -> list[int]:
        """Where a box of the image is afterwards (unchanged for pixel-wise transforms)."""
        return box

    def step(self, params: dict[str, Any]) -> dict[str, Any]:
        """The row's history record of this step."""
        return {"op": self.name, **self.options.model_dump(mode="json"), **params}

    def scale_ppi(self) -> float:
        """How the image's PPI changes (a resize changes it)."""
        return 1.0

    def image_extra(self, params: dict[str, Any]) -> dict[str, Any]:
        """What the image's manifest entry records of this step (a rotation's fill)."""
        return {}

    @property
    def value(self) -> Any:
        return getattr(self.options, self.primary)
