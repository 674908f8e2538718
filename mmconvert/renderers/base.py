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

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from ..items import Item

if TYPE_CHECKING:
    from ..config import ApiOptions, RunConfig
    from ..jobs import Job


def question_beside_options(row: dict[str, Any]) -> str | None:
    """The question of a row whose options alone became image: it stays text beside them
    (a ``text_question`` for renderers that draw a ``render`` part)."""
    return row.get("question") if row["renderer"]["params"].get("render") == "options" \
        else None


def item_from_row(row: dict[str, Any]) -> Item:
    """The item a manifest row was made from (its text fields and metadata)."""
    return Item(id=row["id"], corpus=row.get("corpus", ""), subset=row.get("subset", ""),
                split=row.get("split", ""), language=row.get("language") or "en",
                context=row.get("context"), question=row.get("question"),
                options=list(row.get("options") or []), answer=row.get("answer"),
                metadata=row.get("metadata") or {})


class Renderer:
    """Base of every registered renderer; subclasses set the class attributes and implement
    ``job``, ``from_params``, ``sample`` and ``expected_text``.

    A renderer is its own kind of run: ``config_model`` is what its command's flags, a YAML
    config and run.json hold, ``job`` what a worker does with each item. The default renderer
    runs as ``mmconvert render``; every other as ``mmconvert <name>`` and as ``mmconvert
    render --renderer <name>``; ``help`` is that command's help.
    """

    # what every renderer states (no default here) and implements: checked when it loads
    REQUIRED: ClassVar[tuple[str, ...]] = ("name", "version", "config_model", "options_model",
                                           "row_model", "roles", "shown_roles", "ocr_roles")
    HOOKS: ClassVar[tuple[str, ...]] = ("job", "from_params", "expected_text")

    name: ClassVar[str]
    version: ClassVar[str]
    # its run's options: a ``config.RunConfig`` with ``renderer: Literal[<name>]`` and a
    # field holding ``options_model``
    config_model: ClassVar[type[RunConfig]]
    options_model: ClassVar[type[BaseModel]]
    help: ClassVar[str] = ""
    # the pydantic model of its manifest rows (``rows.py``)
    row_model: ClassVar[type[BaseModel]]
    # what the run calls one image ("page" for A4 pages)
    unit: ClassVar[str] = "image"
    # the roles of the images it writes, those the model is shown, their text-only twins,
    # and those whose text QA reads back by OCR
    roles: ClassVar[tuple[str, ...]]
    shown_roles: ClassVar[tuple[str, ...]]
    twin_roles: ClassVar[tuple[str, ...]] = ()
    ocr_roles: ClassVar[tuple[str, ...]]
    # the QA checks that apply to its rows, and Tesseract's page segmentation for a first read
    checks: ClassVar[frozenset[str]] = frozenset({"ocr", "image"})
    ocr_psm: ClassVar[int] = 6
    # roles drawn on plain paper (ink in an outermost pixel is text cut off) and the edges its
    # design sets text flush against
    paper_roles: ClassVar[tuple[str, ...]] = ()
    flush_edges: ClassVar[tuple[str, ...]] = ()
    # generated images: words found touching an edge by OCR
    ocr_edge_words: ClassVar[bool] = False
    # draws its stored layout again at another PPI (``redraw_at``)
    redraws: ClassVar[bool] = False
    # draws a row's item again with other options (``restyled``): sweeps vary style fields
    restyles: ClassVar[bool] = False
    # its answer is the list of covered spans, scored span by span with VCR's exact match and
    # Jaccard index, not an option letter or an accepted string
    answer_spans: ClassVar[bool] = False
    # may leave an item out by a rule while it draws it (``ItemFiltered``: the occluder's
    # too-short captions): ``--limit`` then counts made items at the sink, the work past it
    # cancelled; a renderer that drops nothing (and one whose work is paid for) has its limit
    # applied to the selection, so no item past it is ever started
    drops_items: ClassVar[bool] = False
    # calls a paid API: its command takes ``ApiOptions`` (keys, budget, response cache) and
    # ``--dry-run`` (``Job.dry_run``), and a run the budget stops is reported as stopped
    paid: ClassVar[bool] = False
    # the OCR check's highest error rate per Tesseract language ("default": the rest), used
    # when ``qa/thresholds.json`` (or ``--thresholds``) has none for this renderer
    max_cer: ClassVar[dict[str, float] | None] = None

    @classmethod
    def job(cls, config: RunConfig, api: ApiOptions | None = None, *,
            dry_run: bool = False) -> Job:
        """What a worker does with each item of a run made with ``config``; ``api`` and
        ``dry_run`` for a renderer that is ``paid``."""
        raise NotImplementedError

    @classmethod
    def restyled(cls, row: dict[str, Any], values: dict[str, Any]):
        """A ``runfolder.Output`` holding ``row``'s item drawn again with ``values`` over its
        recorded options (a new row and its files); an ItemError when they do not fit."""
        raise NotImplementedError

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Renderer:
        """The renderer that drew a row, from its recorded ``renderer.params``."""
        raise NotImplementedError

    @classmethod
    def options_from(cls, params: dict[str, Any]) -> BaseModel:
        """The options model's fields out of recorded params (which also hold sampled
        per-item values)."""
        model = cls.options_model
        return model.model_validate({k: v for k, v in params.items() if k in model.model_fields})

    def sample(self, item: Item, seed: int) -> dict[str, Any]:
        """The per-item parameters drawn from (``seed``, item id, stage); {} when drawing
        takes none."""
        return {}

    @classmethod
    def expected_text(cls, row: dict[str, Any]) -> str:
        """The text the images the model is shown must show."""
        raise NotImplementedError

    @classmethod
    def ocr_text(cls, row: dict[str, Any]) -> str:
        """The text OCR of the ``ocr_roles`` images must find."""
        return cls.expected_text(row)

    @classmethod
    def text_question(cls, row: dict[str, Any]) -> str | None:
        """The part of the item kept as text beside the images (shown by the review page)."""
        return None

    @classmethod
    def base_ppi(cls, config: dict[str, Any]) -> float | None:
        """The PPI a run made with ``config`` drew at, for renderers that redraw."""
        return None

    @classmethod
    def read_layout(cls, data: bytes) -> Any:
        """A stored layout file's bytes as ``redraw_at`` takes them (a JSON record)."""
        import json

        return json.loads(data)
