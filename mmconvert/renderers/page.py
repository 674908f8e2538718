"""ReadBench-style A4 page renderer: the text laid out once in points, drawn with MuPDF at any
(fractional) PPI, and optionally kept as a vector PDF with its text layer."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import (
    ValidationError,
)

from ..errors import ItemError
from ..items import Item, RenderPart, option_letter
from ..jobs import question_fields, row_head
from ..options import first_error
from ..prompts import Prompts
from ..rows import PageRow, Row
from ..runfolder import Output, item_file
from ..units import POINTS_PER_INCH, pixels
from .base import Fits, Profile, Redraws, Renderer, Restyles, item_from_row, question_beside_options
from .drawing import (
    encoders,
    fill_text,
    mupdf,
    paint,
    paint_box,
    pixels_png,
    pixmap_image,
    show_runs,
)
from .fields import (
    PageImage,
    PageInk,
    PageRender,
    drawn_text,
    flowed,
    image_fields,
    layout_file,
    layout_texts,
    over_pixel_limit,
    well_drawn,
)
from .fonts import FontChain, font_manifest, page_chain
from .layout import (
    Block,
    Line,
    PageLayout,
    Run,
    align,
    control_characters,
    first_strong_rtl,
    marked_run,
    paginate,
    split_marked,
)
from .page_config import RenderConfig
from .page_options import PageOptions
from .pdfwriter import PdfLine, PdfPage, write_pdf
from .shaping import ShapingLineBreaker
from .styled import StyledJob

if TYPE_CHECKING:
    from ..config import ApiOptions
    from ..corpora import Corpus

ENCODING_AHEAD = 4  # drawn pages an item's render keeps waiting for their encoding


LAYOUT_VERSION = 2


class PageRenderer(Renderer[PageOptions], Redraws, Restyles, Fits):
    """Lays out the chosen part of an item on A4 pages and rasterises them."""

    name = "page"
    # 3: a vision budget or ratio moves the width by a predictive search; 4: a width that meets
    # it is searched after two sizes at the style's width, where that width cannot meet it
    version = "4"
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
    profile = Profile(roles=("page",), paper=("page",),
                      checks=frozenset({"ocr", "text_layer", "image"}))
    # the last layout ``pixel_sizes`` made in the process, with its renderer, item and part:
    # one held at most (a search's layouts are let go as before), for ``laid_out`` to take
    _measured: ClassVar[list[tuple[PageRenderer, Item, RenderPart, PageLayout]]] = []

    @classmethod
    def job(cls, config: RenderConfig, api: ApiOptions | None = None, *,
            dry_run: bool = False) -> PageJob:
        return PageJob(config)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> PageRenderer:
        return cls(cls.options_from(params))

    @classmethod
    def restyled(cls, row: Row, values: dict[str, Any]) -> Output:
        params = row.params
        part: RenderPart = params.get("render") or "options"
        item = item_from_row(row)
        try:
            renderer = cls(cls.options_from(params).with_values(values))
        except ValidationError as err:
            shown = ", ".join(f"{k}={v}" for k, v in values.items())
            raise ItemError(f"{shown}: {first_error(err)['msg']}", where=row.id,
                            field=next(iter(values)), item_id=row.id, stage="sweep") \
                from None
        result = renderer.render(item, part)
        output, new = Output(), copy.deepcopy(row.raw)
        new.pop("pdf", None)  # a restyled row keeps no PDF: the row draws it again
        new["renderer"]["params"] = renderer.row_params(part)
        new["images"], new["layout"] = renderer.page_files(output, item.id, result)
        output.row = new
        return output

    def page_files(self, output: Output, item_id: str,
                   result: PageRender) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """A render's page images and its layout file, written into ``output``: the row's
        ``images`` and ``layout``."""
        images = [output.image(item_file("images", item_id, f"_p{number:03d}.png"), page.png,
                               "page", page.width, page.height, ppi=self.options.ppi)
                  for number, page in enumerate(result.pages, start=1)]
        return images, layout_file(output, item_id, result.layout)

    def pixel_size(self, width_pt: float, height_pt: float,
                   ppi: float | None = None) -> tuple[int, int]:
        """A page's size in pixels at ``ppi`` (default: the options'), its width squeezed or
        stretched by ``horizontal_scale``."""
        ppi = ppi or self.options.ppi
        return (pixels(width_pt * self.options.horizontal_scale / POINTS_PER_INCH, ppi),
                pixels(height_pt / POINTS_PER_INCH, ppi))

    def shown_text(self, item: Item, part: RenderPart) -> str:
        """The text the item's pages show (a target's text tokens)."""
        return drawn_text(item, part, self.options.model_dump())

    def pixel_sizes(self, item: Item, part: RenderPart) -> list[tuple[int, int]]:
        """The sizes of the item's pages in pixels, laid out, not drawn (a target's vision
        tokens); the layout is kept for ``laid_out``, should this be the size drawn next."""
        layout = self.layout(item, part)
        PageRenderer._measured[:] = [(self, item, part, layout)]
        widths, heights = self.page_sizes(layout)
        return [self.pixel_size(w, h) for w, h in zip(widths, heights, strict=True)]

    def row_params(self, part: RenderPart) -> dict[str, Any]:
        """What a row records of this renderer: its whole style, the part drawn, and the
        sha256 of the fonts the style names."""
        params = {**self.options.model_dump(mode="json"), "render": part}
        if self.options.font:
            params["font_sha256"] = self.chain.user_sha256()
        return params

    @classmethod
    def expected_text(cls, row: Row) -> str:
        params = row.params
        return drawn_text(item_from_row(row), params.get("render") or "options", params)

    @classmethod
    def text_question(cls, row: Row) -> str | None:
        return question_beside_options(row)

    @classmethod
    def page_texts(cls, row: Row, read: Callable[[str], bytes]) -> list[str] | None:
        """Each page's lines as its stored layout (``layout/<id>.json``) draws them."""
        layout = getattr(row, "layout", None)
        path = layout.path if layout is not None else None
        if path is None or not path.endswith(".json"):
            return None
        return layout_texts(json.loads(read(path).decode("utf-8")))

    @classmethod
    def base_ppi(cls, config: dict[str, Any]) -> float | None:
        return (config.get("page") or {}).get("ppi")

    def __init__(self, options: PageOptions | None = None, chain: FontChain | None = None):
        self.options = options or PageOptions()
        o = self.options
        self.chain = chain or page_chain(tuple(o.font))
        self.size = o.font_size
        # ReadBench's geometry, in points: a line is the font's ascent + descent, set
        # line_spacing of them apart; its glyph box sits at the top of its pitch, and a line
        # fits on a page while its glyph box ends inside the bottom margin
        self.glyph_box = glyph_box = (self.chain.ascender - self.chain.descender) * self.size
        self.pitch = o.line_pitch if o.line_pitch is not None else glyph_box * o.line_spacing
        self.top_pt, self.right_pt, self.bottom_pt, self.margin_pt = o.margins()
        self.page_w = o.page_width * POINTS_PER_INCH
        self.page_h = o.page_height * POINTS_PER_INCH
        self.text_width = self.page_w - self.margin_pt - self.right_pt
        # a column's width, and how far right each column starts
        self.column_width = (self.text_width - (o.columns - 1) * o.column_gap) / o.columns
        self.column_step = self.column_width + o.column_gap
        usable = self.page_h - self.top_pt - self.bottom_pt
        # lines a column holds; a page holds ``columns`` of them
        self.column_lines = max(1, int((usable - glyph_box + 1e-6) // self.pitch) + 1
                                if o.line_fit == "glyphs" else int((usable + 1e-6) // self.pitch))
        self.lines_per_page = self.column_lines * o.columns
        # lines end right_indent before the right margin (x from the left margin)
        self.breaker = ShapingLineBreaker(self.chain, self.size,
                                          self.column_width - o.right_indent,
                                          spacing=o.letter_spacing,
                                          words=o.align == "justify",
                                          shrink=o.space_shrink)
        self.baseline = self.chain.ascender * self.size
        # the characters of a coloured newline marker (none when it takes the text's)
        self.marks = frozenset(c for c in o.newline_marker if not c.isspace()) \
            if o.newlines == "marker" and o.newline_marker_color is not None else frozenset()

    def blocks(self, item: Item, part: RenderPart) -> list[Block]:
        where = item.origin or item.id
        fields = image_fields(item, part)
        if not fields:
            what = "options" if part == "options" else "context" if part == "context" else "text"
            raise ItemError(f"nothing to render: the item has no {what}", where=where,
                            field=what, item_id=item.id, stage="render")
        blocks: list[Block] = []
        o = self.options
        for name, raw in fields:
            text = flowed(raw, o.newlines, o.newline_marker, o.paragraph_gap)
            drawable = well_drawn(self.chain, text)
            bad = [] if drawable else control_characters(text)
            if bad:
                raise ItemError(f"control character U+{ord(bad[0]):04X} in text", where=where,
                                field=name, item_id=item.id, stage="render")
            marked = sorted(self.marks.intersection(raw))
            if marked:
                raise ItemError(f"the text holds {marked[0]!r}, a character of the coloured "
                                "newline marker: choose another --newline-marker",
                                where=where, field=name, item_id=item.id, stage="render")
            if not drawable:
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
                        if o.indent == "hanging" else 0.0)
                if first_strong_rtl(text):
                    # a right-to-left option: a right-to-left mark after its Latin label, so
                    # that digits opening the text ("۱۰۰ درجه") stay with the text instead of
                    # joining the label's left-to-right run (UAX #9 W7)
                    label += "\u200f"
                blocks.append(Block(label + text, indent=o.left_indent,
                                    hanging=o.left_indent + hang, blank_before=gap,
                                    label=len(label), field=name, first=o.first_line_indent))
            else:
                blocks.append(Block(text, indent=o.left_indent, hanging=o.left_indent,
                                    blank_before=gap, field=name, first=o.first_line_indent))
        return blocks

    def layout(self, item: Item, part: RenderPart) -> PageLayout:
        lines: list[Any] = []
        for block in self.blocks(item, part):
            if lines:
                lines.extend([type(lines[0])()] * block.blank_before)
            try:
                lines.extend(self.breaker.lines(block))
            except ItemError as err:  # shaping found a glyph no font has
                err.where, err.field = item.origin or item.id, block.field
                err.item_id, err.stage = item.id, "render"
                raise
        if self.options.align != "left":
            for line in lines:
                align(line, self.breaker.width, self.options.align)
        layout = paginate(lines, self.lines_per_page, self.pitch)
        self.align_right_to_left(layout)
        if self.options.columns > 1:  # each column's lines moved right to their column
            for page in layout.pages:
                for index, line in enumerate(page):
                    line.shift(index // self.column_lines * self.column_step)
        if self.marks:  # the marker's characters in runs of their own, drawn in its colour
            for page in layout.pages:
                for line in page:
                    split_marked(line, self.marks, self.chain, self.size)
        return layout

    def paragraph_boxes(self, lines) -> list[tuple[float, float, float, float]]:
        """(left, top, right, bottom) in points of each paragraph's lines on a page, column by
        column: the column's width, from its first line's pitch to its last's."""
        boxes: list[list[float]] = []
        open_box = None
        for index, (row, line) in enumerate(self.rows(lines)):
            column = index // self.column_lines
            if line.runs and open_box is not None and open_box[4] == column:
                open_box[3] = self.top_pt + (row + 1) * self.pitch
            elif line.runs:
                left = self.margin_pt + column * self.column_step
                open_box = [left, self.top_pt + row * self.pitch, left + self.column_width,
                            self.top_pt + (row + 1) * self.pitch, column]
                boxes.append(open_box)
            if not line.runs or line.last:
                open_box = None
        return [(box[0], box[1], box[2], box[3]) for box in boxes]

    def rows(self, lines) -> list[tuple[int, Line]]:
        """(row on the page, line) of a page's lines: column after column."""
        return [(index % self.column_lines, line) for index, line in enumerate(lines)]

    def align_right_to_left(self, layout: PageLayout) -> None:
        """Set each right-to-left line ``indent`` in from the right edge of its page's text:
        the text width, or with ``crop=content`` the widest line of the page (so that the cut
        keeps four margins on the right, as for left-to-right text)."""
        for page in layout.pages:
            if not any(line.rtl for line in page):
                continue
            edge = self.breaker.width
            if self.options.crop == "content":
                edge = min(edge, max(line.indent + line.width if line.rtl
                                     else max(run.end for run in line.runs)
                                     for line in page if line.runs))
            for line in page:
                if line.rtl:
                    line.align_right(edge, centre=self.options.align == "center")

    def laid_out(self, item: Item, part: RenderPart
                 ) -> tuple[PageLayout, list[PageInk], list[float], list[float]]:
        """``part`` of ``item`` laid out: its layout, each page's ink, and the pages' sizes in
        points; an item whose pages would hold too many pixels is refused here."""
        kept = next(iter(PageRenderer._measured[:]), None)
        PageRenderer._measured.clear()  # taken once: the size a search kept is not laid out again
        layout = kept[3] if kept and kept[0] is self and kept[1] is item and kept[2] == part \
            else self.layout(item, part)
        widths, heights = self.page_sizes(layout)
        too_big = self.too_big(widths, heights, self.options.ppi)
        if too_big:
            raise ItemError(too_big, where=item.origin or item.id, field="ppi",
                            item_id=item.id)
        return layout, [self.text_object(lines) for lines in layout.pages], widths, heights

    def pictures(self, item: Item, part: RenderPart) -> list[Any]:
        """The pages of ``part`` of ``item`` as Pillow images, each drawn straight from its
        pixmap: the pixels of ``render``'s PNGs, with no PNG made."""
        _, texts, widths, heights = self.laid_out(item, part)
        ppi = self.options.ppi
        return [pixmap_image(self.draw_page(text, width, height, ppi), ppi)
                for text, width, height in zip(texts, widths, heights, strict=True)]

    def render(self, item: Item, part: RenderPart, *, want_pdf: bool = False) -> PageRender:
        """Page PNGs (and the vector PDF) of ``part`` of ``item``.

        Each page's glyph runs become one MuPDF text object, drawn straight into a pixmap for
        the PNG and, with ``want_pdf``, written through MuPDF's PDF device into the PDF: both
        come from the same glyphs at the same positions.
        """
        layout, texts, widths, heights = self.laid_out(item, part)
        ppi = self.options.ppi
        images = self.rasterise_pages([(text, width, height, ppi) for text, width, height
                                       in zip(texts, widths, heights, strict=True)])
        pdf = None
        if want_pdf:
            o = self.options
            pdf = write_pdf(
                [PdfPage(width, height, self.margin_pt,
                         [PdfLine(self.top_pt + row * self.pitch + self.baseline, line.runs)
                          for row, line in self.rows(lines)],
                         scale=o.horizontal_scale, ink=o.text_color, paper=o.background,
                         marks=self.marks, mark_ink=o.newline_marker_color,
                         boxes=ink.boxes, box_ink=o.paragraph_color)
                 for lines, ink, width, height in zip(layout.pages, texts, widths, heights,
                                                      strict=True)],
                self.chain, self.size, self.breaker.shaper.hb_face)
        return PageRender(images, pdf, part, layout.line_count(),
                          self.layout_record(layout, widths, heights))

    def page_sizes(self, layout: PageLayout) -> tuple[list[float], list[float]]:
        """Each page's width and height in points, as ``crop`` cuts them. ``content`` is
        ReadBench's cut: a page ends four margins right of its widest line, and the last page
        one margin below its last line's pitch; with ``crop_pad``, Glyph's: ``crop_pad``
        right of the widest line and below the last line's glyphs."""
        count = len(layout.pages)
        pad = self.options.crop_pad
        widths, heights = [self.page_w] * count, [self.page_h] * count
        if self.options.crop != "none":
            lines = min(len(layout.pages[-1]), self.column_lines)
            content = (self.top_pt + lines * self.pitch + self.bottom_pt if pad is None
                       else self.top_pt + max(lines - 1, 0) * self.pitch + self.glyph_box + pad)
            heights[-1] = min(self.page_h, content)
        if self.options.crop == "content":
            right = 4 * self.right_pt if pad is None else pad
            for index, page in enumerate(layout.pages):
                widest = max((max(run.end for run in line.runs) for line in page
                              if line.runs), default=0.0)
                # a line may run past the text width by its spaces' shrink (space_shrink)
                widths[index] = min(self.page_w, self.margin_pt + widest + right)
        return widths, heights

    def insets(self) -> tuple[float, float, float]:
        """How far in from the left, right and bottom edges of a page (of its PDF, in
        points) every glyph must stay: the margins, or less where a crop cut closer."""
        o = self.options
        right, bottom = self.right_pt, self.bottom_pt
        if o.crop != "none":
            bottom = min(bottom, self.bottom_pt if o.crop_pad is None else o.crop_pad)
        if o.crop == "content" and o.crop_pad is not None:
            right = min(right, o.crop_pad)
        elif o.space_shrink:  # lines may run into the right margin, but not off the page
            right = 0.0
        scale = o.horizontal_scale
        return self.margin_pt * scale, right * scale, bottom

    def too_big(self, widths: list[float], heights: list[float], ppi: float) -> str | None:
        """Why pages of ``widths`` x ``heights`` (points) at ``ppi`` are refused before
        drawing (``fields.over_pixel_limit``); None when they are not."""
        return over_pixel_limit([self.pixel_size(w, h, ppi)
                                 for w, h in zip(widths, heights, strict=True)], ppi)

    def layout_record(self, layout: PageLayout, widths: list[float],
                      heights: list[float]) -> dict:
        """The laid-out pages as data: each line's runs as [x, font index, text], in points,
        with the geometry they were set in and each page's size. ``redraw`` rasterises it at
        any PPI with the same line and page breaks."""
        return {"version": LAYOUT_VERSION, "fonts": [spec.name for spec in self.chain.specs],
                "font_size": self.size, "pitch": self.pitch, "margin": self.margin_pt,
                **({"top": self.top_pt} if self.top_pt != self.margin_pt else {}),
                **({"columns": [self.options.columns, self.column_lines]}
                   if self.options.columns > 1 else {}),
                **({"ends": [[i for i, line in enumerate(page) if line.last]
                             for page in layout.pages]}
                   if self.options.paragraph_color else {}),
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
                    "top": self.top_pt, "page_width": self.page_w, "baseline": self.baseline}
        record = {"top": record["margin"], **record}
        if record.get("columns", [1, self.column_lines])[0] != self.options.columns or (
                self.options.columns > 1 and record["columns"][1] != self.column_lines):
            raise ValueError("the stored layout was set in other columns; render the corpus "
                             "again")
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
        ends = [set(last) for last in record.get("ends") or [[] for _ in record["pages"]]]
        texts = [self.text_object([Line([Run(run[0], run[2], run[1], run[0],
                                             run[3] if len(run) > 3 else None)
                                         for run in runs], last=index in last)
                                   for index, runs in enumerate(page)])
                 for page, last in zip(record["pages"], ends, strict=True)]
        return [self.rasterise_pages([(text, width, height, ppi) for text, width, height
                                      in zip(texts, record["widths"], record["heights"],
                                             strict=True)])
                for ppi in ppis]

    def text_object(self, lines) -> PageInk:
        """The page's runs as ``fz_text`` in page coordinates (points, y down): the text, the
        coloured newline markers apart, and the paragraph boxes behind them."""
        m = mupdf()
        text, marker = m.FzText(), (m.FzText() if self.marks else None)
        size, marks = self.size, self.marks
        for row, line in self.rows(lines):
            y = self.top_pt + row * self.pitch + self.baseline
            runs = line.runs
            if marks:
                show_runs(marker, self.chain.fonts, [r for r in runs if marked_run(r, marks)],
                          size, self.margin_pt, y)
                runs = [r for r in runs if not marked_run(r, marks)]
            show_runs(text, self.chain.fonts, runs, size, self.margin_pt, y)
        boxes = self.paragraph_boxes(lines) if self.options.paragraph_color else []
        return PageInk(text, marker, boxes)

    def rasterise(self, text, width_pt: float, height_pt: float,
                  ppi: float | None = None) -> PageImage:
        """The page as a PNG of ``pixels(inches, ppi)`` in each direction (default: the
        options' PPI): ``draw``, then ``encode``."""
        ppi = ppi or self.options.ppi
        return self.encode(self.draw_page(text, width_pt, height_pt, ppi), ppi)

    def rasterise_pages(self, pages: list[tuple[Any, float, float, float]]) -> list[PageImage]:
        """``rasterise`` of each (text, width, height, PPI), in order: a page is encoded on
        ``encoders()``' threads while the next one is drawn. The PNGs are those ``rasterise``
        makes one after another."""
        if len(pages) == 1:
            return [self.rasterise(*pages[0])]
        pool = encoders()
        pending: list[Future[PageImage]] = []
        for text, width, height, ppi in pages:
            if len(pending) >= ENCODING_AHEAD:  # at most this many drawn pages held at once
                pending[-ENCODING_AHEAD].result()
            pending.append(pool.submit(self.encode, self.draw_page(text, width, height, ppi), ppi))
        return [future.result() for future in pending]

    def draw_page(self, text, width_pt: float, height_pt: float, ppi: float):
        """The page's pixmap: its paper, paragraph boxes and text (a ``PageInk``) at
        ``ppi``."""
        m = mupdf()
        o = self.options
        scale = ppi / POINTS_PER_INCH
        width, height = self.pixel_size(width_pt, height_pt, ppi)
        gray = o.color == "gray"
        colorspace = m.fz_device_gray() if gray else m.fz_device_rgb()
        pix = m.FzPixmap(colorspace, width, height, m.FzSeparations(), 0)
        paint(pix, o.background, gray)
        across = scale * o.horizontal_scale
        for left, top, right, bottom in text.boxes:
            box = (round(left * across), round(top * scale), round(right * across),
                   round(bottom * scale))
            paint_box(pix, o.paragraph_color or o.background, box)
        if text.marker is not None:
            fill_text(m.fz_new_draw_device(m.fz_scale(across, scale), pix), text.marker,
                      o.newline_marker_color or o.text_color, gray)
        fill_text(m.fz_new_draw_device(m.fz_scale(across, scale), pix), text.text,
                  o.text_color, gray)
        return pix

    @staticmethod
    def encode(pix, ppi: float) -> PageImage:
        """A drawn pixmap as a PNG that records ``ppi``."""
        width, height = pix.w(), pix.h()
        return PageImage(pixels_png(mupdf().fz_pixmap_samples_memoryview(pix), width, height,
                                    pix.n(), pix.stride(), ppi), width, height)


class PageJob(StyledJob):
    """``mmconvert render``: the chosen part of each item on A4 page images."""

    config: RenderConfig

    def __init__(self, config: RenderConfig):
        self.config = config
        self.renderer = PageRenderer(config.page)
        self.prompts = Prompts(config.prompt_dir)
        self.start_style()
        for fonts in self.drawn_fonts():
            page_chain(tuple(fonts))  # a bad font file is refused before the first item

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return self.config.page.render or corpus.part_for(item)

    def pictures(self, item: Item, part: RenderPart) -> list[Any]:
        renderer, _ = self.styled_renderer(item, part)
        return renderer.pictures(item, part)

    def fonts(self) -> list[dict[str, str]]:
        manifest = font_manifest(self.renderer.chain)
        for fonts in self.drawn_fonts():
            manifest += font_manifest(page_chain(tuple(fonts)))
        unique: dict[str, dict[str, str]] = {}
        for entry in manifest:
            unique.setdefault(entry["sha256"], entry)
        return list(unique.values())

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        config, output = self.config, Output()
        renderer, target = self.styled_renderer(item, part)
        result = renderer.render(item, part, want_pdf=config.pdf)
        prompt, text_prompt = self.prompts.pair(item, part, config.prompt_style, prompt_keys)
        images, layout = renderer.page_files(output, item.id, result)
        pdf = {}
        if result.pdf is not None:
            pdf["pdf"] = item_file("pdf", item.id, ".pdf")
            output.file(pdf["pdf"], result.pdf)
        # the keys in the order every page row has held them
        output.row = {**row_head(item, renderer, renderer.row_params(part), config.seed),
                      "images": images, **({} if target is None else {"target": target}),
                      "layout": layout, **pdf,
                      **question_fields(item, config.prompt_style, prompt, text_prompt)}
        return output
