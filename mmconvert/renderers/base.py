"""The renderer contract: what every registered renderer tells the rest of mmconvert.

QA, stats, sweeps, the review page and the exporters ask the renderer a row names (through
``renderers.renderer_class``) instead of testing its name: which image roles it writes and which
of them the model is shown, the text each image must show, which checks apply, whether it can
draw its stored layout again at another PPI. A renderer made from a row's recorded name and
parameters (``renderers.from_row``) draws the same bytes again.

Drawing is kept apart from sampling: ``sample(item, seed)`` gives the per-item parameters drawn
from (run seed, item id, stage), and drawing with those parameters is a pure function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Protocol,
    TypeVar,
    cast,
    runtime_checkable,
)

from pydantic import BaseModel

from ..config import RunConfig
from ..items import Item
from ..jobs import DrawJob
from ..rows import QuestionRow, Row, row_options

if TYPE_CHECKING:
    from ..config import ApiOptions, RunConfig
    from ..jobs import Job


def question_beside_options(row: Row) -> str | None:
    """The question of a row whose options alone became image: it stays text beside them
    (a ``text_question`` for renderers that draw a ``render`` part)."""
    return row.question if isinstance(row, QuestionRow) and row.params.get("render") == "options" \
        else None


def item_from_row(row: Row) -> Item:
    """The item a manifest row was made from (its text fields and metadata)."""
    asked = row if isinstance(row, QuestionRow) else None
    return Item(id=row.id, corpus=row.corpus, subset=row.subset, split=row.split,
                language=row.language or "en", context=asked.context if asked else None,
                question=asked.question if asked else None, options=list(row_options(row)),
                answer=row.answer, metadata=row.metadata or {})


# the OCR check's error-rate ceiling of a renderer that declares none: the loosest of the
# calibrated defaults (generated images', qa/thresholds.json), so an uncalibrated plugin's
# pages are checked, and only a badly misread one is marked for review
UNCALIBRATED_CER: dict[str, float] = {"default": 0.3}


@dataclass(frozen=True)
class Profile:
    """What QA, stats, the exporters and eval are told about a renderer's images: declared
    data, read by them (never a test of the renderer's name). The defaults fit a renderer
    that writes one kind of image, shown to the model and read back by OCR.

    - ``roles``: the roles of the images it writes; ``shown``: those the model is shown (all
      of them unless said); ``twins``: text-only twins of the shown ones (eval's text-image
      condition, the exports' twin column); ``ocr``: those QA reads back (the shown ones
      unless said);
    - ``checks``: the QA checks that apply; ``ocr_psm``: Tesseract's page segmentation for a
      first read; ``max_cer``: the OCR check's highest error rate per Tesseract language
      ("default": the rest, which it must name), when ``qa/thresholds.json`` has none for
      the renderer (``UNCALIBRATED_CER`` unless said);
    - ``paper``: roles drawn on plain paper (ink in an outermost pixel is text cut off);
      ``flush_edges``: the edges its design sets text flush against; ``ocr_edge_words``:
      words found touching an edge by OCR are reported (generated images);
    - ``answer_spans``: its answer is the list of covered spans, scored span by span with
      VCR's exact match and Jaccard index, not an option letter or an accepted string.
    """

    roles: tuple[str, ...] = ("image",)
    shown: tuple[str, ...] = ()  # () = every role
    twins: tuple[str, ...] = ()
    ocr: tuple[str, ...] = ()  # () = the shown ones
    checks: frozenset[str] = frozenset({"ocr", "image"})
    ocr_psm: int = 6
    max_cer: Mapping[str, float] = field(default_factory=lambda: dict(UNCALIBRATED_CER))
    paper: tuple[str, ...] = ()
    flush_edges: tuple[str, ...] = ()
    ocr_edge_words: bool = False
    answer_spans: bool = False

    def __post_init__(self) -> None:
        if not self.shown:
            object.__setattr__(self, "shown", self.roles)
        if not self.ocr:
            object.__setattr__(self, "ocr", self.shown)

    def problem(self) -> str | None:
        """Why the profile does not hold together, or None."""
        if "default" not in self.max_cer:
            return ("profile.max_cer names no 'default', the highest error rate of the "
                    "languages it does not name")
        wrong = sorted(k for k, v in self.max_cer.items()
                       if not isinstance(v, (int, float)) or not 0 <= v <= 1)
        if wrong:
            return f"profile.max_cer's {', '.join(wrong)}: an error rate is from 0 to 1"
        roles = set(self.roles)
        for name in ("shown", "twins", "ocr", "paper"):
            stray = sorted(set(getattr(self, name)) - roles)
            if stray:
                return f"profile.{name} names {', '.join(stray)}, not among its roles"
        if set(self.shown) & set(self.twins):
            return "profile: a role is both shown and a text-only twin"
        return None


# --- the optional capabilities: a renderer that has one declares it by subclassing it -------

@runtime_checkable
class Redraws(Protocol):
    """Draws its stored layout again at another PPI, without the item (``sweep --ppi``):
    ``base_ppi`` says what a run drew at, ``read_layout`` reads a stored layout file (a JSON
    record unless said) and ``redraw_at`` draws it at each PPI."""

    @classmethod
    def base_ppi(cls, config: dict[str, Any]) -> float | None:
        """The PPI a run made with ``config`` drew at."""
        raise NotImplementedError

    @classmethod
    def read_layout(cls, data: bytes) -> Any:
        """A stored layout file's bytes as ``redraw_at`` takes them (a JSON record)."""
        import json

        return json.loads(data)

    def redraw_at(self, layout: Any, ppis: list[float]) -> list[list[Any]]:
        """The layout's images at each of ``ppis``."""
        raise NotImplementedError


@runtime_checkable
class Restyles(Protocol):
    """Draws a row's item again with other options (``sweep --vary-style``)."""

    @classmethod
    def restyled(cls, row: Row, values: dict[str, Any]) -> Any:
        """A ``runfolder.Output`` holding ``row``'s item drawn again with ``values`` over its
        recorded options (a new row and its files); an ItemError when they do not fit."""
        raise NotImplementedError


@runtime_checkable
class Fits(Protocol):
    """Says what an item would show and its pages' sizes without drawing it: a target's
    search (``--target-ratio``, ``--vision-budget``) for its font size."""

    def shown_text(self, item: Item, part: Any) -> str:
        """The text the item's images show."""
        raise NotImplementedError

    def pixel_sizes(self, item: Item, part: Any) -> list[tuple[int, int]]:
        """The item's image sizes in pixels, laid out, not drawn."""
        raise NotImplementedError


@runtime_checkable
class Estimates(Protocol):
    """Estimates a one-page item's page size from its layout alone, without drawing it: a
    target's search tries its sizes on estimates, and draws only the size it finds, whose
    pages are then checked (and, where they differ, give the item's own offsets for one more
    search)."""

    def usual_offsets(self) -> tuple[float, float]:
        """How far a drawn page's right and lower edges usually lie from its layout's, in
        points, at the options' font size: what a search's estimates start from."""
        raise NotImplementedError

    def page_edges(self, item: Item, part: Any) -> tuple[float, float] | None:
        """The rightmost and lowest edge of what the item's page draws, in points from the
        page area's top left, laid out, not drawn; None where there is no estimate (two
        pages or more)."""
        raise NotImplementedError

    def edge_pixels(self, right: float, bottom: float) -> tuple[int, int]:
        """The pixel size of a one-page item whose drawn edges are ``right`` and ``bottom``
        (``page_edges``'), cut as the renderer cuts its pages."""
        raise NotImplementedError

    def pixel_edges(self, width: int, height: int) -> tuple[float | None, float | None]:
        """The drawn edges a cut page of ``width`` by ``height`` pixels had (``edge_pixels``
        the other way); None for a side the page was not cut on."""
        raise NotImplementedError


# each capability and the methods a renderer that declares it must implement
CAPABILITIES: dict[type, tuple[str, ...]] = {Redraws: ("base_ppi", "redraw_at"),
                                             Restyles: ("restyled",),
                                             Fits: ("shown_text", "pixel_sizes"),
                                             Estimates: ("usual_offsets", "page_edges",
                                                         "edge_pixels", "pixel_edges")}


OptionsT = TypeVar("OptionsT", bound=BaseModel)


class Renderer(Generic[OptionsT]):
    """Base of every registered renderer, generic in its options model (``Renderer[PageOptions]``:
    ``self.options`` is typed as its own). The core every renderer states and implements:

    - ``name``, ``version`` and ``options_model`` (its options: a pydantic model with
      ``model_config = options.OPTIONS``);
    - ``expected_text(row)``: the text its shown images must show;
    - either ``draw(item, part)``, its images of an item (Pillow images, saved as PNG by
      ``jobs.DrawJob``, its rows ``rows.QuestionRow``s), or ``job(config, api)``, what a
      worker does with each item, for a renderer that makes more than images.

    The rest has defaults: ``config_model`` (its run's config: a ``config.RunConfig`` with
    ``renderer: Literal[<name>]``, ``prompt_style`` and a section holding ``options_model``,
    which its command's flags, a YAML config and run.json hold), ``row_model``
    (``rows.QuestionRow``), ``from_params`` (the renderer made with the options a row
    recorded), ``profile`` (a ``Profile``: what QA, stats, export and eval read), ``help``,
    ``unit``, ``drops_items``, ``paid``, and the hooks ``sample``, ``ocr_text``,
    ``text_question`` and ``options_from``. A capability (``Redraws``, ``Restyles``,
    ``Fits``) is declared by subclassing it and implementing its methods. All of this is
    checked when the renderer loads (``Renderer.breach``). The default renderer runs as
    ``mmconvert render``; every other as ``mmconvert <name>`` and as ``mmconvert render
    --renderer <name>``.
    """

    # what every renderer states (no default here) and implements: checked when it loads
    REQUIRED: ClassVar[tuple[str, ...]] = ("name", "version", "options_model")
    HOOKS: ClassVar[tuple[str, ...]] = ("expected_text",)

    name: ClassVar[str]
    version: ClassVar[str]
    config_model: ClassVar[type[RunConfig]]  # made from options_model unless stated
    options_model: ClassVar[type[BaseModel]]
    row_model: ClassVar[type[Row]] = QuestionRow
    profile: ClassVar[Profile] = Profile()
    help: ClassVar[str] = ""
    # what the run calls one image ("page" for A4 pages)
    unit: ClassVar[str] = "image"
    # may leave an item out by a rule while it draws it (``ItemFiltered``: the occluder's
    # too-short captions): ``--limit`` then counts made items at the sink, the work past it
    # cancelled; a renderer that drops nothing (and one whose work is paid for) has its limit
    # applied to the selection, so no item past it is ever started
    drops_items: ClassVar[bool] = False
    # calls a paid API: its command takes ``ApiOptions`` (keys, budget, response cache) and
    # ``--dry-run`` (``Job.dry_run``), and a run the budget stops is reported as stopped
    paid: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if "config_model" not in own and isinstance(own.get("name"), str) \
                and "options_model" in own:
            cls.config_model = default_config_model(cls)

    def __init__(self, options: OptionsT | None = None):
        self.options: OptionsT = options if options is not None else \
            cast(OptionsT, self.options_model())

    @classmethod
    def breach(cls) -> str | None:
        """What this renderer gets wrong beyond lacking a member, in a few words, or None:
        no way to draw, its profile, a capability declared but not implemented."""
        job_owner = next(k for k in cls.__mro__ if "job" in vars(k))
        draw_owner = next(k for k in cls.__mro__ if "draw" in vars(k))
        if job_owner is Renderer and draw_owner is Renderer:
            return "implements neither draw() nor job(), one of which every Renderer does"
        if not isinstance(cls.profile, Profile):
            return "profile is not a mmconvert.renderers.base.Profile"
        if not (isinstance(cls.row_model, type) and issubclass(cls.row_model, Row)):
            return "row_model is not a subclass of mmconvert.rows.Row"
        problem = cls.profile.problem()
        if problem:
            return problem
        for capability, members in CAPABILITIES.items():
            if not issubclass(cls, capability):
                continue
            for member in members:
                owner = next(k for k in cls.__mro__ if member in vars(k))
                if owner is capability:
                    return (f"declares {capability.__name__} but does not implement "
                            f"{member}()")
        return None

    @classmethod
    def job(cls, config: Any, api: ApiOptions | None = None, *,
            dry_run: bool = False) -> Job:
        """What a worker does with each item of a run made with ``config``; ``api`` and
        ``dry_run`` for a renderer that is ``paid``. A renderer that draws images
        (``draw``) has ``jobs.DrawJob``."""
        return DrawJob(cls, config)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Renderer[Any]:
        """The renderer that drew a row, from its recorded ``renderer.params``: made with
        the options they hold."""
        return cls(cast(OptionsT, cls.options_from(params)))

    @classmethod
    def options_from(cls, params: dict[str, Any]) -> Any:
        """The options model's fields out of recorded params (which also hold sampled
        per-item values)."""
        model = cls.options_model
        return model.model_validate({k: v for k, v in params.items() if k in model.model_fields})

    def sample(self, item: Item, seed: int) -> dict[str, Any]:
        """The per-item parameters drawn from (``seed``, item id, stage); {} when drawing
        takes none."""
        return {}

    def draw(self, item: Item, part: Any) -> Iterable[Any]:
        """The item's images (Pillow images), for a renderer whose ``job`` is
        ``jobs.DrawJob``: each saved as PNG in the first role of its profile. A renderer
        with a job of its own does not implement it."""
        raise NotImplementedError

    @classmethod
    def expected_text(cls, row: Row) -> str:
        """The text the images the model is shown must show."""
        raise NotImplementedError

    @classmethod
    def ocr_text(cls, row: Row) -> str:
        """The text OCR of the ``profile.ocr`` images must find."""
        return cls.expected_text(row)

    @classmethod
    def page_texts(cls, row: Row, read: Callable[[str], bytes]) -> list[str] | None:
        """The text of each image the model is shown, in order, where the run records it per
        image (``read`` gives a run file's bytes by its row path); None: only the item's
        whole text (``expected_text``) is known."""
        return None

    @classmethod
    def text_question(cls, row: Row) -> str | None:
        """The part of the item kept as text beside the images (shown by the review page)."""
        return None


def default_config_model(renderer: type[Renderer]) -> type[RunConfig]:
    """The config of a run of ``renderer`` that states none: the selection, how files are
    stored, ``renderer: Literal[<name>]``, ``prompt_style`` and its options as the section
    named after it (``-`` as ``_``)."""
    from typing import Literal

    from pydantic import Field, create_model

    section = renderer.name.replace("-", "_")
    fields: dict[str, Any] = {
        "renderer": (Literal[renderer.name], renderer.name),
        "prompt_style": (Literal["cot", "direct"], Field(
            "cot", description="prompt style of the manifest's prompts")),
        section: (renderer.options_model, Field(default_factory=renderer.options_model)),
    }
    return create_model(f"{renderer.__name__}Config", __base__=RunConfig,
                        __module__=renderer.__module__, **fields)
