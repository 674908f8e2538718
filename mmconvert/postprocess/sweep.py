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
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from .. import resuming
from ..errors import ItemError, MMConvertError, UsageError, did_you_mean
from ..executors import executor_for
from ..imaging import Resampling, decode
from ..locks import locked
from ..manifest import MANIFEST, write_json
from ..options import OPTIONS, cli, first_error
from ..progress import progress_bar
from ..renderers import row_renderer, run_renderer
from ..renderers.base import Redraws, Restyles
from ..rows import SCHEMA, FileRef, ImageEntry, Row
from ..runfolder import (
    LOCK,
    Failed,
    Made,
    Output,
    RunFolder,
    identity_of,
    open_run,
    read_recorded,
    source_prints,
)
from ..units import PPI
from .apply import apply_steps, history, renamed
from .transforms import in_order as transforms_in_order
from .transforms import transform_class
from .transforms.base import Transform

SWEEP = "sweep.json"


class SweepOptions(BaseModel):
    """The axes of a sweep (each a list of values, varied alone) and how images are made.
    ``ppi`` re-draws page runs; every other axis is a registered transform: the named fields
    are the CLI's own flags (``--scale``, ``--rotate``, ``--jpeg-quality``), and ``vary``
    takes any transform by name (``vary: {blur: [0.5, 1, 2]}``)."""

    model_config = OPTIONS

    ppi: list[PPI] = Field(default_factory=list,
                           description="PPIs to re-draw page runs at, e.g. 72,92.9,150,300",
                           json_schema_extra=cli(split=True))
    scale: list[float] = Field(default_factory=list,
                               description="factors to resize every image by, e.g. "
                                           "0.125,0.25,0.5,2,4 (plain resampling, also upward)",
                               json_schema_extra=cli(split=True))
    rotate: list[float] = Field(default_factory=list, description="clockwise degrees to turn "
                                                                  "every image, e.g. 90,180",
                                json_schema_extra=cli(split=True))
    jpeg_quality: list[int] = Field(default_factory=list,
                                    description="JPEG qualities to re-encode at, e.g. 95,75",
                                    json_schema_extra=cli(split=True))
    vary: dict[str, list[float | str]] = Field(
        default_factory=dict, description="any registered transform: its main option's values")
    style: dict[str, list[float | str]] = Field(
        default_factory=dict, description="page style fields to draw a page run's items again "
                                          "with, a variant a value (style: {font_size: [9, 12]})")
    resample: Resampling = Field("lanczos", description="resampling filter for "
                                                                 "--scale (recorded in each row)")
    jpeg_subsampling: Literal["4:4:4", "4:2:2", "4:2:0"] = Field(
        "4:2:0", description="chroma subsampling of --jpeg-quality variants (Pillow's)")

    @field_validator("ppi")
    @classmethod
    def _ppi(cls, values):
        return list(dict.fromkeys(values))

    @field_validator("scale", "rotate", "jpeg_quality")
    @classmethod
    def _limits(cls, values, info):
        step = next(c for c in transforms_in_order() if c.axis == info.field_name)
        if step.limits:
            low, high, what = step.limits
            for v in values:
                if not (low < v <= high):
                    raise ValueError(f"{v:g} is not {what}")
        return values

    @model_validator(mode="after")
    def _axes(self):
        for name in self.vary:
            transform_class(name)  # an unknown name: one line with a did-you-mean
        if "ppi" in self.style:
            raise ValueError("style: ppi is swept by --ppi, which re-draws the stored layout")
        if not self.variants():
            raise ValueError("give at least one of --ppi, --scale, --rotate, --jpeg-quality, "
                             "--vary, --vary-style")
        return self

    def values(self, cls) -> list:
        """The values given for transform ``cls`` (its own field, or ``vary``)."""
        return list(getattr(self, cls.axis, None) or []) + list(self.vary.get(cls.name) or [])

    def variants(self) -> list[Variant]:
        out = [Variant("ppi", value) for value in self.ppi]
        for name, values in self.style.items():
            out.extend(Variant(name, value, style=True) for value in dict.fromkeys(values))
        for cls in transforms_in_order():
            settings = {option: getattr(self, field)
                        for field, option in cls.sweep_settings.items()}
            seen = set()
            for value in self.values(cls):
                step = cls.build({cls.primary: value, **settings}, f"{cls.axis} {value}")
                if step.value in seen:
                    continue
                seen.add(step.value)
                out.append(Variant(cls.axis, step.value, step))
        return out

    def record(self) -> dict[str, Any]:
        """What sweep.json records (``vary`` and ``style`` only when given)."""
        return self.model_dump(mode="json",
                               exclude={k for k in ("vary", "style") if not getattr(self, k)})


@dataclass(frozen=True)
class Variant:
    axis: str
    value: float | str
    step: Transform | None = None  # None: a PPI re-draw, or with ``style`` a new drawing
    style: bool = False  # ``axis`` is a field of the renderer's options, drawn again

    @property
    def shown(self) -> float | int | str:
        if isinstance(self.value, str):
            return self.value
        return int(self.value) if float(self.value).is_integer() else self.value

    @property
    def name(self) -> str:
        prefix = self.step.folder if self.step else self.axis if self.style else "ppi"
        return f"{prefix}-{self.shown:g}" if not isinstance(self.shown, str) else \
            f"{prefix}-{self.shown}"

    def is_base(self, base_ppi: float | None) -> bool:
        if self.style:
            return False
        if self.step is None:
            return self.value == base_ppi
        return self.step.identity is not None and self.value == self.step.identity

    def how(self) -> dict[str, Any]:
        """The step's other options, as a variant's identity records them."""
        if self.step is None:
            return {}
        return {option: getattr(self.step.options, option)
                for option in self.step.sweep_settings.values()}


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


def read_run(base: Path) -> tuple[dict[str, Any], list[Row]]:
    """The base run's run.json and manifest rows."""
    folder = open_run(base, need_info=True)
    return folder.info(), folder.rows()


def parse_vary(text: str, flag: str = "--vary") -> tuple[str, list[float | str]]:
    """``--vary NAME:V1,V2`` as the transform's name and its values (numbers where they are);
    ``--vary-style FIELD:V1,V2`` as a style field and its values."""
    name, _, listed = text.partition(":")
    if not listed:
        example = "font_size:9,12" if flag == "--vary-style" else "blur:0.5,1,2"
        raise UsageError(f"{flag} {text}: expected NAME:V1,V2 (e.g. {example})")

    def value(part: str) -> float | str:
        try:
            return float(part)
        except ValueError:
            return part

    return name.strip(), [value(v.strip()) for v in listed.split(",") if v.strip()]


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
    renderer = run_renderer(base, info)
    base_ppi = renderer.base_ppi(config) if issubclass(renderer, Redraws) else None
    if options.ppi and not issubclass(renderer, Redraws):
        raise UsageError(f"--ppi re-draws the stored layout of page runs; {base} was made by "
                         f"the {renderer.name} renderer: use --scale to change its resolution")
    if info.get("variant") and options.ppi:
        raise UsageError(f"{base} is itself a sweep variant; sweep PPI from its base run")
    if options.style:
        _check_style_axes(base, renderer, options)
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
    # a row of the base run drawn again since (its source changed) is varied again
    prints = source_prints(rows)
    changed = {v.name: resuming.refresh(folders[v.name], prints) for v in work}
    done = {v.name: folders[v.name].done_ids() for v in work}
    tasks = []
    for row in rows:
        wanted = [v for v in work if row.id not in done[v.name]]
        if wanted:
            tasks.append((row, wanted))
    for v in work:
        summary.already_done[v.name] = sum(row.id in done[v.name] for row in rows)
        summary.made[v.name] = summary.skipped[v.name] = 0
    _write_sweep(out, base, options, summary, "running")
    maker_args = (base, out, options)
    try:
        for row, results in _run(tasks, maker_args, workers, progress):
            for name, result in results.items():
                if folders[name].take(result, on_error, item_id=row.id, stage="sweep") == \
                        "made":
                    summary.made[name] += 1
                else:
                    summary.skipped[name] += 1
    except MMConvertError:
        _write_sweep(out, base, options, summary, "failed")
        raise
    for v in work:
        if changed[v.name]:
            resuming.reorder(folders[v.name], {row.id: n for n, row in enumerate(rows)})
        _write_info(folders[v.name], base, info, v, options, "complete")
    _write_sweep(out, base, options, summary, "complete")
    return summary


def _check_style_axes(base: Path, renderer, options: SweepOptions) -> None:
    """Style axes need a renderer that draws its rows again (``renderers.base.Restyles``) and
    name its options' fields, with values they take: one line otherwise."""
    from pydantic import ValidationError

    if not issubclass(renderer, Restyles):
        raise UsageError(f"--vary-style draws a run's items again; {base} was made by the "
                         f"{renderer.name} renderer, which does not")
    fields = renderer.options_model.model_fields
    for name, values in options.style.items():
        if name not in fields or name == "render":
            raise UsageError(f"--vary-style {name}: not a style field of the {renderer.name} "
                             f"renderer{did_you_mean(name, fields)}")
        for value in values:
            try:
                renderer.options_model.model_validate({name: value})
            except ValidationError as err:
                raise UsageError(f"--vary-style {name}:{value}: "
                                 f"{first_error(err)['msg']}") from None


def _identity(base: Path, info: dict[str, Any], variant: Variant,
              options: SweepOptions) -> dict[str, Any]:
    return {**identity_of(info.get("config") or {}), "variant": {
        "of": str(base.resolve()), "axis": variant.axis, "value": variant.shown,
        **variant.how()}}


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
        "status": status, "schema": SCHEMA, "config": identity, "variant": identity["variant"],
        "base": Path(os.path.relpath(base, folder.path)).as_posix(),
        "versions": info.get("versions"), "fonts": info.get("fonts"),
        "items": len(folder.manifest.read())})


def _write_sweep(out: Path, base: Path, options: SweepOptions, summary: SweepSummary,
                 status: str) -> None:
    write_json(out / SWEEP, {
        "status": status, "base": Path(os.path.relpath(base, out)).as_posix(),
        "options": options.record(), "variants": summary.variants,
        # what the sweep is, not what this invocation did: a re-run writes the same bytes
        "items": summary.items})


# --- making one item's variants ------------------------------------------------------------

def read_entry(base: Path, row: Row, entry: ImageEntry | FileRef, field: str, *,
               hashed: bool = False, stage: str = "sweep") -> bytes:
    """A file the base row records, checked (``runfolder.read_recorded``)."""
    return read_recorded(base, entry, where=f"{base / MANIFEST}: item {row.id}",
                         field=field, hashed=hashed, item_id=row.id, stage=stage)


class VariantMaker:
    """Makes one base row's variants: PPI re-draws share one reading of the stored layout and
    one set of glyph runs; the other axes share one decoding of each image."""

    def __init__(self, base: Path, out: Path, options: SweepOptions):
        self.base, self.out, self.options = base, out, options
        self._renderers: dict[str, Any] = {}

    def __call__(self, task) -> dict[str, Made | Failed]:
        return self.make(*task)

    def make(self, row: Row, variants: list[Variant]) -> dict[str, Made | Failed]:
        results: dict[str, Made | Failed] = {}
        redraws = [v for v in variants if v.step is None and not v.style]
        others = [v for v in variants if v.step is not None]
        for variant in (v for v in variants if v.style):
            renderer = row_renderer(row)
            try:
                if not issubclass(renderer, Restyles):  # a style axis is refused before (the run's)
                    raise ItemError(f"the {renderer.name} renderer does not draw rows again",
                                    where=row.id, field="renderer.name")
                results[variant.name] = Made(renderer.restyled(
                    row, {variant.axis: variant.value}))
            except ItemError as err:
                results[variant.name] = Failed(err, row.source_sha256)
        if redraws:
            try:
                results.update(self._redraw(row, redraws))
            except ItemError as err:
                results.update({v.name: Failed(err, row.source_sha256) for v in redraws})
        if others:
            try:
                pictures = [
                    (entry, decode(self._read(row, entry, f"images[{i}].path")))
                    for i, entry in enumerate(row.images)]
                for variant in others:
                    results[variant.name] = Made(self._post(row, variant, pictures))
            except ItemError as err:
                results.update({v.name: Failed(err, row.source_sha256) for v in others
                                if v.name not in results})
        return results

    def _where(self, row: Row) -> str:
        return f"{self.base / MANIFEST}: item {row.id}"

    def _read(self, row: Row, entry: ImageEntry | FileRef, field: str, *,
              hashed: bool = False) -> bytes:
        return read_entry(self.base, row, entry, field, hashed=hashed)

    def _renderer(self, row: Row):
        """The renderer that drew ``row``, one per name and options."""
        cls = row_renderer(row)
        key = f"{cls.name} {cls.options_from(row.params).model_dump_json()}"
        if key not in self._renderers:
            self._renderers[key] = cls.from_params(row.params)
        return self._renderers[key]

    def _redraw(self, row: Row, variants: list[Variant]) -> dict[str, Made | Failed]:
        layout: FileRef | None = getattr(row, "layout", None)
        where = self._where(row)
        if layout is None:
            raise ItemError("no stored layout (a page run made before layouts were kept): "
                            "render it again to sweep its PPI", where=where, field="layout",
                            item_id=row.id, stage="sweep")
        path = self.base / layout.path
        data = self._read(row, layout, "layout.path", hashed=True)
        renderer = self._renderer(row)
        try:
            drawn = renderer.redraw_at(renderer.read_layout(data),
                                       [v.value for v in variants])
        except (ValueError, KeyError) as err:
            raise ItemError(f"{path}: {err}", where=where, field="layout", item_id=row.id,
                            stage="sweep") from None
        results: dict[str, Made | Failed] = {}
        for variant, pages in zip(variants, drawn, strict=True):
            output = Output()
            output.file(layout.path, data)
            new = copy.deepcopy(row.raw)
            new.pop("pdf", None)  # the vector PDF does not depend on the PPI: see the base
            new["renderer"]["params"]["ppi"] = variant.value
            new["images"] = [
                output.image(entry.path, page.png, entry.role, page.width, page.height,
                             ppi=variant.value)
                for entry, page in zip(row.images, pages, strict=True)]
            output.row = new
            results[variant.name] = Made(output)
        return results

    def _post(self, row: Row, variant: Variant, pictures) -> Output:
        assert variant.step is not None  # a transform's variant
        return post(row.raw, [variant.step], pictures)


def post(row: dict[str, Any], steps: list[Transform], pictures) -> Output:
    """The row ``row`` (its manifest JSON) with each of its decoded ``pictures`` (``(entry,
    image)``, the entry typed or as JSON) put through ``steps``, and the new images' bytes;
    the history records the steps."""
    output = Output()
    images, sampled = [], []
    for index, (entry, image) in enumerate(pictures):
        data, fmt, made, extra, params = apply_steps(
            image, entry, steps, seed=row.get("seed", 0), item_id=row["id"], index=index,
            done=len(row.get("postprocess", [])))
        sampled.append(params)
        images.append(output.image(renamed(entry["path"], fmt), data, entry["role"],
                                   *made.size, **extra))
    output.row = {**copy.deepcopy(row), "images": images,
                  "postprocess": history(row, steps, sampled)}
    return output


def _run(tasks, maker_args, workers: int, progress: bool):
    """(row, results) in the base manifest's order, through the executor for this machine."""
    executor = executor_for(workers, len(tasks))
    results = executor.map(functools.partial(VariantMaker, *maker_args), tasks)
    yield from zip((row for row, _ in tasks), progress_bar(results, len(tasks), progress),
                   strict=True)
