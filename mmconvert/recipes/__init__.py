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

from ..config import run_config, submodel, unknown_key_hint
from ..errors import ItemError, MMConvertError, UsageError, did_you_mean
from ..items import Item, RenderPart
from ..options import MAX_OPTIONS_BYTES, OPTIONS, first_error, read_yaml
from ..parts import renderer_class
from ..postprocess.transforms import checked_steps
from ..rows import Row, as_row

if TYPE_CHECKING:
    from PIL import Image

    from ..config import RunConfig
    from ..runfolder import Output
    from .training import ItemTransform

SHIPPED = Path(__file__).parent
# a passage of several pages on most recipes' pages (written by us), so that a fingerprint
# holds page breaks and wrapped lines: a page's height or a line's pitch moves them
LONG_CONTEXT = "\n\n".join([
    ("The survey boat left the harbour an hour before dawn, its deck still wet from the "
     "night's rain. Mara checked the sounding line twice, then a third time, because the chart"
     " they had been given was forty years old and the channel had moved since it was drawn. "
     "Her brother Tomas steered by the lights on the breakwater until they faded behind the "
     "swell, and after that by the compass alone."),
    ("By seven they had reached the first station. The water there was eleven fathoms deep, "
     "two more than the chart promised, and the bottom was soft grey mud instead of the sand "
     "it showed. Mara wrote both numbers in the log in pencil, with the time beside them, and "
     "drew a small circle where the old line and the new one disagreed. \"If the whole bank has"
     " shifted east,\" she said, \"then the ferry route is wrong as well, and nobody has noticed"
     " because the ferry draws so little water.\""),
    ("Tomas did not answer at once. He was watching a line of birds low over the water to the "
     "north, where the current from the river met the tide. The birds meant fish, and fish "
     "meant the fresh water was reaching farther out than it used to. He had read in the "
     "harbour master's office that the river had been dredged upstream the previous summer, "
     "and that the work had been stopped halfway through when the money ran out. Nobody had "
     "measured what happened to the mud after that."),
    ("The second and third stations told the same story. At each one the depth was greater "
     "than the chart's figure, and at each one the difference was larger than at the station "
     "before. Mara plotted the points on squared paper as they went, holding the sheet flat "
     "against the wind with her elbow, and by the fourth station the pattern was plain: a "
     "channel about sixty yards wide had opened along the eastern edge of the bank, and the "
     "bank itself had grown toward the west."),
    ("They ate lunch at anchor in the lee of the small island the fishermen call the Anvil. "
     "The island has no trees and no water, only a ruined signal house and a colony of gulls "
     "that rose screaming whenever the boat came near. Tomas boiled coffee on the spirit stove"
     " while Mara copied her pencil figures into ink, slowly, checking each one against the "
     "sounding sheet, because a number copied wrongly in the field can cost a week of work "
     "later."),
    ("In the afternoon the wind backed to the south-west and the sea began to build. They "
     "finished the eastern line, nine stations in all, and ran for home with the tide behind "
     "them. On the way in they passed the ferry, heading out with a full deck of cars and a "
     "crowd of passengers at the rail. Mara watched it cross the place where her chart now "
     "showed eleven fathoms and the old chart showed nine, and then the place where the old "
     "chart showed deep water and her line showed barely two."),
    ("\"It is still clear of the new shoal,\" Tomas said, reading her face. \"It will be clear of"
     " it next month too. But in a year, if the bank keeps moving at this rate, the ferry will"
     " touch bottom on a low spring tide, and it will happen on the first calm day, when "
     "nobody is looking for trouble.\""),
    ("That evening they took the log and the plotted sheet to the harbour master. He was a "
     "careful man, slow to believe anything he had not seen himself, and he read the figures "
     "twice before he spoke. Then he took down the old chart from its frame on the wall, laid "
     "Mara's sheet over it, and held both up against the window so that the evening light "
     "shone through the paper. The two lines crossed in three places. Where they crossed, the "
     "new soundings were the deeper ones; between the crossings, they were shallower by as "
     "much as seven feet."),
    ("\"I will write to the board tonight,\" he said. \"They will want the survey repeated before"
     " they change the route, and they will want it done by someone with a certificate. But "
     "they will not be able to say that nobody warned them.\" He asked Mara for a fair copy of "
     "every figure, with the stations numbered from one to twenty-three and the times given to"
     " the minute, and she promised it for the morning."),
    ("The copy took her until midnight. Each station went on its own line: the number, the "
     "time, the depth in fathoms and feet, the kind of bottom, and a note of the tide. Where "
     "she had doubted a reading in the field she said so, and where she had taken a second "
     "sounding she gave both. At the foot of the last page she wrote the sum of the "
     "differences between the old chart and the new, station by station, and divided it by the"
     " number of stations, so that the board would see at a glance how far the bank had moved "
     "on average: a little under four feet at each point, and nearly twelve at the worst."),
    ("The board's answer came nine days later, in a long envelope with the seal of the port "
     "authority on the flap. It thanked the harbour master for his letter, regretted that no "
     "certified surveyor could be sent before the spring, and asked that the ferry company be "
     "told to keep to the old route in the meantime, \"in the absence of any evidence of "
     "immediate danger.\" The harbour master read it aloud in his office, with Mara and Tomas "
     "standing by the stove, and when he reached the last phrase he put the letter down and "
     "looked at the chart on the wall for a long time without speaking."),
    ("\"They have not read your figures,\" he said at last. \"Or they have read them and decided "
     "that a fisherman's daughter with a lead line is not evidence. Either way, the ferry "
     "keeps its course.\" He folded the letter along its creases and put it back in the "
     "envelope. \"I cannot order the company to do anything. I can only tell them what I know, "
     "and I have done that.\""),
    ("Mara went back out the next morning, alone this time, because Tomas had taken a place on"
     " a trawler for the winter and the boat needed two hands only in bad weather. She chose a"
     " grey, still day with a neap tide, when the current would be at its weakest and the "
     "soundings most reliable, and she ran a second line two hundred yards west of the first, "
     "parallel to it, with stations every hundred yards. The work took her from first light "
     "until the middle of the afternoon. Her hands were raw from the wet line by the end, and "
     "she had to write the last figures with the pencil gripped in her fist."),
    ("The second line confirmed the first. The bank had not simply moved; it had turned, its "
     "southern end swinging west like a gate on a hinge, and the hinge was close to the place "
     "where the ferry made its turn for the harbour mouth. At the ninth station of the new "
     "line she found barely eleven feet of water at low tide. The ferry, loaded, drew nine and"
     " a half."),
    ("She sat for a while at the tiller after the last sounding, letting the boat drift, and "
     "worked the figures again in her head. Eleven feet at a neap low; a spring low would be "
     "two feet lower, or more with an offshore wind holding the water back. Nine feet of water"
     " for a boat that needed nine and a half. It did not matter how careful the captain was. "
     "On the wrong day, at the wrong hour, the ferry would simply stop, and the tide would go "
     "on falling around it."),
    ("That evening she did not go to the harbour master. She went instead to the ferry "
     "company's office on the quay, where a clerk with ink on his cuffs told her that the "
     "manager was at dinner and could not be disturbed. She waited on the bench outside for "
     "two hours, with the plotted sheets rolled under her arm, until the manager came back "
     "along the quay with his coat buttoned to the chin against the wind. He listened to her "
     "standing in the doorway, without asking her in, and when she unrolled the sheets he held"
     " one corner with two fingers, as though it might be wet."),
    ("\"Eleven feet,\" he said. \"At which station?\""),
    ("\"The ninth on the western line. Here.\" She put her finger on the circle she had drawn."),
    ("He looked at it, and then at her, and then back at the sheet. \"And you measured this "
     "yourself. Today.\""),
    ("\"Today, at low water. And the day before yesterday the eastern line, which agrees with "
     "it.\""),
    ("He was quiet for a moment. Then he stepped back from the doorway and held the door open."
     " \"Come in,\" he said. \"Show me from the beginning, and show me slowly. If you are right, "
     "I would rather lose a week's timetable than a ship.\""),
    ("They sat at his desk until after ten. He asked about everything: the weight of her lead,"
     " the marks on her line, how she fixed each station, how she allowed for the tide, what "
     "she did when a sounding looked wrong. He made her show him the raw sheets as well as the"
     " fair copies, and he compared them line by line with a ruler, and twice he found a "
     "figure she had rounded and asked her why. When she explained, he nodded and made a note."
     " At the end he rolled the sheets up himself and asked whether he might keep them "
     "overnight."),
    ("The next morning the ferry sailed twenty minutes late, on a new course that took it a "
     "quarter of a mile east of the old one, through the channel Mara had found on her first "
     "day. The notice pinned to the ticket office window said only that the route had been "
     "changed \"on the advice of a local survey,\" and gave no name. Mara read it on her way "
     "down to the boat, smiled, and went out to start the third line."),
])

# the items a recipe's fingerprint draws when its spec names none: written by us, one of
# each kind of part (lettered options, a passage, a bare question), and a long passage
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
    {"id": "ref-pages", "context": LONG_CONTEXT,
     "question": "How far had the bank moved at the worst point?",
     "answer": ["nearly twelve feet"]},
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
    # the sha256 of the item its pages were drawn from (``digest``)
    item_sha256: str | None = None
    pages: list[PageHash] = Field(default_factory=list)


def digest(value: Any) -> str:
    """The sha256 of a JSON value in canonical form (keys sorted, no spaces): a reference
    item's (``item_sha256``) and a canonical config's (``config_sha256``)."""
    import json

    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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
        return checked_steps(steps)

    # -- what the recipe asks for ---------------------------------------------------------

    def config_values(self, corpus: str) -> dict[str, Any]:
        """The run config a render with this recipe starts from (flags and a --config file
        go over it)."""
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
    if size > MAX_OPTIONS_BYTES:  # said before a byte is read (a sparse file of gigabytes)
        raise UsageError(f"{where}: larger than {MAX_OPTIONS_BYTES} bytes; not a recipe")
    with open(path, "rb") as handle:
        data = handle.read(MAX_OPTIONS_BYTES + 1)
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
        first = first_error(err)
        field = ".".join(str(p) for p in first["loc"]) or "recipe"
        hint = unknown_key_hint(Recipe, first["loc"]) if first["type"] == "extra_forbidden" else ""
        raise UsageError(f"{where}: {field}: {first['msg']}{hint}") from None


def load_recipe(name: str | Path) -> Recipe:
    """A shipped recipe by name, or a recipe file; an unknown name is one line with the
    shipped ones."""
    text = str(name)
    known = shipped()
    path = known.get(text) or Path(text)
    if not path.is_file():
        raise UsageError(f"no recipe {text!r}: not a shipped recipe ({', '.join(known)}) nor "
                         f"a file{did_you_mean(text, list(known))}")
    stat = path.stat()
    return _read(str(path.resolve()), stat.st_size, int(stat.st_mtime_ns))


# -- drawing in memory ------------------------------------------------------------------------

def item_from(data: dict[str, Any] | Item, index: int = 0) -> Item:
    """An item from a dict in the generic item schema (what a JSONL file's line holds; its
    id, when it gives none, is made from its content, ``items.content_id``, as on every
    path)."""
    if isinstance(data, Item):
        return data
    if not isinstance(data, dict):
        raise UsageError(f"an item is a dict of its fields, not {type(data).__name__}")
    from ..corpora.base import LoadRequest
    from ..corpora.files import LocalFile
    from ..corpora.sources import SourceRow

    return LocalFile(Path("items.jsonl")).item(SourceRow(index, f"item {index}", data),
                                               LoadRequest())


@dataclass
class Drawn:
    """One item drawn with a recipe: its manifest row (typed, as a run's reader gets it) and
    its shown pages' PNG bytes."""

    row: Row
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
        from ..corpora.files import LocalFile
        from ..stages import make_job

        self.recipe = recipe
        self.config = recipe.run_config(**values)
        self.job = make_job(self.config)
        self.corpus = LocalFile(Path("items.jsonl"))

    def draw(self, item: dict[str, Any] | Item, index: int = 0, corpus=None) -> Drawn:
        """``item`` drawn as a run of ``corpus`` (the generic files' by default: its part
        and prompt keys) draws it."""
        corpus = corpus or self.corpus
        made = item_from(item, index)
        part = self.job.part(made, corpus)
        try:
            output: Output = self.job.run(made, part, corpus.prompt_keys(made))
        except ItemError as err:
            raise MMConvertError(str(err)) from None
        row = as_row(output.row, self.job.row_model)
        files = dict(output.files)
        pages = [files[entry.path] for entry in row.images_in(self.job.renderer.profile.shown)]
        return Drawn(row, pages)

    def render(self, item: dict[str, Any] | Item, index: int = 0) -> list[Image.Image]:
        """The images of ``item`` the model is shown: drawn in memory where the recipe's
        job can (``Job.pictures``: no PNG made and read back, the same pixels), else its
        files decoded."""
        made = item_from(item, index)
        try:
            pictures = self.job.pictures(made, self.job.part(made, self.corpus))
        except ItemError as err:
            raise MMConvertError(str(err)) from None
        return pictures if pictures is not None else self.draw(made, index).images()


def dump(recipe: Recipe) -> str:
    """The recipe as YAML, in its fields' order."""
    import yaml

    data = recipe.model_dump(mode="json", exclude_defaults=True)
    data = {"name": recipe.name, **{k: v for k, v in data.items() if k != "name"}}
    data.setdefault("renderer", recipe.renderer)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=96)
