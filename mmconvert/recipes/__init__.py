"""Recipes: everything that decides an item's pixels, in one file another lab can check.

A recipe names the renderer and its style (fixed values and draws), the scope (what of an item
becomes image: ``options``, ``context`` or ``all``), the options (the PPI among them), a target
(a font size fitted per item), the transforms each image goes through, the versions and font
hashes it was made with, and a fingerprint: reference items and their pages' hashes. ``render
--recipe NAME|FILE``, ``mmconvert harness`` and ``load_recipe(...).render(item)`` draw with it;
``mmconvert recipe verify`` draws the reference items on this machine and says whether the
pages are identical, or what differs and why.

The shipped recipes (``mmconvert list recipes``) are the YAML files beside this module; ``make``
fills in a spec's ``made_with`` and references (``mmconvert recipe make SPEC --out FILE``).
"""

from __future__ import annotations

import functools
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, ValidationError, field_validator

from ..errors import MMConvertError, UsageError
from ..items import Item, RenderPart
from ..options import MAX_OPTIONS_BYTES, OPTIONS, first_error, read_yaml

if TYPE_CHECKING:
    from PIL import Image

    from ..config import RunConfig
    from ..runfolder import Output
    from .training import ItemTransform

SHIPPED = Path(__file__).parent
# the items a recipe's fingerprint draws when its spec names none: written by us, one of
# each kind of part (lettered options, a passage, a bare question) and a line in another script
REFERENCE_ITEMS: list[dict[str, Any]] = [
    {"id": "ref-options", "question": "Which gas do plants take in to make sugar?",
     "options": ["Oxygen", "Carbon dioxide", "Nitrogen", "Helium"], "answer": "B"},
    {"id": "ref-context", "context": (
        "The river rose three feet overnight. By morning the ferry had stopped, the lower road "
        "was under water, and the baker on Mill Street was selling bread from an upstairs "
        "window. \"It happens every spring,\" she said, \"but never this early.\"\n\nBy noon "
        "the rain had eased, and the ferryman was counting the hours until the water fell."),
     "question": "Where was the baker selling bread from?", "answer": ["an upstairs window"]},
    {"id": "ref-question", "question": "What is 17 × 23? Give the number (e.g. 391).",
     "answer": ["391"]},
]


class PageHash(BaseModel):
    """One reference page: its file's sha256, and the sha256 of its pixels (mode, size and
    raw bytes), which tells an encoder's difference from a drawing's."""

    model_config = OPTIONS

    sha256: str
    pixels: str
    width: int
    height: int


class Reference(BaseModel):
    model_config = OPTIONS

    item: dict[str, Any]
    pages: list[PageHash] = Field(default_factory=list)


class Recipe(BaseModel):
    """A recipe file's fields."""

    model_config = OPTIONS

    name: str = Field(min_length=1, max_length=64)
    description: str = ""
    source: str = Field("", description="the paper or code whose settings it reproduces")
    renderer: str = "page"
    scope: RenderPart | None = Field(
        None, description="what of an item becomes image (none: the corpus's own choice)")
    style: str | dict[str, Any] | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    target: dict[str, Any] | None = None
    transforms: list[str] = Field(default_factory=list)
    prompt_style: Literal["cot", "direct"] | None = None
    made_with: dict[str, Any] = Field(default_factory=dict)
    references: list[Reference] = Field(default_factory=list)
    _drawer: Drawer | None = PrivateAttr(None)

    @field_validator("transforms")
    @classmethod
    def _steps(cls, steps: list[str]) -> list[str]:
        from ..postprocess.transforms import checked_steps

        return checked_steps(steps)

    # -- what the recipe asks for ---------------------------------------------------------

    def config_values(self, corpus: str) -> dict[str, Any]:
        """The run config a render with this recipe starts from (flags and a --config file
        go over it)."""
        from ..renderers import renderer_class

        renderer = renderer_class(self.renderer, f"recipe {self.name}: renderer")
        section = options_section(renderer)
        options = dict(self.options)
        if self.scope is not None:
            options["render"] = self.scope
        values: dict[str, Any] = {"renderer": renderer.name, "corpus": corpus}
        if options:
            values[section] = options
        if self.style is not None:
            values["style"] = self.style
        if self.target is not None:
            values["target"] = dict(self.target)
        if self.transforms:
            values["transforms"] = list(self.transforms)
        if self.prompt_style is not None:
            values["prompt_style"] = self.prompt_style
        return values

    def run_config(self, corpus: str = "items.jsonl", **more: Any) -> RunConfig:
        from ..config import run_config

        return run_config(merged(self.config_values(corpus), more), f"recipe {self.name}")

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()  # pickled without its open renderer
        state["__pydantic_private__"] = {**(state.get("__pydantic_private__") or {}),
                                         "_drawer": None}
        return state

    def drawer(self) -> Drawer:
        """The recipe's renderer, opened once and kept."""
        if self._drawer is None:
            self._drawer = Drawer(self)
        return self._drawer

    def render(self, item: dict[str, Any] | Item) -> list[Image.Image]:
        """The pages the model is shown for ``item`` (a dict in the generic item schema, or
        an ``Item``), as Pillow images: the pixels ``mmconvert render --recipe`` writes."""
        return self.drawer().render(item)

    def transform(self, *, seed: int = 0, column: str = "images",
                  fields: dict[str, str] | None = None) -> ItemTransform:
        """A function for ``datasets.Dataset.with_transform``: each row of a batch gains
        ``column``, its pages, drawn with a seed per item (see :mod:`.training`)."""
        from .training import ItemTransform

        return ItemTransform(self, seed=seed, column=column, fields=fields)


def options_section(renderer) -> str:
    """The field of ``renderer``'s config that holds its options (``page``, ``document``)."""
    from ..config import submodel

    model = renderer.config_model
    for name in model.model_fields:
        if submodel(model, name) is renderer.options_model:
            return name
    raise UsageError(f"the {renderer.name} renderer's config holds no options section")


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` on ``base``, a section (a mapping) merged key by key."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


# -- finding and reading recipes -------------------------------------------------------------

def shipped() -> dict[str, Path]:
    return {path.stem: path for path in sorted(SHIPPED.glob("*.yaml"))}


@functools.lru_cache(maxsize=32)
def _read(path: str, size: int, mtime: int) -> Recipe:
    where = f"recipe {path}"
    data = Path(path).read_bytes()
    if len(data) > MAX_OPTIONS_BYTES:
        raise UsageError(f"{where}: larger than {MAX_OPTIONS_BYTES} bytes; not a recipe")
    try:
        values = read_yaml(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise UsageError(f"{where}: not a YAML recipe ({str(err).splitlines()[0]})") from None
    if not isinstance(values, dict):
        raise UsageError(f"{where}: expected a mapping of recipe fields")
    values.setdefault("name", Path(path).stem)
    try:
        return Recipe.model_validate(values)
    except ValidationError as err:
        from ..config import did_you_mean

        first = first_error(err)
        field = ".".join(str(p) for p in first["loc"]) or "recipe"
        hint = did_you_mean(Recipe, first["loc"]) if first["type"] == "extra_forbidden" else ""
        raise UsageError(f"{where}: {field}: {first['msg']}{hint}") from None


def load_recipe(name: str | Path) -> Recipe:
    """A shipped recipe by name, or a recipe file; an unknown name is one line with the
    shipped ones."""
    text = str(name)
    known = shipped()
    path = known.get(text) or Path(text)
    if not path.is_file():
        from ..errors import did_you_mean

        raise UsageError(f"no recipe {text!r}: not a shipped recipe ({', '.join(known)}) nor "
                         f"a file{did_you_mean(text, list(known))}")
    stat = path.stat()
    return _read(str(path.resolve()), stat.st_size, int(stat.st_mtime_ns))


# -- drawing in memory ------------------------------------------------------------------------

def item_from(data: dict[str, Any] | Item, index: int = 0) -> Item:
    """An item from a dict in the generic item schema (what a JSONL file's line holds; its
    id, when it gives none, is ``items-NNNN``, as a file named items.jsonl gives it)."""
    if isinstance(data, Item):
        return data
    if not isinstance(data, dict):
        raise UsageError(f"an item is a dict of its fields, not {type(data).__name__}")
    from ..corpora.base import LoadRequest
    from ..corpora.files import LocalFile
    from ..corpora.sources import Row

    return LocalFile(Path("items.jsonl")).item(Row(index, f"item {index}", data),
                                               LoadRequest())


@dataclass
class Drawn:
    """One item drawn with a recipe: its manifest row and its shown pages' PNG bytes."""

    row: dict[str, Any]
    pages: list[bytes]

    def images(self) -> list[Image.Image]:
        from PIL import Image

        out: list[Image.Image] = []
        for data in self.pages:
            image = Image.open(io.BytesIO(data))
            image.load()
            out.append(image)
        return out


class Drawer:
    """A recipe's renderer, kept open: each call draws one item in this process.
    ``values``: config fields over the recipe's (``prompt_style``, say)."""

    def __init__(self, recipe: Recipe, **values: Any):
        from ..converter import make_job
        from ..corpora.files import LocalFile

        self.recipe = recipe
        self.config = recipe.run_config(**values)
        self.job = make_job(self.config)
        self.corpus = LocalFile(Path("items.jsonl"))

    def draw(self, item: dict[str, Any] | Item, index: int = 0, corpus=None) -> Drawn:
        """``item`` drawn as a run of ``corpus`` (the generic files' by default: its part
        and prompt keys) draws it."""
        from ..errors import ItemError

        corpus = corpus or self.corpus
        made = item_from(item, index)
        part = self.job.part(made, corpus)
        try:
            output: Output = self.job.run(made, part, corpus.prompt_keys(made))
        except ItemError as err:
            raise MMConvertError(str(err)) from None
        row = output.row if isinstance(output.row, dict) else \
            output.row.model_dump(mode="json", exclude_unset=True)
        files = dict(output.files)
        shown = self.job.renderer.profile.shown
        pages = [files[entry["path"]] for entry in row["images"] if entry["role"] in shown]
        return Drawn(row, pages)

    def render(self, item: dict[str, Any] | Item, index: int = 0) -> list[Image.Image]:
        return self.draw(item, index).images()


# -- fingerprints ------------------------------------------------------------------------------

def shown_text(row: dict[str, Any]) -> str:
    """The text a drawn row's shown images hold (its renderer's ``expected_text``)."""
    from ..renderers import row_renderer

    return row_renderer(row).expected_text(row)


def page_hash(data: bytes) -> PageHash:
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    pixels = hashlib.sha256(f"{image.mode} {image.width}x{image.height}\n".encode()
                            + image.tobytes()).hexdigest()
    return PageHash(sha256=hashlib.sha256(data).hexdigest(), pixels=pixels,
                    width=image.width, height=image.height)


def made_with(drawer: Drawer) -> dict[str, Any]:
    """What a recipe's pages were made with here: mmconvert's version, the renderer's, the
    libraries that draw and encode, the fonts (sha256) and, for documents, Chromium."""
    from .._version import __version__, installed_version

    job = drawer.job
    record: dict[str, Any] = {
        "mmconvert": __version__,
        "renderer": {"name": job.renderer.name, "version": job.renderer.version},
        "libraries": {name: installed_version(name) for name in ("pymupdf", "pillow", "zlib-ng",
                                                                 "uharfbuzz")},
        "fonts": {font["name"]: font["sha256"] for font in job.fonts()},
    }
    browser = job.report(lambda: []).get("browser") if hasattr(job, "report") else None
    if browser:
        record["chromium"] = browser.get("version")
    return record


def make(recipe: Recipe) -> Recipe:
    """``recipe`` with its ``made_with`` and its references' page hashes as this machine
    draws them (its own reference items, or the shipped ones)."""
    drawer = Drawer(recipe)
    items = [ref.item for ref in recipe.references] or REFERENCE_ITEMS
    references = [Reference(item=item, pages=[page_hash(p) for p in
                                              drawer.draw(item, index).pages])
                  for index, item in enumerate(items)]
    return recipe.model_copy(update={"made_with": made_with(drawer),
                                     "references": references})


@dataclass
class Verdict:
    identical: bool
    lines: list[str]


def verify(recipe: Recipe) -> Verdict:
    """Draw the recipe's reference items here and compare their pages with its fingerprint:
    identical, or each difference and what differs in what the pages were made with."""
    if not recipe.references:
        return Verdict(False, [f"recipe {recipe.name} has no fingerprint (no references): "
                               "nothing to verify; mmconvert recipe make adds one"])
    drawer = Drawer(recipe)
    here = made_with(drawer)
    lines: list[str] = []
    for index, reference in enumerate(recipe.references):
        item_id = reference.item.get("id", f"#{index}")
        pages = [page_hash(p) for p in drawer.draw(reference.item, index).pages]
        if len(pages) != len(reference.pages):
            lines.append(f"{item_id}: {len(pages)} page(s), the recipe's {len(reference.pages)}")
            continue
        for number, (got, want) in enumerate(zip(pages, reference.pages, strict=True), 1):
            if got.sha256 == want.sha256:
                continue
            if (got.width, got.height) != (want.width, want.height):
                lines.append(f"{item_id} page {number}: {got.width}x{got.height} px, the "
                             f"recipe's {want.width}x{want.height}")
            elif got.pixels == want.pixels:
                lines.append(f"{item_id} page {number}: the same pixels, encoded otherwise")
            else:
                lines.append(f"{item_id} page {number}: other pixels")
    if not lines:
        return Verdict(True, [])
    whys = [f"why: {why}" for why in differences(recipe.made_with, here)] or [
        "why: nothing the recipe records differs here: mmconvert's own drawing of these "
        "settings changed"]
    return Verdict(False, lines + whys)


_VERDICTS: dict[str, Verdict] = {}  # a recipe's verdict here, by its whole text


def _checked(recipe: Recipe) -> Verdict:
    key = dump(recipe)
    if key not in _VERDICTS:
        _VERDICTS[key] = verify(recipe)
    return _VERDICTS[key]


def fingerprint_note(recipe: Recipe, given: str | Path | None = None) -> str | None:
    """One line when ``recipe``'s reference pages draw otherwise on this machine (what
    differs first, and the first reason), or None when they are identical or it has none.
    Said wherever a recipe draws (render, convert, frontier, harness), never hidden;
    ``given``: the name or file the user gave, for the hint."""
    if not recipe.references:
        return None
    verdict = _checked(recipe)
    if verdict.identical:
        return None
    pages = [line for line in verdict.lines if not line.startswith("why: ")]
    why = [line for line in verdict.lines if line.startswith("why: ")]
    return (f"recipe {recipe.name}: its fingerprint differs here ({pages[0]}"
            + (f"; {why[0]}" if why else "") + f"; {len(pages)} page(s) differ): these pages "
            f"are not the recipe's; mmconvert recipe verify {given or recipe.name} says all")


def differences(recorded: dict[str, Any], here: dict[str, Any], path: str = "") -> list[str]:
    """What the recipe records it was made with that this machine has otherwise."""
    out = []
    for key in sorted(set(recorded) | set(here)):
        a, b = recorded.get(key), here.get(key)
        name = f"{path}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, name + " ")
        elif a != b:
            out.append(f"{name}: the recipe's {a if a is not None else 'none'}, here "
                       f"{b if b is not None else 'none'}")
    return out


def dump(recipe: Recipe) -> str:
    """The recipe as YAML, in its fields' order."""
    import yaml

    data = recipe.model_dump(mode="json", exclude_defaults=True)
    data = {"name": recipe.name, **{k: v for k, v in data.items() if k != "name"}}
    data.setdefault("renderer", recipe.renderer)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=96)
