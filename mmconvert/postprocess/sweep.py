"""Ablation sweeps: one run folder per variant of a base run, and ``sweep.json`` listing them.

Each axis is varied alone against the base run:

- ``ppi``: page runs only. The stored layout of each item (``layout/<id>.json``) is drawn again
  at the new PPI, so line and page breaks are those of the base run, and each page is
  byte-identical to what ``mmconvert render --ppi`` would draw.
- ``scale``, ``rotate``, ``jpeg_quality``: every image of any run (pages, stacked and text-only
  occlusions, generated images) is resized, turned clockwise, or re-encoded as JPEG. Recorded
  boxes (an occlusion's bands) move with their image; the row's ``postprocess`` list says what
  was done, with which filter.

Variants keep the base's item ids, prompts and answers, so results line up item by item. A
value
equal to the base (its PPI, scale 1, rotation 0) is the base run itself, listed but not copied.
A sweep is resumable like a run: items already in a variant's manifest are not made again.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..converter import in_order
from ..errors import ItemError, MMConvertError, RunFolderError, UsageError
from ..jobs import write_image
from ..manifest import MANIFEST, RUN_INFO, write_json
from ..renderers import renderer_class, row_renderer
from ..runfolder import LOCK, RunFolder, identity_of, inside, locked, write_file
from . import transforms

SWEEP = "sweep.json"
AXES = {"ppi": "ppi", "scale": "scale", "rotate": "rotate", "jpeg_quality": "jpeg"}
# (above, at most, what it must be) of each axis' values
LIMITS = {"ppi": (10, 1200, "a PPI between 10 and 1200"),
          "scale": (0, 16, "a scale factor in (0, 16]"),
          "jpeg_quality": (0, 100, "a JPEG quality between 1 and 100")}


class SweepOptions(BaseModel):
    """The axes of a sweep (each a list of values, varied alone) and how images are made."""

    model_config = ConfigDict(extra="forbid")

    ppi: list[float] = Field(default_factory=list, description="page runs: PPIs to re-draw at")
    scale: list[float] = Field(default_factory=list, description="factors to resize images by")
    rotate: list[float] = Field(default_factory=list, description="clockwise degrees")
    jpeg_quality: list[int] = Field(default_factory=list, description="JPEG qualities")
    resample: Literal[transforms.RESAMPLING] = Field(
        "lanczos", description="Pillow filter for --scale")
    jpeg_subsampling: Literal["4:4:4", "4:2:2", "4:2:0"] = "4:2:0"

    @field_validator("ppi", "scale", "rotate", "jpeg_quality")
    @classmethod
    def _values(cls, values, info):
        if info.field_name == "rotate":
            values = [v % 360 for v in values]
        low, high, what = LIMITS.get(info.field_name, (None, None, ""))
        for v in values:
            if low is not None and not (low < v <= high):
                raise ValueError(f"{v:g} is not {what}")
        return list(dict.fromkeys(values))

    @model_validator(mode="after")
    def _some_axis(self):
        if not any(getattr(self, axis) for axis in AXES):
            raise ValueError("give at least one of --ppi, --scale, --rotate, --jpeg-quality")
        return self

    def variants(self) -> list[Variant]:
        return [Variant(axis, value) for axis in AXES for value in getattr(self, axis)]


@dataclass(frozen=True)
class Variant:
    axis: str
    value: float

    @property
    def shown(self) -> float | int:
        return int(self.value) if float(self.value).is_integer() else self.value

    @property
    def name(self) -> str:
        return f"{AXES[self.axis]}-{self.shown:g}"

    def is_base(self, base_ppi: float | None) -> bool:
        return {"ppi": self.value == base_ppi, "scale": self.value == 1,
                "rotate": self.value == 0}.get(self.axis, False)


@dataclass
class SweepSummary:
    out: Path
    variants: list[dict[str, Any]] = field(default_factory=list)
    made: dict[str, int] = field(default_factory=dict)
    already_done: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    items: int = 0

    def line(self) -> str:
        made = sum(self.made.values())
        text = (f"{len(self.variants)} variant(s) of {self.items} item(s) in {self.out}: "
                f"{made} item image set(s) made")
        done = sum(self.already_done.values())
        if done:
            text += f", {done} already done"
        skipped = sum(self.skipped.values())
        if skipped:
            text += f", {skipped} skipped (see the variants' skipped.jsonl)"
        return text + f"; see {self.out / SWEEP}"


def read_run(base: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The base run's run.json and manifest rows."""
    info_path = base / RUN_INFO
    if not info_path.is_file():
        raise UsageError(f"{base}: not a run folder (no {RUN_INFO})")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise RunFolderError(f"{info_path}: not JSON ({err.msg})") from None
    return info, RunFolder(base).manifest.read()


def sweep(base: Path, out: Path, options: SweepOptions, *, workers: int = 1,
          overwrite: bool = False, on_error: str = "fail",
          progress: bool = False) -> SweepSummary:
    """Make every variant of the run in ``base`` under ``out``; write ``out/sweep.json``.
    One sweep at a time into ``out``."""
    with locked(out / LOCK, out):
        return _sweep(base, out, options, workers=workers, overwrite=overwrite,
                      on_error=on_error, progress=progress)


def _sweep(base: Path, out: Path, options: SweepOptions, *, workers: int,
           overwrite: bool, on_error: str, progress: bool) -> SweepSummary:
    info, rows = read_run(base)
    config = info.get("config") or {}
    renderer = renderer_class(config.get("renderer", "page"), f"{base / RUN_INFO}")
    base_ppi = renderer.base_ppi(config)
    if options.ppi and not renderer.redraws:
        raise UsageError(f"--ppi re-draws the stored layout of page runs; {base} is a "
                         f"{renderer.name} run: use --scale to change its resolution")
    if info.get("variant") and options.ppi:
        raise UsageError(f"{base} is itself a sweep variant; sweep PPI from its base run")
    summary = SweepSummary(out=out, items=len(rows))
    work: list[Variant] = []
    for variant in options.variants():
        path = base if variant.is_base(base_ppi) else out / variant.name
        if path != base:
            work.append(variant)
        summary.variants.append({"name": variant.name,
                                 "path": Path(os.path.relpath(path, out)).as_posix(),
                                 variant.axis: variant.shown})
    folders = {v.name: _variant_folder(base, out, info, v, options, overwrite) for v in work}
    done = {v.name: folders[v.name].done_ids() for v in work}
    tasks = []
    for row in rows:
        wanted = [v for v in work if row["id"] not in done[v.name]]
        if wanted:
            tasks.append((row, wanted))
    for v in work:
        summary.already_done[v.name] = sum(row["id"] in done[v.name] for row in rows)
        summary.made[v.name] = summary.skipped[v.name] = 0
    _write_sweep(out, base, options, summary, "running")
    maker_args = (base, out, options)
    try:
        for row, results in _run(tasks, maker_args, workers, progress):
            for name, (status, payload) in results.items():
                folder = folders[name]
                if status == "ok":
                    folder.manifest.append(payload)
                    summary.made[name] += 1
                elif on_error == "skip":
                    folder.skipped.append({"id": row["id"], "stage": "sweep",
                                           "reason": str(payload)})
                    summary.skipped[name] += 1
                else:
                    raise payload
    except MMConvertError:
        _write_sweep(out, base, options, summary, "failed")
        raise
    for v in work:
        _write_info(folders[v.name], base, info, v, options, "complete")
    _write_sweep(out, base, options, summary, "complete")
    return summary


def _identity(base: Path, info: dict[str, Any], variant: Variant,
              options: SweepOptions) -> dict[str, Any]:
    how = {"scale": {"resample": options.resample},
           "jpeg_quality": {"subsampling": options.jpeg_subsampling}}.get(variant.axis, {})
    return {**identity_of(info.get("config") or {}), "variant": {
        "of": str(base.resolve()), "axis": variant.axis, "value": variant.shown, **how}}


def _variant_folder(base, out, info, variant, options, overwrite) -> RunFolder:
    folder = RunFolder(out / variant.name)
    folder.check(_identity(base, info, variant, options), overwrite)
    folder.create(overwrite)
    _write_info(folder, base, info, variant, options, "running")
    return folder


def _write_info(folder: RunFolder, base: Path, info: dict[str, Any], variant: Variant,
                options: SweepOptions, status: str) -> None:
    identity = _identity(base, info, variant, options)
    folder.write_info({
        "status": status, "config": identity, "variant": identity["variant"],
        "base": Path(os.path.relpath(base, folder.path)).as_posix(),
        "versions": info.get("versions"), "fonts": info.get("fonts"),
        "items": len(folder.manifest.read())})


def _write_sweep(out: Path, base: Path, options: SweepOptions, summary: SweepSummary,
                 status: str) -> None:
    write_json(out / SWEEP, {
        "status": status, "base": Path(os.path.relpath(base, out)).as_posix(),
        "options": options.model_dump(mode="json"), "variants": summary.variants,
        "items": {"base": summary.items, "made": summary.made,
                  "already_done": summary.already_done, "skipped": summary.skipped}})


# --- making one item's variants ------------------------------------------------------------

class VariantMaker:
    """Makes one base row's variants: PPI re-draws share one reading of the stored layout and
    one set of glyph runs; the other axes share one decoding of each image."""

    def __init__(self, base: Path, out: Path, options: SweepOptions):
        self.base, self.out, self.options = base, out, options
        self._renderers: dict[str, Any] = {}

    def make(self, row: dict[str, Any], variants: list[Variant]) -> dict[str, tuple[str, Any]]:
        results: dict[str, tuple[str, Any]] = {}
        redraws = [v for v in variants if v.axis == "ppi"]
        others = [v for v in variants if v.axis != "ppi"]
        if redraws:
            try:
                results.update(self._redraw(row, redraws))
            except ItemError as err:
                results.update({v.name: ("error", err) for v in redraws})
        if others:
            try:
                pictures = [
                    (entry, transforms.decode(self._read(row, entry, f"images[{i}].path")))
                    for i, entry in enumerate(row["images"])]
                for variant in others:
                    results[variant.name] = ("ok", self._post(row, variant, pictures))
            except ItemError as err:
                results.update({v.name: ("error", err) for v in others
                                if v.name not in results})
        return results

    def _where(self, row) -> str:
        return f"{self.base / MANIFEST}: item {row['id']}"

    def _read(self, row, entry: dict[str, Any], field: str, *, hashed: bool = False) -> bytes:
        """The bytes of a file the row records (``entry["path"]`` in the base run), checked
        against its sha256 (always, with ``hashed``; else when the entry has one)."""
        path = inside(self.base, entry.get("path"), where=self._where(row), field=field,
                      item_id=row["id"], stage="sweep")
        try:
            data = path.read_bytes()
        except OSError as err:
            raise ItemError(f"cannot read {path} ({err.strerror})", where=self._where(row),
                            field=field, item_id=row["id"], stage="sweep") from None
        if (hashed or entry.get("sha256")) and \
                hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise ItemError(f"{path} has changed since the run (sha256 differs)",
                            where=self._where(row), field=field, item_id=row["id"],
                            stage="sweep")
        return data

    def _renderer(self, row):
        """The renderer that drew ``row``, one per name and options."""
        cls = row_renderer(row)
        key = f"{cls.name} {cls.options_from(row['renderer']['params']).model_dump_json()}"
        if key not in self._renderers:
            self._renderers[key] = cls.from_params(row["renderer"]["params"])
        return self._renderers[key]

    def _redraw(self, row, variants: list[Variant]) -> dict[str, tuple[str, Any]]:
        layout = row.get("layout") or {}
        where = self._where(row)
        if not layout.get("path"):
            raise ItemError("no stored layout (a page run made before layouts were kept): "
                            "render it again to sweep its PPI", where=where, field="layout",
                            item_id=row["id"], stage="sweep")
        path = self.base / layout["path"]
        data = self._read(row, layout, "layout.path", hashed=True)
        renderer = self._renderer(row)
        try:
            drawn = renderer.redraw_at(json.loads(data), [v.value for v in variants])
        except (ValueError, KeyError) as err:
            raise ItemError(f"{path}: {err}", where=where, field="layout", item_id=row["id"],
                            stage="sweep") from None
        results = {}
        for variant, pages in zip(variants, drawn, strict=True):
            out = self.out / variant.name
            write_file(out, layout["path"], data)
            new = copy.deepcopy(row)
            new.pop("pdf", None)  # the vector PDF does not depend on the PPI: see the base
            new["renderer"]["params"]["ppi"] = variant.value
            new["images"] = [
                write_image(out, entry["path"], page.png, entry["role"], page.width,
                            page.height, ppi=variant.value)
                for entry, page in zip(row["images"], pages, strict=True)]
            results[variant.name] = ("ok", new)
        return results

    def _post(self, row, variant: Variant, pictures) -> dict[str, Any]:
        options, out = self.options, self.out / variant.name
        images = []
        if variant.axis == "scale":
            step = {"op": "scale", "factor": variant.value, "resample": options.resample}
        elif variant.axis == "rotate":
            step = {"op": "rotate", "degrees": variant.shown, "direction": "clockwise",
                    "resample": "none" if variant.value % 90 == 0 else "bicubic"}
        else:
            step = {"op": "jpeg", "quality": variant.shown,
                    "subsampling": options.jpeg_subsampling}
        for entry, image in pictures:
            size = image.size
            fmt = "jpeg" if (image.format == "JPEG" or variant.axis == "jpeg_quality") else "png"
            quality, subsampling = 95, "4:4:4"  # re-encoding a JPEG run's images
            extra: dict[str, Any] = {}
            ppi = entry.get("ppi")
            if variant.axis == "scale":
                image = transforms.scale(image, variant.value, options.resample)
                ppi = ppi * variant.value if ppi else None
            elif variant.axis == "rotate":
                image, fill = transforms.rotate(image, variant.value)
                if fill is not None:
                    extra["background"] = list(fill) if isinstance(fill, tuple) else fill
            else:
                quality, subsampling = int(variant.value), options.jpeg_subsampling
            data = transforms.encode(image, fmt, ppi=ppi, quality=quality,
                                     subsampling=subsampling)
            rel = entry["path"]
            if fmt == "jpeg" and not rel.endswith(".jpg"):
                rel = rel.rsplit(".", 1)[0] + ".jpg"
            if ppi is not None:
                extra["ppi"] = ppi
            if entry.get("boxes") is not None:
                extra["boxes"] = [{**b, "box": self._move(b["box"], variant, size, image.size)}
                                  for b in entry["boxes"]]
            if fmt == "jpeg" and variant.axis != "jpeg_quality":
                extra["encoding"] = {"format": "jpeg", "quality": quality,
                                     "subsampling": subsampling}
            images.append(write_image(out, rel, data, entry["role"], *image.size, **extra))
        new = copy.deepcopy(row)
        new["images"] = images
        new["postprocess"] = [*row.get("postprocess", []), step]
        return new

    @staticmethod
    def _move(box, variant: Variant, before, after) -> list[int]:
        if variant.axis == "scale":
            return transforms.scale_box(box, before, after)
        if variant.axis == "rotate":
            return transforms.rotate_box(box, variant.value, before, after)
        return box


_MAKER: dict[str, VariantMaker] = {}


def _init(args) -> None:
    _MAKER["maker"] = VariantMaker(*args)


def _make(task) -> dict[str, tuple[str, Any]]:
    row, variants = task
    return _MAKER["maker"].make(row, variants)


def _run(tasks, maker_args, workers: int, progress: bool):
    """(row, results) in the base manifest's order, from this process or a pool."""
    from tqdm import tqdm

    workers = workers or os.cpu_count() or 1
    bar = tqdm(total=len(tasks), unit="item", disable=not progress or not tasks,
               file=sys.stderr)
    try:
        if workers == 1 or len(tasks) <= 1:
            maker = VariantMaker(*maker_args)
            for row, variants in tasks:
                yield row, maker.make(row, variants)
                bar.update()
            return
        pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), initializer=_init,
                                   initargs=(maker_args,))
        for (row, _), results in zip(tasks, in_order(pool, _make, tasks, chunksize=4),
                                     strict=True):
            yield row, results
            bar.update()
    finally:
        bar.close()


def line_extents(png: bytes, ppi: float, pitch: float, margin: float,
                 threshold: int = 160) -> list[tuple[float, float] | None]:
    """What a page image shows, line slot by line slot (``pitch`` points from the top margin):
    the left and right edge of the slot's ink in points, or None for a slot without ink.

    Measured on the pixels alone, this is how a sweep's line and page breaks are checked across
    PPIs: a word that moved to another line changes a slot's right edge by a word's width, far
    more than the pixel grid's rounding."""
    import numpy as np

    pixels = np.asarray(transforms.decode(png).convert("L")) < threshold
    scale = ppi / 72.0
    out: list[tuple[float, float] | None] = []
    top = margin
    while (top + pitch) * scale <= pixels.shape[0] + 1:
        rows = pixels[int(round(top * scale)):int(round((top + pitch) * scale))]
        columns = np.flatnonzero(rows.any(axis=0))
        out.append((columns[0] / scale, (columns[-1] + 1) / scale) if columns.size else None)
        top += pitch
    while out and out[-1] is None:
        out.pop()
    return out
