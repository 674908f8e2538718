"""Runs drawn in a page style, for any renderer whose options are page style fields (the page
renderer's ``PageOptions``, the document renderer's share of them): ``--style`` (a preset or a
style file, its fixed values filling the options, its drawn ones drawn per item) and a
target (``--target-ratio``, ``--vision-budget``: each item at the font size that meets it).

A renderer taking part names its options section (``StyledConfig.STYLED``), and its renderer
answers two questions the target asks: the text its pages show (``shown_text``, the text
tokens of a ratio) and the pixel sizes of its pages (``pixel_sizes``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from ..config import RunConfig
from ..errors import ItemError
from ..jobs import Job
from ..options import cli, first_error
from ..tokens import load_tokenizer
from ..vision_tokens import image_tokens, token_rule, width_step
from .base import Estimates
from .prediction import WidthPrediction, box_counts, filled_width, size_for
from .style_files import Style, load_style
from .target import (
    TOLERANCE,
    Fit,
    TargetOptions,
    close_enough,
    fit,
    fit_pages,
    fit_width,
    would_meet,
)

if TYPE_CHECKING:
    from ..items import Item, RenderPart

# style fields a named one covers: given, it keeps the style's value of these out
COVERS = {"page_size": ("page_width", "page_height"),
          **{f"margin_{side}": ("margin",) for side in ("top", "right", "bottom", "left")}}


def style_field():
    return Field(None, json_schema_extra=cli(metavar="NAME|FILE", default="readbench"),
                 description="a preset (mmconvert list styles) or a style file (YAML or JSON) "
                             "giving page style fields a value, a choice or a range drawn per "
                             "item; flags given beside it win")


class StyledConfig(RunConfig):
    """A run config with a ``style`` (declared by the subclass, with ``style_field``) over
    its options section ``STYLED``, and a ``target``."""

    STYLED: ClassVar[str]
    if TYPE_CHECKING:  # declared by each subclass, where its fields' order puts them
        # a name or file as given; recorded as a Style's fields (``drawn_style``)
        style: str | dict[str, Any] | None
        target: TargetOptions

    @model_validator(mode="before")
    @classmethod
    def _apply_style(cls, data: Any) -> Any:
        """``style`` named: its fixed values fill the option fields not given, and the
        fields drawn per item that are not given stay in ``style`` (so a recorded config,
        holding both, validates to itself). A style field the options do not have (a page
        renderer's field, for the document) is left out, and the style records it."""
        if not isinstance(data, dict) or not isinstance(data.get("style"), str):
            return data

        style, fixed = load_style(data["style"])
        section = cls.STYLED
        fields = cls.model_fields[section].annotation.model_fields  # type: ignore[union-attr]
        options = data.get(section) or {}
        options = dict(options.model_dump(exclude_unset=True)
                       if isinstance(options, BaseModel) else options)
        given = set(options)

        def free(name: str) -> bool:  # neither given nor covered by a field given
            return name not in given and not given.intersection(COVERS.get(name, ()))

        style.left_out = sorted(name for name in {*fixed, *style.draws} if name not in fields)
        options.update({name: value for name, value in fixed.items()
                        if free(name) and name in fields})
        style.draws = {name: draw for name, draw in style.draws.items()
                       if free(name) and name in fields}
        return {**data, section: options, "style": style.record()}

    @field_validator("style", check_fields=False)  # the subclass declares the field
    @classmethod
    def _recorded(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return Style.model_validate(value).record()
        return value

    @property
    def drawn_style(self) -> Style | None:
        """The style whose fields are drawn per item (None when nothing is drawn)."""
        if not isinstance(self.style, dict) or not self.style.get("draws"):
            return None
        return Style.model_validate(self.style)

    def identity(self) -> dict[str, Any]:
        data = super().identity()
        if self.style is None:  # runs made before styles recorded none
            data.pop("style", None)
        if not self.target.wanted:  # nor targets
            data.pop("target", None)
        return data


class ItemSizes:
    """An item's renderers and its pages' pixel sizes at the font sizes and page widths a
    target's search tries (``job.make_renderer`` with ``base``'s other options), each made and
    laid out once; and what the search asks of them: tokens, the counts between two sizes
    (``box_counts``) and the next size along their line (``size_for``)."""

    def __init__(self, job: StyledJob, item: Item, part: RenderPart, base):
        self.job, self.item, self.part, self.base = job, item, part, base
        self.rule, self.target = getattr(job, "rule", None), job.target
        self.step = width_step(job.target.ratio_model or "") if job.target else None
        self.made: dict[tuple[float, float | None], Any] = {}
        self.measured: dict[tuple[float, float | None], list[tuple[int, int]] | None] = {}

    def at(self, size: float, width: float | None = None):
        """The renderer at font ``size`` (and page ``width`` in inches, when moved); None
        where those options are refused."""
        if (size, width) not in self.made:
            options = self.job.options_at(self.base, size, width)
            self.made[size, width] = None if options is None else \
                self.job.make_renderer(options)
        return self.made[size, width]

    def sizes_at(self, size: float, width: float | None = None) -> list[tuple[int, int]] | None:
        """The pages' pixel sizes at ``size`` (and ``width``), each laid out once."""
        if (size, width) not in self.measured:
            drawer = self.at(size, width)
            self.measured[size, width] = None if drawer is None else \
                drawer.pixel_sizes(self.item, self.part)
        return self.measured[size, width]

    def tokens_at(self, size: float, width: float | None = None) -> int | None:
        sizes = self.sizes_at(size, width)
        if sizes is None:
            return None
        return image_tokens(self.rule, [{"width": w, "height": h} for w, h in sizes])

    def pages_at(self, size: float) -> int | None:
        drawer = self.at(size)
        return None if drawer is None else len(drawer.pixel_sizes(self.item, self.part))

    def between(self, s0: float, s1: float, width: float | None = None) -> set[int] | None:
        return box_counts(self.rule, self.step or 1, self.sizes_at(s0, width),
                          self.sizes_at(s1, width))

    def guess(self, known: list[tuple[float, int]], seek: float,
              width: float | None = None) -> float | None:
        """``fit``'s next size: along the line through the pages of the two tried sizes
        nearest ``seek`` (``size_for``)."""
        assert self.target is not None
        nearest = sorted(known, key=lambda st: abs(st[1] - seek))[:2]
        return size_for(self.rule, [(size, self.sizes_at(size, width) or [])
                                    for size, _ in sorted(nearest)], seek,
                        self.target.min_font_size, self.target.max_font_size)

    def style_sizes(self) -> list[float]:
        """The font sizes laid out at the style's own width."""
        return [size for size, width in self.measured if width is None]


class EstimateMissing(Exception):
    """A size or width the renderer has no estimate at (its pages would be two or more)."""


class EstimatedSizes(ItemSizes):
    """An item's pages at the sizes and widths a search tries, estimated from their layout
    alone (``Estimates``), not drawn: each page's drawn edges moved by ``offsets`` (how far
    the drawn page's edges lie from the layout's at the item's own size; the lower one grows
    with the size), then cut as the renderer cuts its pages. ``moved`` tries other offsets
    on the same layouts."""

    def __init__(self, drawn: ItemSizes, offsets: tuple[float, float]):
        super().__init__(drawn.job, drawn.item, drawn.part, drawn.base)
        self.made = drawn.made  # the same renderers
        self.offsets = offsets
        self.edges: dict[tuple[float, float | None], tuple[float, float] | None] = {}
        self.laid_out = 0  # the layouts made

    def edges_at(self, size: float, width: float | None = None) -> tuple[float, float] | None:
        """The edges of the page laid out at ``size`` (and ``width``), once each."""
        if (size, width) not in self.edges:
            drawer = self.at(size, width)
            edges = None if drawer is None else drawer.page_edges(self.item, self.part)
            self.laid_out += drawer is not None
            if drawer is not None and edges is None:
                raise EstimateMissing(f"no estimate at {size:g} pt")
            self.edges[size, width] = edges
        return self.edges[size, width]

    def sizes_at(self, size: float, width: float | None = None) -> list[tuple[int, int]] | None:
        if (size, width) not in self.measured:
            edges = self.edges_at(size, width)
            right, bottom = self.offsets
            self.measured[size, width] = None if edges is None else \
                [self.at(size, width).edge_pixels(
                    edges[0] + right, edges[1] + bottom * size / self.base.font_size)]
        return self.measured[size, width]

    def moved(self, drawn: ItemSizes, size: float, width: float | None) -> bool:
        """Move the offsets to the page drawn at ``size`` (and ``width``) in ``drawn``,
        whose size then stands in for the estimate: False where that page is not one page
        that was laid out."""
        pages, edges = drawn.sizes_at(size, width), self.edges.get((size, width))
        if not pages or len(pages) != 1 or edges is None:
            return False
        ink = self.at(size, width).pixel_edges(*pages[0])
        right, bottom = (0.0 if got is None else got - laid
                         for got, laid in zip(ink, edges, strict=True))
        self.offsets = (right, bottom * self.base.font_size / size)
        self.measured = {(size, width): pages}
        return True


class StyledJob(Job):
    """A job drawing each item with the run's renderer, or one of the style drawn for it,
    at the font size its target asks for. ``start_style`` sets it up."""

    config: StyledConfig

    def start_style(self) -> None:
        self._drawn: dict[str, Any] = {}  # renderers of the styles drawn per item
        self._sized: dict[tuple[int, float, float | None], tuple[Any, Any]] = {}
        self.style = self.config.drawn_style
        target = self.config.target
        self.target = target if target.wanted else None
        self.tokenizer = None
        if self.target is not None and target.ratio_model:
            self.rule = token_rule(target.ratio_model)
            if target.tokenizer:
                self.tokenizer = load_tokenizer(target.tokenizer)

    def drawn_fonts(self) -> list[list[str]]:
        """The font lists the style draws per item (none when it draws no font)."""
        style = self.style
        return list(style.draws["font"].values) if style and "font" in style.draws else []

    def make_renderer(self, options):
        """The job's renderer with other options."""
        return type(self.renderer)(options)

    def options_at(self, base, size: float, width: float | None):
        """``base`` at font ``size`` (and page ``width`` in inches, when moved), validated
        once for every item whose search tries them (a search tries the same few hundred
        sizes and widths across a run); None where those options are refused."""
        key = (id(base), size, width)
        kept = self._sized.get(key)
        if kept is None or kept[0] is not base:  # an id is unique only while base lives
            values: dict[str, Any] = {"font_size": size}
            if base.line_pitch is not None:  # a fixed pitch keeps its share of the size
                values["line_pitch"] = base.line_pitch * size / base.font_size
            if width is not None:
                values["page_width"] = width
            try:
                options = base.with_values(values)
            except ValidationError:
                options = None
            if len(self._sized) >= 1024:  # about 3.4 KB each; a run tries some hundreds
                self._sized.clear()
            kept = self._sized[key] = (base, options)
        return kept[1]

    @property
    def options(self):
        return getattr(self.config, self.config.STYLED)

    def renderer_for(self, item: Item):
        """The item's renderer: the run's, or one of the style drawn for it."""
        style = self.style
        if style is None:
            return self.renderer
        drawn = style.draw(self.config.seed, item.id)
        try:
            options = self.options.with_values(drawn)
        except ValidationError as err:
            values = ", ".join(f"{k}={v}" for k, v in drawn.items())
            raise ItemError(f"style {style.name}: {first_error(err)['msg']} (drawn: {values})",
                            where=item.origin or item.id, field="style", item_id=item.id,
                            stage="render") from None
        key = options.model_dump_json()
        renderer = self._drawn.get(key)
        if renderer is None:
            if len(self._drawn) >= 256:
                self._drawn.clear()
            renderer = self._drawn[key] = self.make_renderer(options)
        return renderer

    def fitted(self, item: Item, part: RenderPart, renderer) -> tuple[Any, dict[str, Any]]:
        """The item's renderer at the font size that meets the run's target, and the row's
        record of it (the target, what was met, the layouts it took; a reason when the
        bounds keep it off target, which ``--on-error skip`` skips)."""
        base = renderer.options
        text_tokens = (self.tokenizer.count(renderer.shown_text(item, part))
                       if self.tokenizer else None)
        target = self.target
        assert target is not None  # fitted only for a run with a target
        sizes = ItemSizes(self, item, part, base)
        if target.fit_pages is not None:
            return self.kept(item, fit_pages(target, sizes.pages_at), sizes, renderer)
        found, laid_out = self.estimated(target, text_tokens, sizes, base, renderer) \
            if issubclass(type(renderer), Estimates) else (None, 0)
        found = found or self.search(target, text_tokens, sizes, base)
        if laid_out:  # the layouts made and not printed, kept or not
            found.record["estimated"] = laid_out
        return self.kept(item, found, sizes, renderer)

    def search(self, target: TargetOptions, text_tokens: int | None, sizes: ItemSizes,
               base) -> Fit:
        """The font size (and page width) that meets the target, on ``sizes``' pages."""
        # the search predicted from the rule, for every rule a width moves in steps for
        moves = target.move_width and hasattr(base, "page_width") and bool(sizes.step)
        first = self.width_first(target, text_tokens, sizes, base) if moves else None
        if first is not None:
            return first
        found = fit(target, text_tokens, sizes.tokens_at, start=base.font_size,
                    between=sizes.between if moves else None,
                    guess=sizes.guess if moves else None)
        # a width is moved only where the type moves the count: a page of a fixed size
        # (a document's) takes the same tokens at any size, and is met by its page size
        if target.move_width and hasattr(base, "page_width") and found.responsive \
                and found.vision_tokens is not None and not close_enough(found.record):
            predict = WidthPrediction.of(target, self.rule, base,
                                         sizes.sizes_at(found.font_size), found,
                                         sizes.sizes_at, sizes.style_sizes()) \
                if moves else None
            found = fit_width(target, text_tokens, sizes.tokens_at, found,
                              base.page_width, base.ppi, predict,
                              sizes.between if moves else None,
                              sizes.guess if moves else None)
            found.record["layouts"] = found.layouts = len(sizes.measured)  # once each
        return found

    def estimated(self, target: TargetOptions, text_tokens: int | None, sizes: ItemSizes,
                  base, renderer) -> tuple[Fit | None, int]:
        """The search run on estimated pages (``Estimates``: laid out, not drawn), moved by
        the renderer's usual offsets, and the size (and width) found drawn: kept where the
        target is met, or out of the sizes' reach (``bounded``), and the drawn page gives the
        count estimated. Else the offsets are moved to that drawn page, the item's own, and
        the search runs once more on the same layouts. None where neither is kept (the search
        then runs on drawn pages, with those made) or the renderer has no estimate at a size
        tried (columns: none is laid out); and the layouts made."""
        estimates = EstimatedSizes(sizes, renderer.usual_offsets())
        for _ in range(2):
            try:
                found = self.search(target, text_tokens, estimates, base)
            except EstimateMissing:  # none at the first size: none recorded
                return None, estimates.laid_out if estimates.edges else 0
            if (close_enough(found.record) or self.bounded(found)) and \
                    sizes.tokens_at(found.font_size, found.page_width) == found.vision_tokens:
                found.record["layouts"] = found.layouts = len(sizes.measured)  # drawn
                return found, estimates.laid_out
            if not estimates.moved(sizes, found.font_size, found.page_width):
                break
        return None, estimates.laid_out

    def bounded(self, found: Fit) -> bool:
        """Whether ``found`` is off target at a bound of the font sizes: the target is out of
        their reach (at every width tried)."""
        target = self.target
        assert target is not None
        return not found.record["within"] and \
            found.font_size in (target.min_font_size, target.max_font_size)

    def kept(self, item: Item, found: Fit, sizes: ItemSizes, renderer) -> tuple[Any, dict]:
        """The renderer at the size (and width) found, and its record; an item off target
        skipped under ``--on-error skip``."""
        if not found.record["within"] and self.config.on_error == "skip":
            raise ItemError(f"off target: {found.record['reason']}", where=item.origin or
                            item.id, field="target", item_id=item.id, stage="render")
        return sizes.at(found.font_size, found.page_width) or renderer, found.record

    def width_first(self, target: TargetOptions, text_tokens: int | None, sizes: ItemSizes,
                    base) -> Fit | None:
        """The target met exactly (a ratio: within 1 %) at a moved width after only two
        sizes at the style's width, where the style's width cannot meet it and its text fills
        the page: the two sizes' pages give each width's starting size (along their line),
        so the style's width is not searched further. None where that does not meet it; the
        whole search then runs as before, on the layouts made."""
        early = fit(target, text_tokens, sizes.tokens_at, start=base.font_size,
                    between=sizes.between, guess=sizes.guess, layouts=2)
        seen = sizes.sizes_at(early.font_size)
        laid_out = {tuple(pages) for pages in sizes.measured.values() if pages}
        if close_enough(early.record) or early.vision_tokens is None or not seen \
                or max(w for w, _ in seen) < filled_width(base) or len(laid_out) < 2:
            return None  # met already, refused, cropped narrower, or a page that never grew
        predict = WidthPrediction.of(target, self.rule, base, seen, early, sizes.sizes_at,
                                     sizes.style_sizes())
        if predict is None or would_meet(early.record, predict(None), predict.goal):
            return None  # the style's width can meet it: searched there first, as before
        moved = fit_width(target, text_tokens, sizes.tokens_at, early, base.page_width,
                          base.ppi, predict, sizes.between, sizes.guess, met_only=True)
        if not close_enough(moved.record):
            return None
        moved.record["layouts"] = moved.layouts = len(sizes.measured)  # once each
        return moved

    def styled_renderer(self, item: Item, part: RenderPart) -> tuple[Any, dict | None]:
        """The renderer that draws ``item``, and its target's record (None without one)."""
        renderer = self.renderer_for(item)
        if self.target is None:
            return renderer, None
        return self.fitted(item, part, renderer)

    def notes(self) -> list[str]:
        """The style's fields this renderer does not draw, said before the run starts."""
        style = self.config.style
        left_out = style.get("left_out") if isinstance(style, dict) else None
        if not left_out or not isinstance(style, dict):
            return []
        return [f"style {style['name']}: the {self.config.renderer} renderer does not draw "
                f"{', '.join(left_out)}; left out"]

    def report(self, rows) -> dict[str, Any]:
        """With a target: how many items met it (the others' rows say why not), also said
        on stderr when any did not."""
        if self.target is None:
            return {}
        records = [t for t in (getattr(row, "target", None) for row in rows()) if t]
        off = sum(not record["within"] for record in records)
        if off:
            import click

            click.echo(f"{off} of {len(records)} item(s) are off target by more than 5 % "
                       "(their rows' target.reason says why)", err=True)
        return {"target": {"items": len(records), "within": len(records) - off,
                           "tolerance": TOLERANCE}}
