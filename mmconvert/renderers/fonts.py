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
import json
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, overload

from .._version import installed_version
from ..errors import ItemError, UsageError, did_you_mean, first_line

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
        self.specs = specs
        self.fonts = LoadedFonts(specs)
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
        """(index of the first font with a glyph for ``char``, its advance at size 1). A face
        not yet loaded that ``may_draw`` says lacks it is passed over unloaded."""
        try:
            return self._glyphs[char]
        except KeyError:
            pass
        code = ord(char)
        for index in range(len(self.specs)):
            if self.passes_over(index, char):
                continue
            font = self.fonts[index]
            if font.has_glyph(code):
                found = (index, font.glyph_advance(code))
                self._glyphs[char] = found
                if index >= self.users > 0 and char not in SILENT:
                    self.lacks(char)
                return found
        raise KeyError(char)

    def passes_over(self, index: int, chars: str) -> bool:
        """Whether the search may pass over face ``index`` for ``chars`` without loading it:
        it is not loaded, and the coverage table says it lacks one of them."""
        spec = self.specs[index]
        return self.fonts.loaded(index) is None and \
            not all(may_draw(spec, ord(char)) for char in chars)

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


def load_font(spec: FontSpec):
    """The PyMuPDF font of ``spec``."""
    import pymupdf

    if spec.path:
        return load_font_file(spec.path)
    if spec.file:
        return pymupdf.Font(fontfile=str(FONT_DIR / spec.file))
    if spec.script:
        return builtin_noto(spec.script)
    return pymupdf.Font(spec.code)


class LoadedFonts:
    """A chain's fonts, each loaded when first asked for: a text in one script never loads
    the faces of the others. The user's fonts (and the first) load at once, so that a bad
    font file is refused before any item."""

    def __init__(self, specs: tuple[FontSpec, ...]):
        self.specs = specs
        self._fonts: list[Any] = [None] * len(specs)
        for index, spec in enumerate(specs):
            if index == 0 or spec.path:
                self[index]

    def __len__(self) -> int:
        return len(self.specs)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.specs)))]
        font = self._fonts[index]
        if font is None:
            font = self._fonts[index] = load_font(self.specs[index])
        return font

    def __iter__(self) -> Iterator[Any]:
        return (self[index] for index in range(len(self.specs)))

    def loaded(self, index: int) -> Any:
        """The font if it is loaded, else None."""
        return self._fonts[index]


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

    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path}: no such font file")
    try:
        font = pymupdf.Font(fontfile=str(file))
    except Exception as err:  # noqa: BLE001 - MuPDF says why: not a font, damaged, …
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
    loaded ``font``'s buffer (the face is loaded when none is given)."""
    if spec.path:
        return Path(spec.path).read_bytes()
    if spec.file:
        return (FONT_DIR / spec.file).read_bytes()
    return bytes((font if font is not None else load_font(spec)).buffer)


# the sha256 of the faces PyMuPDF and pymupdf-fonts carry, at the versions pyproject.toml pins
# (``tests/renderers/test_fonts.py`` checks them against the faces' bytes): run.json names
# every font of the chain, and a run need not load the faces its text never uses to name them
PINNED = ("1.28.2", "1.0.5")  # pymupdf, pymupdf-fonts
PINNED_SHA256 = {
    "notos": "6b04c8dd65af6b73eb4279472ed1580b29102d6496a377340e80a40cdb3b22c9",
    "math": "ca61efa77e6bca4d4e90cd277cbb1364e55f5b58289ec28d2a6e5ec43e1e285b",
    "symbol2": "76b6a7b09dae28704c061710e1fcd42d28e3be8a397298414630a07063ae89c6",
    "symbol1": "c7591ff5fac35caa7845566d7376b7f7092eb228bc70e11f267129d35e2a0ad3",
    "cjk": "ee38813ea00c3e32add4268fff7fff9e39417b4913cb13be2415164a47807cc2",
    "ARABIC": "21d2fa0dc32187333d3a0861361cd8c6e8c0563c8d880ebee2cbd1b8f79a553c",
    "HEBREW": "077b84bb939e097629621284e3362764dacc3e2365d68678cb747939fc047607",
    "DEVANAGARI": "84ee3ebb79182043f12d14e7bb8612301a10694b9e9b4a6294e2728221360da1",
    "BENGALI": "b9837b18eb4bc30d856de89c660a489bcd0435fcbf49dc19f5aacd736d00a1b3",
    "TAMIL": "25929aaa15737345b5bed6cdddf17e7a7bf5308f56aa032d207cbc489c70e144",
    "THAI": "76c235539d4fba40afc307bb7bb627d22b8a975676d6b3f2b3a393cf71f36e6e",
    "LAO": "844fb038e125b2720ff41a025f517c2b7d687f0f48b960e5b1dea8dc8efd722d",
    "KHMER": "74076ecbfb3f618d05737707b5e6d88583b0a4288c01b85c33c672a666b5d73a",
    "MYANMAR": "99412d36c941bbecbb88a987ae727d0b1b60cdffa17a0b7b0b0e43bd6be67c89",
    "EMOJI": "415dc6290378574135b64c808dc640c1df7531973290c4970c51fdeb849cb0c5",
    "ubuntu": "bac6461feb3488e5d330e7e9434fc8e0c513aa3c1e7b57598eab1654e1055a14",
    "figo": "495901c0c608ea265f4c31aa2a4c7a313e5cc2a3dd610da78a447fe8e07454a2",
    "fimo": "1783904b9a03d1852ed185549d74526d9f6a4a643181eb591c3a69993ae42ced",
    "ubuntm": "374c53178bfbc4b13f9b6ad5bbc81a4393aa65265ffc7d33aa7bd89f12a30df8",
    "spacemo": "d0855b0c557b78ea0449762b25ccca018880f483e56ff9a69e7cbde1dc12fa3a",
    "cascadia": "8107d343a6e3260d6204002a043fddf077fef00df6d0611d23876b9f7c962e9d",
}


@lru_cache(maxsize=1)
def pinned_installed() -> bool:
    """Whether the installed PyMuPDF and pymupdf-fonts are the pinned ones."""
    import pymupdf

    return (pymupdf.VersionBind, installed_version("pymupdf-fonts")) == PINNED


# the characters each pymupdf-fonts face of the chain draws (MuPDF's ``has_glyph`` over every
# code point, at the pinned versions): the fallback search passes over a face that lacks a
# character without unpacking it (4 to 17 ms a face). ``python -m mmconvert.renderers.fonts``
# writes it; tests/renderers/test_fonts.py checks it against the faces
COVERAGE_FILE = FONT_DIR / "coverage.json"


def face_coverage(font) -> list[list[int]]:
    """The code points ``font`` has a glyph for, as [first, last] ranges."""
    ranges: list[list[int]] = []
    has = font.has_glyph
    for code in range(0x110000):
        if has(code):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return ranges


@lru_cache(maxsize=1)
def _coverage() -> dict[str, list[int]]:
    """Each face's ranges as the sorted bounds [first, last + 1, …] (none unless the pinned
    PyMuPDF and pymupdf-fonts are the installed ones)."""
    if not pinned_installed():
        return {}
    data = json.loads(COVERAGE_FILE.read_text(encoding="utf-8"))
    return {code: [bound for first, last in ranges for bound in (first, last + 1)]
            for code, ranges in data["faces"].items()}


def may_draw(spec: FontSpec, code: int) -> bool:
    """False when the coverage table says the face of ``spec`` has no glyph for ``code``;
    True when it has, or the table does not know the face."""
    bounds = _coverage().get(spec.code or "")
    return bounds is None or bisect_right(bounds, code) % 2 == 1


def write_coverage() -> None:
    """``COVERAGE_FILE`` from the installed (pinned) faces of the chain."""
    if not pinned_installed():
        raise SystemExit(f"install the pinned PyMuPDF and pymupdf-fonts {PINNED} first")
    faces = {spec.code: face_coverage(load_font(spec)) for spec in FONT_CHAIN if spec.code}
    COVERAGE_FILE.write_text(json.dumps({"pymupdf": PINNED[0], "pymupdf-fonts": PINNED[1],
                                         "faces": faces}, separators=(",", ":")) + "\n",
                             encoding="utf-8")


@lru_cache(maxsize=64)
def _file_sha256(path: Path, size: int, mtime: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def font_sha256(spec: FontSpec, font=None) -> str:
    """The sha256 of the face's bytes (``font``: the face loaded, when it is)."""
    if spec.path or spec.file:
        path = Path(spec.path) if spec.path else FONT_DIR / str(spec.file)
        stat = path.stat()
        return _file_sha256(path, stat.st_size, stat.st_mtime_ns)
    key = spec.code or spec.script
    if key in PINNED_SHA256 and pinned_installed():
        return PINNED_SHA256[key]
    return hashlib.sha256(font_bytes(spec, font)).hexdigest()


def caption_font(name: str) -> FontSpec:
    """The shipped caption face ``name``; a one-line error with a suggestion if there is none."""
    try:
        return CAPTION_FONTS[name]
    except KeyError:
        raise UsageError(f"unknown font {name!r} (shipped: {', '.join(CAPTION_FONTS)})"
                         f"{did_you_mean(name, CAPTION_FONTS, 0.5)}") from None


def font_manifest(chain: FontChain | None = None) -> list[dict[str, str]]:
    """Name, origin and sha256 of each font in the chain, for run.json."""
    chain = chain or font_chain()
    out = []
    for index, spec in enumerate(chain.specs):
        entry = {"name": spec.name, "origin": spec.origin,
                 "sha256": font_sha256(spec, chain.fonts.loaded(index))}
        if spec.path:
            entry["path"] = spec.path
        out.append(entry)
    return out


if __name__ == "__main__":
    write_coverage()
