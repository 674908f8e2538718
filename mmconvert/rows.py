"""Typed manifest rows: one pydantic model per renderer's row (``Renderer.row_model``), with the
image entries they share.

The run folder's sink validates every row against its model before writing it, and every reader
goes through ``RunFolder.rows()``, which parses each line with the model of the renderer it
names: a row that does not fit is a one-line error naming the file, the line and the field.
``SCHEMA`` is written into run.json; folders written before it (no ``schema``) read the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from .errors import ItemError, UsageError
from .manifest import open_regular, parse_row
from .options import first_error

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
    if not isinstance(row, dict):
        return []
    entries = [e for e in row.get("images") or [] if isinstance(e, dict)]
    entries += [row[key] for key in ("layout", "original") if isinstance(row.get(key), dict)]
    found = [(e["path"], e.get("sha256")) for e in entries if isinstance(e.get("path"), str)]
    return found + ([(row["pdf"], None)] if isinstance(row.get("pdf"), str) else [])


class Strict(BaseModel):
    # built when a row is first checked: a run checks its own kind of row, never the others
    model_config = ConfigDict(extra="forbid", defer_build=True)


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


def manifest_entries(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, Any]]:
    """Every non-blank line of the manifest at ``path``, read a line at a time: (line number,
    the row, None) for a whole line that parses as JSON, fits the row model of the renderer it
    names and records an item not seen before; (line number, None, the ``ItemError`` naming the
    line and field) for any other. The one reader of a run's rows (``RunFolder.rows``, the
    exporters' source)."""
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
                row = parse_row(raw)
            except ValueError as err:
                yield number, None, ItemError(f"{err}; the file is damaged", where=where)
                continue
            found = row_problem(row)
            if found:
                yield number, None, ItemError(found[1], where=where, field=found[0])
            elif row["id"] in seen:  # read twice, an item would be exported or swept twice
                yield number, None, ItemError(
                    f"item {row['id']!r} is recorded again (first at line {seen[row['id']]}); "
                    "a resumed run removes the repeat: run its command again", where=where,
                    field="id")
            else:
                seen[row["id"]] = number
                yield number, row, None


def row_problem(row: Any, model: type[BaseModel] | None = None) -> tuple[str, str] | None:
    """Why ``row`` is not a manifest row of ``model`` (else of the renderer it names), as
    (field, message), or None when it is one."""
    from .renderers import row_renderer

    if not isinstance(row, dict):
        return "row", f"a manifest row is a JSON object, not {type(row).__name__}"
    try:
        model = model or row_renderer(row).row_model
    except UsageError as err:
        return "renderer.name", str(err)
    try:
        model.model_validate(row)
    except ValidationError as err:
        return problem(err)
    return None
