"""Option models. The same model is what the CLI fills, what a YAML config holds and what
run.json records."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .corpora.dedup import DedupOptions
from .errors import UsageError
from .options import OPTIONS
from .renderers.generate import GenerateOptions
from .renderers.occlude import OccludeOptions
from .renderers.page import PageOptions


def with_absolute_paths(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``data`` with the paths under ``keys`` made absolute (what run.json records)."""
    for key in keys:
        if data.get(key) is not None:
            data[key] = str(Path(data[key]).resolve())
    return data


class Selection(BaseModel):
    """Which items: corpus, rows, filters, dedup, sample. Every command that reads a corpus
    takes these."""

    model_config = OPTIONS

    corpus: str = Field(description="a registered corpus name or a local file")
    source: Path | None = Field(None, description="local copy of the corpus (file or folder)")
    subsets: list[str] | None = None
    split: str | None = None
    keep_flagged: bool = False
    language: str | None = Field(None, description="logiqa/logiqa2/longbench/captions")
    max_length: int | None = Field(None, ge=1, description="longbench: keep length below this")
    all_captions: bool = False
    shuffle_options: bool = Field(False, description="reorder options, seeded per item")
    dedup: DedupOptions | None = None
    sample: int | None = Field(None, ge=1, le=sys.maxsize,
                               description="items per subset, sampled with the seed")
    limit: int | None = Field(None, ge=1, le=sys.maxsize,
                              description="items that become output, after sampling")
    seed: int = 0
    on_error: Literal["fail", "skip"] = "fail"

    def identity(self) -> dict[str, Any]:
        """What decides the run folder's content (a re-run with another identity is refused).
        ``on_error`` does not: re-running a failed run with ``--on-error skip`` is the
        documented recovery."""
        data = with_absolute_paths(self.model_dump(mode="json", exclude={"on_error"}),
                                   ("source", "prompt_dir"))
        if self.dedup is not None:
            data["dedup"] = self.dedup.identity()
        return data


class Stored(Selection):
    """Which items, and how a run that makes images stores its files."""

    store: Literal["files", "shards"] = Field(
        "files", description="files: one file per image; shards: Parquet shards")
    shard_rows: int = Field(1000, ge=1, description="rows a shard, with --store shards")

    def identity(self) -> dict[str, Any]:
        data = super().identity()
        if self.store == "files":  # as folders made before shards existed recorded it
            data.pop("store", None)
            data.pop("shard_rows", None)
        return data


class RenderConfig(Stored):
    """A ``render`` run: which items, how to draw them, what to write."""

    renderer: Literal["page"] = "page"
    page: PageOptions = Field(default_factory=PageOptions)
    pdf: bool = Field(False, description="keep each item's vector PDF in pdf/")
    prompt_style: Literal["cot", "direct"] = "cot"
    prompt_dir: Path | None = None


class OccludeConfig(Stored):
    """An ``occlude`` run: which image-caption pairs, how to cover them, what to write."""

    renderer: Literal["occlude"] = "occlude"
    occlude: OccludeOptions = Field(default_factory=OccludeOptions)
    prompt_dir: Path | None = None


class GenerateConfig(Stored):
    """A ``generate`` run: which items, how the image API is asked to draw them, what to
    write. Where the servers are and how much may be spent are ``ApiOptions``."""

    renderer: Literal["generate"] = "generate"
    generate: GenerateOptions = Field(default_factory=GenerateOptions)
    prompt_style: Literal["cot", "direct"] = "cot"
    prompt_dir: Path | None = None


RunConfig = RenderConfig | OccludeConfig | GenerateConfig
CONFIGS = {"page": RenderConfig, "occlude": OccludeConfig, "generate": GenerateConfig}


def run_config(values: dict[str, Any]) -> RunConfig:
    """A config dict (as run.json or YAML holds it) as the model its ``renderer`` names."""
    return CONFIGS.get(values.get("renderer"), RenderConfig).model_validate(values)


def show_progress(flag: bool | None) -> bool:
    """``--progress/--no-progress``; unset: a bar when stderr is a terminal."""
    return flag if flag is not None else sys.stderr.isatty()


class ExecutionOptions(BaseModel):
    """How a run is carried out; none of it changes the output."""

    model_config = OPTIONS

    out: Path
    workers: int = Field(1, ge=0, description="processes; 0 = one per core")
    overwrite: bool = False
    progress: bool | None = None  # None: a bar when stderr is a terminal


class ApiOptions(BaseModel):
    """How ``generate`` reaches the APIs and what it may spend; none of it changes what is
    asked, so none of it is part of the run's identity (run.json records it apart)."""

    model_config = OPTIONS

    image_base_url: str | None = Field(None, description="default: OPENAI_BASE_URL, else "
                                                         "api.openai.com")
    chat_base_url: str | None = None
    api_key_env: str = Field("OPENAI_API_KEY", description="variable holding the key")
    chat_api_key_env: str | None = Field(None, description="default: api_key_env")
    concurrency: int = Field(8, ge=1, le=256, description="requests in flight at once")
    budget: float | None = Field(None, ge=0, description="USD this invocation may spend")
    price_table: Path | None = None
    cache_dir: Path | None = Field(None, description="default: ~/.cache/mmconvert/responses")
    max_tries: int = Field(5, ge=1, le=20)
    timeout: float = Field(300.0, gt=0, description="seconds per try")
    retry_failed: bool = False

    def record(self) -> dict[str, Any]:
        return with_absolute_paths(self.model_dump(mode="json"), ("price_table", "cache_dir"))


def submodel(model: type[BaseModel], name: Any) -> type[BaseModel] | None:
    """The options model that field ``name`` of ``model`` holds (``page``: PageOptions;
    ``dedup``: DedupOptions, optional), or None for a plain field or no such field."""
    info = model.model_fields.get(name) if isinstance(name, str) else None
    kinds = (getattr(info.annotation, "__args__", None) or (info.annotation,)) if info else ()
    return next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)


def sections() -> set[str]:
    """The option names whose value is itself a mapping of options (``page``, ``dedup``)."""
    return {name for model in CONFIGS.values() for name in model.model_fields
            if submodel(model, name) is not None}


def load_yaml(path: Path) -> dict[str, Any]:
    """A ``--config`` file's options; one line naming the file for anything that is not a
    mapping of options (sections such as ``page:`` mappings too), UTF-8, or readable YAML."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as err:
        raise UsageError(f"--config {path}: cannot read ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise UsageError(f"--config {path}: not UTF-8 text (byte {err.start})") from None
    except RecursionError:
        raise UsageError(f"--config {path}: nested too deeply to be a config") from None
    except yaml.YAMLError as err:
        raise UsageError(f"--config {path}: not valid YAML "
                         f"({' '.join(str(err).split())})") from None
    if not isinstance(data, dict):
        raise UsageError(f"--config {path}: expected a mapping of option names to values")
    for name in sorted(sections() & set(data)):
        if data[name] is not None and not isinstance(data[name], dict):
            raise UsageError(f"--config {path}: {name}: expected a mapping of option names to "
                             f"values (got {data[name]!r:.60})")
    return data


# ``build``'s origin when the values are the command's flags, and the fields whose flag is not
# the field's name
FLAGS = "options"
FLAG_NAMES = {"render": "--render", "subsets": "--subset", "jpeg_quality": "--jpeg-quality"}


def build(model: type[BaseModel], values: dict[str, Any], origin: str = FLAGS,
          whole: str = "options", flags: dict[str, str] | None = None):
    """Validate ``values`` into ``model``; the first problem becomes one readable line
    (``whole`` names the field of a problem with the model as a whole; values from flags are
    named by their flag, ``flags`` naming those that are not ``--<field>``)."""
    try:
        return model.model_validate(values)
    except ValidationError as err:
        first = err.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        value = first.get("input")
        if first["loc"] and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            message += f" (got {value!r})"
        if origin == FLAGS:
            # the values came from flags: name the flag (page.render_part -> --render-part);
            # a problem of a model as a whole names its fields itself
            if not first["loc"] or isinstance(value, dict):
                raise UsageError(message) from None
            name = str([p for p in first["loc"] if isinstance(p, str)][-1])
            flag = {**FLAG_NAMES, **(flags or {})}.get(name, "--" + name.replace("_", "-"))
            raise UsageError(f"{flag}: {message}") from None
        where = ".".join(str(p) for p in first["loc"]) or whole
        if first["type"] == "extra_forbidden":
            message += did_you_mean(model, first["loc"])
        raise UsageError(f"{origin}: {where}: {message}") from None


def did_you_mean(model: type[BaseModel], loc: tuple) -> str:
    """'; did you mean 'ppi'?' for an unknown key at ``loc`` of ``model``, or ''."""
    import difflib

    for part in loc[:-1]:  # down to the model that holds the unknown key
        model = submodel(model, part)
        if model is None:
            return ""
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
