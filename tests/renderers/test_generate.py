"""The generative renderer's parts that make no calls: planning, prompts, the JPEG copy."""

from __future__ import annotations

import io

import pytest
from PIL import Image
from pydantic import ValidationError

from mmconvert.api.client import ApiMalformed
from mmconvert.prompts import Prompts
from mmconvert.renderers.generate import (
    GenerateOptions,
    ImageApiRenderer,
    benchmark_copy,
    count_tokens,
    image_text,
    parse_depiction,
    parse_layout,
)
from tests.conftest import make_item


def renderer(prompt_dir=None, **options):
    return ImageApiRenderer(GenerateOptions(**options), Prompts(prompt_dir), api=None)


def item(n: int = 0, words: int = 20, **fields):
    base = {"id": f"t-{n:04d}", "context": " ".join(["word"] * words),
            "question": "Which follows?", "options": ["one", "two", "three", "four"]}
    return make_item(**{**base, **fields})


def test_tokens_count_words_punctuation_and_cjk_characters():
    assert count_tokens("Which one follows, then?") == 6
    assert count_tokens("甲比乙高。") == 5
    assert count_tokens("") == 0


def test_plan_is_drawn_from_the_seed_and_the_item_alone():
    plans = [renderer().plan(item(n), seed=0) for n in range(40)]
    assert plans == [renderer().plan(item(n), seed=0) for n in range(40)]
    fonts = [p.font for p in plans]
    assert 10 < fonts.count("handwritten") < 30  # random per item
    assert [p.font for p in (renderer().plan(item(n), seed=1) for n in range(40))] != fonts
    assert {p.layout for p in plans} == {"auto"}


def test_the_token_rule_and_auto_size():
    short, long = item(0, words=100), item(1, words=300)
    rule = renderer(layout="tokens:250", font="standard")
    assert rule.plan(short, 0).layout == "interleaved" and rule.plan(long, 0).layout == \
        "background"
    assert rule.plan(short, 0).size == "1024x1536" and rule.plan(long, 0).size == "1536x1024"
    assert renderer(size="1024x1024").plan(long, 0).size == "1024x1024"


@pytest.mark.parametrize("layout", ["tokens:0", "tokens:x", "tokens", "sideways"])
def test_bad_layouts_are_refused(layout):
    with pytest.raises(ValidationError, match="expected auto, background, interleaved or"):
        GenerateOptions(layout=layout)


def test_image_prompts_hold_the_whole_item_and_no_empty_sections():
    r = renderer()
    mcq = item(context=None)
    values = {**r.values(mcq), "depiction": ""}
    template, prompt = r.image_prompt("interleaved", "handwritten", values, ())
    assert template == "generate_interleaved_handwritten"
    assert "\n\n\n" not in prompt
    assert prompt.endswith("Which follows?\n\nA. one\nB. two\nC. three\nD. four\n")
    assert image_text(mcq) == "Which follows?\n\nA. one\nB. two\nC. three\nD. four"
    _, background = r.image_prompt("background", "standard",
                                   {**values, "depiction": "A harbour at dawn."}, ())
    assert "A harbour at dawn." in background


def test_every_shipped_template_fills():
    r = renderer()
    values = {**r.values(item()), "depiction": "d"}
    for layout in ("background", "interleaved"):
        for font in ("handwritten", "standard"):
            assert "Which follows?" in r.image_prompt(layout, font, values, ())[1]
    for purpose in ("layout", "depiction"):
        assert "Which follows?" in r.chat_prompt(purpose, values, ())


def test_a_prompt_dir_replaces_templates_by_name(tmp_path):
    (tmp_path / "generate_interleaved_standard.txt").write_text(
        "Paper, print: {question} | {options} | {context}\n")
    r = renderer(prompt_dir=tmp_path)
    _, prompt = r.image_prompt("interleaved", "standard",
                               {**r.values(item(words=2)), "depiction": ""}, ())
    assert prompt == "Paper, print: Which follows? | A. one\nB. two\nC. three\nD. four | " \
                     "word word\n"


def test_chat_replies_are_parsed_or_refused_as_malformed():
    assert parse_layout("Background.") == "background"
    assert parse_layout("I would choose the illustration (interleaved)") == "interleaved"
    for reply in ("either", "background or interleaved"):
        with pytest.raises(ApiMalformed, match="the reply names"):
            parse_layout(reply)
    assert parse_depiction('"A calm lake\n at dusk."') == "A calm lake at dusk."
    with pytest.raises(ApiMalformed):
        parse_depiction('""')


def png(mode: str, size, colour) -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, colour).save(out, "PNG")
    return out.getvalue()


def test_the_benchmark_copy_is_a_1024_jpeg_over_white():
    jpeg, size, fmt, original = benchmark_copy(png("RGBA", (1536, 1024), (255, 0, 0, 0)), 1024,
                                               95)
    assert (size, fmt, original) == ((1024, 683), "png", (1536, 1024))
    with Image.open(io.BytesIO(jpeg)) as image:
        assert image.format == "JPEG" and image.size == (1024, 683)
        assert image.getpixel((10, 10)) == (255, 255, 255)  # transparent became white
    small, size, _, _ = benchmark_copy(png("RGB", (800, 600), (0, 0, 200)), 1024, 95)
    assert size == (800, 600)  # never enlarged
    assert benchmark_copy(png("RGB", (800, 600), (0, 0, 200)), 1024, 95)[0] == small
    with pytest.raises(ApiMalformed, match="the returned image cannot be decoded"):
        benchmark_copy(b"\x89PNG\r\n\x1a\n broken", 1024, 95)
