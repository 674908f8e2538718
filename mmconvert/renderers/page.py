"""ReadBench-style A4 page renderer: the text laid out once in points, drawn with MuPDF at any
(fractional) PPI, and optionally kept as a vector PDF with its text layer."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, model_validator

from ..config import RunConfig
from ..errors import ItemError
from ..items import Item, RenderPart, option_letter
from ..jobs import Job, row_head
from ..options import OPTIONS, cli
from ..prompts import Prompts
from ..rows import PageRow
from ..runfolder import Output, item_file
from .base import Renderer, item_from_row
from .drawing import color_params, fill_black, mupdf, set_png_ppi, show_runs
from .fonts import FontChain, font_chain, font_manifest
from .layout import (
    Block,
    Line,
    PageLayout,
    Run,
    control_characters,
    normalise,
    paginate,
)
from .pdfwriter import PdfLine, PdfPage, write_pdf
from .shaping import ShapingLineBreaker, first_strong_rtl

if TYPE_CHECKING:
    from ..config import ApiOptions
    from ..corpora import Corpus

POINTS_PER_INCH = 72.0
# the most pixels one item's pages may hold (about 14 A4 pages at 1200 PPI, 2,700 at 92.9)
MAX_ITEM_MEGAPIXELS = 2_000


def _ppi(value: float) -> float:
    """The one PPI rule, for render, sweep and every other command that takes a PPI."""
    if not 10 < value <= 1200:  # NaN fails too
        raise ValueError(f"{value:g} is not a PPI over 10 and at most 1200")
    return value


PPI = Annotated[float, AfterValidator(_ppi)]


class PageOptions(BaseModel):
    """Everything that decides what a page image looks like."""

    model_config = OPTIONS

    ppi: PPI = Field(92.9, description="pixels per inch of the page images")
    font_size: float = Field(12.0, gt=2, le=72, description="type size in points")
    line_spacing: float = Field(
        1.2, ge=1.0, le=3.0,
        description="line pitch as a multiple of the font's line height (ascent + descent), "
                    "as ReadBench: 1.2 gives 16.09 pt at 12 pt")
    line_pitch: float | None = Field(
        None, gt=0, le=300,
        description="line pitch in points, in place of line_spacing (14.4: 1.2 x the type "
                    "size, mmconvert 0.1's look)")
    margin: float = Field(0.25, ge=0, le=2, description="page margins in inches")
    page_width: float = Field(8.27, gt=1, le=40, description="page width in inches (A4)")
    page_height: float = Field(11.69, gt=1, le=40, description="page height in inches (A4)")
    color: Literal["gray", "rgb"] = Field("gray", description="PNG colour")
    render: RenderPart | None = Field(
        None, description="what becomes image",
        json_schema_extra=cli(default="the corpus' render policy"))
    crop: Literal["content", "bottom", "none"] = Field(
        "content",
        description="content: every page cut on the right to its widest line plus four "
                    "margins and the last one below its last line (ReadBench); bottom: only "
                    "the last page's bottom; none: whole pages")
    indent: Literal["none", "hanging"] = Field(
        "none", description="where a wrapped option line starts: at the margin (ReadBench) or "
                            "under the option's text")

    @model_validator(mode="after")
    def _room_for_text(self) -> PageOptions:
        """A page whose margins leave less than two ems across, or less than a line's pitch
        down, has no room for text (it drew blank pages, or text past the margin)."""
        inch = POINTS_PER_INCH
        across = (self.page_width - 2 * self.margin) * inch
        down = (self.page_height - 2 * self.margin) * inch
        pitch = self.line_pitch or self.line_spacing * 1.2 * self.font_size
        if across < 2 * self.font_size or down < pitch:
            raise ValueError(
                f"a {self.page_width:g} x {self.page_height:g} in page with {self.margin:g} in "
                f"margins leaves {max(across, 0):.1f} x {max(down, 0):.1f} pt for text, too "
                f"little for {self.font_size:g} pt type (at least {2 * self.font_size:g} pt "
                f"across and a line, {pitch:.1f} pt, down): widen the page or narrow the "
                "margins")
        return self

    @model_validator(mode="before")
    @classmethod
    def _not_version_1(cls, data: Any) -> Any:
        if isinstance(data, dict) and "crop_last" in data:
            raise ValueError("crop_last: these are page renderer 1's options (mmconvert 0.1, "
                             "A4-wide pages, 14.4 pt pitch); render the corpus again, with "
                             "--crop bottom --line-pitch 14.4 --indent hanging for that look")
        return data


class RenderConfig(RunConfig):
    """A ``render`` run: which items, how to draw them, what to write."""

    renderer: Literal["page"] = "page"
    page: PageOptions = Field(default_factory=PageOptions)
    pdf: bool = Field(False, description="keep each item's vector PDF in pdf/")
    prompt_style: Literal["cot", "direct"] = Field(
        "cot", description="prompt style of the manifest's prompts")


@dataclass
class PageImage:
    png: bytes
    width: int
    height: int


@dataclass
class PageRender:
    pages: list[PageImage]
    pdf: bytes | None
    part: RenderPart
    lines: int
    layout: dict  # the stored layout (``layout_record``), from which any PPI is re-drawn


LAYOUT_VERSION = 2


def image_fields(item: Item, part: RenderPart) -> list[tuple[str, str]]:
    """(field name, text) of the parts that become image, in drawing order."""
    fields: list[tuple[str, str]] = []
    if part in ("context", "all") and item.context:
        fields.append(("context", item.context))
    if part == "all" and item.question:
        fields.append(("question", item.question))
    if part in ("options", "all"):
        fields.extend((f"options[{i}]", o) for i, o in enumerate(item.options))
    return fields


def label_fields(fields: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """Fields with the option letters the page draws before each option ("A. ")."""
    for name, text in fields:
        if name.startswith("options["):
            yield name, f"{option_letter(int(name[8:-1]))}. {text}"
        else:
            yield name, text


class PageRenderer(Renderer):
    """Lays out the chosen part of an item on A4 pages and rasterises them."""

    name = "page"
    version = "2"
    config_model = RenderConfig
    row_model = PageRow
    help = """Render CORPUS (a registered name, or a JSONL/CSV/Parquet file) as page images.

    \b
    Examples:
      mmconvert render mmlu-redux --ppi 92.9 --sample 35
      mmconvert render mmlu-redux --source path/to/mmlu_redux --out runs/redux
      mmconvert render babilong --source tasks_1-20_v1-2 --subset qa1
      mmconvert render logiqa --source LogiQA-dataset --language zh --dedup
      mmconvert render items.jsonl --render all --pdf --font-size 10
    """
    options_model = PageOptions
    unit = "page"
    roles = shown_roles = ocr_roles = paper_roles = ("page",)
    checks = frozenset({"ocr", "text_layer", "image"})
    redraws = True

    @classmethod
    def job(cls, config: RenderConfig, api: ApiOptions | None = None, *,
            dry_run: bool = False) -> PageJob:
        return PageJob(config)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> PageRenderer:
        return cls(cls.options_from(params))

    @classmethod
    def expected_text(cls, row: dict[str, Any]) -> str:
        item = item_from_row(row)
        part = row["renderer"]["params"].get("render") or "options"
        return "\n".join(text for _, text in label_fields(image_fields(item, part)))

    @classmethod
    def text_question(cls, row: dict[str, Any]) -> str | None:
        return row.get("question") if row["renderer"]["params"].get("render") == "options" \
            else None

    @classmethod
    def base_ppi(cls, config: dict[str, Any]) -> float | None:
        return (config.get("page") or {}).get("ppi")

    def __init__(self, options: PageOptions | None = None, chain: FontChain | None = None):
        self.options = options or PageOptions()
        self.chain = chain or font_chain()
        o = self.options
        self.size = o.font_size
        # ReadBench's geometry, in points: a line is the font's ascent + descent, set
        # line_spacing of them apart; its glyph box sits at the top of its pitch, and a line
        # fits on a page while its glyph box ends inside the bottom margin
        glyph_box = (self.chain.ascender - self.chain.descender) * self.size
        self.pitch = o.line_pitch if o.line_pitch is not None else glyph_box * o.line_spacing
        self.margin_pt = o.margin * POINTS_PER_INCH
        self.page_w = o.page_width * POINTS_PER_INCH
        self.page_h = o.page_height * POINTS_PER_INCH
        self.text_width = self.page_w - 2 * self.margin_pt
        usable = self.page_h - 2 * self.margin_pt
        self.lines_per_page = max(1, int((usable - glyph_box + 1e-6) // self.pitch) + 1)
        self.breaker = ShapingLineBreaker(self.chain, self.size, self.text_width)
        self.baseline = self.chain.ascender * self.size

    def blocks(self, item: Item, part: RenderPart) -> list[Block]:
        where = item.origin or item.id
        fields = image_fields(item, part)
        if not fields:
            what = "options" if part == "options" else "context" if part == "context" else "text"
            raise ItemError(f"nothing to render: the item has no {what}", where=where,
                            field=what, item_id=item.id, stage="render")
        blocks: list[Block] = []
        for name, raw in fields:
            text = normalise(raw)
            bad = control_characters(text)
            if bad:
                raise ItemError(f"control character U+{ord(bad[0]):04X} in text", where=where,
                                field=name, item_id=item.id, stage="render")
            try:
                self.chain.check(text, where=where, field=name)
            except ItemError as err:
                err.item_id = item.id
                raise
            gap = 1 if blocks and not name.startswith("options[") else 0
            if name.startswith("options["):
                index = int(name[8:-1])
                if index == 0 and blocks:
                    gap = 1
                label = f"{option_letter(index)}. "
                hang = (sum(self.breaker.advance(c) for c in label)
                        if self.options.indent == "hanging" else 0.0)
                if first_strong_rtl(text):
                    # a right-to-left option: a right-to-left mark after its Latin label, so
                    # that digits opening the text ("۱۰۰ درجه") stay with the text instead of
                    # joining the label's left-to-right run (UAX #9 W7)
                    label += "\u200f"
                blocks.append(Block(label + text, hanging=hang, blank_before=gap,
                                    label=len(label), field=name))
            else:
                blocks.append(Block(text, blank_before=gap, field=name))
        return blocks

    def layout(self, item: Item, part: RenderPart) -> PageLayout:
        lines = []
        for block in self.blocks(item, part):
            if lines:
                lines.extend([type(lines[0])()] * block.blank_before)
            try:
                lines.extend(self.breaker.lines(block))
            except ItemError as err:  # shaping found a glyph no font has
                err.where, err.field = item.origin or item.id, block.field
                err.item_id, err.stage = item.id, "render"
                raise
        layout = paginate(lines, self.lines_per_page, self.pitch)
        self.align_right_to_left(layout)
        return layout

    def align_right_to_left(self, layout: PageLayout) -> None:
        """Set each right-to-left line ``indent`` in from the right edge of its page's text:
        the text width, or with ``crop=content`` the widest line of the page (so that the cut
        keeps four margins on the right, as for left-to-right text)."""
        for page in layout.pages:
            if not any(line.rtl for line in page):
                continue
            edge = self.text_width
            if self.options.crop == "content":
                edge = min(edge, max(line.indent + line.width if line.rtl
                                     else max(run.end for run in line.runs)
                                     for line in page if line.runs))
            for line in page:
                if line.rtl:
                    line.align_right(edge)

    def render(self, item: Item, part: RenderPart, *, want_pdf: bool = False) -> PageRender:
        """Page PNGs (and the vector PDF) of ``part`` of ``item``.

        Each page's glyph runs become one MuPDF text object, drawn straight into a pixmap for
        the PNG and, with ``want_pdf``, written through MuPDF's PDF device into the PDF: both
        come from the same glyphs at the same positions.
        """
        layout = self.layout(item, part)
        widths, heights = self.page_sizes(layout)
        too_big = self.too_big(widths, heights, self.options.ppi)
        if too_big:
            raise ItemError(too_big, where=item.origin or item.id, field="ppi",
                            item_id=item.id)
        texts = [self.text_object(lines) for lines in layout.pages]
        images = [self.rasterise(text, width, height)
                  for text, width, height in zip(texts, widths, heights, strict=True)]
        pdf = None
        if want_pdf:
            pdf = write_pdf(
                [PdfPage(width, height, self.margin_pt,
                         [PdfLine(self.margin_pt + row * self.pitch + self.baseline, line.runs)
                          for row, line in enumerate(lines)])
                 for lines, width, height in zip(layout.pages, widths, heights, strict=True)],
                self.chain, self.size, self.breaker.shaper.hb_face)
        return PageRender(images, pdf, part, layout.line_count(),
                          self.layout_record(layout, widths, heights))

    def page_sizes(self, layout: PageLayout) -> tuple[list[float], list[float]]:
        """Each page's width and height in points, as ``crop`` cuts them. ``content`` is
        ReadBench's cut: a page ends four margins right of its widest line, and the last page
        one margin below its last line's pitch."""
        count = len(layout.pages)
        widths, heights = [self.page_w] * count, [self.page_h] * count
        if self.options.crop != "none":
            content = 2 * self.margin_pt + len(layout.pages[-1]) * self.pitch
            heights[-1] = min(self.page_h, content)
        if self.options.crop == "content":
            for index, page in enumerate(layout.pages):
                widest = max((max(run.end for run in line.runs) for line in page
                              if line.runs), default=0.0)
                widths[index] = min(self.page_w, self.margin_pt + min(widest, self.text_width)
                                    + 4 * self.margin_pt)
        return widths, heights

    def too_big(self, widths: list[float], heights: list[float], ppi: float) -> str | None:
        """Why pages of ``widths`` x ``heights`` (points) at ``ppi`` are refused before
        drawing: more than ``MAX_ITEM_MEGAPIXELS`` in all (a 2-million-character context at
        1200 PPI is 365 pages of 139 megapixels); None when they are not."""
        total = sum(pixels(w / POINTS_PER_INCH, ppi) * pixels(h / POINTS_PER_INCH, ppi)
                    for w, h in zip(widths, heights, strict=True)) / 1e6
        if total <= MAX_ITEM_MEGAPIXELS:
            return None
        return (f"{len(heights)} page(s) at {ppi:g} PPI would be {total:,.0f} megapixels, over "
                f"the {MAX_ITEM_MEGAPIXELS:,}-megapixel limit of one item; lower --ppi, or "
                "shorten the text")

    def layout_record(self, layout: PageLayout, widths: list[float],
                      heights: list[float]) -> dict:
        """The laid-out pages as data: each line's runs as [x, font index, text], in points,
        with the geometry they were set in and each page's size. ``redraw`` rasterises it at
        any PPI with the same line and page breaks."""
        return {"version": LAYOUT_VERSION, "fonts": [spec.name for spec in self.chain.specs],
                "font_size": self.size, "pitch": self.pitch, "margin": self.margin_pt,
                "page_width": self.page_w, "baseline": self.baseline, "widths": widths,
                "heights": heights,
                "pages": [[[[run.x, run.font, run.text] if run.glyphs is None
                            else [run.x, run.font, run.text, [list(g) for g in run.glyphs]]
                            for run in line.runs] for line in page]
                          for page in layout.pages]}

    def redraw(self, record: dict) -> list[PageImage]:
        """The pages of a stored layout at this renderer's PPI (and colour)."""
        return self.redraw_at(record, [self.options.ppi])[0]

    def redraw_at(self, record: dict, ppis) -> list[list[PageImage]]:
        """The pages of a stored layout at each of ``ppis``; the glyph runs are built once."""
        fonts = [spec.name for spec in self.chain.specs]
        geometry = {"font_size": self.size, "pitch": self.pitch, "margin": self.margin_pt,
                    "page_width": self.page_w, "baseline": self.baseline}
        stored = record.get("fonts") or []
        # fonts are only ever added at the chain's end: an older layout's indices still hold
        if record.get("version") != LAYOUT_VERSION or stored != fonts[:len(stored)]:
            raise ValueError("the stored layout was made with another layout version or font "
                             "chain; render the corpus again")
        for name, value in geometry.items():
            if not math.isclose(record[name], value, rel_tol=1e-9):
                raise ValueError(f"the stored layout's {name} ({record[name]}) is not the "
                                 f"renderer's ({value})")
        for ppi in ppis:
            too_big = self.too_big(record["widths"], record["heights"], ppi)
            if too_big:
                raise ValueError(too_big)
        texts = [self.text_object([Line([Run(run[0], run[2], run[1], run[0],
                                             run[3] if len(run) > 3 else None)
                                         for run in runs])
                                   for runs in page]) for page in record["pages"]]
        return [[self.rasterise(text, width, height, ppi)
                 for text, width, height in zip(texts, record["widths"], record["heights"],
                                                strict=True)]
                for ppi in ppis]

    def text_object(self, lines):
        """The page's runs as one ``fz_text`` in page coordinates (points, y down)."""
        m = mupdf()
        text = m.FzText()
        size = self.size
        for row, line in enumerate(lines):
            y = self.margin_pt + row * self.pitch + self.baseline
            show_runs(text, self.chain.fonts, line.runs, size, self.margin_pt, y)
        return text

    def rasterise(self, text, width_pt: float, height_pt: float,
                  ppi: float | None = None) -> PageImage:
        """The page as a PNG of ``pixels(inches, ppi)`` in each direction (default: the
        options' PPI)."""
        m = mupdf()
        ppi = ppi or self.options.ppi
        scale = ppi / POINTS_PER_INCH
        width = pixels(width_pt / POINTS_PER_INCH, ppi)
        height = pixels(height_pt / POINTS_PER_INCH, ppi)
        gray = self.options.color == "gray"
        colorspace = m.fz_device_gray() if gray else m.fz_device_rgb()
        pix = m.FzPixmap(colorspace, width, height, m.FzSeparations(), 0)
        m.fz_clear_pixmap_with_value(pix, 255)
        fill_black(m.fz_new_draw_device(m.fz_scale(scale, scale), pix), text)
        png = m.fz_buffer_extract(m.fz_new_buffer_from_pixmap_as_png(pix,
                                                                             color_params()))
        return PageImage(set_png_ppi(png, ppi), width, height)


def pixels(inches: float, ppi: float) -> int:
    """Pixel count of a length: inches x PPI rounded half up (1240.5 px -> 1241)."""
    return math.floor(inches * ppi + 0.5 + 1e-9)


def layout_file(output: Output, item_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """A page item's layout (``layout/<id>.json``), which PPI sweeps re-draw."""
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    rel = item_file("layout", item_id, ".json")
    return {"path": rel, "pages": len(record["pages"]),
            "lines": sum(len(page) for page in record["pages"]), **output.file(rel, data)}



class PageJob(Job):
    """``mmconvert render``: the chosen part of each item on A4 page images."""

    def __init__(self, config: RenderConfig):
        self.config = config
        self.renderer = PageRenderer(config.page)
        self.prompts = Prompts(config.prompt_dir)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return self.config.page.render or corpus.part_for(item)

    def fonts(self) -> list[dict[str, str]]:
        return font_manifest()

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        config, output = self.config, Output()
        result = self.renderer.render(item, part, want_pdf=config.pdf)
        prompt, text_prompt = self.prompts.pair(item, part, config.prompt_style, prompt_keys)
        images = [output.image(item_file("images", item.id, f"_p{number:03d}.png"), page.png,
                               "page", page.width, page.height, ppi=config.page.ppi)
                  for number, page in enumerate(result.pages, start=1)]
        row = row_head(item, self.renderer,
                       {**config.page.model_dump(mode="json"), "render": part}, config.seed)
        row["images"] = images
        row["layout"] = layout_file(output, item.id, result.layout)
        if result.pdf is not None:
            rel = item_file("pdf", item.id, ".pdf")
            output.file(rel, result.pdf)
            row["pdf"] = rel
        row.update({
            "prompt_style": config.prompt_style, "prompt": prompt, "text_prompt": text_prompt,
            "question": item.question, "context": item.context, "options": item.options,
            "answer": item.answer, "metadata": item.metadata,
        })
        output.row = row
        return output
