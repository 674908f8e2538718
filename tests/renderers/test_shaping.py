"""Shaping, bidi and line breaking for scripts beyond Latin and CJK (renderers/shaping.py):
the glyphs drawn, their order, the text layer read back, and bad input."""

from __future__ import annotations

import pymupdf
import pytest

from mmconvert.errors import ItemError
from mmconvert.items import Item
from mmconvert.qa.textlayer import check_pdf
from mmconvert.renderers.page import PageOptions, PageRenderer
from mmconvert.renderers.shaping import (
    bidi_levels,
    grapheme_starts,
    line_breaks,
    visual_order,
)

# hard cases: right-to-left with numbers and English, Persian digits and ZWNJ, Hebrew with
# an abbreviation mark, conjuncts and reph, reordered and split vowel signs, Thai with no
# spaces, emoji sequences, and right-to-left words inside an English line
HARD = {
    "ar": "في عام 2023، زار 15 مليون سائح مدينة دبي، وفقًا لتقرير Dubai Tourism. لا إله إلا الله.",
    "fa": "زبان فارسی با ۳۲ حرف نوشته می‌شود و در سال ۱۴۰۲ آمار جدید منتشر شد.",
    "he": "בשנת 2024 ביקרו 3.5 מיליון תיירים בישראל, לפי דו\"ח של OECD.",
    "hi": "क्षत्रिय राष्ट्र की स्थापना 1947 में हुई। कृपया प्रश्न का उत्तर दीजिए। र्क",
    "bn": "বাংলাদেশের রাজধানী ঢাকা। ক্ষুদ্র শিল্পের উন্নয়ন জরুরি।",
    "ta": "தமிழ்நாட்டின் தலைநகரம் சென்னை. க்ஷ ஸ்ரீ கை",
    "th": "ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำกรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "emoji": "Family 👨‍👩‍👧 flag 🇫🇷 keycap 1️⃣ heart ❤️ smile 😀",
    "mixed": "The word שלום means peace, and سلام too (2 words).",
}
@pytest.fixture(scope="module")
def renderer():
    return PageRenderer(PageOptions(ppi=150))


def render(renderer, text, **fields):
    item = Item(id="t", corpus="t", subset="t", split="test", context=text, **fields)
    return renderer.render(item, "context", want_pdf=True)


@pytest.mark.parametrize("name", sorted(HARD))
def test_hard_cases_draw_every_character_with_a_real_glyph_inside_the_page(renderer, name):
    text = (HARD[name] + " ") * 4
    result = render(renderer, text)
    report = check_pdf(result.pdf, text, renderer.margin_pt)
    assert report.ok, report.summary()
    assert not report.tofu and not report.outside
    with pymupdf.open("pdf", result.pdf) as doc:
        got = "".join("".join(page.get_text().split()) for page in doc)
    # every character, and the visible ones in logical order (through ActualText); the
    # invisible ones (joiners, marks of direction) may stand a place later within their word
    assert sorted(got) == sorted("".join(text.split()))
    assert ink(got) == ink(text)


def ink(text: str) -> str:
    from mmconvert.renderers.fonts import SILENT

    return "".join(c for c in text if not c.isspace() and c not in SILENT)


def line_boxes(pdf: bytes) -> list[tuple[float, float]]:
    """(left, right) of the ink of each text line, lines told apart by baseline."""
    boxes: dict[float, list[float]] = {}
    with pymupdf.open("pdf", pdf) as doc:
        for span in doc[0].get_texttrace():
            for _code, _glyph, (_x, y), bbox in span["chars"]:
                box = boxes.setdefault(round(y), [bbox[0], bbox[2]])
                box[0], box[1] = min(box[0], bbox[0]), max(box[1], bbox[2])
    return [tuple(boxes[y]) for y in sorted(boxes)]


def test_right_to_left_lines_are_right_aligned(renderer):
    boxes = line_boxes(render(renderer, (HARD["he"] + " ") * 3).pdf)
    assert len(boxes) >= 2
    rights = [right for _, right in boxes]
    assert max(rights) - min(rights) < 1.0  # one right edge
    assert boxes[-1][0] > min(left for left, _ in boxes) + 10  # the short last line


def test_a_right_to_left_page_is_cut_four_margins_right_of_its_line(renderer):
    result = render(renderer, HARD["he"])
    width = result.layout["widths"][0]
    assert width < renderer.page_w
    ((left, right),) = line_boxes(result.pdf)
    assert abs(right - (width - 4 * renderer.margin_pt)) < 1.0
    assert abs(left - renderer.margin_pt) < 1.0


def test_arabic_is_joined_not_isolated(renderer):
    result = render(renderer, "بببب")
    (run,) = result.layout["pages"][0][0]
    glyphs = [g[0] for g in run[3]]
    # initial, medial, medial, final: three different shapes, not one isolated form 4 times
    assert len(set(glyphs)) == 3


def test_a_conjunct_is_one_glyph_and_the_i_sign_goes_before_its_consonant(renderer):
    (run,) = render(renderer, "क्ष कि").layout["pages"][0][0][:1]
    assert len(run[3]) == 1  # क्ष: one ligature glyph
    runs = render(renderer, "कि").layout["pages"][0][0]
    glyphs = runs[0][3]
    assert glyphs[0][1] < glyphs[1][1] and glyphs[0][3] == glyphs[1][3] == 0  # one cluster


def test_thai_breaks_between_words_never_inside_one():
    text = "ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรค"
    breaks = line_breaks(text)
    assert {4, 7, 11} <= breaks  # ภาษา|ไทย|เป็น|ภาษา...
    words = {"ภาษา", "ไทย", "เป็น", "ที่", "ไม่มี", "การ", "เว้น", "วรรค"}
    cuts = sorted({0, len(text), *breaks})
    assert {text[a:b] for a, b in zip(cuts, cuts[1:], strict=False)} <= words


def test_thai_paragraph_wraps_at_line_breaks(renderer):
    text = HARD["th"] * 6
    lines = [line for page in render(renderer, text).layout["pages"] for line in page]
    assert len(lines) > 1
    breaks = line_breaks(text) | {0}
    at = 0
    for line in lines[:-1]:
        at += sum(len(run[2]) for run in line)
        assert at in breaks


def test_a_grapheme_cluster_is_never_split_when_a_long_token_breaks(renderer):
    text = "क्षि" * 200  # one token far wider than the line
    result = render(renderer, text)
    starts = set(grapheme_starts(text))
    at = 0
    lines = [line for page in result.layout["pages"] for line in page]
    assert len(lines) > 1
    for line in lines:
        at += sum(len(run[2]) for run in line)
        assert at in starts
    assert check_pdf(result.pdf, text, renderer.margin_pt).ok


def test_bidi_levels_and_reordering():
    text = "abc אבג 123 דהו"
    levels = bidi_levels(text, rtl=False)
    assert levels[:3] == [0, 0, 0] and levels[4] == 1 and levels[8] == 2
    assert visual_order([0, 1, 1, 0]) == [0, 2, 1, 3]
    assert visual_order([1, 2, 2, 1]) == [3, 1, 2, 0]


@pytest.mark.parametrize("text", [
    "\u202bunpaired embedding", "pop \u202c with nothing", "\u2067isolate never closed",
    "\u0301 a combining mark alone", "lone \u200d joiner", "\u200d", "\u200f", "ب\u200d",
    "\u2068FSI \u05d0 \u2069 PDI",
])
def test_odd_controls_and_marks_are_drawn_never_a_crash(renderer, text):
    result = render(renderer, text)
    assert check_pdf(result.pdf, text, renderer.margin_pt).ok


def test_redraw_from_the_stored_layout_gives_the_same_pages(renderer):
    result = render(renderer, HARD["ar"] + " " + HARD["hi"])
    again = renderer.redraw(result.layout)
    assert [p.png for p in again] == [p.png for p in result.pages]


def test_two_part_vowel_signs_are_drawn_around_their_consonant_and_read_back(renderer):
    """Tamil கொ is three glyphs: ெ and க (HarfBuzz's cluster of க), and ா (the cluster of
    the vowel sign ொ); one grapheme. Its characters are spread over the glyphs from the end
    (ெ gets nothing, க gets க, ா gets ொ), which extraction reads back in order."""
    result = render(renderer, "கொ")
    (run,) = result.layout["pages"][0][0]
    assert [g[3] for g in run[3]] == [0, 0, 1]
    xs = [g[1] for g in run[3]]
    assert xs == sorted(xs)  # ெ left of க, ா right of it
    with pymupdf.open("pdf", result.pdf) as doc:
        content = doc[0].read_contents()
        assert doc[0].get_text().strip() == "கொ"
    assert content.count(b"/ActualText<FEFF>") == 1
    assert content.index(b"/ActualText<FEFF0B95>") < content.index(b"/ActualText<FEFF0BCA>")


def test_spread_gives_each_glyph_its_share_from_the_end():
    from mmconvert.renderers.pdfwriter import spread

    assert spread(3, "கொ") == ["", "க", "ொ"]
    assert spread(2, "कि") == ["क", "ि"]
    assert spread(3, "स्था") == ["स्", "थ", "ा"]
    assert spread(1, "क्ष") == ["क्ष"]


# pieces of hostile text: every script here, marks and joiners alone, bidi controls paired
# or not, emoji parts, spaces of all kinds, tabs and newlines, long tokens
_POOL = (list("abc XYZ 123") + list("مرحبا بكم ۱۲۳") + list("שלום") + list("क्षत्रिय कि")
         + list("বাংলা ক্ষ") + list("தமிழ் கொ") + list("ภาษาไทย") + list("ລາວ ខ្មែរ မြန်")
         + ["\u200d", "\u200c", "\u0301", "\u064b", "\u094d", "\u0e31", "\ufe0f", "\u20e3",
            "\U0001F44D", "\U0001F1EB", "\U0001F1F7", "\U0001F600", "\u202a", "\u202b",
            "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e",
            "\u200f", "\u061c", "\t", "\n", "\u00a0", "\u3000", "混", "⼀", "x" * 90,
            "\u0e01" * 80])


@pytest.mark.parametrize("seed", range(60))
def test_random_text_in_every_script_is_drawn_right_or_refused_in_one_line(renderer, seed):
    import random

    rng = random.Random(seed)
    text = "".join(rng.choice(_POOL) for _ in range(rng.randint(1, 120)))
    item = Item(id="t", corpus="t", subset="t", split="test", context=text, origin="f.csv line 2")
    try:
        result = renderer.render(item, "context", want_pdf=True)
    except ItemError as err:  # a refusal names the place and the character, in one line
        assert "\n" not in str(err) and str(err).startswith("f.csv line 2: field context: ")
        return
    report = check_pdf(result.pdf, text, renderer.margin_pt)
    assert report.ok, (text, report.summary())


def test_a_right_to_left_option_opening_with_digits_keeps_its_label_at_the_right(renderer):
    """UAX #9 W7 would make digits after the Latin label "A." left to right and glue them to
    it ("A. ۱۰۰" at the right end); a right-to-left mark after the label keeps them with the
    Persian text, and the label at the right edge."""
    item = Item(id="t", corpus="t", subset="t", split="test",
                options=["۱۰۰ درجه در سطح دریا", "۹۰ درجه"])
    result = renderer.render(item, "options", want_pdf=True)
    with pymupdf.open("pdf", result.pdf) as doc:
        trace = doc[0].get_texttrace()
    first_line = min(c[2][1] for span in trace for c in span["chars"])
    glyphs = [(c[3][2], span["font"]) for span in trace for c in span["chars"]
              if abs(c[2][1] - first_line) < 1]
    rightmost = max(glyphs)
    assert rightmost[1].endswith("LiberationSans")  # the label's "A", not a Persian digit


def test_the_paragraph_test_misses_no_character_that_needs_shaping():
    """paragraph_lines tests a whole paragraph with one regular expression; it may send a
    paragraph to the shaped path needlessly, never keep one from it."""
    from mmconvert.renderers.shaping import _NEEDS_SHAPING, needs_shaping

    missed = [hex(c) for c in [*range(0x30000), *range(0xE0000, 0xE0200)]
              if not 0xD800 <= c <= 0xDFFF and needs_shaping(chr(c))
              and not _NEEDS_SHAPING.match(chr(c))]
    assert missed == []
