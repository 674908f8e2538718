"""Line breaking in points: spaces, CJK, long tokens, tabs, hanging indents."""

from __future__ import annotations

import pytest

from mmconvert.renderers.fonts import font_chain
from mmconvert.renderers.layout import Block, LineBreaker, normalise

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
