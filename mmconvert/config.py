"""Option models. The same model is what the CLI fills, what a YAML config holds and what
run.json records."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from .errors import UsageError
from .errors import did_you_mean as closest
from .options import OPTIONS, cli, first_error, read_yaml
from .parts import DEFAULT, LOCAL, RENDERERS, backends, renderer_class, use
from .postprocess.transforms import checked_steps


def with_absolute_paths(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``data`` with the paths under ``keys`` made absolute (what run.json records)."""
    for key in keys:
        if data.get(key) is not None:
            data[key] = str(Path(data[key]).resolve())
    return data


DedupField = Literal["context", "question", "options", "all"]


class DedupOptions(BaseModel):
    """``--dedup`` and the ``dedup`` command."""

    model_config = OPTIONS

    model: str = Field("BAAI/bge-m3", description="sentence-transformers model name or local "
                                                  "folder",
                       json_schema_extra=cli("--embedding-model"))
    threshold: float = Field(0.85, gt=0, le=1, description="cosine similarity at or above "
                                                           "which items are duplicates",
                             json_schema_extra=cli("--dedup-threshold"))
    field: DedupField = Field("context", description="text compared for duplicates",
                              json_schema_extra=cli("--dedup-field"))
    index: Literal["exact", "faiss"] = Field(
        "exact", description="exact: a blocked search; faiss: an index for large corpora",
        json_schema_extra=cli("--dedup-index"))
    batch_size: int = Field(32, ge=1, description="embedding batch size")
    device: str | None = Field(None, description="embedding device",
                               json_schema_extra=cli(default="cuda or mps when present"))

    def identity(self) -> dict:
        """What changes the result (batch size and device do not)."""
        return self.model_dump(mode="json", exclude={"batch_size", "device"})


class Selection(BaseModel):
    """Which items: corpus, rows, filters, dedup, sample. Every command that reads a corpus
    takes these; the descriptions are the flags' help."""

    model_config = OPTIONS

    corpus: str = Field(description="a registered corpus name or a local file",
                        json_schema_extra=cli(off=True))
    source: Path | None = Field(
        None, description="local copy of the corpus: a file, or a folder with a file per "
                          "subset (hub parquet, save_to_disk, or the original release files)")
    subsets: list[str] | None = Field(None, description="subset (config) to load; repeatable",
                                      json_schema_extra=cli("--subset"))
    split: str | None = Field(None, description="split to load",
                              json_schema_extra=cli(default="the corpus' own, e.g. test"))
    corpus_options: dict[str, Any] = Field(
        default_factory=dict, description="the corpus's own options, checked by its options "
        "model (mmconvert render CORPUS --help lists its flags)", json_schema_extra=cli(off=True))
    shuffle_options: bool | Annotated[int, Field(ge=0, le=sys.maxsize)] = Field(
        False, description="reorder each item's options with a seed drawn from this seed "
                           "(or, given bare, from --seed) and its id; the manifest keeps the "
                           "original order and answer",
        json_schema_extra=cli(metavar="[SEED]"))
    nonce: int | None = Field(
        None, ge=0, le=sys.maxsize,
        description="replace each word, before drawing, with a pronounceable nonce word of "
                    "its length and capitalisation drawn from this seed (punctuation and "
                    "digits kept; Latin script only); the row keeps the mapping")
    dedup: DedupOptions | None = Field(
        None, description="remove exact and near-duplicate items before sampling",
        json_schema_extra=cli(enable="--dedup"))
    sample: int | None = Field(None, ge=1, le=sys.maxsize,
                               description="items per subset, sampled with --seed (ReadBench: "
                                           "35)")
    limit: int | None = Field(None, ge=1, le=sys.maxsize,
                              description="items that become output, overall, after sampling")
    seed: int = Field(0, description="run seed")
    on_error: Literal["fail", "skip"] = Field(
        "fail", description="on a bad row: stop (fail) or record it in skipped.jsonl and go "
                            "on (skip)")

    @field_validator("shuffle_options", mode="before")
    @classmethod
    def _on_or_seed(cls, value: Any) -> Any:
        """true, false or a seed: one line, not the union's two ("…bool: …", "…int: …")."""
        if isinstance(value, bool) or (isinstance(value, int) and 0 <= value <= sys.maxsize):
            return value
        raise ValueError(f"expected true, false or a seed (a whole number from 0), got "
                         f"{value!r}")

    @model_validator(mode="before")
    @classmethod
    def _legacy_corpus_options(cls, data: Any) -> Any:
        return legacy_corpus_options(data) if isinstance(data, dict) else data

    @property
    def shuffle_seed(self) -> int | None:
        """The seed the options are shuffled with: ``--shuffle-options SEED``'s, the run's
        ``--seed`` for a bare ``--shuffle-options``, None when they are not shuffled."""
        if self.shuffle_options is False:
            return None
        return self.seed if self.shuffle_options is True else self.shuffle_options

    def identity(self) -> dict[str, Any]:
        """What decides the run folder's content (a re-run with another identity is refused).
        ``on_error`` does not: re-running a failed run with ``--on-error skip`` is the
        documented recovery."""
        data = with_absolute_paths(self.model_dump(mode="json", exclude={"on_error"}),
                                   ("source", "prompt_dir"))
        if self.dedup is not None:
            data["dedup"] = self.dedup.identity()
        return data


# the corpus options a selection held itself before each corpus's options were its own
# section (``corpus_options``): a config or run.json that names them still reads
LEGACY_CORPUS_OPTIONS = ("keep_flagged", "language", "max_length", "all_captions", "niah")


def legacy_corpus_options(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the old top-level corpus options moved into ``corpus_options``: those
    given (not None or False, their old defaults), and ``niah``'s haystack set as its
    fields."""
    if not any(key in data for key in LEGACY_CORPUS_OPTIONS):
        return data
    data = dict(data)
    moved = dict(data.get("corpus_options") or {})
    for key in LEGACY_CORPUS_OPTIONS:
        value = data.pop(key, None)
        if key == "niah" and isinstance(value, dict):
            moved.update(value)
        elif value is not None and value is not False:
            moved[key] = value
    data["corpus_options"] = moved
    return data


class Stored(Selection):
    """Which items, and how a run that makes images stores its files."""

    store: Literal["files", "shards"] = Field(
        "files", description="files: one file per image, under images/; shards: Parquet "
                             "shards under shards/ (images as Hugging Face Image values, "
                             "readable by datasets.load_dataset('parquet')), the same manifest")
    shard_rows: int = Field(1000, ge=1, description="rows a shard, with --store shards")

    def identity(self) -> dict[str, Any]:
        data = super().identity()
        if self.store == "files":  # as folders made before shards existed recorded it
            data.pop("store", None)
            data.pop("shard_rows", None)
        return data


class RunConfig(Stored):
    """A run that makes images: which items, and how its renderer draws them. Each renderer's
    module subclasses it with ``renderer: Literal[<its name>]`` and a field holding its options
    model (``Renderer.config_model``); run.json records it whole."""

    renderer: str = Field(json_schema_extra=cli(off=True))
    prompt_dir: Path | None = Field(
        None, description="folder of prompt templates that replace the shipped ones by name")
    transforms: list[str] = Field(
        default_factory=list, json_schema_extra=cli(off=True),
        description="NAME:VALUE transforms each image goes through as it is drawn (a "
                    "recipe's), as mmconvert transform --apply takes them")

    @field_validator("transforms")
    @classmethod
    def _steps(cls, steps: list[str]) -> list[str]:
        return checked_steps(steps)

    def identity(self) -> dict[str, Any]:
        data = super().identity()
        if not self.transforms:  # as runs made before recipes recorded it
            data.pop("transforms", None)
        return data


def run_config(values: dict[str, Any], origin: str = "config") -> RunConfig:
    """A config dict (as run.json or YAML holds it) as the model of the renderer it names
    (the default renderer's when it names none); a problem is one line naming ``origin``."""
    if not isinstance(values, dict):
        raise UsageError(f"{origin}: expected a mapping of option names to values")
    name = values.get("renderer", DEFAULT)
    model = renderer_class(name, f"{origin}: renderer").config_model
    return build(model, values, origin)


def show_progress(flag: bool | None) -> bool:
    """``--progress/--no-progress``; unset: a bar when stderr is a terminal."""
    return flag if flag is not None else sys.stderr.isatty()


class Backend(BaseModel):
    """Where the work runs: this machine's own executors, or a registered cluster executor
    (``Executor.cluster``) at an address. The output is the same."""

    model_config = OPTIONS

    executor: str = Field(
        LOCAL, description="local: this machine's processes; a cluster executor (ray: Ray "
                           "Data, pip install 'mmconvert[ray]'): a local cluster of the "
                           "workers' size, or the one at --ray-address. Output is the same")
    address: str | None = Field(None, description="join this cluster (with --executor ray; "
                                                  "default: RAY_ADDRESS, if it is set)",
                                json_schema_extra=cli("--ray-address", metavar="HOST:PORT"))

    @field_validator("executor")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in backends():
            raise ValueError(f"unknown executor {value!r} (choose from "
                             f"{', '.join(backends())})")
        return value

    @model_validator(mode="after")
    def _address_needs_cluster(self):
        if self.address and self.executor == LOCAL:
            raise ValueError("--ray-address needs --executor ray")
        return self

    def use(self) -> None:
        """Run this invocation's work there (``executors.use``)."""
        use(self.executor, self.address)


class ExecutionOptions(Backend):
    """How and where a run is carried out; none of it changes the output."""

    out: Path = Field(description="run folder to write", json_schema_extra=cli(short="-o"))
    workers: int = Field(1, ge=0, description="processes to work with; 0 = one per core. "
                                              "Output is the same for any N")
    overwrite: bool = Field(False, description="replace a run folder made with other options")
    on_change: Literal["redraw", "refuse"] = Field(
        "redraw", description="a resumed run whose items changed in the source since they were "
                              "drawn: draw them again (redraw) or stop, changing nothing "
                              "(refuse)")
    progress: bool | None = Field(None, description="progress bar",
                                  json_schema_extra=cli(default="when stderr is a terminal"))


class ApiOptions(BaseModel):
    """How a paid renderer (``generate``) reaches the APIs and what it may spend; none of it
    changes what is asked, so none of it is part of the run's identity (run.json records it
    apart)."""

    model_config = OPTIONS

    image_base_url: str | None = Field(
        None, description="image API base URL",
        json_schema_extra=cli(default="OPENAI_BASE_URL, else OpenAI's"))
    chat_base_url: str | None = Field(
        None, description="chat API base URL, any OpenAI-compatible server (e.g. a local vLLM)")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the "
                                                           "API key; keys are never written")
    chat_api_key_env: str | None = Field(
        None, description="variable holding the chat server's key (a local server needs none)",
        json_schema_extra=cli(default="--api-key-env"))
    concurrency: int = Field(8, ge=1, le=256, description="requests in flight at once")
    budget: float | None = Field(None, ge=0, description="USD this invocation may spend; it "
                                                         "stops before a request would pass it")
    price_table: Path | None = Field(None, description="JSON price table whose models replace "
                                                       "the shipped prices")
    cache_dir: Path | None = Field(
        None, description="response cache",
        json_schema_extra=cli(default="$MMCONVERT_CACHE, else ~/.cache/mmconvert/responses"))
    max_tries: int = Field(5, ge=1, le=20, description="tries per request")
    timeout: float = Field(300.0, gt=0, description="seconds per try")
    retry_failed: bool = Field(False, description="try again the items whose requests failed, "
                                                  "were refused or came back malformed")

    def record(self) -> dict[str, Any]:
        return with_absolute_paths(self.model_dump(mode="json"), ("price_table", "cache_dir"))


def submodel(model: type[BaseModel], name: Any) -> type[BaseModel] | None:
    """The options model that field ``name`` of ``model`` holds (``page``: PageOptions;
    ``dedup``: DedupOptions, optional), or None for a plain field or no such field."""
    info = model.model_fields.get(name) if isinstance(name, str) else None
    kinds = (getattr(info.annotation, "__args__", None) or (info.annotation,)) if info else ()
    return next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)


def sections() -> set[str]:
    """The option names whose value is itself a mapping of options (``page``, ``dedup``), in
    any renderer's config."""
    return {name for renderer in RENDERERS.usable() for name in
            renderer.config_model.model_fields
            if submodel(renderer.config_model, name) is not None}


def load_yaml(path: Path) -> dict[str, Any]:
    """A ``--config`` file's options; one line naming the file for anything that is not a
    mapping of options (sections such as ``page:`` mappings too), UTF-8, or readable YAML."""
    try:
        data = read_yaml(path.read_text(encoding="utf-8")) or {}
    except OSError as err:
        raise UsageError(f"--config {path}: cannot read ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise UsageError(f"--config {path}: not UTF-8 text (byte {err.start})") from None
    except ValueError as err:  # an alias, nesting, a tag, bad YAML, a file too big
        raise UsageError(f"--config {path}: {err}") from None
    if not isinstance(data, dict):
        raise UsageError(f"--config {path}: expected a mapping of option names to values")
    for name in sorted(sections() & set(data)):
        if data[name] is not None and not isinstance(data[name], dict):
            raise UsageError(f"--config {path}: {name}: expected a mapping of option names to "
                             f"values (got {data[name]!r:.60})")
    return data


# ``build``'s origin when the values are the command's flags
FLAGS = "options"


def build(model: type[BaseModel], values: dict[str, Any], origin: str = FLAGS,
          whole: str = "options", flags: dict[str, str] | None = None,
          sources: dict[str, str] | None = None):
    """Validate ``values`` into ``model``; the first problem becomes one readable line
    (``whole`` names the field of a problem with the model as a whole; values from flags are
    named by their flag, ``flags`` naming those that are not ``--<field>``). ``sources``
    (``recipes.resolve``'s: each dotted field and where its value came from) names the source
    of the field at fault instead of ``origin``: a recipe's bad value is the recipe's, not a
    flag's."""
    try:
        return model.model_validate(values)
    except ValidationError as err:
        first = first_error(err)
        named = (sources or {}).get(".".join(p for p in first["loc"] if isinstance(p, str)))
        if named is not None:
            origin = FLAGS if named == "flag" else named
        message = first["msg"]
        value = first.get("input")
        if first["loc"] and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            message += f" (got {value!r})"
        if origin == FLAGS:
            # the values came from flags: name the flag (page.render_part -> --render-part);
            # a problem of a model as a whole names its fields itself
            # (a required flag left out is named, though its "input" is the whole dict)
            if not first["loc"] or (isinstance(value, dict) and first["type"] != "missing"):
                raise UsageError(message) from None
            name = str([p for p in first["loc"] if isinstance(p, str)][-1])
            flag = (flags or {}).get(name, "--" + name.replace("_", "-"))
            raise UsageError(f"{flag}: {message}") from None
        where = ".".join(str(p) for p in first["loc"]) or whole
        if first["type"] == "extra_forbidden":
            message += unknown_key_hint(model, first["loc"])
        raise UsageError(f"{origin}: {where}: {message}") from None


def unknown_key_hint(model: type[BaseModel], loc: tuple) -> str:
    """'; did you mean 'ppi'?' for an unknown key at ``loc`` of ``model``, or ''."""
    held: type[BaseModel] | None = model
    for part in loc[:-1]:  # down to the model that holds the unknown key
        held = submodel(held, part) if held is not None else None
    if held is None:
        return ""
    return closest(str(loc[-1]), held.model_fields)
