"""The document renderer: an item's text as Markdown (or HTML), typeset by Chromium.

Markdown is CommonMark with GitHub's tables and strikethrough, task lists and footnotes
(markdown-it-py and its plugins); code blocks are coloured by Pygments in a monospaced face;
LaTeX math (``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``) becomes MathML (latex2mathml),
which the browser typesets; formulas that do not parse are drawn as their source in the code
face and recorded in the row (``math_errors``). Links are shown as text. A list of chat turns
(``[{"role", "content"}]``) is drawn as a dialogue, a speaker label a turn, on alternating
backgrounds.

Chromium (Debian's, through Playwright; one browser a worker, kept open) turns the page into a
PDF, which PyMuPDF rasterises at the run's PPI: a PPI sweep re-draws the stored PDF, which is
also the row's vector PDF with its text layer. The browser runs with JavaScript off, with no
system font (its fontconfig sees only mmconvert's font folder) and with no network: every
request goes to one handler that serves mmconvert's own fonts and the images the item names
from its own folder, and refuses (and records in the row) anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator, model_validator

from ...errors import ItemError, MMConvertError, UsageError, did_you_mean, first_line
from ...items import Item, RenderPart
from ...jobs import question_fields, row_head
from ...options import OPTIONS
from ...prompts import Prompts
from ...rows import LayoutRef, QuestionRow, Row, RunPath
from ...runfolder import Output, item_file
from ...units import POINTS_PER_INCH
from ..base import (
    Estimates,
    Fits,
    Profile,
    Redraws,
    Renderer,
    item_from_row,
    question_beside_options,
)
from ..fields import PageImage
from ..page_options import PageOptions, named_page_size
from ..styled import StyledConfig, StyledJob, style_field
from ..target import TargetOptions, first_size
from .browser import (
    AHEAD,
    NO_PLAYWRIGHT,
    Browser,
    DocumentTooDeep,
    browser_name,
    browser_version,
    chromium_path,
)
from .css import css_text, faces, font_records, page_html
from .markup import RenderState, fields_html
from .pdf import cut_pads, normalised, page_pixels, rasterise, rect_pixels, written
from .text import references, visible_text

if TYPE_CHECKING:
    from ...config import ApiOptions
    from ...corpora import Corpus

# the page style fields the document shares with the page renderer
SHARED = ("ppi", "font", "font_size", "line_spacing", "line_pitch", "letter_spacing", "margin",
          "margin_top", "margin_right", "margin_bottom", "margin_left", "page_size",
          "page_width", "page_height", "columns", "column_gap", "align", "first_line_indent",
          "left_indent", "right_indent", "paragraph_gap", "paragraph_color", "text_color",
          "background", "color", "crop_pad", "render")
# what the OCR check does not ask Tesseract to read (``DocumentRenderer.ocr_text``)
UNREAD_BY_OCR = frozenset({"math", "table"})
# a printed page's ink ends above its layout's last line box (which reaches the face's
# descent) by about this share of the font size: the median over 40 short items at 9 to
# 19.2 pt (bench/document_measure.py), from -0.06 to -0.6
INK_ABOVE_LINE_BOX = -0.21


class _DocumentBase(BaseModel):
    model_config = OPTIONS

    markup: Literal["markdown", "html"] = Field(
        "markdown", description="what the item's text is: markdown (CommonMark with GitHub "
                                "tables, task lists, footnotes and LaTeX math) or html")
    css: Path | None = Field(None, description="a CSS file added after mmconvert's own "
                                                "(fonts, sizes and colours of anything else)")
    code_style: str = Field("default", description="the Pygments style of code blocks")
    crop: Literal["none", "bottom", "content"] = Field(
        "none", description="none: whole pages (VTCBench's); bottom: the last page cut below "
                            "its last line; content: also every page cut right of its widest "
                            "line (four right margins past it, or --crop-pad; ReadBench's)")
    dialogue_colors: list[str] = Field(
        default_factory=lambda: ["#eef3f8", "#f7f7f2"], min_length=1,
        description="backgrounds the turns of a dialogue alternate between")

    @field_validator("font", check_fields=False)  # the shared fields come in below
    @classmethod
    def _absolute(cls, refs: list[str]) -> list[str]:
        return PageOptions._absolute(refs)

    @field_validator("css")
    @classmethod
    def _readable(cls, path: Path | None) -> Path | None:
        if path is None:
            return None
        css_text(path)  # one line for a file that is not there, too big, or not CSS text
        return path.resolve()

    @field_validator("code_style")
    @classmethod
    def _pygments_style(cls, name: str) -> str:
        from pygments.styles import get_all_styles

        known = sorted(get_all_styles())
        if name not in known:
            raise ValueError(f"no Pygments style {name!r}{did_you_mean(name, known)}")
        return name

    @model_validator(mode="before")
    @classmethod
    def _named_page_size(cls, data: Any) -> Any:
        return named_page_size(data)

    def margins(self) -> tuple[float, float, float, float]:
        """(top, right, bottom, left) in points."""
        return PageOptions.margins(self)  # type: ignore[arg-type]

    def with_values(self, values: dict[str, Any]):
        """These options with ``values`` over them, validated."""
        return PageOptions.with_values(self, values)  # type: ignore[arg-type]


_SHARED_FIELDS: dict[str, Any] = {
    name: (PageOptions.model_fields[name].annotation, PageOptions.model_fields[name])
    for name in SHARED}
if TYPE_CHECKING:  # made at import from PageOptions' own fields: its attributes are theirs
    DocumentOptions = Any
else:
    DocumentOptions = create_model(
        "DocumentOptions", __base__=_DocumentBase, __doc__="How a document is typeset: the "
        "page style fields it shares with the page renderer, and its own.", **_SHARED_FIELDS)


class DocumentConfig(StyledConfig):
    """A ``render --renderer document`` run."""

    STYLED = "document"
    renderer: Literal["document"] = "document"
    style: str | dict[str, Any] | None = style_field()
    document: DocumentOptions = Field(default_factory=DocumentOptions)
    target: TargetOptions = Field(default_factory=TargetOptions)
    prompt_style: Literal["cot", "direct"] = Field(
        "cot", description="prompt style of the manifest's prompts")


class DocumentRow(QuestionRow):
    layout: LayoutRef  # the vector PDF, which any PPI is drawn from
    pdf: RunPath | None = None  # a sweep's variant keeps it as its layout alone
    math_errors: list[dict[str, str]] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list)
    # a run with a target (--target-ratio, --vision-budget): what each item met
    target: dict[str, Any] | None = None


@dataclass
class Printed:
    """What the browser made of one item."""

    pdf: bytes | None  # None until drawn: a typesetting a target's search only measured
    pages: list[tuple[bytes, int, int]]  # PNG, width, height
    math_errors: list[dict[str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    # the PDF's document as ``normalised`` left it open (its fonts loaded), until drawn: what
    # its pages are measured and drawn from
    doc: Any = field(default=None, repr=False, compare=False)


@dataclass
class Body:
    """An item's body as the browser is given it, and what making it found: its math errors
    and refusals (``state``) and the files it names (``named``)."""

    state: RenderState
    html: str
    named: list[str]


class Bodies:
    """The last two items' ``Body`` (the item drawn and the next, printed ahead), shared by
    the renderers a job makes for one item's sizes and widths: the body depends on neither
    (only on the item, its part, its markup, code style and dialogue colours, and its
    folder), and making it again was over a quarter of a budget search's time besides the
    browser's."""

    KEPT = 2

    def __init__(self) -> None:
        self._kept: list[tuple[Item, tuple, Body]] = []

    def of(self, item: Item, part: RenderPart, options, folder: Path | None) -> Body:
        key = (part, options.markup, options.code_style, tuple(options.dialogue_colors), folder)
        for kept, kept_key, body in self._kept:
            if kept is item and kept_key == key:
                return body
        state = RenderState(options, folder)
        html = fields_html(item, part, state)
        body = Body(state, html, references(html))
        self._kept = [*self._kept, (item, key, body)][-self.KEPT:]
        return body


# --- the renderer --------------------------------------------------------------------------

class DocumentRenderer(Renderer[Any], Redraws, Fits, Estimates):  # options made at import
    """Typesets an item's Markdown or HTML in Chromium: tables, code, math, columns."""

    name = "document"
    # 2: the page renderer's version 4 search for a vision budget or ratio; 3: that search
    # tried on pages laid out, not printed (``Estimates``), and only the size kept printed;
    # 4: those estimates moved by the usual offsets, not by the style's printed page's, and
    # a target out of the sizes' reach kept from them once its print bears them out; 5:
    # printed by Debian's Chromium headless shell (3x faster), whose pages differ from the
    # whole browser's by a subpixel
    version = "5"
    config_model = DocumentConfig
    row_model = DocumentRow
    options_model = DocumentOptions
    unit = "page"
    profile = Profile(roles=("page",), paper=("page",),
                      checks=frozenset({"ocr", "text_layer", "image"}))
    help = """Render CORPUS's items as typeset documents: Markdown (or --markup html) with
    tables, code, LaTeX math, lists, quotes, columns and dialogues, through Chromium.

    \b
    Examples:
      mmconvert render items.jsonl --renderer document --render context
      mmconvert render items.jsonl --renderer document --markup html --columns 2 --css my.css
    """

    @classmethod
    def job(cls, config: DocumentConfig, api: ApiOptions | None = None, *,
            dry_run: bool = False) -> DocumentJob:
        return DocumentJob(config)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> DocumentRenderer:
        return cls(cls.options_from(params))

    @classmethod
    def expected_text(cls, row: Row) -> str:
        return cls._shown(row)

    @classmethod
    def page_texts(cls, row: Row, read: Callable[[str], bytes]) -> list[str] | None:
        """Each page's text as its stored PDF's text layer holds it (the pages the images
        were drawn from; ``qa check`` holds that layer to the item's text)."""
        import pymupdf

        pdf = getattr(row, "pdf", None)
        if pdf is None:
            return None
        with pymupdf.open(stream=read(pdf), filetype="pdf") as doc:
            return [page.get_text() for page in doc]

    @classmethod
    def ocr_text(cls, row: Row) -> str:
        """The shown text without formulas and tables: Tesseract reads neither typeset math
        nor ruled cells (it drops whole rows of a correct table, bench/ocr_calibration.py);
        the text-layer check reads those exactly."""
        return cls._shown(row, UNREAD_BY_OCR)

    @classmethod
    def _shown(cls, row: Row, unread: frozenset[str] = frozenset()) -> str:
        params = row.params
        state = RenderState(cls.options_from(params), None)
        # an image the row refused shows its alternative text; one drawn shows no text
        refused = set(getattr(row, "refused", None) or ())
        state.image = (lambda src, alt: f"[{alt or 'image'}]"  # type: ignore[method-assign]
                       if f"image {src}" in refused else "")
        return visible_text(fields_html(item_from_row(row), params.get("render") or "options",
                                        state), unread)

    @classmethod
    def text_question(cls, row: Row) -> str | None:
        return question_beside_options(row)

    @classmethod
    def base_ppi(cls, config: dict[str, Any]) -> float | None:
        return (config.get("document") or {}).get("ppi")

    @classmethod
    def read_layout(cls, data: bytes) -> bytes:
        return data  # the stored layout is the PDF itself

    def __init__(self, options=None, folder: Path | None = None, bodies: Bodies | None = None):
        self.options = options or DocumentOptions()
        self.folder = folder  # the item's folder: the images it may show
        self.bodies = bodies or Bodies()  # a job's renderers share theirs
        self._typeset: tuple[tuple[str, str], Printed] | None = None  # the last item's PDF
        # the pages built for prints asked for ahead, by item and part, for ``typeset``
        self._ahead: dict[tuple[str, str], tuple[Body, str, dict[str, bytes]]] = {}

    def insets(self) -> tuple[float, float, float]:
        """The margins no glyph may cross, less one CSS pixel (0.75 pt): Chromium lays a
        page out in whole pixels, and a line may end up to one past the margin in points."""
        top, right, bottom, left = self.options.margins()
        pad = self.options.crop_pad
        if self.options.crop != "none" and pad is not None:  # a cut closer than a margin
            bottom = min(bottom, pad)
            if self.options.crop == "content":
                right = min(right, pad)
        return (left - 0.75, right - 0.75, bottom - 0.75)

    def typeset(self, item: Item, part: RenderPart) -> Printed:
        """The item's PDF from the browser (its pages not yet drawn); the last item's is
        kept, so that a target's search and the drawing that follows typeset it once."""
        key = (item.id, part)
        if self._typeset is not None and self._typeset[0] == key:
            return self._typeset[1]
        kept = self._ahead.pop(key, None)
        body, document, files = kept if kept is not None else self.page(item, part)
        try:
            pdf, fetched = Browser.get().pdf(document, files)
        except MMConvertError:
            raise
        except DocumentTooDeep as err:
            raise ItemError(str(err), where=item.origin or item.id, field=part,
                            item_id=item.id, stage="render") from None
        except Exception as err:  # noqa: BLE001 - Playwright's errors: one line, this item
            raise ItemError(f"Chromium could not draw the item ({first_line(err, 200)})",
                            where=item.origin or item.id, field=part, item_id=item.id,
                            stage="render") from None
        # what the item's HTML names and the browser asked for, none of it loaded
        refused = list(dict.fromkeys([*body.state.refused, *body.named, *fetched]))
        typeset = Printed(None, [], body.state.math_errors, refused,
                          normalised(pdf, self.options))
        self._typeset = (key, typeset)
        return typeset

    def page(self, item: Item, part: RenderPart) -> tuple[Body, str, dict[str, bytes]]:
        """What the browser is given for the item: its body, the whole page's HTML, and the
        files the page may load."""
        body = self.bodies.of(item, part, self.options, self.folder)
        face_list = faces(self.options)
        try:
            document = page_html(body.html, self.options, face_list)
        except ValueError as err:  # the --css file changed since the options were read
            raise UsageError(f"--css: {err}") from None
        return body, document, {f"/fonts/{face.key}": face.data for face in face_list}

    def print_ahead(self, item: Item, part: RenderPart) -> None:
        """Have the browser print the item's page now, for its ``typeset`` to take with the
        page built here (kept for the last ``AHEAD`` items asked)."""
        built = self._ahead[item.id, part] = self.page(item, part)
        while len(self._ahead) > AHEAD:
            del self._ahead[next(iter(self._ahead))]
        Browser.get().ahead(built[1], built[2])

    def pages(self, item: Item, part: RenderPart) -> Printed:
        """The item's PDF (from the browser) and its pages at the options' PPI."""
        typeset = self.typeset(item, part)
        self._typeset = None
        try:
            data = written(typeset.doc)
            pages = rasterise(typeset.doc, self.options.ppi, self.options.color)
        except ValueError as err:  # past the pixel limit, refused before drawing
            raise ItemError(str(err), where=item.origin or item.id, field="context",
                            item_id=item.id, stage="render") from None
        finally:
            typeset.doc.close()
            typeset.doc = None
        return Printed(data, pages, typeset.math_errors, typeset.refused)

    def shown_text(self, item: Item, part: RenderPart) -> str:
        """The text the item's pages show (a target's text tokens; ``expected_text``): its
        body's, which its typesettings then take as made."""
        return visible_text(self.bodies.of(item, part, self.options, self.folder).html)

    def pixel_sizes(self, item: Item, part: RenderPart) -> list[tuple[int, int]]:
        """The sizes of the item's pages in pixels (a target's vision tokens): typeset, not
        drawn."""
        return page_pixels(self.typeset(item, part).doc, self.options.ppi)

    def usual_offsets(self) -> tuple[float, float]:
        return 0.0, INK_ABOVE_LINE_BOX * self.options.font_size

    def page_edges(self, item: Item, part: RenderPart) -> tuple[float, float] | None:
        """The item laid out in the browser, not printed (``Browser.measure``): the edges of
        what it draws; None for more than one column (a column is filled to the page's
        height only in print) or for what would not fit one page."""
        options = self.options
        top, _, bottom, _ = options.margins()
        if options.columns != 1:
            return None
        _, document, files = self.page(item, part)
        try:
            edge_right, edge_bottom = Browser.get().measure(document, files, self.across())
        except Exception:  # noqa: BLE001 - no estimate: the item is typeset, and meets its
            return None  # own error there
        if top + edge_bottom > options.page_height * POINTS_PER_INCH - bottom:
            return None
        return edge_right, edge_bottom

    def across(self) -> float:
        """The page area's width in points, as ``page_edges`` lays it out."""
        _, right, _, left = self.options.margins()
        return self.options.page_width * POINTS_PER_INCH - left - right

    def lay_out_ahead(self, item: Item, part: RenderPart) -> None:
        """Have the browser lay the item out now, for its ``page_edges`` to take (asked only
        on one column, ``DocumentJob.laid_out_first``: more are not laid out)."""
        _, document, files = self.page(item, part)
        Browser.get().lay_out_ahead(document, files, self.across())

    def edge_pixels(self, right: float, bottom: float) -> tuple[int, int]:
        options = self.options
        top, _, _, left = options.margins()
        pad_right, pad_bottom = cut_pads(options)
        width = options.page_width * POINTS_PER_INCH
        height = options.page_height * POINTS_PER_INCH
        if options.crop != "none":
            height = min(height, top + bottom + pad_bottom)
        if options.crop == "content":
            width = min(width, left + right + pad_right)
        return rect_pixels(width, height, options.ppi)

    def pixel_edges(self, width: int, height: int) -> tuple[float | None, float | None]:
        options = self.options
        top, _, _, left = options.margins()
        pad_right, pad_bottom = cut_pads(options)
        across = width * POINTS_PER_INCH / options.ppi
        down = height * POINTS_PER_INCH / options.ppi
        pixel = POINTS_PER_INCH / options.ppi  # a page is cut where it is a pixel short
        cut_across = options.crop == "content" and \
            across < options.page_width * POINTS_PER_INCH - pixel
        cut_down = options.crop != "none" and \
            down < options.page_height * POINTS_PER_INCH - pixel
        return (across - left - pad_right if cut_across else None,
                down - top - pad_bottom if cut_down else None)

    def redraw_at(self, pdf: bytes, ppis) -> list[list[Any]]:
        return [[PageImage(png, w, h) for png, w, h in rasterise(pdf, ppi, self.options.color)]
                for ppi in ppis]

    def row_params(self, part: RenderPart) -> dict[str, Any]:
        return {**self.options.model_dump(mode="json"), "render": part}


class DocumentJob(StyledJob):
    """``render --renderer document``: each item typeset by the worker's browser; in a group
    of ``batch`` items, each item's page is printed while the one before it is drawn."""

    config: DocumentConfig
    # items a group: the first of each is printed without one asked for ahead (200 short
    # items, one worker, alternated: 10.4 s in groups of 4 against 9.8 s in groups of 16;
    # groups of 64 gained no more)
    batch = 16
    target_batch = 4  # with a target (about 0.6 s an item): groups that keep workers even

    def __init__(self, config: DocumentConfig):
        self.config = config
        chromium_path()  # no browser: one line before the first item
        try:
            import playwright  # noqa: F401
        except ImportError:
            raise UsageError(NO_PLAYWRIGHT) from None
        corpus = Path(config.corpus)
        self.folder = (config.source if config.source and Path(config.source).is_dir()
                       else corpus.parent if corpus.is_file() else None)
        self.bodies = Bodies()
        self.renderer = self.make_renderer(config.document)
        self.prompts = Prompts(config.prompt_dir)
        self.start_style()
        if self.target is not None:
            self.batch = self.target_batch
        self._after: dict[str, Item] = {}  # the group's next item after each
        self._asked: str | None = None  # the item whose print was asked for ahead

    def make_renderer(self, options) -> DocumentRenderer:
        return DocumentRenderer(options, self.folder, self.bodies)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return self.config.document.render or corpus.part_for(item)

    def fonts(self) -> list[dict[str, str]]:
        records = font_records(self.config.document.font)
        for fonts in self.drawn_fonts():
            records += font_records(fonts)
        return list({record["sha256"]: record for record in records}.values())

    def report(self, rows) -> dict[str, Any]:
        return {**super().report(rows),
                "browser": {"name": browser_name(), "version": browser_version(),
                            "path": chromium_path()}}

    def resuming(self, info: dict[str, Any]) -> None:
        """A run drawn by another Chromium (another version, or the whole browser where
        this is the headless shell) is not resumed with this one: its pages would not
        match."""
        browser = info.get("browser") or {}
        name, version = browser.get("name") or "chromium", browser.get("version")
        here = f"{browser_name()} {browser_version()}"
        if version and f"{name} {version}" != here:
            raise UsageError(f"this run was drawn by {name} {version} and this is {here}: "
                             "the pages would differ; use --overwrite to draw it again, or "
                             "--out for a new run")

    def warm(self) -> None:
        """Chromium started (0.9 s) while the run writes run.json (its fonts' digests)."""
        Browser.get(wait=False)

    def prepare(self, items: list[Item]) -> None:
        self._after = {item.id: after for item, after in zip(items, items[1:], strict=False)}

    def print_ahead(self, item: Item, part: RenderPart) -> Item | None:
        """Have the browser print the item's page (unless it was asked already, or a search
        on its layouts comes first: ``laid_out_first``) and then the next item's (as this
        item's part: another part is a page of its own, printed when it is run), so that the
        next one prints in Chromium's process while this one is drawn in ours. The pages are
        those of a print asked for on the spot: a print is taken only by the same document
        and files. An item whose page cannot be made is left to meet its error when it is
        run. The group's next item, if any."""
        after = self._after.pop(item.id, None)
        for each in (item, after):
            if each is None or each.id == self._asked:
                continue
            try:
                renderer = self.renderer_for(each)
                if not self.laid_out_first(renderer):
                    renderer.print_ahead(each, part)
            except Exception:  # noqa: BLE001 - met again, as that item's own, when it runs
                pass
        self._asked = after.id if after is not None else None
        return after

    def laid_out_first(self, renderer: DocumentRenderer) -> bool:
        """Whether a target's search starts on the item's layouts (``Estimates``), so that
        its first print is at the size it finds, not the style's (which is not asked ahead):
        for a budget or ratio, on one column (more are laid out only in print)."""
        target = self.target
        return target is not None and target.fit_pages is None and \
            renderer.options.columns == 1

    def lay_out_ahead(self, after: Item | None, part: RenderPart) -> None:
        """Where a target's search starts on layouts (``laid_out_first``), have the browser
        lay the group's next item (``after``) out at the size its search starts from, at the
        style's width, while this one is drawn: its search then takes its first layout made.
        That layout is what the browser would have been asked next all the same. An item
        whose page cannot be made meets its error when it is run."""
        if after is None or self.target is None:
            return
        try:
            renderer = self.renderer_for(after)
            if self.laid_out_first(renderer):
                base = renderer.options
                options = self.options_at(base, first_size(self.target, base.font_size), None)
                if options is not None:
                    self.make_renderer(options).lay_out_ahead(after, part)
        except Exception:  # noqa: BLE001 - met again, as that item's own, when it runs
            pass

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        config, output = self.config, Output()
        after = self.print_ahead(item, part)
        renderer, target = self.styled_renderer(item, part)
        self.lay_out_ahead(after, part)
        drawn = renderer.pages(item, part)
        prompt, text_prompt = self.prompts.pair(item, part, config.prompt_style, prompt_keys)
        images = [output.image(item_file("images", item.id, f"_p{number:03d}.png"), png,
                               "page", width, height, ppi=renderer.options.ppi)
                  for number, (png, width, height) in enumerate(drawn.pages, start=1)]
        rel = item_file("pdf", item.id, ".pdf")
        stored = output.file(rel, drawn.pdf)
        # the keys in the order every document row has held them
        output.row = {**row_head(item, renderer, renderer.row_params(part), config.seed),
                      "images": images, **({} if target is None else {"target": target}),
                      "layout": {"path": rel, "pages": len(images), "lines": 0, **stored},
                      "pdf": rel,
                      **({"math_errors": drawn.math_errors} if drawn.math_errors else {}),
                      **({"refused": drawn.refused} if drawn.refused else {}),
                      **question_fields(item, config.prompt_style, prompt, text_prompt)}
        return output

