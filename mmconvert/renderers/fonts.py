"""The font chain: shipped fonts only, tried in order, so every character gets a real glyph.

Order: Liberation Sans (Arial's metrics; ships in ``renderers/fonts``), then the Noto faces of
the pinned ``pymupdf-fonts`` (Sans, Sans Math, Symbols 2, Symbols), then Droid Sans Fallback,
which PyMuPDF carries (Chinese, Japanese, Korean), then a subset of Noto Sans CJK SC with what
Droid lacks (CJK Extension A, Kangxi radicals, …), then the Noto faces built into the pinned
PyMuPDF for the scripts that need shaping (Arabic in Naskh, Hebrew, Devanagari, Bengali, Tamil,
Thai, Lao, Khmer, Myanmar) and monochrome Noto Emoji. Those come last so that every character
the earlier fonts drew keeps its font; text in a shaped script prefers its own script's face
(``preferred``). The machine's own fonts are never used.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import ItemError

FONT_DIR = Path(__file__).parent / "fonts"


_BUILTIN = "PyMuPDF (MuPDF built-in Noto, SIL OFL 1.1)"


@dataclass(frozen=True)
class FontSpec:
    name: str
    origin: str
    # a file inside FONT_DIR, a PyMuPDF font code ("notos", "cjk", …), or the script of one
    # of MuPDF's built-in Noto faces (a UCDN script name, or "EMOJI")
    file: str | None = None
    code: str | None = None
    script: str | None = None
    path: str | None = None  # a user's font file (``--font``), absolute


FONT_CHAIN: tuple[FontSpec, ...] = (
    FontSpec("Liberation Sans", "mmconvert (renderers/fonts, SIL OFL 1.1)",
             file="LiberationSans-Regular.ttf"),
    FontSpec("Noto Sans", "pymupdf-fonts", code="notos"),
    FontSpec("Noto Sans Math", "pymupdf-fonts", code="math"),
    FontSpec("Noto Sans Symbols 2", "pymupdf-fonts", code="symbol2"),
    FontSpec("Noto Sans Symbols", "pymupdf-fonts", code="symbol1"),
    FontSpec("Droid Sans Fallback", "PyMuPDF (MuPDF built-in)", code="cjk"),
    FontSpec("Noto Sans CJK SC (supplement)", "mmconvert (renderers/fonts, SIL OFL 1.1)",
             file="NotoSansCJKsc-Regular-supplement.otf"),
    FontSpec("Noto Naskh Arabic", _BUILTIN, script="ARABIC"),
    FontSpec("Noto Serif Hebrew", _BUILTIN, script="HEBREW"),
    FontSpec("Noto Serif Devanagari", _BUILTIN, script="DEVANAGARI"),
    FontSpec("Noto Serif Bengali", _BUILTIN, script="BENGALI"),
    FontSpec("Noto Serif Tamil", _BUILTIN, script="TAMIL"),
    FontSpec("Noto Serif Thai", _BUILTIN, script="THAI"),
    FontSpec("Noto Serif Lao", _BUILTIN, script="LAO"),
    FontSpec("Noto Serif Khmer", _BUILTIN, script="KHMER"),
    FontSpec("Noto Serif Myanmar", _BUILTIN, script="MYANMAR"),
    FontSpec("Noto Emoji", _BUILTIN + ", monochrome", script="EMOJI"),
)

# Characters that take no glyph: they are layout instructions, not text.
INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")
# Default-ignorable characters that steer shaping or bidi (marks of direction, embeddings and
# isolates, variation selectors, the combining grapheme joiner, tags): no font need draw them
IGNORABLE = frozenset("\u034f\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066"
                      "\u2067\u2068\u2069") | frozenset(map(chr, range(0xFE00, 0xFE10))) \
    | frozenset(map(chr, range(0xE0020, 0xE0080))) | frozenset(map(chr, range(0xE0100, 0xE01F0)))
# every character that draws nothing: no glyph, no ink, no width of its own
SILENT = INVISIBLE | IGNORABLE


class FontChain:
    """Loaded fonts plus a per-character cache of (font index, advance at size 1)."""

    def __init__(self, specs: tuple[FontSpec, ...] = FONT_CHAIN):
        import pymupdf

        self.specs = specs
        self.fonts = []
        for spec in specs:
            if spec.path:
                self.fonts.append(load_font_file(spec.path))
            elif spec.file:
                self.fonts.append(pymupdf.Font(fontfile=str(FONT_DIR / spec.file)))
            elif spec.script:
                self.fonts.append(builtin_noto(spec.script))
            else:
                self.fonts.append(pymupdf.Font(spec.code))
        self.by_script = {spec.script: i for i, spec in enumerate(specs) if spec.script}
        self._glyphs: dict[str, tuple[int, float]] = {}
        self._gids: dict[tuple[int, str], int] = {}
        primary = self.fonts[0]
        self.ascender = primary.ascender
        self.descender = primary.descender
        # the user's fonts lead the chain; a character they lack is named once (``glyph``)
        self.users = next((i for i, spec in enumerate(specs) if not spec.path), len(specs))
        self.said_lacks = False  # ``lacks`` has spoken
        self._user_sha256: list[str] | None = None
        self.lead = 0  # fonts a page style named, ahead of the shipped chain (``page_chain``)

    def glyph(self, char: str) -> tuple[int, float]:
        """(index of the first font with a glyph for ``char``, its advance at size 1)."""
        try:
            return self._glyphs[char]
        except KeyError:
            pass
        code = ord(char)
        for index, font in enumerate(self.fonts):
            if font.has_glyph(code):
                found = (index, font.glyph_advance(code))
                self._glyphs[char] = found
                if index >= self.users > 0 and char not in SILENT:
                    self.lacks(char)
                return found
        raise KeyError(char)

    def user_sha256(self) -> list[str]:
        """The sha256 of each font the chain's style named (those ahead of the shipped
        chain's own), for the rows."""
        if self._user_sha256 is None:
            lead = self.lead
            self._user_sha256 = [font_sha256(spec, font) for spec, font in
                                 zip(self.specs[:lead], self.fonts[:lead], strict=True)]
        return self._user_sha256

    def lacks(self, char: str) -> None:
        """Say once, on stderr, that the user's first font has no glyph for ``char`` (the
        first such character): the shipped fonts after it draw it."""
        if self.said_lacks:
            return
        self.said_lacks = True
        import click

        click.echo(f"{self.specs[0].path}: no glyph for {describe(char)}; the fonts after it "
                   "in the chain draw it (and the others it lacks)", err=True)

    def glyph_id(self, index: int, char: str) -> int:
        """Glyph id of ``char`` in font ``index`` (cached)."""
        try:
            return self._gids[index, char]
        except KeyError:
            gid = self._gids[index, char] = self.fonts[index].has_glyph(ord(char))
            return gid

    def check(self, text: str, *, where: str = "", field: str = "") -> None:
        """Raise an ItemError naming the first character no shipped font can draw."""
        for char in dict.fromkeys(text):  # first offender in reading order
            if char in SILENT or char in "\n\t":
                continue
            try:
                self.glyph(char)
            except KeyError:
                raise ItemError(f"no shipped font has a glyph for {describe(char)}",
                                where=where, field=field, stage="render") from None


def builtin_noto(script: str):
    """One of the Noto faces built into PyMuPDF: ``script`` is a UCDN script name (ARABIC,
    THAI, …) or EMOJI. A build without it is an error naming the font."""
    import pymupdf

    m = pymupdf.mupdf
    if script == "EMOJI":
        data, size = m.fz_lookup_noto_emoji_font()[:2]
        font = pymupdf.Font.__new__(pymupdf.Font)
        font.this = m.fz_new_font_from_memory(None, data, size, 0, 0) if size else None
    else:
        font = pymupdf.Font(script=getattr(m, f"UCDN_SCRIPT_{script}"))
    if font.this is None or not font.this.m_internal or not font.name.startswith("Noto"):
        raise RuntimeError(f"this PyMuPDF build lacks MuPDF's Noto font for {script.title()}; "
                           "install the PyMuPDF version pyproject.toml pins")
    return font


def describe(char: str) -> str:
    name = unicodedata.name(char, "unnamed character")
    shown = f" {char!r}" if char.isprintable() else ""
    return f"U+{ord(char):04X} {name}{shown}"


# Faces a caption may be drawn in (the occluder's --font and its hidden-set style). Each one
# leads a chain whose later fonts are FONT_CHAIN's, so every character still finds a glyph.
CAPTION_FONTS: dict[str, FontSpec] = {spec.name: spec for spec in (
    FONT_CHAIN[0],
    FontSpec("Liberation Serif", "mmconvert (renderers/fonts, SIL OFL 1.1)",
             file="LiberationSerif-Regular.ttf"),
    FontSpec("Comic Neue", "mmconvert (renderers/fonts, SIL OFL 1.1; handwriting-like)",
             file="ComicNeue-Regular.otf"),
    FontSpec("Ubuntu", "pymupdf-fonts", code="ubuntu"),
    FontSpec("FiraGO", "pymupdf-fonts", code="figo"),
    FONT_CHAIN[1],
    FONT_CHAIN[5],
)}


@lru_cache(maxsize=16)
def font_chain(primary: str | None = None) -> FontChain:
    """The process-wide chain led by ``primary`` (a CAPTION_FONTS name; default Liberation
    Sans). Fonts load once per process."""
    if primary is None or primary == FONT_CHAIN[0].name:
        return FontChain()
    lead = caption_font(primary)
    return FontChain((lead, *(s for s in FONT_CHAIN if s.name != lead.name)))


# Faces a page style may name in ``font`` (the presets' faces): free fonts that mmconvert or
# its pinned dependencies ship, each with its licence
PAGE_FONTS: dict[str, FontSpec] = {spec.name: spec for spec in (
    *CAPTION_FONTS.values(),
    FontSpec("Fira Mono", "pymupdf-fonts (SIL OFL 1.1)", code="fimo"),
    FontSpec("Ubuntu Mono", "pymupdf-fonts (Ubuntu Font Licence 1.0)", code="ubuntm"),
    FontSpec("Space Mono", "pymupdf-fonts (SIL OFL 1.1)", code="spacemo"),
    FontSpec("Cascadia Code", "pymupdf-fonts (SIL OFL 1.1)", code="cascadia"),
)}


def load_font_file(path: str):
    """A user's font file as a PyMuPDF font (a TTC's first face); a one-line error naming the
    file when it is missing or not a font."""
    import pymupdf

    from ..errors import UsageError

    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path}: no such font file")
    try:
        font = pymupdf.Font(fontfile=str(file))
    except Exception as err:  # noqa: BLE001 - MuPDF says why: not a font, damaged, …
        from ..errors import first_line

        raise UsageError(f"{path}: not a font file MuPDF can read ({first_line(err)})") \
            from None
    if not font.this or not font.this.m_internal or font.glyph_count == 0:
        raise UsageError(f"{path}: not a font file MuPDF can read (no glyphs)")
    return font


def page_font(ref: str) -> FontSpec:
    """A style's ``font`` entry: a shipped face (``PAGE_FONTS``) or a font file."""
    if ref in PAGE_FONTS:
        return PAGE_FONTS[ref]
    if not any(sep in ref for sep in "/\\."):
        from ..errors import UsageError, did_you_mean

        raise UsageError(f"font {ref!r} is neither a file nor a shipped face (shipped: "
                         f"{', '.join(PAGE_FONTS)}){did_you_mean(ref, PAGE_FONTS, 0.5)}")
    resolved = str(Path(ref).expanduser().resolve())
    return FontSpec(Path(ref).name, "the user's font file", path=resolved)


@lru_cache(maxsize=32)
def page_chain(refs: tuple[str, ...] = ()) -> FontChain:
    """The chain of a page style: its ``font`` entries, then the shipped chain (without the
    faces they repeat). Loaded once per process."""
    if not refs:
        return font_chain()
    lead = [page_font(ref) for ref in refs]
    names = {spec.name for spec in lead}
    chain = FontChain((*lead, *(s for s in FONT_CHAIN if s.name not in names)))
    chain.lead = len(lead)
    return chain


def font_bytes(spec: FontSpec, font=None) -> bytes:
    """The font file's bytes: a user's file or a shipped file as it is on disk, else the
    loaded ``font``'s buffer (a pymupdf-fonts face is loaded by its code when none is
    given)."""
    if spec.path:
        return Path(spec.path).read_bytes()
    if spec.file:
        return (FONT_DIR / spec.file).read_bytes()
    if font is None:
        import pymupdf

        font = pymupdf.Font(spec.code)
    return bytes(font.buffer)


def font_sha256(spec: FontSpec, font) -> str:
    return hashlib.sha256(font_bytes(spec, font)).hexdigest()


def caption_font(name: str) -> FontSpec:
    """The shipped caption face ``name``; a one-line error with a suggestion if there is none."""
    try:
        return CAPTION_FONTS[name]
    except KeyError:
        from ..errors import UsageError, did_you_mean

        raise UsageError(f"unknown font {name!r} (shipped: {', '.join(CAPTION_FONTS)})"
                         f"{did_you_mean(name, CAPTION_FONTS, 0.5)}") from None


def font_manifest(chain: FontChain | None = None) -> list[dict[str, str]]:
    """Name, origin and sha256 of each font in the chain, for run.json."""
    chain = chain or font_chain()
    out = []
    for spec, font in zip(chain.specs, chain.fonts, strict=True):
        entry = {"name": spec.name, "origin": spec.origin, "sha256": font_sha256(spec, font)}
        if spec.path:
            entry["path"] = spec.path
        out.append(entry)
    return out
