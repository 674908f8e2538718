"""The document's source as HTML: Markdown (markdown-it-py), LaTeX math as MathML
(latex2mathml), code coloured by Pygments, dialogues and an item's fields; elements that
would load another document are found here and refused."""

from __future__ import annotations

import base64
import functools
import html
import mimetypes
import re
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

from ...errors import ItemError, first_line
from ...items import Item, RenderPart
from ..fields import image_fields, label_fields
from ..layout import control_characters, normalise

# Markdown nesting (quotes, lists, emphasis) the parser reads; an item that reaches it is
# refused (markdown-it drops what lies deeper, CommonMark's preset at 20)
MAX_NESTING = 100
# elements that load or show another document, or move the page: an item holding one is
# refused (the browser's network is closed too: no request leaves the machine)
EMBEDDING = ("iframe", "frame", "frameset", "object", "embed", "applet", "portal",
             "fencedframe", "meta", "base")


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
        raw = found.read_bytes() if found is not None else b""
        kind = decoded_kind(raw, found.name) if found is not None else None
        if kind is None:  # not there, not ours, or no image a browser draws
            self.refused.append(f"image {src}")
            return f'<span class="refused">[{html.escape(alt or "image")}]</span>'
        data = base64.b64encode(raw).decode("ascii")
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


# what a browser draws of what Pillow reads, by Pillow's name of the format
BROWSER_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif",
                   "WEBP": "image/webp", "BMP": "image/bmp"}


def decoded_kind(data: bytes, name: str) -> str | None:
    """The MIME type of an image file the browser can draw, once its pixels decode (a file
    that does not was drawn as the browser's broken-image icon, and nothing said so); an SVG
    by its name and its text; None for anything else."""
    import io

    if mimetypes.guess_type(name)[0] == "image/svg+xml":
        head = data[:512].lstrip().lower()
        return "image/svg+xml" if head.startswith((b"<svg", b"<?xml")) else None
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            return BROWSER_FORMATS.get(image.format or "")
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError,
            Image.DecompressionBombError):
        return None


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
    given = (item.metadata or {}).get("turns")
    turns: list[dict[str, str]] = given if isinstance(given, list) else []
    for name, text in label_fields(image_fields(item, part)):
        dialogue = name == "context" and bool(turns)
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
