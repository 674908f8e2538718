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

import atexit
import base64
import functools
import hashlib
import html
import mimetypes
import os
import queue
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator, model_validator

from ..errors import ItemError, MMConvertError, UsageError
from ..items import Item, RenderPart
from ..jobs import question_fields, row_head
from ..options import OPTIONS
from ..prompts import Prompts
from ..rows import LayoutRef, QuestionRow, RunPath
from ..runfolder import Output, item_file
from ..units import POINTS_PER_INCH
from .base import Renderer, item_from_row, question_beside_options
from .drawing import set_png_ppi
from .fonts import font_bytes, font_chain, page_font
from .layout import control_characters, normalise
from .page import MAX_ITEM_MEGAPIXELS, image_fields, label_fields
from .page_options import PageOptions
from .styled import StyledConfig, StyledJob, style_field
from .target import TargetOptions

if TYPE_CHECKING:
    from ..config import ApiOptions
    from ..corpora import Corpus

HOST = "https://mmconvert.invalid"  # the one origin the page may load from, served by us
# Markdown nesting (quotes, lists, emphasis) the parser reads; an item that reaches it is
# refused (markdown-it drops what lies deeper, CommonMark's preset at 20)
MAX_NESTING = 100
# elements that load or show another document, or move the page: an item holding one is
# refused (the browser's network is closed too: no request leaves the machine)
EMBEDDING = ("iframe", "frame", "frameset", "object", "embed", "applet", "portal",
             "fencedframe", "meta", "base")
# elements open at once that Chromium's HTML parser nests (past it, it sets them beside their
# parents: the page no longer draws what the HTML says)
MAX_DOM_DEPTH = 512
# the largest --css file read (it is read once a process)
MAX_CSS_BYTES = 1 << 20
# a style's align as CSS: left and right are the paragraph's start and end, so that they
# mirror in a right-to-left paragraph, as the page renderer's do
ALIGN = {"left": "start", "right": "end", "center": "center", "justify": "justify"}
# the page style fields the document shares with the page renderer
SHARED = ("ppi", "font", "font_size", "line_spacing", "line_pitch", "letter_spacing", "margin",
          "margin_top", "margin_right", "margin_bottom", "margin_left", "page_size",
          "page_width", "page_height", "columns", "column_gap", "align", "first_line_indent",
          "left_indent", "right_indent", "paragraph_gap", "paragraph_color", "text_color",
          "background", "color", "crop_pad", "render")
# what the OCR check does not ask Tesseract to read (``DocumentRenderer.ocr_text``)
UNREAD_BY_OCR = frozenset({"math", "table"})
# faces from pymupdf-fonts: the body (regular, bold, italic, bold italic), code and math
BODY_FACES = {("normal", "normal"): "notos", ("bold", "normal"): "notosbo",
              ("normal", "italic"): "notosit", ("bold", "italic"): "notosbi"}
CODE_FACES = {"normal": "fimo", "bold": "fimbo"}
MATH_FACE = "math"


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
            from ..errors import did_you_mean

            raise ValueError(f"no Pygments style {name!r}{did_you_mean(name, known)}")
        return name

    @model_validator(mode="before")
    @classmethod
    def _named_page_size(cls, data: Any) -> Any:
        return PageOptions._named_page_size(data)

    def margins(self) -> tuple[float, float, float, float]:
        """(top, right, bottom, left) in points."""
        return PageOptions.margins(self)  # type: ignore[arg-type]

    def with_values(self, values: dict[str, Any]):
        """These options with ``values`` over them, validated."""
        return PageOptions.with_values(self, values)  # type: ignore[arg-type]


DocumentOptions = create_model(
    "DocumentOptions", __base__=_DocumentBase, __doc__="How a document is typeset: the page "
    "style fields it shares with the page renderer, and its own.",
    **{name: (PageOptions.model_fields[name].annotation, PageOptions.model_fields[name])
       for name in SHARED})


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
class Drawn:
    """What the browser made of one item."""

    pdf: bytes
    pages: list[tuple[bytes, int, int]]  # PNG, width, height
    math_errors: list[dict[str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


# --- the source as HTML ------------------------------------------------------------------------

def _math_plugins(md) -> None:
    """$...$, $$...$$, \\(...\\) and \\[...\\] as MathML; LaTeX that does not convert is its
    source in the code face, and an entry in the drawing's ``math_errors``."""
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.texmath import texmath_plugin

    dollarmath_plugin(md, allow_space=True, allow_digits=False, double_inline=True)
    texmath_plugin(md, delimiters="brackets")
    # \(…\) and \[…\] anywhere in a paragraph, a list item, a cell, a heading or a quote,
    # over lines too (texmath reads \[…\] only as a block of its own, and \(…\) on one
    # line: elsewhere CommonMark's escapes dropped their backslashes, "[ x^2 ]")
    md.inline.ruler.before("escape", "math_brackets", _bracket_math)
    for kind, display in (("math_inline", False), ("math_inline_double", True),
                          ("math_block", True), ("math_block_label", True),
                          ("math_block_eqno", True)):
        md.add_render_rule(kind, lambda self, tokens, idx, options, env, d=display:
                           latex_html(tokens[idx].content, d, env["state"].math_errors))


_BRACKETS = {"\\(": ("\\)", "math_inline"), "\\[": ("\\]", "math_inline_double")}


def _bracket_math(state, silent: bool) -> bool:
    """An inline rule: ``\\(…\\)`` (inline) or ``\\[…\\]`` (display) from here to the
    first closing delimiter, over lines too; a delimiter never closed is left to the rules
    after it (an escaped bracket)."""
    opening = state.src[state.pos:state.pos + 2]
    if opening not in _BRACKETS:
        return False
    closing, kind = _BRACKETS[opening]
    end = state.src.find(closing, state.pos + 2)
    if end < 0 or not state.src[state.pos + 2:end].strip():
        return False
    if not silent:
        token = state.push(kind, "math", 0)
        token.content = state.src[state.pos + 2:end]
        token.markup = opening
    state.pos = end + 2
    return True


# a LaTeX command latex2mathml did not know, which it leaves in the MathML as text
_UNKNOWN_COMMAND = re.compile(r"<(mi|mo|mn)\b[^>]*>[^<]*?(\\[A-Za-z]+)")


def latex_html(latex: str, display: bool, errors: list[dict[str, str]]) -> str:
    """``latex`` as MathML; LaTeX that does not convert, or that holds a command the
    converter does not know (it would draw ``\\notacommand`` as letters), is drawn as its
    source in the code face and recorded in ``errors``."""
    from latex2mathml.converter import convert

    from ..errors import first_line

    try:
        mathml = convert(latex.strip(), display="block" if display else "inline")
        unknown = _UNKNOWN_COMMAND.search(mathml)
        if unknown:
            raise ValueError(f"unknown command {unknown.group(2)}")
    except Exception as err:  # noqa: BLE001 - any LaTeX it cannot read: drawn as source
        errors.append({"latex": latex, "error": first_line(err, 200)})
        tag = "pre" if display else "code"
        return f'<{tag} class="math-error">{html.escape(latex)}</{tag}>'
    return mathml


@functools.lru_cache(maxsize=8)
def _parser(code_style: str):
    """The Markdown parser of a code style (made once: a drawing's own state travels in the
    render's ``env``)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.footnote import footnote_plugin
    from mdit_py_plugins.tasklists import tasklists_plugin

    md = MarkdownIt("commonmark", {"html": True, "maxNesting": MAX_NESTING,
                                   "highlight": functools.partial(highlight, code_style)})
    md.enable(["table", "strikethrough"])
    md.use(tasklists_plugin).use(footnote_plugin)
    _math_plugins(md)
    md.add_render_rule("link_open", lambda *a: '<span class="link">')
    md.add_render_rule("link_close", lambda *a: "</span>")
    md.add_render_rule("image", lambda self, tokens, idx, options, env: env["state"].image(
        tokens[idx].attrGet("src") or "", tokens[idx].content))
    return md


def markdown_html(text: str, state: RenderState) -> str:
    """``text`` (Markdown) as an HTML fragment; a ValueError when it nests deeper than the
    parser reads (markdown-it drops whatever lies past ``MAX_NESTING`` levels of quotes,
    lists and emphasis: 3,000 nested items drew 9)."""
    md = _parser(state.options.code_style)
    env = {"state": state}
    tokens = md.parse(text, env)
    deepest = max((t.level for token in tokens for t in [token, *(token.children or ())]),
                  default=0)
    if deepest >= MAX_NESTING - 1:
        raise ValueError(f"the Markdown nests {MAX_NESTING} or more levels deep (quotes, lists "
                         "or emphasis); what lies deeper would not be drawn")
    return md.renderer.render(tokens, md.options, env)


def highlight(style: str, code: str, language: str, attrs: str) -> str:
    """A code block in Pygments' colours (inline styles) when its language is known; ""
    lets markdown-it escape it as plain code."""
    # HtmlFormatter from its own module: pygments.formatters' lazy lookup fails in a thread
    # while another thread is importing the same formatter (qa check reads rows on threads)
    from pygments import highlight as colour
    from pygments.formatters.html import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(language) if language else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""
    return colour(code, lexer, HtmlFormatter(nowrap=True, noclasses=True, style=style))


class RenderState:
    """One item's drawing: its math errors, what was refused, the images it may show."""

    def __init__(self, options, folder: Path | None):
        self.options = options
        self.folder = folder
        self.math_errors: list[dict[str, str]] = []
        self.refused: list[str] = []

    def image(self, src: str, alt: str) -> str:
        """An image from the item's own folder, inlined; anything else refused and shown as
        its alternative text."""
        found = self.local(src)
        if found is None:
            self.refused.append(f"image {src}")
            return f'<span class="refused">[{html.escape(alt or "image")}]</span>'
        kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        data = base64.b64encode(found.read_bytes()).decode("ascii")
        return f'<img src="data:{kind};base64,{data}" alt="{html.escape(alt)}">'

    def local(self, src: str) -> Path | None:
        """``src`` as a file inside the item's folder, or None (a URL, an absolute path, a
        path that leaves the folder, a file that is not there)."""
        if self.folder is None or not src or re.match(r"^[a-z][a-z0-9+.-]*:", src, re.I):
            return None
        relative = PurePosixPath(src)
        if relative.is_absolute() or ".." in relative.parts:
            return None
        try:
            path = (self.folder / relative).resolve()
            if not path.is_file() or not path.is_relative_to(self.folder.resolve()):
                return None
        except (OSError, RuntimeError):  # a loop of links, a name too long: not loaded
            return None
        return path


def dialogue_html(turns: list[dict[str, str]], state: RenderState, markup: str) -> str:
    colors = state.options.dialogue_colors
    parts = []
    for number, turn in enumerate(turns):
        body = markdown_html(turn["content"], state) if markup == "markdown" \
            else turn["content"]
        parts.append(f'<div class="turn" style="background:{colors[number % len(colors)]}">'
                     f'<div class="speaker">{html.escape(turn["role"])}</div>{body}</div>')
    return '<div class="dialogue">' + "".join(parts) + "</div>"


def fields_html(item: Item, part: RenderPart, state: RenderState) -> str:
    """The part's fields as HTML: the context (a dialogue when the item holds turns), the
    question, the options with their letters. A field that cannot be drawn faithfully is an
    ItemError naming it: a control character (NUL and the like, as on the page renderer's
    pages), Markdown nested past what the parser reads, or an element that would load or
    show another document, or move the page (``EMBEDDING``)."""
    markup = state.options.markup
    blocks = []
    turns = (item.metadata or {}).get("turns")
    for name, text in label_fields(image_fields(item, part)):
        dialogue = name == "context" and isinstance(turns, list) and bool(turns)
        try:
            for source in ([t.get("content", "") for t in turns] if dialogue else [text]):
                bad = control_characters(normalise(str(source)))
                if bad:
                    raise ValueError(f"control character U+{ord(bad[0]):04X} in text")
            body = (dialogue_html(turns, state, markup) if dialogue else
                    markdown_html(text, state) if markup == "markdown" else text)
            embedded = embedding(body)
            if embedded:
                raise ValueError(f"the text holds {embedded}, which loads another document "
                                 "or moves the page; mmconvert draws only the item's own text")
        except ValueError as err:
            raise ItemError(str(err), where=item.origin or item.id, field=name.split("[")[0],
                            item_id=item.id, stage="render") from None
        kind = "option" if name.startswith("options[") else name
        blocks.append(f'<section class="{kind}">{body}</section>')
    return "\n".join(blocks)


class _Embedding(HTMLParser):
    """The first element of an HTML fragment that loads or shows another document, or
    moves the page (``EMBEDDING``; an ``srcdoc`` or ``http-equiv`` on any element too)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: str | None = None

    def handle_starttag(self, tag, attrs):
        if self.found is None:
            names = {name for name, _ in attrs}
            if tag in EMBEDDING:
                self.found = f"<{tag}>"
            elif names & {"srcdoc", "http-equiv"}:
                self.found = f"<{tag} {sorted(names & {'srcdoc', 'http-equiv'})[0]}>"


def embedding(body: str) -> str | None:
    """``body``'s first element that ``_Embedding`` finds, as ``<iframe>``; None."""
    if "<" not in body:
        return None
    reader = _Embedding()
    reader.feed(body)
    reader.close()
    return reader.found


# --- fonts and the page's CSS ------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Face:
    family: str
    name: str
    data: bytes
    weight: str = "normal"
    style: str = "normal"

    @functools.cached_property
    def key(self) -> str:
        return hashlib.sha256(self.data).hexdigest()[:16]


def _shipped(code: str) -> bytes:
    """A face pymupdf-fonts ships, by its code."""
    import pymupdf

    return bytes(pymupdf.Font(code).buffer)


def faces(options) -> list[Face]:
    """Every face the page may use, the body's first: the style's fonts (or Noto Sans in
    four faces), the code face, the math face, then the shipped chain's faces for the
    scripts the body lacks. Read once a process for each list of fonts."""
    return list(_faces(tuple(options.font)))


@functools.lru_cache(maxsize=8)
def _faces(fonts: tuple[str, ...]) -> tuple[Face, ...]:
    found: list[Face] = []
    if fonts:
        for number, ref in enumerate(fonts):
            spec = page_font(ref)
            found.append(Face(f"body{number}", spec.name, font_bytes(spec)))
    else:
        for (weight, style), code in BODY_FACES.items():
            found.append(Face("body0", "Noto Sans", _shipped(code), weight, style))
    for weight, code in CODE_FACES.items():
        found.append(Face("code", "Fira Mono", _shipped(code), weight))
    found.append(Face("math", "Noto Sans Math", _shipped(MATH_FACE)))
    chain = font_chain()  # the shipped chain, for the scripts the faces above lack
    for number, (spec, font) in enumerate(zip(chain.specs, chain.fonts, strict=True)):
        found.append(Face(f"chain{number}", spec.name, font_bytes(spec, font)))
    return tuple(found)


def font_records(fonts: list[str]) -> list[dict[str, str]]:
    """Name, family and sha256 of each face of a list of fonts, for run.json."""
    seen, out = set(), []
    for face in _faces(tuple(fonts)):
        digest = hashlib.sha256(face.data).hexdigest()
        if digest not in seen:
            seen.add(digest)
            out.append({"name": face.name, "family": face.family, "sha256": digest})
    return out


def page_css(options, face_list: list[Face]) -> str:
    top, right, bottom, left = options.margins()
    width = options.page_width * POINTS_PER_INCH
    height = options.page_height * POINTS_PER_INCH
    rules = [f"@font-face {{ font-family: '{f.family}'; src: url('{HOST}/fonts/{f.key}'); "
             f"font-weight: {f.weight}; font-style: {f.style}; }}" for f in face_list]
    body = [f.family for f in face_list if f.family.startswith("body")]
    chain = [f.family for f in face_list if f.family.startswith("chain")]
    stack = ", ".join(f"'{name}'" for name in dict.fromkeys([*body, *chain, "math"]))
    line_height = (f"{options.line_pitch:.3f}pt" if options.line_pitch is not None
                   else f"{options.line_spacing * 1.2:.4f}")
    code = ", ".join(f"'{name}'" for name in dict.fromkeys(["code", *chain]))
    rules += [
        f"@page {{ size: {width:.3f}pt {height:.3f}pt; margin: {top:.3f}pt {right:.3f}pt "
        f"{bottom:.3f}pt {left:.3f}pt; }}",
        f"html {{ background: {options.background}; }}",
        f"body {{ margin: 0; font-family: {stack}; font-size: {options.font_size}pt; "
        f"line-height: {line_height}; color: {options.text_color}; "
        f"text-align: {ALIGN[options.align]}; column-count: {options.columns}; "
        f"column-gap: {options.column_gap}pt; column-fill: auto; "
        "-webkit-print-color-adjust: exact; "
        "print-color-adjust: exact; overflow-wrap: anywhere; }",
        f"pre, code, kbd, samp, .math-error {{ font-family: {code}; font-size: 0.92em; }}",
        "pre { white-space: pre-wrap; background: #f6f8fa; padding: 0.4em 0.6em; "
        "text-align: left; }",
        f"math {{ font-family: 'math', {stack}; }}",
        "table { border-collapse: collapse; margin: 0.4em 0; } "
        "th, td { border: 0.75pt solid #888; padding: 0.15em 0.45em; vertical-align: top; } "
        "th { background: #eee; }",
        "blockquote { margin: 0.4em 0 0.4em 0.8em; padding-left: 0.6em; "
        "border-left: 2.5pt solid #bbb; color: #333; }",
        "img { max-width: 100%; } section { margin-bottom: 0.5em; } "
        "section.option p { margin: 0.1em 0; }",
        ".dialogue .turn { padding: 0.3em 0.6em; margin: 0.2em 0; break-inside: avoid; } "
        ".dialogue .speaker { font-weight: bold; }",
        "h1, h2, h3, h4, h5, h6 { line-height: 1.2; margin: 0.5em 0 0.3em; }",
        ".task-list-item { list-style-type: none; }",
        # each block takes its direction from its own first strong character (an Arabic
        # paragraph runs right to left among English ones), and left and right mirror with it
        "p, li, td, th, h1, h2, h3, h4, h5, h6, blockquote, .speaker { "
        "unicode-bidi: plaintext; }",
        *style_css(options),
    ]
    return "\n".join(rules)


def style_css(options) -> list[str]:
    """The rules of the page style fields set away from their defaults (so that a page
    drawn at the defaults is the same as before they were taken)."""
    rules = []
    if options.letter_spacing:
        rules.append(f"body {{ letter-spacing: {options.letter_spacing:g}pt; }}")
    if options.first_line_indent:
        rules.append(f"p {{ text-indent: {options.first_line_indent:g}pt; }}")
    if options.left_indent or options.right_indent:
        rules.append(f"section {{ margin-inline: {options.left_indent:g}pt "
                     f"{options.right_indent:g}pt; }}")
    if options.paragraph_gap:  # blank lines after a paragraph, in place of the 1 em
        rules.append(f"p {{ margin: 0 0 {options.paragraph_gap}lh; }}")
    if options.paragraph_color:
        rules.append(f"p {{ background: {options.paragraph_color}; }}")
    return rules


def css_text(path: Path) -> str:
    """A ``--css`` file's text, read once a process (for each version of the file): a
    ValueError naming the file when it is not a regular file, is over ``MAX_CSS_BYTES``, is
    not UTF-8, or holds ``</style``, which would end the page's style sheet and let what
    follows be read as the page's HTML."""
    try:
        st = os.stat(path)  # follows links: a loop of them is an OSError
    except OSError as err:
        raise ValueError(f"{path}: cannot read this CSS file "
                         f"({err.strerror or type(err).__name__})") from None
    import stat as modes

    if not modes.S_ISREG(st.st_mode):
        raise ValueError(f"{path}: not a CSS file (not a regular file)")
    if st.st_size > MAX_CSS_BYTES:
        raise ValueError(f"{path}: {st.st_size:,} bytes, over the {MAX_CSS_BYTES:,} a --css "
                         "file may hold")
    return _css_text(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _css_text(path: str, size: int, mtime: int) -> str:
    with open(path, "rb") as handle:
        data = handle.read(MAX_CSS_BYTES + 1)
    if len(data) > MAX_CSS_BYTES:
        raise ValueError(f"{path}: over the {MAX_CSS_BYTES:,} bytes a --css file may hold")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start}); save the CSS file as "
                         "UTF-8") from None
    if "</style" in text.lower():
        raise ValueError(f"{path}: holds '</style', which would end the page's style sheet "
                         "(and let what follows be read as HTML); a CSS file has no tags")
    return text


def page_html(body: str, options, face_list: list[Face]) -> str:
    """The page's head (mmconvert's CSS, then the user's) and body, as the browser's page
    takes them (written into its ``<html>``)."""
    css = page_css(options, face_list)
    extra = css_text(options.css) if options.css else ""
    return (f"<head><meta charset=\"utf-8\"><style>\n{css}\n</style><style>\n{extra}\n"
            f"</style></head><body>\n{body}\n</body>")


# --- visible text --------------------------------------------------------------------------

class _Text(HTMLParser):
    """The text a page shows, in the order the browser draws it: text nodes (not style,
    script, head or a formula's annotation), the numbers of ordered lists and a root's
    radical (a bullet is a shape, not text), and a sum's limits as Chromium draws them, the
    upper one first (``munderover``: over, base, under)."""

    HIDDEN = {"style", "script", "head", "title", "annotation", "annotation-xml"}
    # MathML elements whose children the browser draws in another order than the source's
    DRAWN_ORDER = {"munderover": (2, 0, 1)}

    def __init__(self, unread: frozenset[str] = frozenset()):
        super().__init__(convert_charrefs=True)
        self.HIDDEN = self.HIDDEN | unread
        self.parts: list[str] = []
        self.hidden = 0
        self.lists: list[list[Any]] = []  # [kind, next number]
        self.depth = 0  # element depth inside <math>
        self.frames: list[dict[str, Any]] = []  # the reordered elements open around us

    def emit(self, text: str) -> None:
        if self.frames and self.frames[-1]["segments"]:
            self.frames[-1]["segments"][-1].append(text)
        else:
            self.parts.append(text)

    def handle_starttag(self, tag, attrs):
        if self.depth or tag == "math":
            if self.frames and self.depth == self.frames[-1]["depth"] + 1:
                self.frames[-1]["segments"].append([])  # a new child of the frame
            if tag in self.DRAWN_ORDER:
                self.frames.append({"tag": tag, "depth": self.depth, "segments": []})
            self.depth += 1
        if tag in self.HIDDEN:
            self.hidden += 1
        elif tag in ("ul", "ol"):
            start = dict(attrs).get("start")
            self.lists.append([tag, int(start) if start and start.isdigit() else 1])
        elif tag == "li" and self.lists and not self.hidden:
            kind = self.lists[-1]
            if kind[0] == "ol":
                self.emit(f"{kind[1]}. ")
                kind[1] += 1
            # a bullet is drawn as a shape, not text: it is not in the text layer
        elif tag in ("br", "p", "div", "tr", "td", "th", "section", "pre"):
            self.emit(" ")
        if tag in ("msqrt", "mroot") and not self.hidden:  # the radical is a glyph
            self.emit("√")

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1
            frame = self.frames[-1] if self.frames else None
            if frame and tag == frame["tag"] and self.depth == frame["depth"]:
                self.frames.pop()
                segments = frame["segments"]
                order = self.DRAWN_ORDER[tag]
                if len(segments) == len(order):
                    segments = [segments[k] for k in order]
                self.emit("".join("".join(part) for part in segments))
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in ("ul", "ol") and self.lists:
            self.lists.pop()

    def handle_data(self, data):
        if not self.hidden:
            self.emit(data)


class _References(HTMLParser):
    """What an HTML fragment would load: scripts, and the src and href of anything but a
    link (a link is shown as text), and CSS url()s; data: URLs are inline, not loaded."""

    LOADS = {"src", "href", "srcset", "data", "poster", "background"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.found.append("script")
        for name, value in attrs:
            if value and tag != "a" and name in self.LOADS and not value.startswith("data:"):
                self.found.append(value)
            if value and name == "style":
                self.found.extend(_css_urls(value))

    def handle_data(self, data):
        if self.lasttag == "style":
            self.found.extend(_css_urls(data))


def _css_urls(css: str) -> list[str]:
    return [url for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", css)
            if not url.startswith("data:")]


def references(body: str) -> list[str]:
    reader = _References()
    reader.feed(body)
    reader.close()
    return list(dict.fromkeys(reader.found))


def visible_text(body: str, unread: frozenset[str] = frozenset()) -> str:
    """The text ``body`` shows, without what the elements named in ``unread`` hold."""
    reader = _Text(unread)
    reader.feed(body)
    reader.close()
    return "".join(reader.parts)


# --- the browser ---------------------------------------------------------------------------

def chromium_path() -> str:
    """Debian's chromium (or MMCONVERT_CHROMIUM); one line naming the package otherwise."""
    given = os.environ.get("MMCONVERT_CHROMIUM")
    if given and not Path(given).is_file():
        raise UsageError(f"MMCONVERT_CHROMIUM={given}: no such file; the document renderer "
                         "needs Chromium: apt-get install chromium (scripts/install-debian.sh)")
    path = given or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise UsageError("the document renderer needs Chromium: apt-get install chromium "
                         "(scripts/install-debian.sh), or set MMCONVERT_CHROMIUM to its path")
    return path


@functools.lru_cache(maxsize=1)
def browser_version() -> str:
    """The version Chromium reports (``chromium --version``), without starting a page."""
    import subprocess

    out = subprocess.run([chromium_path(), "--version"], capture_output=True, text=True,
                         check=False, timeout=60).stdout
    found = re.search(r"\d+(\.\d+)+", out)
    return found.group(0) if found else out.strip() or "unknown"


# the browser's system fonts: mmconvert's own font folder, nothing of the machine's (with no
# font at all Chromium draws no text, web fonts included)
_FONTCONFIG = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>{fonts}</dir><cachedir>{cache}</cachedir></fontconfig>
"""


class Browser:
    """One headless Chromium for this process, kept open until it exits. Playwright's sync
    API binds a browser to the thread that started it and runs an event loop there, so the
    browser lives on a thread of its own: a caller's thread (or its asyncio loop, or another
    Playwright in the same process) is never touched. Pages are drawn one at a time."""

    _lock = threading.Lock()
    _shared: Browser | None = None

    def __init__(self):
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            raise UsageError("the document renderer needs Playwright: pip install "
                             "'mmconvert[document]'") from None
        self._tasks: queue.Queue = queue.Queue()
        self._started: queue.Queue = queue.Queue()  # None, or why Chromium would not start
        # the document being drawn: the files it may load, the requests refused
        self._files: dict[str, bytes] = {}
        self._refused: list[str] = []
        self._thread = threading.Thread(target=self._serve, args=(chromium_path(),),
                                        name="mmconvert-chromium", daemon=True)
        self._thread.start()
        error = self._started.get()
        if error is not None:
            raise error

    def _serve(self, executable: str) -> None:
        """The browser's thread: start Chromium, then draw what is asked until told to
        stop. A drawing that fails (a page that navigated away, a Chromium that died) is
        that item's error; the next one gets a fresh page, in a fresh Chromium when the old
        one is gone."""
        from playwright.sync_api import sync_playwright

        from .fonts import FONT_DIR

        self.folder = tempfile.TemporaryDirectory(prefix="mmconvert-chromium-")
        conf = Path(self.folder.name) / "fonts.conf"
        conf.write_text(_FONTCONFIG.format(fonts=html.escape(str(FONT_DIR)),
                                           cache=html.escape(self.folder.name)))
        playwright = sync_playwright().start()
        env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
        try:
            browser = self._launch(playwright, executable, env)
            page = self._page(browser)
        except Exception as err:  # noqa: BLE001 - the browser's own reason, on one line
            playwright.stop()
            self.folder.cleanup()
            from ..errors import first_line

            self._started.put(UsageError(f"Chromium would not start ({first_line(err, 200)})"))
            return
        self.version = browser.version
        self._started.put(None)
        while True:
            task = self._tasks.get()
            if task is None:
                break
            work, answer = task
            try:
                if page.is_closed() or page.url != f"{HOST}/blank.html":
                    page = self._page(browser)  # the last document left it unusable
                result = work(page)
                if page.url != f"{HOST}/blank.html":  # the document moved the page
                    raise RuntimeError(f"the document navigated the page to {page.url}")
                answer.put((True, result))
            except Exception as err:  # noqa: BLE001 - handed to the caller's thread
                answer.put((False, err))
                try:  # a fresh page for the next item; a fresh Chromium if this one died
                    if not browser.is_connected():
                        browser = self._launch(playwright, executable, env)
                    else:
                        page.context.close()
                    page = self._page(browser)
                except Exception as again:  # noqa: BLE001 - every later item says why
                    page = _DeadPage(again)
        try:
            browser.close()
            playwright.stop()
        finally:
            self.folder.cleanup()

    @staticmethod
    def _launch(playwright, executable: str, env: dict[str, str]):
        """Chromium with no network: every host name resolves to nothing (an address given
        as numbers too), so no connection can leave it, whatever a document names; and none
        of its own background traffic."""
        return playwright.chromium.launch(
            executable_path=executable, env=env,
            args=["--no-sandbox", "--disable-gpu", "--font-render-hinting=none",
                  "--host-resolver-rules=MAP * ~NOTFOUND", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-quic",
                  "--no-first-run"])

    def _page(self, browser):
        """A page with JavaScript off, every request going to one handler (the blank page
        every document is written into, the files of the document being drawn, and nothing
        else), at the blank page."""
        page = browser.new_context(java_script_enabled=False).new_page()
        page.route("**/*", self._route)
        page.goto(f"{HOST}/blank.html")
        return page

    def _call(self, work):
        answer: queue.Queue = queue.Queue()
        self._tasks.put((work, answer))
        ok, value = answer.get()
        if not ok:
            raise value
        return value

    @classmethod
    def _forked(cls) -> None:
        """In a forked worker: the parent's browser thread is not here; start afresh."""
        cls._shared = None
        cls._lock = threading.Lock()

    @classmethod
    def get(cls) -> Browser:
        with cls._lock:
            if cls._shared is None:
                cls._shared = Browser()
                atexit.register(cls._shared.close)
            return cls._shared

    def close(self) -> None:
        if self._thread.is_alive():
            self._tasks.put(None)
            self._thread.join(timeout=30)

    def _route(self, route) -> None:
        url = route.request.url
        if url == f"{HOST}/blank.html":
            return route.fulfill(status=200, body=b"<!doctype html><html></html>",
                                 content_type="text/html; charset=utf-8")
        path = url[len(HOST):] if url.startswith(HOST + "/") else None
        if path in self._files:
            return route.fulfill(status=200, body=self._files[path])
        self._refused.append(url)
        if route.request.is_navigation_request():
            # "no content": the page stays where it is (an abort would leave it on an error
            # page, and the next document with it)
            return route.fulfill(status=204, body=b"")
        return route.abort()

    def pdf(self, document: str, files: dict[str, bytes]) -> tuple[bytes, list[str]]:
        """``document`` (an HTML page: its head and body) as a PDF; ``files``: what the page
        may load, by path under HOST. Every other request is refused and named in the list
        returned.

        The document is written into the page the browser keeps (its scripts never run: the
        page's JavaScript is off, and Playwright's own evaluation, which writes it, runs
        apart), so the faces it names are fetched once a process, not once an item; the PDF
        is made once its fonts are loaded and its images decoded."""
        def draw(page) -> bytes:
            deepest = page.evaluate("""html => {
                document.documentElement.innerHTML = html;
                let deepest = 0;
                for (const leaf of document.querySelectorAll('body *')) {
                    if (leaf.childElementCount) continue;
                    let depth = 0;
                    for (let e = leaf; e; e = e.parentElement) depth++;
                    deepest = Math.max(deepest, depth);
                }
                const images = [...document.images].map(i => i.decode().catch(() => null));
                return Promise.all([document.fonts.ready, ...images]).then(() => deepest);
            }""", document)
            if deepest >= MAX_DOM_DEPTH:  # the parser stopped nesting: not what was written
                raise DocumentTooDeep(f"the document nests {deepest} elements deep; Chromium "
                                      f"nests at most {MAX_DOM_DEPTH} (it puts deeper ones "
                                      "beside their parents)")
            return page.pdf(prefer_css_page_size=True, print_background=True,
                            display_header_footer=False)

        with self._lock:
            self._files, self._refused = files, []
            pdf = self._call(draw)
            return pdf, list(self._refused)


class DocumentTooDeep(ValueError):
    """An item's HTML nested deeper than the browser builds it."""


class _DeadPage:
    """What draws when no fresh page could be had: every drawing fails with the reason."""

    url = ""

    def __init__(self, reason: BaseException):
        self.reason = reason

    def __getattr__(self, name):
        raise RuntimeError(f"Chromium could not be started again ({self.reason})")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=Browser._forked)


def normalise_pdf(pdf: bytes, options=None) -> bytes:
    """The browser's PDF without what changes from run to run (its dates) or names the page
    (its title), its pages cut as ``options.crop`` says, re-written compact."""
    import pymupdf

    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        doc.set_metadata({"producer": doc.metadata.get("producer") or "", "creator": "mmconvert",
                          "title": "", "author": "", "subject": "", "keywords": "",
                          "creationDate": "", "modDate": "", "trapped": ""})
        for page in doc:
            in_reading_order(doc, page, options)
        if options is not None and options.crop != "none":
            crop_pages(doc, options)
        return doc.tobytes(garbage=3, deflate=True, no_new_id=True)


_BLOCK = re.compile(r"BT\n.*?\nET", re.S)
_SHOW = re.compile(r"(/(\S+) [-0-9.]+ Tf)|<([0-9A-Fa-f]*)> Tj|(\S+) Tj|TJ")
_MATRIX = " ".join([r"([-0-9.]+)"] * 6) + " Tm"  # a text matrix, its six numbers
_TM = re.compile(_MATRIX)


def in_reading_order(doc, page, options=None) -> None:
    """Rewrite ``page``'s content so that each line holding right-to-left runs shows its runs
    in reading order. Chromium writes a line's runs left to right as drawn, each
    right-to-left run marked ``ReversedChars``, which MuPDF's text extraction (and so the
    text-layer check, and a reader copying the text) does not honour: its Arabic or Hebrew
    words came out last word first. The runs' ``BT … ET`` blocks change order, and so do the
    glyphs inside a run read right to left (``_glyphs_reversed``), each keeping its own place
    on the page, so the page draws the same. The line's base
    direction is the one its ends allow (a left-to-right paragraph's first strong run is its
    leftmost, a right-to-left one's its rightmost); where both do, the side of the page the
    line keeps to (a paragraph sits at its start), then the direction of most of its runs; a
    line still undecided is left as drawn (the text-layer check then flags it for review)."""
    xrefs = page.get_contents()
    if len(xrefs) != 1:
        return
    content = doc.xref_stream(xrefs[0]).decode("latin-1")
    if "/ReversedChars" not in content:
        return
    top, right, bottom, left = options.margins() if options is not None else (0, 0, 0, 0)
    edges = (left, page.rect.width - right)
    chars = [(chr(c[0]), c[3], span["size"]) for span in page.get_texttrace()
             for c in span["chars"]]
    wide = {font[4]: font[2] == "Type0" for font in page.get_fonts()}
    blocks, taken = [], 0
    for found in _BLOCK.finditer(content):
        font, glyphs = None, 0
        for show in _SHOW.finditer(found.group(0)):
            if show.group(1):
                font = show.group(2)
            elif show.group(3) is not None:
                glyphs += len(show.group(3)) // (4 if wide.get(font) else 2)
            else:  # a string or an array shown: not Chromium's form, left as drawn
                return
        matrix = _TM.search(found.group(0))
        mine = chars[taken:taken + glyphs]
        blocks.append({"span": found.span(), "text": "".join(c[0] for c in mine),
                       "y": float(matrix.group(6)) if matrix else None,
                       "x0": min((c[1][0] for c in mine), default=0.0),
                       "x1": max((c[1][2] for c in mine), default=0.0),
                       "size": max((c[2] for c in mine), default=0.0),
                       "reversed": "/ReversedChars" in found.group(0)})
        taken += glyphs
    if taken != len(chars):  # the glyphs do not match the text MuPDF reads: left as drawn
        return
    out, at, line = [], 0, []

    def flush() -> None:
        if line:
            if any(b["reversed"] for b in line):
                order, backwards = _logical(line, edges)
                out.append("\n".join(
                    _glyphs_reversed(content[slice(*b["span"])]) if i in backwards
                    else content[slice(*b["span"])] for i, b in order))
            else:
                out.append("\n".join(content[slice(*b["span"])] for b in line))
            line.clear()

    for block in blocks:
        start = block["span"][0]
        between = content[at:start]
        # a line's runs, as long as nothing but text lies between them in the content and
        # no gap wider than a space parts them (a table's cells, a page's columns)
        if line and (between.strip() or block["y"] != line[-1]["y"] or block["y"] is None
                     or block["x0"] - line[-1]["x1"] > 0.6 * max(block["size"],
                                                                line[-1]["size"])):
            flush()
        if not line:
            out.append(between)
        line.append(block)
        at = block["span"][1]
    flush()
    out.append(content[at:])
    rewritten = "".join(out)
    if rewritten != content:
        doc.update_stream(xrefs[0], rewritten.encode("latin-1"))


def _direction(block: dict[str, Any]) -> str:
    """R (a right-to-left run), L (left-to-right letters), E (digits) or N (neither)."""
    import unicodedata

    if block["reversed"]:
        return "R"
    kinds = {unicodedata.bidirectional(c) for c in block["text"]}
    return ("R" if kinds & {"R", "AL"} else "L" if "L" in kinds
            else "E" if kinds & {"EN", "AN"} else "N")


def _logical(line: list[dict[str, Any]],
             edges: tuple[float, float]) -> tuple[list[tuple[int, dict]], set[int]]:
    """A line's runs, given left to right, in reading order: reversed in a right-to-left
    line but for its left-to-right stretches (letters and digits, with what lies between
    them), or in a left-to-right line its right-to-left stretches reversed. Also the runs
    read right to left, whose own glyphs are to be put in reading order: the right-to-left
    runs and the neutral ones among them."""
    kinds = [_direction(b) for b in line]
    strong = [k for k in kinds if k in ("L", "R")]
    may_ltr, may_rtl = strong[0] == "L", strong[-1] == "R"
    if may_ltr and may_rtl:  # the side the line keeps to, then the most runs
        gap_left = line[0]["x0"] - edges[0]
        gap_right = edges[1] - line[-1]["x1"]
        if abs(gap_left - gap_right) > 2 * line[0]["size"]:
            may_ltr, may_rtl = gap_left < gap_right, gap_right < gap_left
        else:
            rtl, ltr = kinds.count("R"), kinds.count("L")
            may_ltr, may_rtl = ltr > rtl, rtl > ltr
    if may_ltr == may_rtl:
        return list(enumerate(line)), set()
    right_to_left = may_rtl
    inner = ("L", "E") if right_to_left else ("R",)
    order = list(range(len(line)))
    stretches, current = [], []
    for index, kind in enumerate(kinds):  # maximal stretches of the inner direction
        if kind in inner:
            current.append(index)
        elif kind == "N" and current:
            current.append(index)
        else:
            stretches.append(current)
            current = []
    stretches.append(current)
    inside: set[int] = set()
    for stretch in stretches:
        while stretch and kinds[stretch[-1]] == "N":  # neutrals at its end are outside it
            stretch.pop()
        inside.update(stretch)
        if len(stretch) > 1:
            order[stretch[0]:stretch[-1] + 1] = order[stretch[0]:stretch[-1] + 1][::-1]
    if right_to_left:  # reversing the whole line puts the stretches reversed above back
        order = order[::-1]
        backwards = {i for i, k in enumerate(kinds) if k == "R" or (k == "N"
                                                                    and i not in inside)}
    else:
        backwards = {i for i in inside if kinds[i] in ("R", "N")}
    return [(i, line[i]) for i in order], backwards


def _number(value: float) -> str:
    """A number as a content stream writes it, with all the precision it had."""
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


_GLYPH = re.compile(r"^(?:(/Span<<.*>> BDC)|(EMC)|(/\S+ [-0-9.]+ Tf)|(" + _MATRIX +
                    r")|(?:([-0-9.]+) ([-0-9.]+) Td )?(<[0-9A-Fa-f]*> Tj)|(/ReversedChars BMC))$")


def _glyphs_reversed(block: str) -> str:
    """A ``BT … ET`` block of one glyph a ``Tj`` (Chromium's form) with its glyphs written in
    the opposite order, each at its own place, and no ReversedChars mark; the block as it
    is when it holds anything else."""
    lines = block.split("\n")[1:-1]
    units: list[dict[str, Any]] = []
    span = font = matrix = None
    start = (0.0, 0.0)
    for line in lines:  # the ReversedChars mark and its end are dropped
        found = _GLYPH.match(line)
        if not found:
            return block
        if found.group(1):
            span = found.group(1)
        elif found.group(2):  # the end of a glyph's Span, or of the ReversedChars mark
            if span is not None and units and units[-1]["span"] is span:
                units[-1]["closed"] = True
            span = None
        elif found.group(3):
            font = found.group(3)
        elif found.group(4):
            matrix = [float(found.group(k)) for k in range(5, 11)]
            start = (matrix[4], matrix[5])
        elif found.group(13):
            if matrix is None or font is None or len(found.group(13)) > 12:
                return block
            if found.group(11) is not None:  # Td: from the line's start, in text space
                tx, ty = float(found.group(11)), float(found.group(12))
                start = (start[0] + matrix[0] * tx + matrix[2] * ty,
                         start[1] + matrix[1] * tx + matrix[3] * ty)
            units.append({"span": span, "font": font, "at": start, "show": found.group(13),
                          "closed": False})
    if not units or any(u["span"] is not None and not u["closed"] for u in units):
        return block
    a, b, c, d = matrix[:4]
    out = ["BT"]
    for unit in reversed(units):
        if unit["span"]:
            out.append(unit["span"])
        out += [unit["font"], " ".join(_number(v) for v in (a, b, c, d, *unit["at"])) + " Tm",
                unit["show"]]
        if unit["span"]:
            out.append("EMC")
    return "\n".join([*out, "ET"])


def crop_pages(doc, options) -> None:
    """Cut the pages as the page renderer does: the last one ``crop_pad`` (or one bottom
    margin) below its lowest ink, and with ``content`` each one ``crop_pad`` (or four right
    margins) right of its rightmost ink. The page's own background (what covers the area
    inside the margins) is not ink."""
    import pymupdf

    top, right, bottom, left = options.margins()
    pad = options.crop_pad
    for number, page in enumerate(doc):
        width, height = page.rect.width, page.rect.height
        frame = pymupdf.Rect(left + 1, top + 1, width - right - 1, height - bottom - 1)
        ink = pymupdf.Rect()
        for kind, box in page.get_bboxlog():
            box = pymupdf.Rect(box)
            if box.is_empty or (kind == "fill-path" and box.contains(frame)):
                continue
            ink |= box
        if ink.is_empty:
            continue
        if number == len(doc) - 1:
            height = min(height, ink.y1 + (bottom if pad is None else pad))
        if options.crop == "content":
            width = min(width, ink.x1 + (4 * right if pad is None else pad))
        page.set_cropbox(pymupdf.Rect(0, 0, width, height))


def page_pixels(pdf: bytes, ppi: float) -> list[tuple[int, int]]:
    """The pixel size of each page of the PDF at ``ppi``, as ``rasterise`` draws them."""
    import pymupdf

    matrix = pymupdf.Matrix(ppi / 72, ppi / 72)
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [((page.rect * matrix).irect.width, (page.rect * matrix).irect.height)
                for page in doc]


def rasterise(pdf: bytes, ppi: float, color: str) -> list[tuple[bytes, int, int]]:
    """The PDF's pages as PNGs at ``ppi``; a ValueError, before any is drawn, when they
    would pass the pixel limit of one item (a render's, and a sweep's to another PPI)."""
    import pymupdf

    pages = []
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        total = sum(page.rect.width * page.rect.height for page in doc) * (ppi / 72) ** 2 / 1e6
        if total > MAX_ITEM_MEGAPIXELS:
            raise ValueError(f"{len(doc)} page(s) at {ppi:g} PPI would be {total:,.0f} "
                             f"megapixels, over the {MAX_ITEM_MEGAPIXELS:,}-megapixel limit "
                             "of one item; lower --ppi, or shorten the text")
        for page in doc:
            pix = page.get_pixmap(matrix=pymupdf.Matrix(ppi / 72, ppi / 72), alpha=False,
                                  colorspace=pymupdf.csGRAY if color == "gray"
                                  else pymupdf.csRGB)
            pages.append((set_png_ppi(pix.tobytes("png"), ppi), pix.width, pix.height))
    return pages


# --- the renderer --------------------------------------------------------------------------

class DocumentRenderer(Renderer):
    """Typesets an item's Markdown or HTML in Chromium: tables, code, math, columns."""

    name = "document"
    version = "1"
    config_model = DocumentConfig
    row_model = DocumentRow
    options_model = DocumentOptions
    unit = "page"
    roles = shown_roles = ocr_roles = paper_roles = ("page",)
    checks = frozenset({"ocr", "text_layer", "image"})
    redraws = True
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
    def expected_text(cls, row: dict[str, Any]) -> str:
        return cls._shown(row)

    @classmethod
    def ocr_text(cls, row: dict[str, Any]) -> str:
        """The shown text without formulas and tables: Tesseract reads neither typeset math
        nor ruled cells (it drops whole rows of a correct table, bench/ocr_calibration.py);
        the text-layer check reads those exactly."""
        return cls._shown(row, UNREAD_BY_OCR)

    @classmethod
    def _shown(cls, row: dict[str, Any], unread: frozenset[str] = frozenset()) -> str:
        params = row["renderer"]["params"]
        state = RenderState(cls.options_from(params), None)
        # an image the row refused shows its alternative text; one drawn shows no text
        refused = set(row.get("refused") or ())
        state.image = (lambda src, alt: f"[{alt or 'image'}]"  # type: ignore[method-assign]
                       if f"image {src}" in refused else "")
        return visible_text(fields_html(item_from_row(row), params.get("render") or "options",
                                        state), unread)

    @classmethod
    def text_question(cls, row: dict[str, Any]) -> str | None:
        return question_beside_options(row)

    @classmethod
    def base_ppi(cls, config: dict[str, Any]) -> float | None:
        return (config.get("document") or {}).get("ppi")

    @classmethod
    def read_layout(cls, data: bytes) -> bytes:
        return data  # the stored layout is the PDF itself

    def __init__(self, options=None, folder: Path | None = None):
        self.options = options or DocumentOptions()
        self.folder = folder  # the item's folder: the images it may show
        self._typeset: tuple[tuple[str, str], Drawn] | None = None  # the last item's PDF

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

    def typeset(self, item: Item, part: RenderPart) -> Drawn:
        """The item's PDF from the browser (its pages not yet drawn); the last item's is
        kept, so that a target's search and the drawing that follows typeset it once."""
        key = (item.id, part)
        if self._typeset is not None and self._typeset[0] == key:
            return self._typeset[1]
        state = RenderState(self.options, self.folder)
        body = fields_html(item, part, state)
        face_list = faces(self.options)
        try:
            document = page_html(body, self.options, face_list)
        except ValueError as err:  # the --css file changed since the options were read
            raise UsageError(f"--css: {err}") from None
        files = {f"/fonts/{face.key}": face.data for face in face_list}
        try:
            pdf, fetched = Browser.get().pdf(document, files)
        except MMConvertError:
            raise
        except DocumentTooDeep as err:
            raise ItemError(str(err), where=item.origin or item.id, field=part,
                            item_id=item.id, stage="render") from None
        except Exception as err:  # noqa: BLE001 - Playwright's errors: one line, this item
            from ..errors import first_line

            raise ItemError(f"Chromium could not draw the item ({first_line(err, 200)})",
                            where=item.origin or item.id, field=part, item_id=item.id,
                            stage="render") from None
        # what the item's HTML names and the browser asked for, none of it loaded
        refused = list(dict.fromkeys([*state.refused, *references(body), *fetched]))
        typeset = Drawn(normalise_pdf(pdf, self.options), [], state.math_errors, refused)
        self._typeset = (key, typeset)
        return typeset

    def draw(self, item: Item, part: RenderPart) -> Drawn:
        """The item's PDF (from the browser) and its pages at the options' PPI."""
        typeset = self.typeset(item, part)
        self._typeset = None
        try:
            pages = rasterise(typeset.pdf, self.options.ppi, self.options.color)
        except ValueError as err:  # past the pixel limit, refused before drawing
            raise ItemError(str(err), where=item.origin or item.id, field="context",
                            item_id=item.id, stage="render") from None
        return Drawn(typeset.pdf, pages, typeset.math_errors, typeset.refused)

    def shown_text(self, item: Item, part: RenderPart) -> str:
        """The text the item's pages show (a target's text tokens; ``expected_text``)."""
        return visible_text(fields_html(item, part, RenderState(self.options, self.folder)))

    def pixel_sizes(self, item: Item, part: RenderPart) -> list[tuple[int, int]]:
        """The sizes of the item's pages in pixels (a target's vision tokens): typeset, not
        drawn."""
        return page_pixels(self.typeset(item, part).pdf, self.options.ppi)

    def redraw_at(self, pdf: bytes, ppis) -> list[list[Any]]:
        from .page import PageImage

        return [[PageImage(png, w, h) for png, w, h in rasterise(pdf, ppi, self.options.color)]
                for ppi in ppis]

    def row_params(self, part: RenderPart) -> dict[str, Any]:
        return {**self.options.model_dump(mode="json"), "render": part}


class DocumentJob(StyledJob):
    """``render --renderer document``: each item typeset by the worker's browser."""

    def __init__(self, config: DocumentConfig):
        self.config = config
        chromium_path()  # no browser: one line before the first item
        try:
            import playwright  # noqa: F401
        except ImportError:
            raise UsageError("the document renderer needs Playwright: pip install "
                             "'mmconvert[document]'") from None
        corpus = Path(config.corpus)
        self.folder = (config.source if config.source and Path(config.source).is_dir()
                       else corpus.parent if corpus.is_file() else None)
        self.renderer = self.make_renderer(config.document)
        self.prompts = Prompts(config.prompt_dir)
        self.start_style()

    def make_renderer(self, options) -> DocumentRenderer:
        return DocumentRenderer(options, self.folder)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return self.config.document.render or corpus.part_for(item)

    def fonts(self) -> list[dict[str, str]]:
        records = font_records(self.config.document.font)
        for fonts in self.drawn_fonts():
            records += font_records(fonts)
        return list({record["sha256"]: record for record in records}.values())

    def report(self, rows) -> dict[str, Any]:
        return {**super().report(rows),
                "browser": {"name": "chromium", "version": browser_version(),
                            "path": chromium_path()}}

    def resuming(self, info: dict[str, Any]) -> None:
        """A run drawn by another Chromium is not resumed with this one: its pages would
        not match."""
        recorded = (info.get("browser") or {}).get("version")
        if recorded and recorded != browser_version():
            raise UsageError(f"this run was drawn by Chromium {recorded} and this is "
                             f"{browser_version()}: the pages would differ; use --overwrite "
                             "to draw it again, or --out for a new run")

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        config, output = self.config, Output()
        renderer, target = self.styled_renderer(item, part)
        drawn = renderer.draw(item, part)
        prompt, text_prompt = self.prompts.pair(item, part, config.prompt_style, prompt_keys)
        images = [output.image(item_file("images", item.id, f"_p{number:03d}.png"), png,
                               "page", width, height, ppi=renderer.options.ppi)
                  for number, (png, width, height) in enumerate(drawn.pages, start=1)]
        rel = item_file("pdf", item.id, ".pdf")
        stored = output.file(rel, drawn.pdf)
        row = row_head(item, renderer, renderer.row_params(part), config.seed)
        row["images"] = images
        if target is not None:
            row["target"] = target
        row["layout"] = {"path": rel, "pages": len(images), "lines": 0, **stored}
        row["pdf"] = rel
        if drawn.math_errors:
            row["math_errors"] = drawn.math_errors
        if drawn.refused:
            row["refused"] = drawn.refused
        row.update(question_fields(item, config.prompt_style, prompt, text_prompt))
        output.row = row
        return output

