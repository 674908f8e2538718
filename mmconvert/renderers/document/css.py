"""The page's fonts and CSS: mmconvert's faces served to the browser, the style's sizes
and colours as CSS, and a user's ``--css`` file, checked and read once a process."""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ...units import POINTS_PER_INCH
from ..fonts import font_bytes, font_chain, page_font
from .truetype import truetype

HOST = "https://mmconvert.invalid"  # the one origin the page may load from, served by us
# the largest --css file read (it is read once a process)
MAX_CSS_BYTES = 1 << 20
# a style's align as CSS: left and right are the paragraph's start and end, so that they
# mirror in a right-to-left paragraph, as the page renderer's do
ALIGN = {"left": "start", "right": "end", "center": "center", "justify": "justify"}
# faces from pymupdf-fonts: the body (regular, bold, italic, bold italic), code and math
BODY_FACES = {("normal", "normal"): "notos", ("bold", "normal"): "notosbo",
              ("normal", "italic"): "notosit", ("bold", "italic"): "notosbi"}
CODE_FACES = {"normal": "fimo", "bold": "fimbo"}
MATH_FACE = "math"


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
        found.append(Face("code", "Fira Mono", truetype(_shipped(code)), weight))
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


def font_css(face_list: list[Face]) -> str:
    """The faces' ``@font-face`` rules: a style sheet of their own, the same text at every
    size and page width. Chromium keeps the sheet it parsed from a text it has seen, and the
    faces that sheet loaded with it; a sheet that also held the sizes was new at each size a
    target's search tried, and fetched every face again (1.4 MB through Playwright a try)."""
    return "\n".join(f"@font-face {{ font-family: '{f.family}'; src: url('{HOST}/fonts/{f.key}'); "
                     f"font-weight: {f.weight}; font-style: {f.style}; }}" for f in face_list)


def page_css(options, face_list: list[Face]) -> str:
    """The page's own rules: its size, margins, faces by family, and the style's fields."""
    top, right, bottom, left = options.margins()
    width = options.page_width * POINTS_PER_INCH
    height = options.page_height * POINTS_PER_INCH
    body = [f.family for f in face_list if f.family.startswith("body")]
    chain = [f.family for f in face_list if f.family.startswith("chain")]
    stack = ", ".join(f"'{name}'" for name in dict.fromkeys([*body, *chain, "math"]))
    line_height = (f"{options.line_pitch:.3f}pt" if options.line_pitch is not None
                   else f"{options.line_spacing * 1.2:.4f}")
    code = ", ".join(f"'{name}'" for name in dict.fromkeys(["code", *chain]))
    rules = [
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
    return (f"<head><meta charset=\"utf-8\"><style>\n{font_css(face_list)}\n</style>"
            f"<style>\n{css}\n</style><style>\n{extra}\n</style></head><body>\n{body}\n"
            "</body>")
