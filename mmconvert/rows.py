"""Typed manifest rows: one pydantic model per renderer's row (``Renderer.row_model``), with the
image entries they share.

The run folder's sink validates every row against its model before writing it, and every reader
goes through ``RunFolder.rows()`` or ``manifest_entries``, which parse each line with the model
of the renderer it names and hand over that model's instance: a reader reads ``row.id``,
``row.images[0].path``, ``row.renderer.params``, and a type checker sees each. The line's own
JSON stays with it (``Row.raw``) for whatever writes the row again, so no manifest's bytes
change. A row that does not fit is a one-line error naming the file, the line and the field.
``SCHEMA`` is written into run.json; folders written before it (no ``schema``) read the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from .errors import ItemError, UsageError
from .manifest import open_regular, parse_row
from .options import first_error
from .parts import row_renderer

SCHEMA = 1

Sha256 = Field(pattern=r"^[0-9a-f]{64}$")


def _run_path(value: str) -> str:
    """A file a row names: a relative POSIX path with no '..' (``runfolder.inside`` then
    checks it stays inside the run once links are resolved). Every path a row records, not
    only its images', is one, so no reader copies ``../x`` or ``/etc/x`` out of a row."""
    parts = PurePosixPath(value).parts
    if not parts or parts[0] == "/" or ".." in parts or "\\" in value or "\0" in value:
        raise ValueError(f"{value!r} is not a path inside the run folder")
    return value


RunPath = Annotated[str, Field(min_length=1), AfterValidator(_run_path)]


def recorded_files(row: Any) -> list[tuple[str, str | None]]:
    """Every file a manifest row records, as (run-relative path, its sha256 or None): its
    images, its layout and original, its PDF. A row that does not parse as one (a damaged
    line) records what it plainly names and nothing else."""
    if isinstance(row, Row):
        row = row.raw
    if not isinstance(row, dict):
        return []
    entries = [e for e in row.get("images") or [] if isinstance(e, dict)]
    entries += [row[key] for key in ("layout", "original") if isinstance(row.get(key), dict)]
    found = [(e["path"], e.get("sha256")) for e in entries if isinstance(e.get("path"), str)]
    return found + ([(row["pdf"], None)] if isinstance(row.get("pdf"), str) else [])


class Strict(BaseModel):
    # built when a row is first checked: a run checks its own kind of row, never the others
    model_config = ConfigDict(extra="forbid", defer_build=True)

    # Read-only key access, as the row's JSON object answers it (a field the line does not
    # hold is missing, not None): for a plugin's hooks (``expected_text(row)``, a corpus's
    # ``scoring(row)``) written when rows were dicts. mmconvert's own code reads attributes.
    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields or key not in self.model_fields_set:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in type(self).model_fields and key in self.model_fields_set


class Box(Strict):
    span: int = Field(ge=0)
    box: list[int] = Field(min_length=4, max_length=4)


class ImageEntry(Strict):
    path: RunPath
    role: str = Field(min_length=1)
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    ppi: float | None = Field(None, gt=0)
    boxes: list[Box] | None = None
    background: int | list[int] | None = None  # a rotation's fill
    encoding: dict[str, Any] | None = None  # a PNG run's image re-encoded as JPEG
    sha256: str = Sha256


class RendererRecord(Strict):
    name: str
    version: str
    params: dict[str, Any]


class Row(Strict):
    """What every row holds."""

    id: str = Field(min_length=1)
    corpus: str
    subset: str
    split: str
    language: str = "en"
    renderer: RendererRecord
    seed: int
    images: list[ImageEntry] = Field(min_length=1)
    prompt: str
    text_prompt: str
    answer: str | list[str] | None = None
    metadata: dict[str, Any]
    # transforms applied after drawing (sweeps, mmconvert transform), in order
    postprocess: list[dict[str, Any]] | None = None
    # sha256 of the item's source fields (``Item.fingerprint``): a resumed run draws an item
    # whose source changed since again; rows made before it have none
    source_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")

    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)
    # what a pipeline works out about the row and carries with it in memory (an evaluation's
    # text cut to the pages' budget, its pages' own texts); never written
    _carried: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def raw(self) -> dict[str, Any]:
        """The row as its manifest line holds it (the JSON object), for whatever writes the
        row again: a sweep's derived row, an export, a reordered manifest. Treat it as read
        only; copy it to change it."""
        return self._raw

    def images_in(self, roles: Iterable[str]) -> list[ImageEntry]:
        """The row's images of the given roles, in order."""
        wanted = set(roles)
        return [image for image in self.images if image.role in wanted]

    @property
    def params(self) -> dict[str, Any]:
        """The parameters its renderer drew it with."""
        return self.renderer.params

    def carrying(self: R, name: str, value: Any) -> R:
        """A copy of the row carrying ``value`` as ``name`` in memory (``carried``)."""
        copy = self.model_copy()
        copy._raw, copy._carried = self._raw, {**self._carried, name: value}
        return copy

    def carried(self, name: str, default: Any = None) -> Any:
        return self._carried.get(name, default)


R = TypeVar("R", bound=Row)


def typed_row(data: dict[str, Any], model: type[R]) -> R:
    """``data`` (a manifest line's JSON object) as an instance of ``model``, keeping the
    object itself as its ``raw``; a ValidationError when it does not fit."""
    row = model.model_validate(data)
    row._raw = data
    return row


class FileRef(Strict):
    path: RunPath
    sha256: str = Sha256


class LayoutRef(FileRef):
    pages: int = Field(ge=1)
    lines: int = Field(ge=0)


class QuestionRow(Row):
    """A row of a question item (pages and generated images; not captions)."""

    prompt_style: Literal["cot", "direct"]
    question: str | None
    context: str | None
    options: list[str]


class PageRow(QuestionRow):
    layout: LayoutRef | None = None  # runs made before layouts were stored have none
    pdf: RunPath | None = None
    # a run with a target (--target-ratio, --vision-budget): what each item met
    target: dict[str, Any] | None = None


class MaskedSpan(Strict):
    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class OcclusionRow(Row):
    caption: str
    caption_in_image: str
    masked_spans: list[MaskedSpan]
    answer: list[str]
    difficulty: Literal["easy", "hard"]
    position: Literal["below", "above"]
    font: str
    ner: str
    lines: int = Field(ge=1)
    source_image: str | None


class OriginalRef(FileRef):
    format: str
    width: int = Field(gt=0)
    height: int = Field(gt=0)


class GeneratedRow(QuestionRow):
    original: OriginalRef
    text_in_image: str
    generation: dict[str, Any]
    provenance: dict[str, Any]


def problem(err: ValidationError) -> tuple[str, str]:
    """(field, message) of a validation error's first problem: ``images[0].sha256``."""
    first = first_error(err)
    field = ""
    for part in first["loc"]:
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    message = first["msg"]
    if first["type"] == "missing":
        message = "missing"
    elif first["type"] == "extra_forbidden":
        message = "not a field of this row"
    return field or "row", message


def manifest_entries(path: Path) -> Iterator[tuple[int, Row | None, Any]]:
    """Every non-blank line of the manifest at ``path``, read a line at a time: (line number,
    the typed row, None) for a whole line that parses as JSON, fits the row model of the
    renderer it names and records an item not seen before; (line number, None, the
    ``ItemError`` naming the line and field) for any other. The one reader of a run's rows
    (``RunFolder.rows``, the exporters' source)."""
    seen: dict[str, int] = {}
    with open_regular(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            where = f"{path} line {number}"
            if not raw.endswith(b"\n"):
                yield number, None, ItemError("the last row is cut off (a run still going, or "
                                              "killed)", where=where)
                continue
            try:
                data = parse_row(raw)
            except ValueError as err:
                yield number, None, ItemError(f"{err}; the file is damaged", where=where)
                continue
            row, found = read_row(data)
            if row is None:
                field, message = found or ("row", "not a row")
                yield number, None, ItemError(message, where=where, field=field)
            elif row.id in seen:  # read twice, an item would be exported or swept twice
                yield number, None, ItemError(
                    f"item {row.id!r} is recorded again (first at line {seen[row.id]}); "
                    "a resumed run removes the repeat: run its command again", where=where,
                    field="id")
            else:
                seen[row.id] = number
                yield number, row, None


def read_row(data: Any, model: type[Row] | None = None
             ) -> tuple[Row | None, tuple[str, str] | None]:
    """``data`` as a typed row of ``model`` (else of the renderer it names), or None and why
    not, as (field, message)."""
    if isinstance(data, Row):
        data = data.raw or data.model_dump(mode="json", exclude_unset=True)
    if not isinstance(data, dict):
        return None, ("row", f"a manifest row is a JSON object, not {type(data).__name__}")
    try:
        model = model or row_renderer(data).row_model
    except UsageError as err:
        return None, ("renderer.name", str(err))
    try:
        return typed_row(data, model), None
    except ValidationError as err:
        return None, problem(err)


def row_problem(row: Any, model: type[Row] | None = None) -> tuple[str, str] | None:
    """Why ``row`` is not a manifest row of ``model`` (else of the renderer it names), as
    (field, message), or None when it is one."""
    return read_row(row, model)[1]


def as_row(row: Any, model: type[Row] | None = None) -> Row:
    """A row just made (a dict, or an instance of its model) as the typed row the sink checks:
    for the paths that hand a drawn row to its renderer's hooks without writing it."""
    if isinstance(row, Row) and row.raw:
        return row
    typed, found = read_row(row, model)
    if typed is None:
        field, message = found or ("row", "not a row")
        name = row.get("id") if isinstance(row, (dict, Row)) else None
        raise ItemError(f"{message} (a row made by this version of mmconvert does not fit "
                        "its schema: please report it)", where=f"item {name!r}", field=field)
    return typed


def row_options(row: Row) -> list[str]:
    """The options of a question row (none for a row of another kind)."""
    return row.options if isinstance(row, QuestionRow) else []


def asks_direct(row: Row) -> bool:
    """Whether the row's prompt asks for the answer alone (``prompt_style: direct``)."""
    return isinstance(row, QuestionRow) and row.prompt_style == "direct"
