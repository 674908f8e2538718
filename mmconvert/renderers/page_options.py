"""The page style: everything that decides what a page image looks like (``PageOptions``), the
options the page and document renderers share and every row records."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ..items import RenderPart
from ..options import OPTIONS, cli
from ..units import POINTS_PER_INCH, PPI, Colour, Inches, Points, is_gray, page_inches
from .fonts import page_font


def named_page_size(data: Any) -> Any:
    """Options given as a dict with a named ``page_size`` (a4, letter): its width and height
    in inches set from it."""
    if isinstance(data, dict) and data.get("page_size") is not None:
        width, height = page_inches(str(data["page_size"]))
        data = {**data, "page_width": width, "page_height": height}
    return data


class PageOptions(BaseModel):
    """Everything that decides what a page image looks like: the page style. Every row
    records it whole, so any page can be made again; a style file (``--style``) gives any
    field a value, a choice or a range, drawn per item (``styles.py``)."""

    model_config = OPTIONS

    ppi: PPI = Field(92.9, description="pixels per inch of the page images")
    font: list[str] = Field(
        [], description="a font file (TTF, OTF or TTC) or a shipped face (mmconvert list "
                        "styles names them) set in front of the shipped fonts; repeat for a "
                        "fallback chain, first first. Each file's sha256 is in run.json and "
                        "the rows",
        json_schema_extra=cli(metavar="PATH"))
    font_size: float = Field(12.0, gt=2, le=72, description="type size in points")
    line_spacing: float = Field(
        1.2, ge=0.5, le=3.0,
        description="line pitch as a multiple of the font's line height (ascent + descent), "
                    "as ReadBench: 1.2 gives 16.09 pt at 12 pt")
    line_pitch: Points | None = Field(
        None, gt=0, le=300,
        description="line pitch in points, in place of line_spacing (14.4: 1.2 x the type "
                    "size, mmconvert 0.1's look)")
    line_fit: Literal["glyphs", "pitch"] = Field(
        "glyphs", description="a page holds a line while its glyphs end inside the bottom "
                              "margin (glyphs, ReadBench) or while its pitch does (pitch, "
                              "reportlab's frames, as Glyph)")
    space_shrink: float = Field(
        0.0, ge=0, le=0.5, description="the share of each space's width a line may run past "
                                       "the margin to take one more word (reportlab's "
                                       "spaceShrinkage, 0.05 in Glyph's pages)")
    letter_spacing: Points = Field(
        0.0, ge=-2, le=20, description="space added after each character, in points "
                                       "(paragraphs of shaped scripts keep their own)")
    horizontal_scale: float = Field(
        1.0, ge=0.25, le=4, description="the drawn page squeezed (< 1) or stretched (> 1) "
                                        "across, as Glyph's horizontal-scale")
    margin: Inches = Field(0.25, ge=0, le=10, description="page margins in inches (or 10pt, "
                                                          "5mm), each side")
    margin_top: Inches | None = Field(None, ge=0, le=10, json_schema_extra=cli(
        default="--margin"), description="top margin, in place of margin")
    margin_right: Inches | None = Field(None, ge=0, le=10, json_schema_extra=cli(
        default="--margin"), description="right margin, in place of margin")
    margin_bottom: Inches | None = Field(None, ge=0, le=10, json_schema_extra=cli(
        default="--margin"), description="bottom margin, in place of margin")
    margin_left: Inches | None = Field(None, ge=0, le=10, json_schema_extra=cli(
        default="--margin"), description="left margin, in place of margin")
    page_size: str | None = Field(
        None, description="a named page size (a3, a4, a5, b5, letter, legal) or W,H in "
                          "points (595,842), in place of page_width and page_height")
    page_width: Inches = Field(8.27, gt=1, le=40, description="page width in inches (A4)")
    page_height: Inches = Field(11.69, gt=1, le=40, description="page height in inches (A4)")
    columns: int = Field(1, ge=1, le=3, description="columns of text on a page, filled one "
                                                    "after another")
    column_gap: Points = Field(18.0, ge=0, le=200, description="space between columns, in "
                                                               "points")
    align: Literal["left", "right", "center", "justify"] = Field(
        "left", description="how lines sit between the margins (a right-to-left paragraph "
                            "mirrors left and right); justify stretches the spaces of every "
                            "line but a paragraph's last")
    first_line_indent: Points = Field(0.0, ge=-200, le=500,
                                      description="indent of each paragraph's first line, pt")
    left_indent: Points = Field(0.0, ge=0, le=500, description="indent of every line, pt")
    right_indent: Points = Field(0.0, ge=0, le=500,
                                 description="room kept free right of every line, pt")
    newlines: Literal["keep", "reflow", "marker"] = Field(
        "keep", description="the source's newlines: keep (each a line break), reflow (a "
                            "blank line ends a paragraph, other newlines become spaces) or "
                            "marker (each drawn as --newline-marker, the text run on)")
    paragraph_gap: int = Field(0, ge=0, le=3, description="blank lines between paragraphs "
                                                           "(the page is a grid of lines)")
    newline_marker: str = Field(" \u21b5 ", min_length=1, max_length=20,
                                description="what --newlines marker draws for a newline")
    newline_marker_color: Colour | None = Field(
        None, json_schema_extra=cli(default="the text's"),
        description="colour of the newline marker (Glyph's commented-out markup: red)")
    paragraph_color: Colour | None = Field(
        None, json_schema_extra=cli(default="none"),
        description="colour of a box behind each paragraph's lines (Glyph's para-bg-color)")
    text_color: Colour = Field("#000000", description="colour of the text (#rrggbb or a "
                                                      "name)")
    background: Colour = Field("#ffffff", description="colour of the page")
    color: Literal["gray", "rgb"] = Field("gray", description="PNG colour")
    render: RenderPart | None = Field(
        None, description="what becomes image",
        json_schema_extra=cli(default="the corpus' render policy"))
    crop: Literal["content", "bottom", "none"] = Field(
        "content",
        description="content: every page cut on the right to its widest line plus four "
                    "margins and the last one below its last line (ReadBench); bottom: only "
                    "the last page's bottom; none: whole pages")
    crop_pad: Points | None = Field(
        None, ge=0, le=500, json_schema_extra=cli(default="ReadBench's: four right margins, "
                                                          "one bottom margin"),
        description="what a crop keeps right of the widest line and below the last line's "
                    "glyphs, in points (Glyph's auto-crop: 10)")
    indent: Literal["none", "hanging"] = Field(
        "none", description="where a wrapped option line starts: at the margin (ReadBench) or "
                            "under the option's text")

    @field_validator("font")
    @classmethod
    def _absolute(cls, refs: list[str]) -> list[str]:
        """A font file as an absolute path (a run resumed elsewhere finds it), a shipped
        face by its name."""
        return [page_font(ref).path or ref for ref in refs]

    @model_validator(mode="before")
    @classmethod
    def _named_page_size(cls, data: Any) -> Any:
        return named_page_size(data)

    def margins(self) -> tuple[float, float, float, float]:
        """(top, right, bottom, left) in points."""
        sides = (self.margin_top, self.margin_right, self.margin_bottom, self.margin_left)
        return tuple((self.margin if side is None else side) * POINTS_PER_INCH
                     for side in sides)  # type: ignore[return-value]

    @model_validator(mode="after")
    def _room_for_text(self) -> PageOptions:
        """A page whose margins leave less than two ems across, or less than a line's pitch
        down, has no room for text (it drew blank pages, or text past the margin)."""
        top, right, bottom, left = self.margins()
        across = (self.page_width * POINTS_PER_INCH - left - right
                  - (self.columns - 1) * self.column_gap) / self.columns - self.left_indent \
            - self.right_indent - max(self.first_line_indent, 0)
        down = self.page_height * POINTS_PER_INCH - top - bottom
        pitch = self.line_pitch or self.line_spacing * 1.2 * self.font_size
        if across < 2 * self.font_size or down < pitch:
            margins = (f"{self.margin:g} in margins" if len({top, right, bottom, left}) == 1
                       else f"margins of {top:g}, {right:g}, {bottom:g}, {left:g} pt (top, "
                            "right, bottom, left)")
            indents = " and its indents" if (self.left_indent or self.right_indent
                                             or self.first_line_indent > 0) else ""
            raise ValueError(
                f"a {self.page_width:g} x {self.page_height:g} in page with {margins}{indents} "
                f"leaves {max(across, 0):.1f} x {max(down, 0):.1f} pt for text, too "
                f"little for {self.font_size:g} pt type (at least {2 * self.font_size:g} pt "
                f"across and a line, {pitch:.1f} pt, down): widen the page or narrow the "
                "margins")
        if self.color == "gray":
            for name in ("text_color", "background", "newline_marker_color",
                         "paragraph_color"):
                value = getattr(self, name)
                if value is not None and not is_gray(value):
                    raise ValueError(f"{name} {value} is not a gray, and the PNGs are gray: "
                                     "set color: rgb (--color rgb)")
        return self

    @model_validator(mode="before")
    @classmethod
    def _not_version_1(cls, data: Any) -> Any:
        if isinstance(data, dict) and "crop_last" in data:
            raise ValueError("crop_last: these are page renderer 1's options (mmconvert 0.1, "
                             "A4-wide pages, 14.4 pt pitch); render the corpus again, with "
                             "--crop bottom --line-pitch 14.4 --indent hanging for that look")
        return data

    def with_values(self, values: dict[str, Any]) -> PageOptions:
        """These options with ``values`` over them, validated. A named page size stays only
        as the width and height it set (unless ``values`` names one), so that a new width or
        height is not undone by it."""
        return type(self).model_validate({**self.model_dump(exclude={"page_size"}),
                                          **values})

    def identity(self) -> dict[str, Any]:
        """The options as a run identity: the style fields this version added are left out
        while they hold their defaults, so that a run made before them still resumes."""
        data = self.model_dump(mode="json")
        for name in STYLE_FIELDS_ADDED:
            if data.get(name) == PageOptions.model_fields[name].default:
                data.pop(name)
        return data


# fields added to PageOptions with render styles; their defaults are the look runs made
# before them have
STYLE_FIELDS_ADDED = ("font", "line_fit", "space_shrink", "letter_spacing", "horizontal_scale",
                      "margin_top", "margin_right", "margin_bottom", "margin_left", "page_size",
                      "align", "first_line_indent", "left_indent", "right_indent", "newlines",
                      "paragraph_gap", "newline_marker", "text_color", "background", "crop_pad",
                      "newline_marker_color", "paragraph_color",
                      "columns", "column_gap")
