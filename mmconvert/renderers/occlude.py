"""VCR-style caption occluder: an image stacked over its caption, with n-gram spans of the
caption partly covered by white bands, and a text-only image of the same size.

Randomness is sampled apart from drawing: ``layout`` picks the difficulty, the caption's side,
the width and the font, and ``choose_spans`` the spans, with the run seed and the item id;
``draw`` is pure, so a manifest row (its ``renderer.params`` and ``masked_spans``) re-makes the
images bit for bit.

Geometry follows the VCR paper's public code: type at 20 px; a line pitch of the height of the
glyph box of "hg" (English) or "汉" (Chinese) times 1.2 or 1.3; each line's glyphs hang from
its top by the font's ascender; a band covers, between two fractions of the line height, the
columns from the span's first glyph to its last, measured on the drawn line — on every line
the span crosses.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, Field, model_validator

from ..config import RunConfig
from ..errors import ItemError, ItemFiltered, UsageError
from ..items import Item, RenderPart, base_language
from ..jobs import Job, row_head
from ..options import OPTIONS, cli
from ..prompts import Prompts
from ..rows import OcclusionRow, Row
from ..runfolder import Output, item_file
from ..seeds import rng
from .base import Profile, Renderer
from .drawing import encode_png, fill_black, mupdf, show_runs
from .fonts import INVISIBLE, FontChain, caption_font, font_chain, font_manifest
from .layout import Block, Run, control_characters, normalise
from .photo import decode_photo, open_image, photo_size, scaled_height
from .shaping import ShapingLineBreaker, run_extents
from .spans import Span, SpanChooser

if TYPE_CHECKING:
    from ..config import ApiOptions
    from ..corpora import Corpus

Difficulty = Literal["easy", "hard"]
LANGUAGES = ("en", "zh")
# (language, difficulty) -> the band's top and bottom as fractions of the line height
BANDS: dict[tuple[str, str], tuple[float, float]] = {
    ("en", "easy"): (0.46, 0.77), ("en", "hard"): (0.41, 0.80),
    ("zh", "easy"): (0.38, 0.62), ("zh", "hard"): (0.26, 0.75),
}
# language -> (text whose glyph box sets the line height, line height / glyph box)
LINE_SAMPLE = {"en": ("hg", 1.2), "zh": ("汉", 1.3)}
DEFAULT_FONT = {"en": "Liberation Sans", "zh": "Droid Sans Fallback"}
# the hidden-test style draws a face from these for each item
HIDDEN_FONTS = {
    "en": ("Liberation Sans", "Liberation Serif", "Comic Neue", "Ubuntu", "FiraGO"),
    "zh": ("Droid Sans Fallback",),
}
HIDDEN_WIDTHS = (600, 1000)


class OccludeOptions(BaseModel):
    """Everything that decides what an occluded item looks like."""

    model_config = OPTIONS

    style: Literal["standard", "hidden"] = Field(
        "standard", description="standard: caption below, fixed width and font; hidden: the "
        "hidden test set's style (caption above or below, width 600-1000 px, font drawn from "
        "the shipped set, difficulty mixed)")
    difficulty: Literal["easy", "hard", "mixed"] | None = Field(
        None, description="band height: easy, hard, or drawn per item",
        json_schema_extra=cli(default="easy; hidden style: mixed"))
    width: int | None = Field(None, ge=32, le=4096,
                              description="image and caption width in px",
                              json_schema_extra=cli(default="300"))
    font: str | None = Field(
        None, description="caption face: Liberation Sans, Liberation Serif, Comic Neue, "
                          "Ubuntu, FiraGO, Noto Sans, Droid Sans Fallback",
        json_schema_extra=cli(default="Liberation Sans, Droid Sans Fallback for Chinese"))
    font_size: int = Field(20, ge=6, le=200, description="type size in px")
    max_lines: int = Field(5, ge=1, le=50, description="caption lines kept")
    max_height: int = Field(900, ge=32, description="taller stacked images are dropped")
    ngram: int = Field(5, ge=1, le=20, description="words per covered span")
    mask_ratio: float = Field(0.5, gt=0, le=1, description="most of the tokens covered")
    ner: bool = Field(True, description="English: keep named entities uncovered (--no-ner: "
                                        "choose spans without an entity model; the manifest "
                                        "says ner: none)")
    max_pixels: int = Field(50_000_000, ge=1, description="larger images are refused "
                                                          "before decoding")

    @model_validator(mode="after")
    def _style_fits(self):
        if self.style == "hidden":
            for name in ("width", "font"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} is drawn per item in the hidden style; leave it "
                                     "unset")
        if self.font is not None:
            caption_font(self.font)
        return self

    def resolved_difficulty(self) -> str:
        return self.difficulty or ("mixed" if self.style == "hidden" else "easy")


class OccludeConfig(RunConfig):
    """An ``occlude`` run: which image-caption pairs, how to cover them, what to write."""

    renderer: Literal["occlude"] = "occlude"
    occlude: OccludeOptions = Field(default_factory=OccludeOptions)


@dataclass(frozen=True)
class OcclusionParams:
    """What ``sample`` drew for one item; with the item, all ``draw`` needs."""

    language: str
    difficulty: Difficulty
    position: Literal["below", "above"]
    width: int
    font: str
    spans: tuple[Span, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"language": self.language, "difficulty": self.difficulty,
                "position": self.position, "width": self.width, "font": self.font}

    @classmethod
    def from_row(cls, row: OcclusionRow) -> OcclusionParams:
        """The parameters a manifest row recorded (to re-make its images)."""
        params = row.params
        return cls(params["language"], params["difficulty"], params["position"],
                   params["width"], params["font"],
                   tuple(Span(s.text, s.start, s.end) for s in row.masked_spans))


@dataclass(frozen=True)
class CaptionLine:
    start: int  # offsets of the line's characters in the caption
    end: int
    runs: tuple[Run, ...]
    # each character's left and right edge: its own advance on a plain line; on a shaped
    # line those of the grapheme cluster that holds it (so a band hides whole clusters)
    left: tuple[float, ...]
    right: tuple[float, ...]

    def x_at(self, offset: int) -> float:
        """The left edge of the character at ``offset``, or the line's end."""
        if offset >= self.end:
            return self.right[-1] if self.right else 0.0
        return self.left[offset - self.start]

    def extent(self, start: int, end: int) -> tuple[float, float]:
        """Leftmost and rightmost edge of the characters in [start, end) of this line."""
        lo, hi = start - self.start, end - self.start
        return min(self.left[lo:hi]), max(self.right[lo:hi])


@dataclass
class Occlusion:
    params: OcclusionParams
    caption: str  # the caption as drawn (normalised), of which the image shows a prefix
    shown: str  # the part of the caption in the image
    lines: int
    line_height: int
    band: tuple[int, int]  # rows of a line the band covers, [top, bottom)
    stacked: bytes
    text_only: bytes
    size: tuple[int, int]
    # each band as (span index, [left, top, right, bottom]) in pixels (right and bottom
    # exclusive), in the stacked image and in the text-only image
    boxes: dict[str, list[tuple[int, list[int]]]]


def clean_caption(text: str) -> str:
    """NFC, whitespace runs as one space, no zero-width characters: the caption as drawn."""
    text = "".join(c for c in normalise(text) if c not in INVISIBLE)
    return " ".join(text.split())


def language_of(item: Item) -> str:
    language = base_language(item.language)
    if language not in LANGUAGES:
        raise UsageError(f"the occluder draws English or Chinese captions, not {item.language!r}"
                         " (--language en or zh)")
    return language


def caption_height(lines: int, line_height: int) -> int:
    """Height of a caption block of ``lines`` lines (one extra row, as the VCR code)."""
    return lines * line_height + 1


class CaptionOccluder(Renderer[OccludeOptions]):
    """Image over caption, n-gram spans of the caption partly covered (the VCR task)."""

    name = "occlude"
    version = "1"
    config_model = OccludeConfig
    row_model = OcclusionRow
    help = """Make VCR-style items of CORPUS (image-caption pairs): each image stacked over its
    caption, 5-word spans of the caption partly covered by white bands, and a text-only image
    of the same size.

    \b
    Examples:
      mmconvert occlude captions --source path/to/coco --split val2017 --difficulty hard
      mmconvert occlude captions --source pairs.tsv --language zh
      mmconvert occlude captions --source wit.parquet --style hidden --workers 0
    """
    options_model = OccludeOptions
    # VCR's captions start flush at the image's left edge
    profile = Profile(roles=("stacked", "text_only"), shown=("stacked",), twins=("text_only",),
                      ocr=("text_only",), paper=("text_only",), flush_edges=("left",),
                      answer_spans=True)
    drops_items = True  # too short for a span, over --max-height

    @classmethod
    def job(cls, config: OccludeConfig, api: ApiOptions | None = None, *,
            dry_run: bool = False) -> OccludeJob:
        return OccludeJob(config)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> CaptionOccluder:
        return cls(cls.options_from(params), language=params.get("language", "en"))

    @classmethod
    def options_from(cls, params: dict[str, Any]) -> Any:
        """A row records the drawn difficulty, width and font over the options of the same
        name; in the hidden style those are drawn per item, so they are left unset. (A row
        redraws exactly; re-sampling a row's hidden-style difficulty needs the run's options,
        in run.json, since ``mixed`` is recorded as the side it drew.)"""
        drawn = ("width", "font") if params.get("style") == "hidden" else ()
        return super().options_from({k: v for k, v in params.items() if k not in drawn})

    def sample(self, item: Item, seed: int) -> dict[str, Any]:
        params, caption, lines = self.layout(item, seed)
        params = self.choose_spans(item, seed, params, caption, lines)
        return {**params.as_dict(), "masked_spans": [s.as_dict() for s in params.spans]}

    @classmethod
    def expected_text(cls, row: Row) -> str:
        assert isinstance(row, OcclusionRow)
        return row.caption_in_image

    @classmethod
    def ocr_text(cls, row: Row) -> str:
        """The caption without its covered spans (the text-only twin is read back)."""
        assert isinstance(row, OcclusionRow)
        text, out, pos = row.caption_in_image, [], 0
        for span in sorted(row.masked_spans, key=lambda s: s.start):
            out.append(text[pos:span.start])
            pos = span.end
        return " ".join(out + [text[pos:]])

    def __init__(self, options: OccludeOptions | None = None, language: str | None = "en"):
        self.options = options or OccludeOptions()
        self._choosers: dict[str, SpanChooser] = {}
        # layouts of the group ``prepare`` saw last, by (item id, seed), with the item itself
        self._laid_out: dict[tuple[str, int], tuple[Item, tuple]] = {}
        # fail before any work when the entity model is missing
        self.chooser(base_language(language))
        if self.options.font:
            font_chain(self.options.font)

    def chooser(self, language: str) -> SpanChooser:
        if language not in self._choosers:
            o = self.options
            self._choosers[language] = SpanChooser(language, ngram=o.ngram,
                                                   mask_ratio=o.mask_ratio, ner=o.ner)
        return self._choosers[language]

    def fonts(self) -> list[str]:
        """The faces this run may draw in."""
        if self.options.style == "hidden":
            return sorted({f for faces in HIDDEN_FONTS.values() for f in faces})
        return [self.options.font] if self.options.font else sorted(set(DEFAULT_FONT.values()))

    # -- sampling

    def prepare(self, items: list[Item], seed: int) -> None:
        """Lay out a group of items and tag the captions they show with one spaCy call per
        language, for ``render`` to take; an item that cannot be laid out is left for
        ``render`` to refuse."""
        self._laid_out = {}
        shown: dict[str, list[str]] = {}
        for item in items:
            try:
                laid_out = self._layout(item, seed)
            except ItemError:
                continue
            self._laid_out[item.id, seed] = item, laid_out
            params, caption, lines = laid_out
            shown.setdefault(params.language, []).append(caption[:lines[-1].end])
        for language, captions in shown.items():
            self.chooser(language).prepare(captions)

    def layout(self, item: Item, seed: int) -> tuple[OcclusionParams, str, list[CaptionLine]]:
        """Everything but the spans: difficulty, side, width, font; the caption's lines."""
        seen, laid_out = self._laid_out.get((item.id, seed), (None, None))
        return laid_out if seen is item and laid_out is not None else self._layout(item, seed)

    def _layout(self, item: Item, seed: int) -> tuple[OcclusionParams, str, list[CaptionLine]]:
        o = self.options
        language = language_of(item)
        draw = rng(seed, "occlude", item.id)
        difficulty = o.resolved_difficulty()
        if difficulty == "mixed":
            difficulty = draw.choice(("easy", "hard"))
        if o.style == "hidden":
            position = draw.choice(("below", "above"))
            width = draw.randint(*HIDDEN_WIDTHS)
            font = draw.choice(HIDDEN_FONTS[language])
        else:
            position, width = "below", o.width or 300
            font = o.font or DEFAULT_FONT[language]
        caption = self.caption(item)
        lines = self.lines(caption, font, width, item.origin or item.id)[:o.max_lines]
        return (OcclusionParams(language, cast(Any, difficulty), cast(Any, position), width, font,
                                ()), caption, lines)

    def choose_spans(self, item: Item, seed: int, params: OcclusionParams, caption: str,
                     lines: list[CaptionLine]) -> OcclusionParams:
        shown = caption[:lines[-1].end]
        spans = self.chooser(params.language).choose(
            shown, rng(seed, "occlude-spans", item.id), item.origin or item.id)
        return replace(params, spans=tuple(spans))

    def caption(self, item: Item) -> str:
        where = item.origin or item.id
        caption = clean_caption(item.context or "")
        if not caption:
            raise ItemError("empty caption", where=where, field="caption", item_id=item.id)
        bad = control_characters(caption)
        if bad:
            raise ItemError(f"control character U+{ord(bad[0]):04X} in text", where=where,
                            field="caption", item_id=item.id)
        return caption

    def lines(self, caption: str, font: str, width: int, where: str = "") -> list[CaptionLine]:
        """The caption broken into lines of at most ``width`` px, each with its offsets."""
        chain = font_chain(font)
        chain.check(caption, where=where, field="caption")
        breaker = ShapingLineBreaker(chain, self.options.font_size, width)
        out: list[CaptionLine] = []
        pos = 0
        for line in breaker.lines(Block(caption)):
            text = "".join(run.text for run in line.runs)
            if pos < len(caption) and caption[pos] == " " and not text.startswith(" "):
                pos += 1  # the space a line break replaced
            assert caption.startswith(text, pos), (caption, text, pos)
            if line.rtl:  # a right-to-left caption's lines end at the right edge
                line.align_right(width)
            if line.text is None:
                xs = [line.runs[0].x if line.runs else 0.0]
                for char in text:
                    xs.append(xs[-1] + breaker.advance(char))
                left, right = xs[:-1], xs[1:]
            else:
                left, right = [0.0] * len(text), [0.0] * len(text)
                at = 0
                for run in line.runs:
                    for start, end, x0, x1 in run_extents(run):
                        left[at + start:at + end] = [x0] * (end - start)
                        right[at + start:at + end] = [x1] * (end - start)
                    at += len(run.text)
            out.append(CaptionLine(pos, pos + len(text), tuple(line.runs), tuple(left),
                                   tuple(right)))
            pos += len(text)
        return out

    # -- drawing

    def render(self, item: Item, seed: int) -> Occlusion:
        """Sample and draw one item; the photo is checked before any caption work."""
        o = self.options
        where = item.origin or item.id
        photo = open_image(item.image, where, o.max_pixels)
        params, caption, lines = self.layout(item, seed)
        photo_h = scaled_height(photo_size(photo), params.width)
        line_height, _ = line_metrics(params.font, o.font_size, params.language)
        height = photo_h + caption_height(len(lines), line_height)
        if height > o.max_height:
            raise ItemFiltered(f"stacked height {height} px is over --max-height "
                               f"{o.max_height}", where=where, item_id=item.id,
                               rule="over --max-height")
        params = self.choose_spans(item, seed, params, caption, lines)
        return self.draw_occlusion(item, params, photo=photo, caption=caption, lines=lines)

    def draw_occlusion(self, item: Item, params: OcclusionParams, *, photo=None, caption=None,
             lines=None) -> Occlusion:
        """The stacked and text-only PNGs of ``item`` drawn with ``params`` (pure)."""
        from PIL import Image

        o = self.options
        where = item.origin or item.id
        if photo is None:
            photo = open_image(item.image, where, o.max_pixels)
        if caption is None:
            caption = self.caption(item)
            lines = self.lines(caption, params.font, params.width, where)[:o.max_lines]
        picture = decode_photo(photo, params.width, where)
        block, line_height, band, bands = self.caption_block(lines, params)
        width = params.width
        height = picture.height + block.height
        stacked = Image.new("RGB", (width, height), "white")
        top = 0 if params.position == "below" else block.height
        stacked.paste(picture, (0, top))
        stacked.paste(block, (0, picture.height if params.position == "below" else 0))
        text_only = Image.new("L", (width, height), 255)
        text_top = (height - block.height) // 2
        text_only.paste(block, (0, text_top))
        caption_top = picture.height if params.position == "below" else 0
        boxes = {name: [(span, [x0, y0 + top, x1, y1 + top]) for span, (x0, y0, x1, y1) in bands]
                 for name, top in (("stacked", caption_top), ("text_only", text_top))}
        return Occlusion(params, caption, caption[:lines[-1].end], len(lines), line_height,
                         band, encode_png(stacked), encode_png(text_only), (width, height),
                         boxes)

    def caption_block(self, lines: list[CaptionLine], params: OcclusionParams):
        """The caption's lines drawn black on white (8-bit gray), bands already applied; with
        the line height, the band's rows within a line, and each band drawn as (span index,
        [left, top, right, bottom]) in the block (right and bottom exclusive)."""
        from PIL import ImageDraw

        size = self.options.font_size
        chain = font_chain(params.font)
        line_height, ascent = line_metrics(params.font, size, params.language)
        block = draw_lines(chain, [line.runs for line in lines], size, params.width,
                           line_height, ascent)
        low, high = BANDS[(params.language, params.difficulty)]
        band = (round(low * line_height), round(high * line_height))
        pen = ImageDraw.Draw(block)
        bands = []
        for left, right, row, span in band_boxes(lines, params.spans):
            top = row * line_height
            box = [left, top + band[0], right, top + band[1]]
            pen.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=255)
            bands.append((span, box))
        return block, line_height, band, bands


def band_boxes(lines: list[CaptionLine], spans) -> list[tuple[int, int, int, int]]:
    """(first column, column after the last, line index, span index) of each band: one per
    line a span crosses, from the left edge of its first glyph there to the right edge of its
    last."""
    boxes = []
    for index, span in enumerate(spans):
        for row, line in enumerate(lines):
            start, end = max(span.start, line.start), min(span.end, line.end)
            if start < end:
                left, right = line.extent(start, end)
                boxes.append((math.floor(left), math.ceil(right), row, index))
    return boxes


def draw_lines(chain: FontChain, lines, size: float, width: int, line_height: int,
               ascent: int):
    """Runs of each line drawn with MuPDF, line i's glyphs hanging from ``i * line_height``."""
    from PIL import Image

    m = mupdf()
    text = m.FzText()
    for row, runs in enumerate(lines):
        show_runs(text, chain.fonts, runs, size, 0.0, row * line_height + ascent)
    height = caption_height(len(lines), line_height)
    pix = m.FzPixmap(m.fz_device_gray(), width, height, m.FzSeparations(), 0)
    m.fz_clear_pixmap_with_value(pix, 255)
    fill_black(m.fz_new_draw_device(m.FzMatrix(), pix), text)
    samples = bytes(m.fz_pixmap_samples_memoryview(pix))
    return Image.frombytes("L", (width, height), samples)


@lru_cache(maxsize=64)
def line_metrics(font: str, size: int, language: str) -> tuple[int, int]:
    """(line height, baseline below the line's top), in px. The line height is the glyph box
    of the language's sample text (its outlines' top to bottom, rounded up to whole pixels)
    times 1.2 or 1.3; the baseline sits the font's ascender below the top, rounded up — both
    as Pillow measures and places text in the VCR code."""
    sample, factor = LINE_SAMPLE[language]
    chain = font_chain(font)
    top, bottom = 0.0, 0.0
    for char in sample:
        index = chain.glyph(char)[0]
        low, high = _outline_extent(chain.specs[index].name, chain.fonts[index], char)
        top, bottom = max(top, high), min(bottom, low)
    box = math.ceil((top - bottom) * size - 1e-9)
    return int(box * factor), math.ceil(chain.ascender * size - 1e-9)


@lru_cache(maxsize=256)
def _outline_extent(name: str, font, char: str) -> tuple[float, float]:
    """Lowest and highest point of ``char``'s outline, in ems."""
    from fontTools.pens.boundsPen import BoundsPen
    from fontTools.ttLib import TTFont

    face = TTFont(io.BytesIO(bytes(font.buffer)), lazy=True)
    glyphs = face.getGlyphSet()
    pen = BoundsPen(glyphs)
    glyphs[face.getBestCmap()[ord(char)]].draw(pen)
    em = face["head"].unitsPerEm
    _, low, _, high = pen.bounds or (0, 0, 0, 0)
    return low / em, high / em


class OccludeJob(Job):
    """``mmconvert occlude``: image over caption with spans partly covered (VCR)."""

    config: OccludeConfig

    batch = 32  # captions a worker sends through spaCy's nlp.pipe at once

    def __init__(self, config: OccludeConfig):
        self.config = config
        self.renderer = CaptionOccluder(config.occlude,
                                         language=config.corpus_options.get("language"))
        self.prompts = Prompts(config.prompt_dir)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return "context"

    def fonts(self) -> list[dict[str, str]]:
        seen: dict[str, dict[str, str]] = {}
        for face in self.renderer.fonts():
            for entry in font_manifest(font_chain(face)):
                seen.setdefault(entry["name"], entry)
        return list(seen.values())

    def prepare(self, items: list[Item]) -> None:
        self.renderer.prepare(items, self.config.seed)

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        config, output = self.config, Output()
        result = self.renderer.render(item, config.seed)
        params = result.params
        width, height = result.size
        images = [
            output.image(item_file("images", item.id, "_stacked.png"), result.stacked,
                        "stacked", width, height, boxes=span_boxes(result.boxes["stacked"])),
            output.image(item_file("images", item.id, "_text.png"), result.text_only,
                        "text_only", width, height,
                        boxes=span_boxes(result.boxes["text_only"])),
        ]
        values = {"count": str(len(params.spans)),
                  "masked_caption": masked_caption(result.shown, params.spans)}
        row = row_head(item, self.renderer, {
            **config.occlude.model_dump(mode="json"), **params.as_dict(),
            # the entity filter as it ran: a language with no entity model (Chinese) had none,
            # whatever --ner asked, so the params and the row's ``ner`` agree
            "ner": config.occlude.ner and self.renderer.chooser(params.language).ner != "none",
            "line_height": result.line_height, "band_rows": list(result.band)}, config.seed)
        row.update({
            "images": images,
            "prompt": self.prompts.fill("vcr_image", values, prompt_keys),
            "text_prompt": self.prompts.fill("vcr_text", values, prompt_keys),
            "caption": result.caption, "caption_in_image": result.shown,
            "masked_spans": [span.as_dict() for span in params.spans],
            "answer": [span.text for span in params.spans],
            "difficulty": params.difficulty, "position": params.position, "font": params.font,
            "ner": self.renderer.chooser(params.language).ner, "lines": result.lines,
            "source_image": item.image if isinstance(item.image, str) else None,
            "metadata": item.metadata,
        })
        output.row = row
        return output



def span_boxes(boxes) -> list[dict[str, Any]]:
    """The bands of an image as manifest entries: the covered span (an index into
    ``masked_spans``) and its box [left, top, right, bottom] in pixels, right and bottom
    exclusive. Post-processing (scale, rotate) moves them with the image."""
    return [{"span": span, "box": box} for span, box in boxes]


def masked_caption(text: str, spans, blank: str = "[___]") -> str:
    """``text`` with each span replaced by ``blank`` (the text-only twin's caption)."""
    out, pos = [], 0
    for span in spans:
        out += [text[pos:span.start], blank]
        pos = span.end
    return "".join(out + [text[pos:]])
