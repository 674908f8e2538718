"""Page styles as data: a style file (YAML or JSON) gives any page style field a value, a
choice, or a range, and each item's values are drawn from (run seed, item id).

    font_size: {uniform: [9, 14], round: 1}     # a range: uniform, int or log_uniform
    align: [left, justify]                      # a choice, alike
    text_color: {choice: ["#000000", "#333333"], weights: [3, 1]}
    margin: 10pt                                # a value
    font: [path/to/Face.ttf]                    # a list field: a list is its value

The shipped presets (``styles/*.yaml``; ``mmconvert list styles``) are style files too.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, cast, get_origin

from pydantic import BaseModel, Field, ValidationError, create_model, model_validator

from ..errors import UsageError, did_you_mean, first_line
from ..options import MAX_OPTIONS_BYTES, OPTIONS, first_error, read_yaml
from ..seeds import rng
from .page_options import PageOptions

STYLE_DIR = Path(__file__).parent / "styles"
KINDS = ("choice", "uniform", "int", "log_uniform")


class Draw(BaseModel):
    """How one field is drawn: from ``choice`` (with ``weights``), or from a range."""

    model_config = OPTIONS

    kind: Literal["choice", "uniform", "int", "log_uniform"]
    values: list[Any] = Field(min_length=1)  # the choices, or [low, high]
    weights: list[float] | None = None
    round: int = Field(2, ge=0, le=6)  # decimals a drawn real number keeps
    unit: Literal["pt", "in", "mm", "cm"] | None = None  # a range's unit, for a length

    @model_validator(mode="after")
    def _sound(self) -> Draw:
        if self.kind == "choice":
            if self.weights is not None and (len(self.weights) != len(self.values)
                                             or any(w < 0 for w in self.weights)
                                             or not sum(self.weights) > 0):
                raise ValueError(f"weights {self.weights}: one weight (>= 0, not all 0) for "
                                 f"each of the {len(self.values)} choices")
            return self
        if self.weights is not None:
            raise ValueError(f"weights are for a choice, not a {self.kind} range")
        if len(self.values) != 2 or not all(isinstance(v, (int, float))
                                            and not isinstance(v, bool) for v in self.values):
            raise ValueError(f"{self.kind}: [low, high], two numbers (got {self.values})")
        low, high = self.values
        if low > high:
            raise ValueError(f"{self.kind} range [{low:g}, {high:g}] is the wrong way round")
        if self.kind == "int" and not all(float(v).is_integer() for v in self.values):
            raise ValueError(f"int range [{low:g}, {high:g}]: whole numbers")
        if self.kind == "log_uniform" and low <= 0:
            raise ValueError(f"log_uniform range [{low:g}, {high:g}]: both over 0")
        return self

    def draw(self, random) -> Any:
        if self.kind == "choice":
            return random.choices(self.values, weights=self.weights)[0]
        low, high = self.values
        if self.kind == "int":
            value = random.randint(int(low), int(high))
        elif self.kind == "uniform":
            value = round(random.uniform(low, high), self.round)
        else:
            value = round(math.exp(random.uniform(math.log(low), math.log(high))), self.round)
        return f"{value}{self.unit}" if self.unit else value

    def extremes(self) -> list[Any]:
        if self.kind == "choice":
            return list(self.values)
        return [f"{v}{self.unit}" if self.unit else v for v in self.values]


class Style(BaseModel):
    """A style as a run records it: where it came from, and the fields drawn per item (the
    fixed ones are in the run's page options)."""

    model_config = OPTIONS

    name: str  # a preset's name, or the file as given
    sha256: str
    draws: dict[str, Draw] = Field(default_factory=dict)
    # fields the style sets that the run's renderer does not draw (the page renderer's line
    # layout, for the document renderer)
    left_out: list[str] = Field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The style as a run config records it (``left_out`` only when some are)."""
        data = self.model_dump(mode="json")
        if not data["left_out"]:
            data.pop("left_out")
        return data

    def draw(self, seed: int, item_id: str) -> dict[str, Any]:
        """The values of the drawn fields for one item: the same for the same (seed, item
        id), whatever else the run holds."""
        random = rng(seed, "style", item_id)
        return {name: self.draws[name].draw(random) for name in sorted(self.draws)}


def presets() -> dict[str, Path]:
    return {path.stem: path for path in sorted(STYLE_DIR.glob("*.yaml"))}


def describe_preset(path: Path) -> str:
    data = _read(path, path.read_bytes())
    return str(data.get("description", "")).strip()


def _read(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(raw)
        else:
            data = read_yaml(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    except Exception as err:  # noqa: BLE001 - any parser's complaint, as its first line
        raise UsageError(f"{path}: not a style file ({first_line(err)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a style file is a mapping of page style fields")
    return data


@lru_cache(maxsize=64)
def _field_model(name: str):
    """A model of one page style field (its type and bounds), to check a value alone."""
    info = PageOptions.model_fields[name]
    return create_model(f"One_{name}", __config__=OPTIONS,
                        value=(cast(Any, info.annotation), info))


def _checked(where: str, name: str, value: Any):
    """``value`` validated as style field ``name`` (a one-field model); one line naming
    ``where`` and the field if it is not a value of the field."""
    try:
        return _field_model(name).model_validate({"value": value})
    except ValidationError as err:
        raise UsageError(f"{where}: {name}: {first_error(err)['msg']} (got {value!r})") \
            from None


def _check_value(where: str, name: str, value: Any) -> Any:
    return _checked(where, name, value).value


def plain_value(where: str, name: str, value: Any) -> Any:
    """``value`` of style field ``name`` checked, as a style file writes it (JSON's types:
    a length in points, a colour as text)."""
    return _checked(where, name, value).model_dump(mode="json")["value"]


def _parse_field(where: str, name: str, spec: Any, is_list: bool) -> Draw | Any:
    """A field's entry: a Draw, or its fixed value."""
    if isinstance(spec, dict):
        kinds = [k for k in KINDS if k in spec]
        extra = set(spec) - set(KINDS) - {"weights", "round", "unit"}
        if len(kinds) != 1 or extra:
            raise UsageError(f"{where}: {name}: a draw is one of {', '.join(KINDS)} (with "
                             f"weights for a choice, round and unit for a range); got "
                             f"{sorted(spec)}")
        values = spec[kinds[0]]
        if not isinstance(values, list):
            raise UsageError(f"{where}: {name}: {kinds[0]} takes a list (got {values!r})")
        try:
            draw = Draw(kind=kinds[0], values=values, weights=spec.get("weights"),
                        round=spec.get("round", 2), unit=spec.get("unit"))
        except ValidationError as err:
            raise UsageError(f"{where}: {name}: {first_error(err)['msg']}") from None
    elif isinstance(spec, list) and not is_list:
        if not spec:
            raise UsageError(f"{where}: {name}: an empty list of choices")
        draw = Draw(kind="choice", values=spec)
    else:
        return _check_value(where, name, spec)
    if draw.kind == "choice":
        if is_list:  # a choice of one font is a choice of a one-font chain
            draw.values = [v if isinstance(v, list) else [v] for v in draw.values]
        draw.values = [_check_value(where, name, value) for value in draw.values]
    else:
        for value in draw.extremes():
            _check_value(where, name, value)
    return draw


def load_style(ref: str) -> tuple[Style, dict[str, Any]]:
    """A style named by a preset name or a file path: the Style (its draws) and its fixed
    values. One line naming the file and the field on any problem."""
    shipped = presets()
    if ref in shipped:
        path, name = shipped[ref], ref
    else:
        path, name = Path(ref), ref
        if not path.is_file():
            raise UsageError(f"style {ref!r}: neither a preset ({', '.join(shipped)}) nor a "
                             f"file{did_you_mean(ref, shipped)}")
    with open(path, "rb") as handle:
        raw = handle.read(MAX_OPTIONS_BYTES + 1)
    if len(raw) > MAX_OPTIONS_BYTES:
        raise UsageError(f"{path}: over the {MAX_OPTIONS_BYTES:,} bytes a style file may hold")
    data = _read(path, raw)
    where = str(path) if name == ref and ref not in shipped else f"style {name} ({path.name})"
    fixed: dict[str, Any] = {}
    draws: dict[str, Draw] = {}
    fields = PageOptions.model_fields
    for key, spec in data.items():
        if key == "description":
            continue
        if key == "render":
            raise UsageError(f"{where}: 'render' (what of an item becomes image) is not a "
                             "style field: give --render")
        if key not in fields:
            raise UsageError(f"{where}: {key!r} is not a page style field"
                             f"{did_you_mean(key, fields)}")
        is_list = get_origin(fields[key].annotation) is list
        parsed = _parse_field(where, key, spec, is_list)
        if isinstance(parsed, Draw):
            draws[key] = parsed
        else:
            fixed[key] = parsed
    style = Style(name=name, sha256=hashlib.sha256(raw).hexdigest(), draws=draws)
    _room_at_worst(where, style, fixed)
    return style, fixed


# which end of a range leaves the least room for text
_WORST = {"font_size": max, "line_spacing": max, "line_pitch": max, "margin": max,
          "margin_top": max, "margin_right": max, "margin_bottom": max, "margin_left": max,
          "left_indent": max, "right_indent": max, "first_line_indent": max,
          "page_width": min, "page_height": min}


def _room_at_worst(where: str, style: Style, fixed: dict[str, Any]) -> None:
    """Refuse, before drawing, a style whose tightest page has no room for text."""
    values = dict(fixed)
    for name, draw in style.draws.items():
        pick = _WORST.get(name)
        if pick is None:
            continue
        checked = [_check_value(where, name, v) for v in draw.extremes()]
        if all(isinstance(v, (int, float)) for v in checked):
            values[name] = pick(checked)
    try:
        PageOptions.model_validate(values)
    except ValidationError as err:
        first = first_error(err)
        raise UsageError(f"{where}: {first['msg']}") from None
