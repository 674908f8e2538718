"""The caption occluder on real COCO images and captions (and a COCO-CN Chinese caption)."""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from mmconvert.errors import ItemError, ItemFiltered, UsageError
from mmconvert.qa.ocr import cer, ocr
from mmconvert.renderers.occlude import (
    BANDS,
    CaptionOccluder,
    OccludeOptions,
    OcclusionParams,
    band_boxes,
    line_metrics,
)
from mmconvert.renderers.spans import Span
from mmconvert.rows import OcclusionRow
from tests.conftest import FIXTURES, make_item
from tests.typed import typed

PHOTO = FIXTURES / "coco" / "val2017" / "000000229358.jpg"  # 640 x 423
CN_PHOTO = FIXTURES / "coco-cn" / "train2017" / "000000000790.jpg"
CN_CAPTION = "一群人围坐在有一个生日蛋糕的桌子旁"  # COCO-CN, the sentence of image 790
LONG = ("A man standing in front of a mirror in a small room looks at the wooden shelves "
        "where somebody has left a pile of old books, a broken lamp, two cups of cold tea "
        "and a very sleepy cat that does not care about any of it at all, while outside the "
        "window the rain keeps falling on the quiet street below the old stone bridge")


@pytest.fixture(scope="module")
def occluder():
    return CaptionOccluder()


def caption_item(caption: str, image=PHOTO, item_id: str = "t-0000", language: str = "en"):
    return make_item(id=item_id, corpus="captions", language=language, context=caption,
                     image=str(image) if isinstance(image, Path) else image)


def block_of(result) -> Image.Image:
    """The caption block of a stacked PNG with the caption below."""
    stacked = Image.open(io.BytesIO(result.stacked)).convert("L")
    height = result.lines * result.line_height + 1
    return stacked.crop((0, stacked.height - height, stacked.width, stacked.height))


def ink_rows(image: Image.Image, left: int, right: int, top: int, bottom: int) -> list[int]:
    return [y for y in range(top, bottom)
            if min(image.crop((left, y, right, y + 1)).tobytes()) < 200]


def test_stacked_geometry_and_text_only_twin(occluder):
    result = occluder.render(caption_item(LONG), seed=0)
    width, height = result.size
    photo_height = round(423 * 300 / 640)
    assert width == 300
    assert result.lines == 5
    assert height == photo_height + 5 * result.line_height + 1
    assert LONG.startswith(result.shown) and len(result.shown) < len(LONG)
    assert all(span.end <= len(result.shown) for span in result.params.spans)
    stacked = Image.open(io.BytesIO(result.stacked))
    text_only = Image.open(io.BytesIO(result.text_only))
    assert stacked.size == text_only.size == (width, height)
    # the text-only image holds the same caption block, centred
    block = block_of(result)
    top = (height - block.height) // 2
    assert text_only.crop((0, top, width, top + block.height)).tobytes() == block.tobytes()
    assert text_only.crop((0, 0, width, top)).getextrema() == (255, 255)


def test_line_height_follows_the_papers_rule():
    # Liberation Sans has Arial's metrics: the glyph box of "hg" at 20 px is 19 px, x 1.2
    assert line_metrics("Liberation Sans", 20, "en") == (22, 19)
    height, _ = line_metrics("Droid Sans Fallback", 20, "zh")
    assert height in (23, 24)  # the box of 汉 x 1.3


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_bands_are_white_and_leave_the_letter_edges(difficulty):
    occluder = CaptionOccluder(OccludeOptions(difficulty=difficulty))
    result = occluder.render(caption_item(LONG), seed=3)
    block = block_of(result)
    low, high = BANDS[("en", difficulty)]
    assert result.band == (round(low * result.line_height), round(high * result.line_height))
    lines = occluder.lines(result.caption, "Liberation Sans", 300)[:5]
    boxes = band_boxes(lines, result.params.spans)
    assert boxes
    for left, right, row, _ in boxes:
        top = row * result.line_height
        band = block.crop((left, top + result.band[0], right, top + result.band[1]))
        assert band.getextrema() == (255, 255)
        # ink stays visible above and below the band (the letters' tops and bottoms)
        assert ink_rows(block, left, right, top, top + result.band[0])
        assert ink_rows(block, left, right, top + result.band[1], top + result.line_height)


@pytest.mark.parametrize("position", ["below", "above"])
def test_the_recorded_boxes_are_the_white_bands_of_both_images(occluder, position):
    item = caption_item(LONG)
    result = occluder.draw_occlusion(item, replace(occluder.render(item, seed=1).params,
                                         position=position))
    assert result.params.spans
    for name, png in (("stacked", result.stacked), ("text_only", result.text_only)):
        image = Image.open(io.BytesIO(png)).convert("L")
        spans = {span for span, _ in result.boxes[name]}
        assert spans == set(range(len(result.params.spans)))
        for _, box in result.boxes[name]:
            assert box[2] > box[0] and box[3] > box[1]
            assert image.crop(tuple(box)).getextrema() == (255, 255)
            # one row above the band, the letters' ink is still there
            above = image.crop((box[0], box[1] - 2, box[2], box[1]))
            assert above.getextrema()[0] < 128


def test_a_span_across_a_line_break_is_covered_on_both_lines(occluder):
    item = caption_item(LONG)
    params, caption, lines = occluder.layout(item, seed=0)
    # five words: the last two of line 1 and the first three of line 2
    words_1 = caption[lines[0].start:lines[0].end].split()
    start = lines[0].end - len(" ".join(words_1[-2:]))
    end = lines[1].start + len(" ".join(caption[lines[1].start:].split()[:3]))
    span = Span(caption[start:end], start, end)
    assert "\n" not in span.text and len(span.text.split()) == 5
    result = occluder.draw_occlusion(item, replace(params, spans=(span,)))
    block = block_of(result)
    boxes = band_boxes(lines, [span])
    assert [row for _, _, row, _ in boxes] == [0, 1]
    assert boxes[1][0] == 0  # the second line's part starts at its first glyph
    for left, right, row, _ in boxes:
        top = row * result.line_height
        assert block.crop((left, top + result.band[0], right,
                           top + result.band[1])).getextrema() == (255, 255)


def test_the_chosen_occurrence_is_covered_not_the_first(occluder):
    caption = "the small dog runs over the green hill and the small dog runs over the green hill"
    item = caption_item(caption)
    params, _, lines = occluder.layout(item, seed=0)
    start = caption.index("small dog runs over the", 10)
    span = Span(caption[start:start + 23], start, start + 23)
    result = occluder.draw_occlusion(item, replace(params, spans=(span,)))
    block = block_of(result)
    first = caption.index("small dog runs over the")
    row = next(i for i, line in enumerate(lines) if line.start <= first < line.end)
    left, right = int(lines[row].x_at(first)), int(lines[row].x_at(first + 23))
    top = row * result.line_height
    # the first occurrence keeps its ink inside the band rows
    assert ink_rows(block, left, right, top + result.band[0], top + result.band[1])
    for box_left, _, box_row, _ in band_boxes(lines, [span]):
        assert box_row != row or box_left >= right


def test_same_seed_same_bytes_and_the_row_remakes_the_images(occluder):
    item = caption_item(LONG)
    first = occluder.render(item, seed=5)
    second = CaptionOccluder().render(item, seed=5)
    assert (first.stacked, first.text_only) == (second.stacked, second.text_only)
    row = {"renderer": {"params": first.params.as_dict()},
           "masked_spans": [s.as_dict() for s in first.params.spans]}
    remade = occluder.draw_occlusion(item, OcclusionParams.from_row(typed(row, OcclusionRow)))
    assert remade.stacked == first.stacked and remade.text_only == first.text_only
    other = occluder.render(item, seed=6)
    assert other.params.spans != first.params.spans


def test_chinese_wraps_per_character_and_records_no_ner():
    occluder = CaptionOccluder(language="zh")
    caption = CN_CAPTION * 2  # two sentences' worth, so that it wraps
    result = occluder.render(caption_item(caption, CN_PHOTO, language="zh"), seed=0)
    assert result.params.font == "Droid Sans Fallback"
    lines = occluder.lines(caption, "Droid Sans Fallback", 300)
    assert [(line.start, line.end) for line in lines] == [(0, 15), (15, 30), (30, 34)]
    assert all(len(span.text) == 5 for span in result.params.spans)
    assert occluder.chooser("zh").ner == "none"


def test_hidden_style_draws_side_width_font_and_difficulty():
    occluder = CaptionOccluder(OccludeOptions(style="hidden", max_height=2000))
    seen = [occluder.layout(caption_item(LONG, item_id=f"t-{i:04d}"), seed=0)[0]
            for i in range(40)]
    assert all(600 <= p.width <= 1000 for p in seen)
    assert {p.position for p in seen} == {"above", "below"}
    assert {p.difficulty for p in seen} == {"easy", "hard"}
    assert "Comic Neue" in {p.font for p in seen} and len({p.font for p in seen}) >= 4
    above = next(i for i, p in enumerate(seen) if p.position == "above")
    result = occluder.render(caption_item(LONG, item_id=f"t-{above:04d}"), seed=0)
    stacked = Image.open(io.BytesIO(result.stacked))
    # the caption is on top: its first rows are white paper with black type, no photo colour
    top = stacked.crop((0, 0, stacked.width, result.line_height)).convert("RGB")
    red, green, blue = top.split()
    assert red.tobytes() == green.tobytes() == blue.tobytes()


def test_hidden_style_refuses_a_fixed_width():
    with pytest.raises(ValueError, match="width is drawn per item in the hidden style"):
        OccludeOptions(style="hidden", width=300)


def test_unknown_font_is_one_line_with_a_suggestion():
    with pytest.raises(UsageError) as err:
        CaptionOccluder(OccludeOptions.model_construct(font="Comic Nue"))
    assert str(err.value).startswith("unknown font 'Comic Nue' (shipped: Liberation Sans, ")
    assert str(err.value).endswith("did you mean 'Comic Neue'?")


def test_a_tall_pair_is_filtered_before_any_span_work(tmp_path, occluder):
    tall = tmp_path / "tall.png"
    Image.new("RGB", (300, 1000), "gray").save(tall)
    with pytest.raises(ItemFiltered, match=r"stacked height 1\d\d\d px is over --max-height 900"):
        occluder.render(caption_item("1 2 3", tall), seed=0)  # no span would be eligible


def _png_header(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


@pytest.mark.parametrize("image, message", [
    (PHOTO.read_bytes()[:20000], "truncated or damaged image"),
    (b"<html>not an image</html>", "the image is not a readable image"),
    (_png_header(10000, 6000), "the image is 10000x6000 (60.0 megapixels), over the "
                               "50-megapixel limit; refused before decoding"),
    (_png_header(20000, 20000), "the image is larger than 50 megapixels; refused"),
    (str(FIXTURES / "nothing.jpg"), "not found"),
])
def test_bad_images_are_one_line_errors(occluder, image, message):
    item = caption_item(LONG, image=image)
    with pytest.raises(ItemError) as err:
        occluder.render(item, seed=0)
    assert message in str(err.value)
    assert "field image" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("caption, message", [
    ("   ", "field caption: empty caption"),
    ("1 2 3 4 5 6 7 8 9 10 11 12", "field caption: no 5-gram of plain words to cover"),
    ("a cat\x07 on a mat", r"control character U\+0007"),
])
def test_bad_captions_are_one_line_errors(occluder, caption, message):
    with pytest.raises(ItemError, match=message):
        occluder.render(caption_item(caption), seed=0)


def test_ocr_reads_the_caption_back(tmp_path, occluder):
    """Text fidelity: an uncovered caption block read back by Tesseract."""
    item = caption_item(LONG)
    params, caption, lines = occluder.layout(item, seed=0)
    result = occluder.draw_occlusion(item, replace(params, width=900))
    path = tmp_path / "block.png"
    block_of(result).resize((1800, block_of(result).height * 2)).save(path)
    lines = occluder.lines(caption, "Liberation Sans", 900)[:5]
    assert cer(caption[:lines[-1].end], ocr(path, "en").text) < 0.02


SHAPED_CAPTION = ("A shop sign reading مرحبا بكم hangs above a stall selling क्षत्रिय "
                  "dolls, a 👍 sticker and a flag 🇫🇷 by the door")


def test_a_caption_with_shaped_words_is_drawn_shaped_and_bands_cover_whole_clusters(
        occluder):
    from mmconvert.renderers.shaping import grapheme_starts

    item = caption_item(SHAPED_CAPTION)
    params, caption, lines = occluder.layout(item, seed=0)
    assert any(run.glyphs for line in lines for run in line.runs)
    graphemes = set(grapheme_starts(caption))
    for word in ("بكم", "क्षत्रिय", "👍", "🇫🇷"):
        start = caption.index(word)
        span = Span(word, start, start + len(word))
        result = occluder.draw_occlusion(item, replace(params, spans=(span,)))
        block = block_of(result)
        ((left, right, row, _),) = band_boxes(lines, [span])
        line = lines[row]
        # the band holds every glyph of the word: no ink left in its rows, and the band
        # is no wider than the word's clusters
        top = row * result.line_height
        assert block.crop((left, top + result.band[0], right,
                           top + result.band[1])).getextrema() == (255, 255)
        x0, x1 = line.extent(start, start + len(word))
        assert left == int(x0 // 1) and right - left < 60 + (x1 - x0)
        assert start in graphemes and start + len(word) in graphemes


def test_a_right_to_left_word_is_hidden_where_it_is_drawn_not_where_it_would_be_ltr(
        occluder):
    item = caption_item("It says مرحبا بكم")
    params, caption, lines = occluder.layout(item, seed=0)
    (line,) = lines
    first, second = caption.index("مرحبا"), caption.index("بكم")
    # right to left: the first word in reading order lies to the right of the second
    assert line.extent(first, first + 5)[0] > line.extent(second, second + 3)[1] - 1e-6


@pytest.mark.parametrize("mode, size", [("RGB", (300, 217)), ("L", (300, 41)), ("RGB", (1, 1)),
                                        ("L", (1, 5))])
def test_the_png_encoder_keeps_every_pixel_and_writes_a_plain_png(mode, size):
    import random

    from mmconvert.renderers.drawing import encode_png

    draw = random.Random(7)
    channels = len(mode)
    image = Image.frombytes(mode, size, bytes(draw.randrange(256)
                                              for _ in range(size[0] * size[1] * channels)))
    png = encode_png(image)
    back = Image.open(io.BytesIO(png))
    assert (back.mode, back.size) == (mode, size)
    assert back.tobytes() == image.tobytes()
    assert png[12:16] == b"IHDR" and png.endswith(b"IEND\xaeB`\x82")


def test_the_png_encoder_refuses_modes_it_does_not_write():
    from mmconvert.renderers.drawing import encode_png

    with pytest.raises(ValueError, match="L or RGB"):
        encode_png(Image.new("RGBA", (2, 2)))


def test_a_prepared_group_draws_the_bytes_of_items_drawn_alone(occluder):
    from mmconvert.corpora import LoadReport, resolve
    from mmconvert.corpora.base import load_request

    items = resolve("captions").load(load_request(resolve("captions"), {"source": FIXTURES / "coco",
                                                          "all_captions": True}),
                                     LoadReport())[:6]
    alone = [occluder.render(item, 3) for item in items]
    occluder.prepare(items, 3)
    together = [occluder.render(item, 3) for item in items]
    assert [(r.stacked, r.text_only, r.params) for r in together] == \
        [(r.stacked, r.text_only, r.params) for r in alone]
    # an item with the id of a prepared one but another caption is laid out again
    changed = replace(items[0], context="A small brown dog sleeps on a soft blue blanket by "
                                        "the old wooden door of the farmhouse kitchen")
    assert occluder.render(changed, 3).caption == changed.context
