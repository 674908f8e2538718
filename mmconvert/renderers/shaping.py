"""Text that needs more than one glyph per character in reading order: HarfBuzz shaping
(``uharfbuzz``), the Unicode bidi algorithm (UAX #9, ``python-bidi``), grapheme clusters
(UAX #29) and line breaks (UAX #14, with dictionaries for Thai, Lao, Khmer and Myanmar) from
ICU, through ``icu4py``.

A paragraph takes this path when one of its characters ``needs_shaping``: Arabic, Hebrew and
the other right-to-left scripts, the Indic scripts, Thai and its neighbours, bidi controls, and
emoji sequences. Every other paragraph keeps the plain path of ``layout.LineBreaker``, so Latin
and CJK pages are drawn exactly as before, and break as ReadBench breaks them (at spaces, and
between CJK characters; not after hyphens, where UAX #14 would).

Lines break in logical order (``LineBreaker._paragraph``, at UAX #14's opportunities, never
inside a grapheme cluster, long tokens broken inside at cluster boundaries), then
each line is reordered (UAX #9, L1-L2): its text is cut into segments of one bidi level and one
font, each shaped by HarfBuzz in its direction, and the segments are laid out left to right in
visual order. A right-to-left paragraph's lines are right-aligned (``Line.rtl``).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from ..errors import ItemError
from .fonts import SILENT, FontChain, describe
from .layout import (
    Line,
    LineBreaker,
    Piece,
    Run,
    first_strong_rtl,
    is_break_space,
)
from .scripts import script_of

# scripts whose characters take shaping: Hebrew to NKo and Arabic's supplements, the Indic
# scripts, Thai, Lao, Tibetan, Myanmar, Khmer, Arabic and Hebrew presentation forms
_SHAPED_RANGES = ((0x0590, 0x08FF), (0x0900, 0x0DFF), (0x0E00, 0x0FFF), (0x1000, 0x109F),
                  (0x1780, 0x17FF), (0xA8E0, 0xA8FF), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F),
                  (0xFB1D, 0xFDFF), (0xFE70, 0xFEFC))
_BIDI_CONTROLS = frozenset({"R", "AL", "AN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI",
                            "FSI", "PDI"})
# parts of emoji sequences: joiner, variation selectors, keycap, regional indicators, skin tones
_EMOJI_PARTS = frozenset("\u200d\ufe0e\ufe0f\u20e3") | frozenset(
    map(chr, range(0x1F1E6, 0x1F200))) | frozenset(map(chr, range(0x1F3FB, 0x1F400)))
# those that ask for the emoji face: all but VS15, which asks for text presentation
_EMOJI_PRESENTATION = _EMOJI_PARTS - {"\ufe0e"}
# the bidi algorithm here knows embeddings, not isolates: an isolate is computed as the
# embedding of the same direction (FSI as left-to-right)
_ISOLATES_AS_EMBEDDINGS = str.maketrans("\u2066\u2067\u2068\u2069", "\u202a\u202b\u202a\u202c")


def _in(ranges, code: int) -> bool:
    return any(low <= code <= high for low, high in ranges)


def _class(ranges) -> str:
    return "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)


# the same sets as regular expressions, to test a whole paragraph at C speed
# characters that can take a bidi level other than the paragraph's: right-to-left letters,
# Arabic digits and the explicit controls
_RTL_RANGES = ((0x0590, 0x08FF), (0xFB1D, 0xFDFF), (0xFE70, 0xFEFF), (0x10800, 0x10FFF),
               (0x1E800, 0x1EFFF))
# any character of ``needs_shaping``: the shaped ranges, strong right-to-left letters and
# Arabic digits (all inside the right-to-left blocks) and bidi controls, emoji and their parts
_NEEDS_SHAPING = re.compile(
    f"[{_class(_SHAPED_RANGES)}{_class(((0x10800, 0x10FFF), (0x1E800, 0x1EFFF)))}"
    f"{_class(((0x1F000, 0x1FAFF), (0xE0020, 0xE007F)))}"
    "\u061c\u200d\u200f\u202a-\u202e\u2066-\u2069\ufe0e\ufe0f\u20e3]")
_RIGHT_TO_LEFT = re.compile(f"[{_class(_RTL_RANGES)}\u061c\u200f\u202a-\u202e\u2066-\u2069]")


@lru_cache(maxsize=8192)
def needs_shaping(char: str) -> bool:
    """Whether ``char`` takes the shaping path (see the module's doc)."""
    code = ord(char)
    return (_in(_SHAPED_RANGES, code) or unicodedata.bidirectional(char) in _BIDI_CONTROLS
            or char in _EMOJI_PARTS or 0x1F000 <= code <= 0x1FAFF or 0xE0020 <= code <= 0xE007F)


def _utf16_to_index(text: str) -> list[int]:
    """For each UTF-16 offset of ``text`` (and its end), the code point index (ICU counts in
    UTF-16 units)."""
    out = []
    for index, char in enumerate(text):
        out.extend([index] * (2 if ord(char) > 0xFFFF else 1))
    out.append(len(text))
    return out


def grapheme_starts(text: str) -> list[int]:
    """Code point indices where a grapheme cluster (UAX #29, ICU) starts, and ``len(text)``."""
    from icu4py.breakers import CharacterBreaker

    index = _utf16_to_index(text)
    starts = [index[start] for start, _ in CharacterBreaker(text, "en").segments()]
    return [*starts, len(text)] if text else [0]


def line_breaks(text: str) -> set[int]:
    """Indices where a line may break (UAX #14, by ICU's line breaker, whose dictionaries
    break Thai, Lao, Khmer and Myanmar between words)."""
    from icu4py.breakers import LineBreaker as IcuLineBreaker

    index = _utf16_to_index(text)
    return {index[start] for start, _ in IcuLineBreaker(text, "en").segments()
            if 0 < index[start] < len(text)}


def bidi_levels(text: str, rtl: bool) -> list[int]:
    """Each character's resolved embedding level (UAX #9 up to I2) in a paragraph of base
    direction ``rtl``. Characters the algorithm removes (X9: embeddings, overrides, boundary
    neutrals) take the level of the character before them."""
    if not rtl and not _RIGHT_TO_LEFT.search(text):
        return [0] * len(text)  # nothing that could leave the paragraph's level
    from bidi import algorithm as uax9

    storage = uax9.get_empty_storage()
    storage["base_level"] = 1 if rtl else 0
    storage["base_dir"] = "R" if rtl else "L"
    uax9.get_embedding_levels(text.translate(_ISOLATES_AS_EMBEDDINGS), storage)
    for index, char in enumerate(storage["chars"]):
        char["index"] = index
    uax9.explicit_embed_and_overrides(storage, False)
    uax9.resolve_weak_types(storage, False)
    uax9.resolve_neutral_types(storage, False)
    uax9.resolve_implicit_levels(storage, False)
    levels: list[int | None] = [None] * len(text)
    for char in storage["chars"]:
        levels[char["index"]] = char["level"]
    last = storage["base_level"]
    out = []
    for level in levels:
        last = last if level is None else level
        out.append(last)
    return out


def visual_order(levels: list[int]) -> list[int]:
    """UAX #9's L2: the indices of ``levels`` in visual order."""
    order = list(range(len(levels)))
    if not levels:
        return order
    highest = max(levels)
    lowest_odd = min((level for level in levels if level % 2), default=highest + 1)
    for level in range(highest, lowest_odd - 1, -1):
        i = 0
        while i < len(order):
            if levels[order[i]] >= level:
                j = i
                while j < len(order) and levels[order[j]] >= level:
                    j += 1
                order[i:j] = reversed(order[i:j])
                i = j
            else:
                i += 1
    return order


@dataclass
class Shaped:
    """Glyphs of one segment at size 1: (glyph id, x offset from the segment's start, y
    offset, index in the segment's text of the HarfBuzz cluster it belongs to) and the
    segment's advance."""

    glyphs: list[tuple[int, float, float, int]]
    advance: float


class Shaper:
    """HarfBuzz fonts of a chain, the font of each grapheme cluster, and a cache of shaped
    segments."""

    def __init__(self, chain: FontChain):
        self.chain = chain
        self._hb: dict[int, tuple[object, int]] = {}
        self._faces: dict[int, object] = {}
        self._cache: dict[tuple[int, bool, str], Shaped] = {}
        self._cluster_fonts: dict[str, int | None] = {}

    def hb_font(self, index: int):
        try:
            return self._hb[index]
        except KeyError:
            import uharfbuzz as hb

            face = self.hb_face(index)
            self._hb[index] = (hb.Font(face), face.upem)
            return self._hb[index]

    def hb_face(self, index: int):
        """The HarfBuzz face of font ``index`` (shaping, and the PDF's subsets)."""
        try:
            return self._faces[index]
        except KeyError:
            import uharfbuzz as hb

            self._faces[index] = hb.Face(hb.Blob(bytes(self.chain.fonts[index].buffer)))
            return self._faces[index]

    def cluster_font(self, cluster: str) -> int | None:
        """The font a grapheme cluster is drawn in: Noto Emoji for an emoji sequence, the
        script's own Noto face for a shaped script, else the first font in the chain with a
        glyph for every visible character of the cluster; None when no font has them all."""
        try:
            return self._cluster_fonts[cluster]
        except KeyError:
            found = self._cluster_fonts[cluster] = self._cluster_font(cluster)
            return found

    def _cluster_font(self, cluster: str) -> int | None:
        chain = self.chain
        visible = [c for c in cluster if c not in SILENT]
        if not visible:
            return 0
        candidates = []
        if any(c in _EMOJI_PRESENTATION for c in cluster) and "EMOJI" in chain.by_script:
            candidates.append(chain.by_script["EMOJI"])
        script = script_of(visible[0])
        if script in chain.by_script:
            candidates.append(chain.by_script[script])
        for index in candidates:
            if all(chain.fonts[index].has_glyph(ord(c)) for c in visible):
                return index
        for index in range(len(chain.specs)):
            if chain.passes_over(index, "".join(visible)):
                continue  # a face the coverage table says lacks one: not unpacked
            if all(chain.fonts[index].has_glyph(ord(c)) for c in visible):
                return index
        return None

    def shape(self, font: int, text: str, rtl: bool) -> Shaped:
        key = (font, rtl, text)
        try:
            return self._cache[key]
        except KeyError:
            pass
        import uharfbuzz as hb

        hb_font, upem = self.hb_font(font)
        buffer = hb.Buffer()
        buffer.add_str(text)
        buffer.guess_segment_properties()
        buffer.direction = "rtl" if rtl else "ltr"
        buffer.cluster_level = hb.BufferClusterLevel.MONOTONE_CHARACTERS
        # joiners, bidi controls and variation selectors that no ligature took draw nothing
        buffer.flags = hb.BufferFlags.REMOVE_DEFAULT_IGNORABLES
        hb.shape(hb_font, buffer, {})
        glyphs, x = [], 0.0
        for info, pos in zip(buffer.glyph_infos, buffer.glyph_positions, strict=True):
            # add_str numbers clusters by code point
            glyphs.append((info.codepoint, (x + pos.x_offset) / upem, pos.y_offset / upem,
                           info.cluster))
            x += pos.x_advance
        if x == 0 and glyphs:
            # marks with nothing to sit on in this font (an enclosing keycap after a Hebrew
            # letter): drawn one after another at their own advances, as spacing glyphs, so
            # that their ink is inside the line the layout measured and none hides another
            placed = []
            for gid, _, dy, cluster in glyphs:
                placed.append((gid, x / upem, dy, cluster))
                x += hb_font.get_glyph_h_advance(gid)
            glyphs = placed
        shaped = Shaped(glyphs, x / upem)
        if len(self._cache) > 50_000:
            self._cache.clear()
        self._cache[key] = shaped
        return shaped


@dataclass
class _Placed(Run):
    """A piece as the line filler placed it, in logical order, before reordering: ``start``
    is its index in the paragraph (its font is not chosen yet)."""

    start: int = 0


@dataclass
class _Paragraph:
    text: str
    starts: list[int]            # grapheme cluster starts, and len(text)
    font: list[int]              # font of the cluster that holds each character
    levels: list[int]
    rtl: bool


class ShapingLineBreaker(LineBreaker):
    """``LineBreaker`` for paragraphs that need shaping; other paragraphs take the plain
    path. Widths are HarfBuzz advances of segments of one bidi level and one font, measured
    the same way when the lines are filled and when they are drawn, so a line never ends past
    the margin."""

    def __init__(self, chain: FontChain, size: float, width: float, **options):
        super().__init__(chain, size, width, **options)
        self.shaper = Shaper(chain)
        self._para: _Paragraph | None = None

    # -- paragraphs ----------------------------------------------------------------------
    def paragraph_lines(self, paragraph: str, first_left: float, rest_left: float, *,
                        rtl: bool | None = None) -> list[Line]:
        if not _NEEDS_SHAPING.search(paragraph):
            return self._paragraph(paragraph, first_left, rest_left)
        if rtl is None:
            rtl = bool(first_strong_rtl(paragraph))
        starts = grapheme_starts(paragraph)
        font = [0] * len(paragraph)
        for start, end in zip(starts, starts[1:], strict=False):
            index = self.shaper.cluster_font(paragraph[start:end])
            if index is not None:
                font[start:end] = [index] * (end - start)
                continue
            # no font has every character of the cluster (a Bengali letter with a
            # Devanagari virama): each character in its own font, ignorables in the one
            # before them
            for i in range(start, end):
                char = paragraph[i]
                if char in SILENT:
                    font[i] = font[i - 1] if i > start else 0
                else:
                    font[i] = self.chain.glyph(char)[0]
        self._para = _Paragraph(paragraph, starts, font, bidi_levels(paragraph, rtl), rtl)
        try:
            lines = self._paragraph(paragraph, first_left, rest_left)
        finally:
            para, self._para = self._para, None
        return [self._visual(line, para, first_left if i == 0 else rest_left)
                for i, line in enumerate(lines)]

    def pieces(self, paragraph: str) -> list[Piece]:
        para = self._para
        if para is None:
            return super().pieces(paragraph)
        out: list[Piece] = []
        breaks = line_breaks(paragraph)
        for start, end in zip(para.starts, para.starts[1:], strict=False):
            cluster = paragraph[start:end]
            first = cluster[0]
            if cluster == "\t":
                out.append(Piece("\t", 0.0, "tab", start))
                continue
            # a space is a break; but a space that carries a mark (ICU makes " \u0301" one
            # grapheme) is text, or the mark would go where trailing spaces go: undrawn
            if is_break_space(first) and len(cluster) == 1:
                if out and out[-1].kind == "space":
                    out[-1].text += cluster
                else:
                    out.append(Piece(cluster, 0.0, "space", start))
                continue
            # a word goes on unless UAX #14 allows a break before this cluster
            if out and out[-1].kind == "word" and start not in breaks:
                out[-1].text += cluster
            else:
                out.append(Piece(cluster, 0.0, "word", start))
        for piece in out:
            if piece.kind != "tab":
                piece.width = self.measure(piece.start, piece.start + len(piece.text))
        return out

    def split_long(self, piece: Piece, room: float) -> tuple[Piece, Piece]:
        if self._para is None:
            return super().split_long(piece, room)
        end = piece.start + len(piece.text)
        cuts = [s for s in self._para.starts if piece.start < s <= end]
        cut = cuts[0]  # at least one cluster
        for candidate in cuts[1:]:
            if self.measure(piece.start, candidate) > room + 1e-6:
                break
            cut = candidate
        head = Piece(piece.text[:cut - piece.start], self.measure(piece.start, cut), "word",
                     piece.start)
        tail = Piece(piece.text[cut - piece.start:], self.measure(cut, end), "word", cut)
        return head, tail

    def _hooks(self):
        if self._para is None:
            return super()._hooks()
        return self._commit_shaped, self._place_shaped

    def _place_shaped(self, line: Line, piece: Piece, x: float) -> None:
        line.runs.append(_Placed(x, piece.text, -1, x + piece.width, start=piece.start))

    def _commit_shaped(self, line: Line, pending: list[Piece], x: float, left: float) -> float:
        for gap in pending:
            start = x
            x = self._after_gap(gap, x, left)
            line.runs.append(_Placed(start, gap.text, -1, x, start=gap.start))
        return x

    # -- measuring and reordering -------------------------------------------------------
    def segments(self, start: int, end: int) -> list[tuple[int, int, int, int]]:
        """[start, end) cut into (start, end, level, font) of one bidi level and one font
        (cut only at cluster starts, so a cluster is never split)."""
        para = self._para
        assert para is not None  # inside a paragraph's layout
        out: list[tuple[int, int, int, int]] = []
        for i in range(start, end):
            key = (para.levels[i], para.font[i])
            if out and (out[-1][2], out[-1][3]) == key:
                out[-1] = (out[-1][0], i + 1, *key)
            else:
                out.append((i, i + 1, *key))
        return out

    def measure(self, start: int, end: int) -> float:
        assert self._para is not None  # inside a paragraph's layout
        text = self._para.text
        return sum(self.shaper.shape(font, text[s:e], level % 2 == 1).advance
                   for s, e, level, font in self.segments(start, end)) * self.size

    def _visual(self, line: Line, para: _Paragraph, left: float) -> Line:
        """The line's logical runs (words, spaces and tabs, as placed) as visual runs of
        shaped glyphs, starting at ``left`` (or, right to left, at 0 with ``rtl`` set: the
        page aligns it)."""
        atoms: list[list[Any]] = []  # (level, font, text, glyphs, width)
        logical = []
        for run in cast(list[_Placed], line.runs):  # the line filler's runs
            start, end = run.start, run.start + len(run.text)
            logical.append(run.text)
            if run.text == "\t" or run.text.strip("\t") == "":
                atoms.append([para.levels[start], 0, run.text, [], run.end - run.x])
                continue
            self._para = para
            try:
                for s, e, level, font in self.segments(start, end):
                    shaped = self.shaper.shape(font, para.text[s:e], level % 2 == 1)
                    atoms.append([level, font, para.text[s:e], shaped.glyphs,
                                  shaped.advance * self.size])
            finally:
                self._para = None
        base = 1 if para.rtl else 0
        for atom in reversed(atoms):  # L1: white space at the line's end takes the base level
            if atom[2].strip():
                break
            atom[0] = base
        order = visual_order([atom[0] for atom in atoms])
        out = Line(text="".join(logical), rtl=para.rtl, indent=left)
        x = 0.0 if para.rtl else left
        placed: dict[int, float] = {}
        for i in order:
            placed[i] = x
            x += atoms[i][4]
        # runs are kept in logical order at their visual places, and a right-to-left run's
        # glyphs from right to left: the PDF's content then follows the logical text, which
        # its ActualText gives and which extraction must give back
        for i, (level, font, text, glyphs, width) in enumerate(atoms):
            drawn = [(gid, dx * self.size, dy * self.size, code) for gid, dx, dy, code in glyphs]
            if level % 2:
                drawn.reverse()
            if any(gid == 0 for gid, *_ in drawn):
                bad = next((c for c in text if not self.chain.fonts[font].has_glyph(ord(c))
                            and c not in SILENT), text[0])
                raise ItemError(f"no shipped font can draw {describe(bad)} in {text!r}")
            out.runs.append(Run(placed[i], text, font, placed[i] + width, drawn))
        out.width = x - (0.0 if para.rtl else left)
        return out


def glyph_groups(run: Run) -> tuple[list[int], dict[int, int]]:
    """The grapheme cluster each glyph of a shaped run belongs to (its start in
    ``run.text``), and where each such group's characters end: at the next group's start,
    since HarfBuzz numbers its clusters monotonically and a grapheme whose glyphs it merged
    into an earlier one's belongs to that one."""
    starts = grapheme_starts(run.text)
    groups = [starts[bisect.bisect_right(starts, cluster) - 1]
              for *_, cluster in run.glyphs or ()]
    logical = sorted(set(groups))
    return groups, dict(zip(logical, [*logical[1:], len(run.text)], strict=True))


def glyph_clusters(run: Run) -> list[tuple[int, str]]:
    """A shaped run's glyphs, in drawing order, grouped by grapheme cluster: (glyph count,
    the group's characters). Bengali কো is one group of three glyphs (ে ক া), not two
    HarfBuzz clusters (ে ক | া), which PDF readers would read back as কক ো."""
    groups, ends = glyph_groups(run)
    out: list[tuple[int, str]] = []
    previous = None
    for here in groups:
        if here == previous:
            out[-1] = (out[-1][0] + 1, out[-1][1])
        else:
            out.append((1, run.text[here:ends[here]]))
        previous = here
    return out


def run_extents(run: Run) -> list[tuple[int, int, float, float]]:
    """(start, end, left, right) of each grapheme cluster of a run, offsets in ``run.text``:
    a shaped run's clusters from their glyphs (left at the cluster's leftmost glyph, right
    at the next cluster's left in visual order, or the run's end), a run without glyphs as
    one piece. What an occlusion band must cover to hide whole clusters."""
    if not run.glyphs:
        return [(0, len(run.text), run.x, run.end)]
    groups, ends = glyph_groups(run)
    lefts: dict[int, float] = {}
    for (_gid, dx, _dy, _cluster), group in zip(run.glyphs, groups, strict=True):
        lefts[group] = min(lefts.get(group, dx), dx)
    visual = sorted((left, group) for group, left in lefts.items())
    out = []
    for i, (left, group) in enumerate(visual):
        right = visual[i + 1][0] if i + 1 < len(visual) else run.end - run.x
        out.append((group, ends[group], run.x + left, run.x + right))
    return sorted(out)
