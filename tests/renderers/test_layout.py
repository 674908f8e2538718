"""Line breaking in points: spaces, CJK, long tokens, tabs, hanging indents."""

from __future__ import annotations

import pytest

from mmconvert.renderers.fonts import font_chain
from mmconvert.renderers.layout import _PIECES, Block, LineBreaker, normalise

WIDTH = 559.44  # A4 text width at 0.25 in margins, in points


@pytest.fixture(scope="module")
def breaker():
    return LineBreaker(font_chain(), 12.0, WIDTH)


def texts(lines):
    return ["".join(r.text for r in line.runs) for line in lines]


def widest(breaker, lines):
    return max((r.end for line in lines for r in line.runs), default=0.0)


def test_latin_breaks_at_spaces_and_fills_lines(breaker):
    words = ["reading"] * 200
    lines = breaker.lines(Block(" ".join(words)))
    assert len(lines) > 1
    for line in texts(lines):
        assert not line.startswith(" ")
        assert set(line.split()) == {"reading"}
    assert widest(breaker, lines) <= WIDTH + 1e-6
    # greedy fill: adding the next word would have overflowed
    space = breaker.advance(" ")
    word = sum(breaker.advance(c) for c in "reading")
    for line in lines[:-1]:
        assert line.runs[-1].end + space + word > WIDTH


def test_cjk_breaks_between_characters_without_spaces(breaker):
    text = "漢字には空白がありません。" * 20
    lines = breaker.lines(Block(text))
    assert len(lines) > 1
    assert "".join(texts(lines)) == text
    assert widest(breaker, lines) <= WIDTH + 1e-6
    for line in texts(lines)[1:]:
        assert line[0] not in "。、，"  # no closing punctuation starts a line


def test_long_token_breaks_inside_itself(breaker):
    url = "https://example.org/" + "segment/" * 60
    lines = breaker.lines(Block("see " + url + " now"))
    assert "".join(texts(lines)).replace(" ", "") == ("see" + url + "now")
    assert widest(breaker, lines) <= WIDTH + 1e-6
    assert len(lines) >= 3


def test_token_breaking_keeps_combining_marks_with_their_base(breaker):
    token = ("e\u0301" * 400)  # stays decomposed if not normalised: never split from its base
    lines = breaker.lines(Block(token))
    for line in texts(lines):
        assert not line.startswith("\u0301")


def test_hanging_indent(breaker):
    label = "A. "
    hang = sum(breaker.advance(c) for c in label)
    lines = breaker.lines(Block(label + "word " * 150, hanging=hang))
    assert lines[0].runs[0].x == 0
    assert all(abs(line.runs[0].x - hang) < 1e-9 for line in lines[1:])


def test_tabs_advance_to_half_inch_stops(breaker):
    lines = breaker.lines(Block("a\tb\tc"))
    runs = lines[0].runs
    assert [r.text for r in runs] == ["a", "\t", "b", "\t", "c"]
    # a tab is a run of its own, drawn with no glyph, from where it stands to its stop
    assert runs[1].glyphs == [] and runs[1].end == pytest.approx(36.0)
    assert runs[2].x == pytest.approx(36.0) and runs[4].x == pytest.approx(72.0)


def test_hard_newlines_and_blank_lines(breaker):
    assert texts(breaker.lines(Block("one\n\ntwo"))) == ["one", "", "two"]


def test_normalise_line_endings_and_nfc():
    assert normalise("a\r\nb\rc\u2028d") == "a\nb\nc\nd"
    assert normalise("e\u0301") == "\u00e9"


def test_fallback_fonts_are_chosen_per_character(breaker):
    lines = breaker.lines(Block("A∀✓中"))
    fonts = [r.font for r in lines[0].runs]
    assert fonts[0] == 0 and len(set(fonts)) == 4


# paragraphs that take every path of ``pieces``: plain words, runs of several kinds of space,
# tabs, invisible characters (after a word, after a space, at the start), zero-width spaces
# next to spaces, wide characters with kinsoku, combining marks, fallback fonts and tokens
# longer than the line
MIXED = [
    "plain words only, repeated " * 40,
    "Tabs\there\tand  double  spaces\u2003em\u2002en\u3000ideographic   trailing   ",
    "\u200dstarts with a joiner; soft\u00adhyphen, zero\u200bwidth \u200b space, "
    "joiner\u200d and nbsp\u00a0kept, \u2060a word joiner and \u00adsoft hyphen after "
    "spaces " * 12,
    "中文文本，测试换行。（括号）和English words 日本語のテキスト、カタカナ。" * 12,
    "Combining e\u0301 marks, caf\u00e9 \u2014 \u201cquotes\u201d ∑∫√ ℝ ⊂ ✓ ★ Привет " * 15,
    "x" * 300 + " short " + "y" * 120,
    "",
    "   ",
]


def character_by_character(breaker: LineBreaker):
    """A breaker that cuts every paragraph character by character (no word measured
    whole, so no word placed whole either)."""
    slow = LineBreaker(breaker.chain, breaker.size, breaker.width, spacing=breaker.spacing,
                       words=breaker.words, shrink=breaker.shrink)

    def pieces(paragraph):
        out = []
        slow._cut(out, paragraph)
        return out

    slow.pieces = pieces
    return slow


@pytest.mark.parametrize("options", [{}, {"words": True}, {"shrink": 0.05},
                                     {"spacing": 0.4}], ids=["joined", "words", "shrink",
                                                             "spacing"])
def test_words_measured_whole_lay_out_as_character_by_character(options):
    """The fast path (a word of narrow visible characters measured once, and placed whole)
    gives the very pieces, runs and floats of the character-by-character one."""
    _PIECES.clear()  # measured here, not taken from another case's breaker
    fast = LineBreaker(font_chain(), 10.37, 301.3, **options)
    slow = character_by_character(fast)
    for text in MIXED:
        assert [(p.text, p.width, p.kind) for p in fast.pieces(text)] == \
            [(p.text, p.width, p.kind) for p in slow.pieces(text)]
        ours, theirs = fast.lines(Block(text, hanging=7.5)), slow.lines(Block(text, hanging=7.5))
        assert [[(r.x, r.text, r.font, r.end, r.glyphs) for r in line.runs] for line in ours] \
            == [[(r.x, r.text, r.font, r.end, r.glyphs) for r in line.runs] for line in theirs]
    assert fast._measured and not slow._measured


def test_a_paragraph_s_pieces_kept_for_the_next_breaker_are_the_ones_it_would_measure():
    """A budget search's breakers of one size and several widths share each paragraph's
    pieces: the kept ones are those a breaker of its own measures, float for float, and the
    lines they make are the same; a list handed out is the caller's to change."""
    for size, spacing in ((10.37, 0.0), (10.37, 0.4), (11.0, 0.0)):
        for text in MIXED:
            _PIECES.clear()
            LineBreaker(font_chain(), size, 301.3, spacing=spacing).pieces(text).clear()
            assert _PIECES.get((font_chain(), size, spacing, text)) is not None  # kept
            for width in (150.7, 301.3, 412.9):
                kept = LineBreaker(font_chain(), size, width, spacing=spacing)
                alone = LineBreaker(font_chain(), size, width, spacing=spacing)
                alone.pieces = alone.measured_pieces  # measures every paragraph itself
                assert kept.pieces(text) == alone.pieces(text)
                block = Block(text, hanging=7.5)
                assert [[(r.x, r.text, r.font, r.end) for r in line.runs]
                        for line in kept.lines(block)] == \
                    [[(r.x, r.text, r.font, r.end) for r in line.runs]
                     for line in alone.lines(block)]


def test_kept_pieces_let_the_oldest_go_past_their_bound():
    from mmconvert.renderers.layout import _Kept

    kept = _Kept(10)
    for text in ("abcd", "efgh", "ijkl"):
        kept.keep(("k", text), (), len(text))
    assert kept.get(("k", "abcd")) is None and kept.get(("k", "ijkl")) == ()
    assert kept.held == 8
    kept.keep(("k", "ijkl"), (), 4)  # kept once
    kept.keep(("k", "x" * 11), (), 11)  # past the bound alone: not kept
    assert kept.held == 8 and kept.get(("k", "x" * 11)) is None


def test_the_space_and_control_tables_are_unicodes():
    """``_SPACES`` and ``_CONTROLS`` hold exactly the characters their predicates name."""
    import unicodedata

    from mmconvert.renderers.layout import _CONTROLS, _SPACES, is_break_space

    chars = [chr(c) for c in range(0x110000)]
    assert {c for c in chars if _SPACES.fullmatch(c)} == \
        {c for c in chars if is_break_space(c) and c != "\u200b"}
    assert {c for c in chars if _CONTROLS.fullmatch(c)} == \
        {c for c in chars if unicodedata.category(c) == "Cc" and c not in "\n\t"}
