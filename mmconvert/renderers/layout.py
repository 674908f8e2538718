"""Line and page breaking, computed once in points and independent of the output PPI.

Latin text breaks at spaces, CJK text between characters (with the common kinsoku rules: no
closing punctuation at a line start, no opening bracket at a line end), and a token longer than
the line breaks inside itself, so no glyph is ever placed past the margin. Tabs advance to the
next 0.5 in stop. Text must already be normalised (see ``normalise``).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass, field, replace
from functools import reduce
from operator import add

from .fonts import INVISIBLE, FontChain

TAB_STOP = 36.0  # points
_EPS = 1e-6
_NON_BREAKING_SPACES = frozenset("\u00a0\u2007\u202f")
_NO_BREAK_BEFORE = frozenset(
    "、。，．・：；？！）］｝〕〉》」』】〙〗〟’”｠»ゝゞーァィゥェォッャュョヮヵヶぁぃぅぇぉっゃゅょゎゕゖ"
    "々〻‐゠–〜～?!),.:;]}"
)
_NO_BREAK_AFTER = frozenset("（［｛〔〈《「『【〘〖〝‘“｟«([{")
# runs of the break spaces (``is_break_space``: the Zs spaces but the non-breaking ones) other
# than the zero-width one, which is invisible
_SPACES = re.compile("([\u0020\u1680\u2000-\u2006\u2008-\u200a\u205f\u3000]+)")


def first_strong_rtl(text: str) -> bool | None:
    """UAX #9's P2-P3: True when the first strong character is right-to-left, False when it
    is left-to-right, None when there is none."""
    for char in text:
        kind = unicodedata.bidirectional(char)
        if kind in ("R", "AL"):
            return True
        if kind == "L":
            return False
    return None


def normalise(text: str) -> str:
    """NFC, and CR/LF, CR, form feed, vertical tab and Unicode line breaks as ``\\n``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    for sep in ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"):
        text = text.replace(sep, "\n")
    return unicodedata.normalize("NFC", text)


# the C0 and C1 controls (Unicode's Cc) but tab and newline
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def control_characters(text: str) -> list[str]:
    """Characters that have no place in rendered text (C0/C1 controls other than tab/newline)."""
    return sorted(set(_CONTROLS.findall(text)))


def is_break_space(char: str) -> bool:
    """A space a line may break at: the zero-width space and the Zs spaces but the
    non-breaking ones."""
    return char == "\u200b" or (unicodedata.category(char) == "Zs"
                                and char not in _NON_BREAKING_SPACES)


def is_wide(char: str) -> bool:
    """Characters between which a line may break (CJK ideographs, kana, hangul, fullwidth)."""
    return unicodedata.east_asian_width(char) in "WF"


def _slow(char: str) -> bool:
    """A character ``LineBreaker.pieces`` takes one by one: a tab, an invisible character, or a
    wide one (a line may break around it); a word of other characters is measured whole."""
    try:
        return _SLOW[char]
    except KeyError:
        slow = _SLOW[char] = char == "\t" or char in INVISIBLE or is_wide(char)
        return slow


_SLOW: dict[str, bool] = {}


@dataclass
class Run:
    x: float
    text: str
    font: int
    end: float
    # shaped glyphs (glyph id, x and y offset from ``x`` in points, index in ``text`` of the
    # cluster the glyph belongs to); None for a plain run, whose characters are drawn one
    # glyph each from the font's cmap
    glyphs: list[tuple[int, float, float, int]] | None = None


@dataclass
class Line:
    runs: list[Run] = field(default_factory=list)
    # set for a shaped line (``shaping.ShapingLineBreaker``): its text in logical order (the
    # PDF's ActualText), whether its paragraph runs right to left (then its runs start at 0
    # and the page aligns it ``indent`` from the right), and its width
    text: str | None = None
    rtl: bool = False
    indent: float = 0.0
    width: float = 0.0
    last: bool = False  # the last line of its paragraph (never justified)

    def align_right(self, edge: float, *, centre: bool = False) -> None:
        """Move a right-to-left line so that it ends ``indent`` in from ``edge`` (``centre``:
        half as far, centring it)."""
        shift = max(0.0, edge - self.indent - self.width)
        self.shift(shift / 2 if centre else shift)

    def shift(self, by: float) -> None:
        for run in self.runs:
            run.x += by
            run.end += by


@dataclass
class Block:
    """A paragraph group: ``text`` (may hold ``\\n``), its first-line indent and the indent of
    continuation lines (a hanging indent for options), and blank lines before it."""

    text: str
    indent: float = 0.0
    hanging: float = 0.0
    blank_before: int = 0
    # right to left (None: the first strong character of the text after ``label`` decides)
    rtl: bool | None = None
    label: int = 0  # characters of an option label ("A. ") the direction is not taken from
    field: str = ""  # the item's field it holds (named by an error in laying it out)
    first: float = 0.0  # added to the first line of each of its paragraphs


@dataclass
class Piece:
    text: str
    width: float
    kind: str  # "word", "space", "tab"
    start: int = 0  # index in the paragraph (shaped paragraphs)
    # a measured piece (``LineBreaker._measure``) of one font and no letter spacing: the
    # font, and each character's advance in points, by which it is placed whole
    font: int = -1
    advances: tuple[float, ...] = ()


class _Kept:
    """Paragraphs' pieces by (fonts, size, spacing, paragraph); the oldest go past ``chars``."""

    def __init__(self, chars: int):
        self.chars, self.held = chars, 0
        self._found: dict[tuple, tuple[Piece, ...]] = {}
        self._lock = threading.Lock()  # a thread executor's workers lay out side by side

    def get(self, key: tuple) -> tuple[Piece, ...] | None:
        return self._found.get(key)

    def clear(self) -> None:
        with self._lock:
            self._found.clear()
            self.held = 0

    def keep(self, key: tuple, pieces: tuple[Piece, ...], size: int) -> None:
        with self._lock:
            if size > self.chars or key in self._found:
                return
            while self._found and self.held + size > self.chars:
                oldest = next(iter(self._found))
                self.held -= len(oldest[-1])
                del self._found[oldest]
            self._found[key] = pieces
            self.held += size


_PIECES = _Kept(1_000_000)  # a long context's worth: about 40 bytes a character, 40 MB at most


class LineBreaker:
    """Fills lines ``width`` points wide. ``spacing`` (letter spacing) is added after each
    visible character; ``words``: each word and each space its own run (so that an aligner
    can move them apart), where by default runs join while their font does."""

    def __init__(self, chain: FontChain, size: float, width: float, *, spacing: float = 0.0,
                 words: bool = False, shrink: float = 0.0):
        self.chain, self.size, self.width, self.spacing = chain, size, width, spacing
        self.words = words or bool(spacing)
        # the share of each space's width a line may run past ``width`` to take one more
        # word (reportlab's spaceShrinkage); 0: never past it
        self.shrink = shrink
        # words and runs of spaces measured once each
        self._measured: dict[str, Piece] = {}

    _MEASURED_MAX = 100_000  # words kept measured (a corpus's vocabulary, not its text)

    def advance(self, char: str) -> float:
        if char in INVISIBLE:
            return 0.0
        return self.chain.glyph(char)[1] * self.size + self.spacing

    def pieces(self, paragraph: str) -> list[Piece]:
        """The paragraph's words, spaces and tabs, measured (``measured_pieces``), kept for
        the next breaker of the same fonts, size and spacing (a vision budget's search lays
        an item out at one size at several page widths: 64 % of its paragraphs came again).
        The pieces are never changed once made; the list is the caller's own."""
        key = (self.chain, self.size, self.spacing, paragraph)
        found = _PIECES.get(key)
        if found is None:
            found = tuple(self.measured_pieces(paragraph))
            _PIECES.keep(key, found, len(paragraph))
        return list(found)

    def measured_pieces(self, paragraph: str) -> list[Piece]:
        """The paragraph's words, spaces and tabs, measured. A word of narrow visible
        characters alone is measured once (``_measure``); a word with a tab, an invisible or
        a wide character is cut character by character (``_cut``)."""
        out: list[Piece] = []
        slow = [char for char in set(paragraph) if _slow(char)]
        has_slow = re.compile("[" + re.escape("".join(slow)) + "]").search if slow else None
        measure, known = self._measure, self._measured
        space = False  # ``re.split`` alternates word and spaces, from a word (maybe empty)
        for token in _SPACES.split(paragraph):
            if not token:
                pass
            elif space and out and out[-1].kind == "space":  # after a zero-width space
                out[-1] = Piece(out[-1].text + token, reduce(
                    add, (self.advance(char) for char in token), out[-1].width), "space")
            elif space:
                out.append(known.get(token) or measure(token, "space"))
            elif has_slow is not None and has_slow(token):
                self._cut(out, token)
            else:
                out.append(known.get(token) or measure(token, "word"))
            space = not space
        return out

    def _cut(self, out: list[Piece], text: str) -> None:
        """Append the pieces of ``text`` (a word that follows a space or starts the
        paragraph) to ``out``, character by character: invisible characters join the piece
        before them, a wide character is a piece of its own unless kinsoku glues it, other
        characters join the word before them."""
        if out:  # it may grow: a copy, never the measured piece itself, placed by its text
            out[-1] = replace(out[-1], font=-1, advances=())
        glue_next = False
        for char in text:
            if char in INVISIBLE and char != "\u200b":
                if out:
                    out[-1].text += char
                continue
            if char == "\t":
                out.append(Piece("\t", 0.0, "tab"))
                glue_next = False
                continue
            if is_break_space(char):
                width = self.advance(char)
                if out and out[-1].kind == "space":
                    out[-1].text += char
                    out[-1].width += width
                else:
                    out.append(Piece(char, width, "space"))
                glue_next = False
                continue
            width = self.advance(char)
            previous = out[-1] if out and out[-1].kind == "word" else None
            if previous is None:
                attach = False
            elif is_wide(char):
                attach = glue_next or char in _NO_BREAK_BEFORE
            else:
                attach = (glue_next or not is_wide(previous.text[-1])
                          or unicodedata.category(char)[0] in "MP")
            if previous is not None and attach:
                previous.text += char
                previous.width += width
            else:
                out.append(Piece(char, width, "word"))
            glue_next = char in _NO_BREAK_AFTER

    def _measure(self, text: str, kind: str) -> Piece:
        """The piece of a word of narrow visible characters, or of a run of spaces, measured
        as ``_cut`` would measure it, and kept in ``_measured`` for the next time it comes
        (``pieces`` looks there first)."""
        glyph, advance = self.chain.glyph, self.advance
        steps = tuple(advance(char) for char in text)
        fonts = {glyph(char)[0] for char in text}
        piece = Piece(text, reduce(add, steps), kind)
        if len(fonts) == 1 and not self.spacing:  # then each step is the glyph's advance
            piece.font, piece.advances = fonts.pop(), steps
        if len(self._measured) >= self._MEASURED_MAX:
            self._measured.clear()
        self._measured[text] = piece
        return piece

    def split_long(self, piece: Piece, room: float) -> tuple[Piece, Piece]:
        """Split a word that does not fit in ``room`` at the last character that fits
        (at least one character, never before a combining mark)."""
        used = 0.0
        cut = 0
        for i, char in enumerate(piece.text):
            w = self.advance(char)
            if used + w > room + _EPS and cut > 0:
                break
            used += w
            if i + 1 < len(piece.text) and unicodedata.category(piece.text[i + 1])[0] == "M":
                continue
            cut = i + 1
        head = piece.text[:cut]
        head_width = sum(self.advance(c) for c in head)
        return Piece(head, head_width, "word"), Piece(piece.text[cut:], piece.width - head_width,
                                                      "word")

    def lines(self, block: Block) -> list[Line]:
        out: list[Line] = []
        for p_index, paragraph in enumerate(block.text.split("\n")):
            left = (block.indent if p_index == 0 else block.hanging) + block.first
            rtl = block.rtl
            if rtl is None and block.label and p_index == 0:
                rtl = first_strong_rtl(paragraph[block.label:])
            lines = self.paragraph_lines(paragraph, left, block.hanging, rtl=rtl)
            lines[-1].last = True
            out.extend(lines)
        return out

    def paragraph_lines(self, paragraph: str, first_left: float, rest_left: float, *,
                        rtl: bool | None = None) -> list[Line]:
        return self._paragraph(paragraph, first_left, rest_left)

    def _hooks(self):
        """How a line's pieces are placed: ``_commit`` (the gaps before a word) and
        ``_place_piece`` (a word)."""
        return self._commit, self._place_piece

    def _paragraph(self, paragraph: str, first_left: float, rest_left: float) -> list[Line]:
        lines: list[Line] = []
        line = Line()
        left = first_left
        x = left
        pending: list[Piece] = []  # spaces and tabs waiting for the next word
        wrapped = False
        spaces = 0.0  # width of the spaces placed on the line (``shrink``)
        queue = self.pieces(paragraph)
        queue.reverse()
        commit, place = self._hooks()
        after_gap, shrink, limit = self._after_gap, self.shrink, self.width + _EPS
        while queue:
            piece = queue.pop()
            if piece.kind != "word":
                if wrapped and not line.runs:
                    continue  # spaces at the start of a wrapped line are not drawn
                pending.append(piece)
                continue
            start = x
            for gap in pending:
                start = start + gap.width if gap.kind == "space" else after_gap(gap, start, left)
            room = limit
            if shrink and line.runs:
                spaces += sum([gap.width for gap in pending if gap.kind == "space"])
                room += shrink * spaces
            if start + piece.width <= room:
                if pending:
                    x = commit(line, pending, x, left)
                    pending = []
                place(line, piece, x)
                x += piece.width
                continue
            if line.runs:
                lines.append(line)
                line, left, x, pending, wrapped = Line(), rest_left, rest_left, [], True
                spaces = 0.0
                queue.append(piece)
                continue
            if pending and start + self.split_long(piece, 0.0)[0].width > self.width + _EPS:
                # tabs or spaces that leave no room for even one cluster on an empty line end
                # it (as spaces at a wrap, undrawn): the word starts the next line, never
                # past the margin
                lines.append(line)
                line, left, x, pending, wrapped = Line(), rest_left, rest_left, [], True
                spaces = 0.0
                queue.append(piece)
                continue
            # an empty line and still too long: break inside the token
            x = commit(line, pending, x, left)
            pending = []
            head, tail = self.split_long(piece, self.width - x)
            place(line, head, x)
            lines.append(line)
            line, left, x, wrapped = Line(), rest_left, rest_left, True
            spaces = 0.0
            if tail.text:
                queue.append(tail)
        lines.append(line)
        return lines

    def _after_gap(self, gap: Piece, x: float, left: float) -> float:
        if gap.kind == "tab":
            return left + (int((x - left + _EPS) // TAB_STOP) + 1) * TAB_STOP
        return x + gap.width

    def _commit(self, line: Line, pending: list[Piece], x: float, left: float) -> float:
        for gap in pending:
            start = x
            x = self._after_gap(gap, x, left)
            if gap.kind == "space":
                self._place_piece(line, gap, start)
            else:  # a tab: nothing drawn, but a run of its own, so the text layer holds it
                line.runs.append(Run(start, gap.text, self.chain.glyph(" ")[0], x, glyphs=[]))
        return x

    def _place_piece(self, line: Line, piece: Piece, x: float) -> None:
        if not piece.advances:
            self._place(line, piece.text, x)
            return
        # a measured piece of one font: its characters join as one by one they would
        runs = line.runs
        last = runs[-1] if runs else None
        if not self.words and last is not None and last.font == piece.font and \
                abs(last.end - x) < _EPS and last.glyphs is None:
            last.text += piece.text
            last.end = reduce(add, piece.advances, last.end)
        else:
            runs.append(Run(x, piece.text, piece.font, reduce(add, piece.advances, x)))

    def _place(self, line: Line, text: str, x: float) -> None:
        """Append ``text`` at ``x`` as runs of one font each (invisible characters join the
        run they follow and are not drawn)."""
        if self.spacing:
            self._place_spaced(line, text, x)
            return
        joins = not self.words
        for char in text:
            if char in INVISIBLE:
                continue
            font, adv = self.chain.glyph(char)
            last = line.runs[-1] if line.runs else None
            if joins and last is not None and last.font == font and \
                    abs(last.end - x) < _EPS and last.glyphs is None:
                last.text += char
                last.end += adv * self.size
            else:
                line.runs.append(Run(x, char, font, x + adv * self.size))
                joins = True
            x += adv * self.size

    def _place_spaced(self, line: Line, text: str, x: float) -> None:
        """``_place`` with letter spacing: runs of one font whose glyphs are placed one by
        one, ``spacing`` apart more than their advances."""
        run: Run | None = None
        for char in text:
            if char in INVISIBLE:
                continue
            font, adv = self.chain.glyph(char)
            if run is None or run.font != font:
                glyphs: list[tuple[int, float, float, int]] = []
                run = Run(x, "", font, x, glyphs=glyphs)
                line.runs.append(run)
            glyphs.append((self.chain.glyph_id(font, char), x - run.x, 0.0, len(run.text)))
            run.text += char
            x += adv * self.size + self.spacing
            run.end = x


def _is_space(run: Run) -> bool:
    return bool(run.text) and all(map(is_break_space, run.text))


def align(line: Line, edge: float, mode: str) -> None:
    """Set a laid-out line ``right``, ``center`` or ``justify`` between its indent and
    ``edge`` (points from the left margin). A right-to-left line (which the page sets from
    the right) is only justified here: left and right mirror for it, and the page centres
    it. Justifying widens the spaces between a line's words alike; it leaves a paragraph's
    last line, a line with a tab and a line without a space (CJK) as they are."""
    if not line.runs:
        return
    if line.rtl:
        room = edge - line.indent - line.width
    else:
        room = edge - max(run.end for run in line.runs)
    if room <= _EPS:
        return
    if mode in ("right", "center") and not line.rtl:
        line.shift(room if mode == "right" else room / 2)
        return
    if mode != "justify" or line.last or any("\t" in run.text for run in line.runs):
        return
    order = sorted(line.runs, key=lambda run: run.x)
    words = [i for i, run in enumerate(order) if not _is_space(run)]
    if len(words) < 2:
        return
    gaps = {i for i in range(words[0] + 1, words[-1]) if _is_space(order[i])}
    if not gaps:
        return
    each = room / len(gaps)
    moved = 0.0
    for i, run in enumerate(order):  # each gap widens by ``each``, moving what follows it
        run.x += moved
        if i in gaps:
            moved += each
        run.end += moved
    if line.rtl:
        line.width += room


def marked_run(run: Run, marks: frozenset[str]) -> bool:
    """A run of a coloured newline marker's characters alone."""
    return bool(run.text) and all(c in marks for c in run.text)


def split_marked(line: Line, marks: frozenset[str], chain: FontChain, size: float) -> None:
    """Cut the line's runs where a newline marker's characters begin and end, so that each
    marker is a run of its own (drawn in its colour); positions unchanged. A shaped run
    whose glyphs do not map one to one onto its characters stays whole."""
    out: list[Run] = []
    for run in line.runs:
        if not any(c in marks for c in run.text) or marked_run(run, marks):
            out.append(run)
            continue
        pieces: list[tuple[bool, str]] = []
        for char in run.text:
            marked = char in marks
            if pieces and pieces[-1][0] == marked:
                pieces[-1] = (marked, pieces[-1][1] + char)
            else:
                pieces.append((marked, char))
        if run.glyphs is None:
            x = run.x
            for _, text in pieces:
                width = sum(chain.glyph(c)[1] * size for c in text if c not in INVISIBLE)
                out.append(Run(x, text, run.font, x + width))
                x += width
            continue
        if len(run.glyphs) != len(run.text):
            out.append(run)
            continue
        start = 0
        for _, text in pieces:
            glyphs = run.glyphs[start:start + len(text)]
            x = run.x + glyphs[0][1]
            following = run.glyphs[start + len(text)] if start + len(text) < len(run.glyphs) \
                else None
            end = run.x + following[1] if following is not None else run.end
            out.append(Run(x, text, run.font, end,
                           [(gid, dx - glyphs[0][1], dy, cluster - start)
                            for gid, dx, dy, cluster in glyphs]))
            start += len(text)
    line.runs = out


@dataclass
class PageLayout:
    """Pages of lines; each line's top is ``margin + index * pitch`` on its page."""

    pages: list[list[Line]]
    pitch: float

    def line_count(self) -> int:
        return sum(len(p) for p in self.pages)


def paginate(lines: list[Line], lines_per_page: int, pitch: float) -> PageLayout:
    pages = [lines[i:i + lines_per_page] for i in range(0, len(lines), lines_per_page)]
    # trailing blank lines on the last page add nothing to read; drop them
    while pages and pages[-1] and not pages[-1][-1].runs:
        pages[-1].pop()
        if not pages[-1]:
            pages.pop()
    return PageLayout(pages or [[]], pitch)


def _joins_without_space(before: str, after: str) -> bool:
    """Lines of Chinese or Japanese are joined with no space between them."""
    return bool(before and after) and (unicodedata.east_asian_width(before[-1]) in "WF"
                                       or unicodedata.east_asian_width(after[0]) in "WF")


def flow(text: str, newlines: str, marker: str, gap: int = 0) -> str:
    """A field's text as the page sets it: ``keep``: every newline a line break; ``reflow``:
    a blank line ends a paragraph, and the newlines inside one become spaces (none between
    CJK lines), so hard-wrapped text fills the line; ``marker``: each newline drawn as
    ``marker`` and the text run on (Glyph's newline markup). ``gap``: blank lines set
    between paragraphs (kept or reflowed)."""
    if "\n" not in text:
        return text
    if newlines == "keep":
        return text.replace("\n", "\n" * (gap + 1)) if gap else text
    if newlines == "marker":
        return text.replace("\n", marker)
    paragraphs = []
    for paragraph in re.split(r"\n[ \t]*\n\s*", text):
        lines = [line.strip(" \t") for line in paragraph.split("\n")]
        joined = ""
        for line in lines:
            if not line:
                continue
            joined += ("" if not joined or _joins_without_space(joined, line) else " ") + line
        paragraphs.append(joined)
    return ("\n" * (gap + 1)).join(p for p in paragraphs if p)
