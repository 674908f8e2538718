"""A chain of transforms applied to one image of a run: the one place a sweep variant and
``mmconvert transform`` make an image, its manifest entry and its history record."""

from __future__ import annotations

from typing import Any

from ..errors import MMConvertError, UsageError, first_line
from ..imaging import decode, encode
from ..seeds import rng
from .transforms import TRANSFORMS
from .transforms.base import Transform


def apply_steps(image, entry: dict[str, Any], steps: list[Transform], *, seed: int,
                item_id: str, index: int, done: int = 0) -> tuple[bytes, str, Any, dict, list]:
    """``image`` (decoded from ``entry``, image ``index`` of item ``item_id``) through
    ``steps``. Returns (encoded bytes, file format, the image, the extra fields of its manifest
    entry, each step's sampled parameters). ``done`` counts the steps the row's history holds
    already, so a step's seed depends on its place in the whole history."""
    source_format = image.format  # a JPEG run's images stay JPEG
    boxes = [dict(b) for b in entry.get("boxes") or []] if entry.get("boxes") is not None \
        else None
    ppi = entry.get("ppi")
    extra: dict[str, Any] = {}
    sampled = []
    # a JPEG step encodes at its place in the chain; the file is a JPEG when the chain ends
    # with one (at its settings) or the run's images were JPEGs (at 95, 4:4:4)
    jpeg = steps[-1] if steps and steps[-1].encodes == "jpeg" else None
    for position, step in enumerate(steps):
        draw = rng(seed, f"transform:{step.name}:{done + position}", f"{item_id}/{index}")
        params = step.sample(draw, image)
        sampled.append(params)
        before = image.size
        image = _applied(step, image, params)
        if step.encodes == "jpeg" and step is not jpeg:  # mid-chain: its artefacts, now
            image = decode(encode(image, "jpeg", quality=step.options.quality,
                                  subsampling=step.options.subsampling))
        if ppi:
            ppi = ppi * step.scale_ppi()
        if boxes is not None:
            for box in boxes:
                box["box"] = step.move_box(box["box"], params, before, image.size)
        extra.update(step.image_extra(params))
    fmt = "jpeg" if (source_format == "JPEG" or jpeg is not None) else "png"
    quality, subsampling = 95, "4:4:4"  # re-encoding a JPEG run's images
    if jpeg is not None:
        quality, subsampling = jpeg.options.quality, jpeg.options.subsampling
    data = encode(image, fmt, ppi=ppi, quality=quality, subsampling=subsampling)
    if ppi is not None:
        extra["ppi"] = ppi
    if boxes is not None:
        extra["boxes"] = boxes
    if fmt == "jpeg" and jpeg is None:
        extra["encoding"] = {"format": "jpeg", "quality": quality, "subsampling": subsampling}
    return data, fmt, image, extra, sampled


def _applied(step: Transform, image, params: dict[str, Any]):
    """``step.apply``: an image, or (a plugin's transform that gives anything else, or fails
    with other than mmconvert's own error) one line naming the transform and its package."""
    from PIL import Image

    try:
        made = step.apply(image, params)
    except MMConvertError:
        raise
    except Exception as err:  # noqa: BLE001 - a plugin's failure is its one line
        if type(step).__module__.startswith("mmconvert."):
            raise
        raise UsageError(f"transform {step.name!r} from package "
                         f"{TRANSFORMS.provider(step.name)!r} failed "
                         f"({first_line(err, 200, kind=True)})") from None
    if not isinstance(made, Image.Image):
        raise UsageError(f"transform {step.name!r} from package "
                         f"{TRANSFORMS.provider(step.name)!r} gave "
                         f"{type(made).__name__}, not a PIL image")
    return made


def renamed(rel: str, fmt: str) -> str:
    """The image's run-relative path in the new format (a PNG page re-encoded as JPEG)."""
    if fmt == "jpeg" and not rel.endswith(".jpg"):
        return rel.rsplit(".", 1)[0] + ".jpg"
    return rel


def history(row: dict[str, Any], steps: list[Transform], sampled: list[list[dict]]) -> list:
    """The row's ``postprocess`` list with ``steps`` appended; ``sampled[i][k]`` are step k's
    parameters for image i (kept when the step records them)."""
    out = list(row.get("postprocess", []))
    for k, step in enumerate(steps):
        record = step.step({})
        per_image = [params[k] for params in sampled]
        if step.records_params and any(per_image):
            record["images"] = per_image
        out.append(record)
    return out
