"""The vision tokens an image costs a model: each model family's published rule (its
processor's resizing and patching, or its provider's tile or patch pricing), with the source
of each rule and the date it was last checked against that source.

``TOKEN_RULES`` are the main families' (what ``mmconvert stats`` prints by default),
``EXTRA_RULES`` the others (counted when named), ``RULE_ALIASES`` other names of the same
rules; ``token_rule(name)`` finds one. A rule takes an image's width and height in pixels and
gives its tokens, or None when the model refuses such an image."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from .errors import UsageError, did_you_mean


def qwen2_vl(width: int, height: int, *, factor: int = 28, min_pixels: int = 56 * 56,
             max_pixels: int = 16384 * 28 * 28) -> int | None:
    """Qwen2-VL / Qwen2.5-VL: each side rounded to a multiple of 28 px (the pixel count kept
    within [min_pixels, max_pixels], aspect kept), one token per 28 x 28 px (2 x 2 merged 14 px
    patches); the two vision start/end tokens are not counted. The processor refuses an image
    whose sides differ more than 200-fold (None)."""
    if max(width, height) / min(width, height) > 200:
        return None
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return (h // factor) * (w // factor)


def qwen3_vl(width: int, height: int) -> int | None:
    """Qwen3-VL: Qwen2-VL's rule with 16 px patches (32 px cells after the 2 x 2 merge) and
    its preprocessor's pixel bounds, 65,536 to 16,777,216."""
    return qwen2_vl(width, height, factor=32, min_pixels=65_536, max_pixels=16_777_216)


def glm4v(width: int, height: int, *, factor: int = 28, min_pixels: int = 112 * 112,
          max_pixels: int = 28 * 28 * 15_000, frames: int = 2) -> int | None:
    """GLM-4.1V (Glyph's base model): an image is taken as ``frames`` (2) identical frames;
    a side under 28 px first scales the image up (whole pixels, aspect kept); then each side
    is rounded to a multiple of 28 px with the pixel count of both frames kept within
    [min_pixels, max_pixels]; one token per 28 x 28 px cell. None for sides that differ more
    than 200-fold, which the processor refuses."""
    if height < factor or width < factor:
        grow = max(factor / height, factor / width)
        height, width = int(height * grow), int(width * grow)
    if max(width, height) / min(width, height) > 200:
        return None
    h = round(height / factor) * factor
    w = round(width / factor) * factor
    if frames * h * w > max_pixels:
        shrink = math.sqrt(frames * height * width / max_pixels)
        h = max(factor, math.floor(height / shrink / factor) * factor)
        w = max(factor, math.floor(width / shrink / factor) * factor)
    elif frames * h * w < min_pixels:
        grow = math.sqrt(min_pixels / (frames * height * width))
        h = math.ceil(height * grow / factor) * factor
        w = math.ceil(width * grow / factor) * factor
    return (h // factor) * (w // factor)


def idefics3(width: int, height: int, *, longest: int = 4 * 364, tile: int = 364,
             per_tile: int = 169) -> int:
    """Idefics3 (and SmolVLM, with its own sizes): the long side scaled to ``longest`` px
    (up or down; the short side truncated, then made even), cut into ``tile`` px tiles, plus
    the whole image as one more tile when there is more than one; ``per_tile`` tokens a
    tile."""
    if width >= height:
        w, h = longest, int(longest / (width / height))
    else:
        w, h = int(longest * (width / height)), longest
    w, h = max(w + w % 2, 1), max(h + h % 2, 1)
    rows, cols = math.ceil(h / tile), math.ceil(w / tile)
    tiles = rows * cols + 1 if rows * cols > 1 else 1
    return per_tile * tiles


def pixtral(width: int, height: int, *, longest: int = 1024, patch: int = 16) -> int:
    """Pixtral: an image over ``longest`` px on a side shrunk to fit (whole pixels, rounded
    down), one token per 16 px patch (a part patch counts), and one more a row (the row
    breaks, the last of them the image's end)."""
    shrink = max(height / longest, width / longest)
    if shrink > 1:
        height, width = math.floor(height / shrink), math.floor(width / shrink)
    rows, cols = (height - 1) // patch + 1, (width - 1) // patch + 1
    return rows * (cols + 1)


@functools.lru_cache(maxsize=8)
def _tile_grids(least: int, most: int) -> tuple[tuple[int, int], ...]:
    """The tile grids (columns, rows) of ``least`` to ``most`` tiles, fewest tiles first, in
    the order InternVL's tiling (which DeepSeek-OCR's crops share) tries them."""
    return tuple(sorted({(i, j) for n in range(least, most + 1) for i in range(1, n + 1)
                         for j in range(1, n + 1) if least <= i * j <= most},
                        key=lambda r: r[0] * r[1]))


def internvl(width: int, height: int, *, tile: int = 448, max_tiles: int = 12,
             per_tile: int = 256) -> int:
    """InternVL 2 / 2.5 dynamic resolution: the grid of 448 px tiles (at most 12) whose aspect
    ratio is closest to the image's, plus a thumbnail tile when there is more than one; 256
    tokens per tile."""
    cols, rows = _closest_grid(width, height, _tile_grids(1, max_tiles), tile)
    tiles = cols * rows
    return per_tile * (tiles + (1 if tiles > 1 else 0))


def llava_1_5(width: int, height: int) -> int:
    """LLaVA-1.5: every image resized to 336 x 336, 24 x 24 patches of 14 px: 576 tokens."""
    return 576


def openai_tiles(width: int, height: int, base: int = 85, tile: int = 170) -> int:
    """OpenAI's tile rule at detail high: fit within 2048 x 2048, then the shortest side down
    to 768 px; ``tile`` tokens per 512 px tile plus ``base`` (gpt-4o: 85 + 170; a model's own
    figures are its ``image_tiles`` in the price table)."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return base + tile * math.ceil(w / 512) * math.ceil(h / 512)


def gpt_4o(width: int, height: int) -> int:
    """OpenAI GPT-4o, detail high: fit within 2048 x 2048, then the shortest side down to
    768 px; 170 tokens per 512 px tile plus 85."""
    return openai_tiles(width, height)


CLAUDE_LONG_EDGE = 1568
CLAUDE_MAX_TOKENS = 1600


def claude(width: int, height: int) -> int:
    """Anthropic Claude: an image whose long edge is over 1568 px, or that would take over
    about 1,600 tokens, scaled down (its aspect kept) until it is within both; then about
    width x height / 750 tokens (Anthropic's published estimate), at most 1,600."""
    scale = min(1.0, CLAUDE_LONG_EDGE / max(width, height),
                math.sqrt(CLAUDE_MAX_TOKENS * 750 / (width * height)))
    tokens = math.ceil(round(width * scale) * round(height * scale) / 750)
    return min(tokens, CLAUDE_MAX_TOKENS)


def openai_patches(width: int, height: int, *, patch: int = 32, cap: int = 1536) -> int:
    """OpenAI's patch rule (gpt-4.1-mini and -nano, o4-mini, gpt-5-mini and -nano): 32 px
    patches covering the image; over 1,536 of them, the image shrinks so that whole patches
    fit the 1,536 (the shrink first, then cut to a whole number of patches across the
    limiting side); at most 1,536. These are the tokens the model reads; the price table's
    ``image_patches`` multiplier turns them into billed tokens."""
    patches = math.ceil(width / patch) * math.ceil(height / patch)
    if patches > cap:
        shrink = math.sqrt(patch * patch * cap / (width * height))
        across, down = width * shrink / patch, height * shrink / patch
        shrink *= min(math.floor(across) / across, math.floor(down) / down)
        # a product that lands a hair over a whole patch is that patch, not one more
        cols = math.ceil(round(width * shrink / patch, 6))
        rows = math.ceil(round(height * shrink / patch, 6))
        patches = cols * rows
    return min(patches, cap)


def gemini_2(width: int, height: int) -> int:
    """Gemini 2.0 / 2.5, as Google states it: 258 tokens for an image with both sides at most
    384 px; a larger image is cut into 768 x 768 px tiles of 258 tokens each. Google does not
    publish how its service crops and scales, so this is the stated rule, an estimate."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def llava_onevision(width: int, height: int, *, tile: int = 384, side: int = 27,
                    max_tiles: int = 9, grids: int = 6) -> int:
    """LLaVA-OneVision (anyres_max_9, SigLIP at 384 px: 27 x 27 = 729 tokens a view): the
    grid of 384 px tiles, up to 6 x 6, that keeps the most of the image's pixels with the
    least waste; its tokens, less the padding rows or columns the image does not fill, pooled
    down when they pass 9 tiles' worth, plus a row-break token a row, plus the 729 of the
    whole image in one view."""
    best, kept_best, waste_best = (tile, tile), 0, float("inf")
    for rows in range(1, grids + 1):
        for cols in range(1, grids + 1):
            h, w = rows * tile, cols * tile
            scale = min(w / width, h / height)
            kept = min(int(width * scale) * int(height * scale), width * height)
            waste = w * h - kept
            if kept > kept_best or (kept == kept_best and waste < waste_best):
                best, kept_best, waste_best = (h, w), kept, waste
    down, across = side * (best[0] // tile), side * (best[1] // tile)
    if width / height > across / down:  # wider than the grid: padding rows go
        down -= (down - int(round(height * (across / width), 7))) // 2 * 2
    else:  # taller: padding columns go
        across -= (across - int(round(width * (down / height), 7))) // 2 * 2
    features, breaks = down * across, down
    pool = math.sqrt(down * across / (max_tiles * side * side))
    if pool > 1.1:
        features, breaks = int(down // pool) * int(across // pool), int(down // pool)
    return features + breaks + side * side


def _llama4_canvases(max_tiles: int) -> list[tuple[int, int]]:
    """Llama 4's tile grids (rows, columns) of at most ``max_tiles`` tiles, in the order its
    processor lists them: grouped by shape (rows / columns), each shape first met at the
    largest tile count."""
    shapes: dict[float, list[tuple[int, int]]] = {}
    for count in range(max_tiles, 0, -1):
        for rows in sorted(d for d in range(1, count + 1) if count % d == 0):
            shapes.setdefault(rows / (count // rows), []).append((rows, count // rows))
    return [grid for grids in shapes.values() for grid in grids]


def llama4(width: int, height: int, *, tile: int = 336, max_tiles: int = 16,
           per_tile: int = 144) -> int:
    """Llama 4: the canvas of 336 px tiles (at most 16) the image fits best without
    distortion: the least upscale that fits, else the least downscale, and of equal scales
    the smallest canvas; 144 tokens a tile (24 x 24 patches of 14 px, pixel-shuffled by 4),
    with a separator after each tile but a row's last and one after each row; then the whole
    image as one more 144-token tile after its ``<|image|>`` token (the one tile alone when
    the canvas is one tile). The image's start and end tokens are not counted."""
    import numpy as np

    grids = _llama4_canvases(max_tiles)
    # the processor works out its scales in float32; so does this, so that ties fall alike
    scales = [min(np.float32(rows * tile) / np.float32(height),
                  np.float32(cols * tile) / np.float32(width)) for rows, cols in grids]
    up = [s for s in scales if s >= 1]
    chosen = min(up) if up else max(scales)
    rows, cols = min((grid for grid, s in zip(grids, scales, strict=True) if s == chosen),
                     key=lambda g: g[0] * g[1])
    tiles = rows * cols
    split = tiles * per_tile + rows * (cols - 1) + rows if tiles > 1 else 0
    return split + 1 + per_tile


def _closest_grid(width: int, height: int, grids, tile: int) -> tuple[int, int]:
    """Of ``grids`` (columns, rows) in order, the one whose aspect is closest to the image's;
    on a tie, a later grid wins while the image's area passes half the grid's pixels (the
    InternVL tiling that DeepSeek-OCR's crops share)."""
    aspect, best, best_diff = width / height, (1, 1), float("inf")
    for cols, rows in grids:
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best, best_diff = (cols, rows), diff
        elif diff == best_diff and width * height > 0.5 * tile * tile * cols * rows:
            best = (cols, rows)
    return best


def deepseek_ocr_gundam(width: int, height: int, *, tile: int = 640, least: int = 2,
                        most: int = 6) -> int:
    """DeepSeek-OCR's Gundam mode: the whole page padded to 1024 x 1024 (16 rows of 16
    tokens, each row with a break token, and a separator: 273), and, for an image over 640 px
    on a side, 2 to 6 crops of 640 px in the grid closest to its aspect, 10 x 10 tokens a
    crop, laid out as rows of the grid's width with a break token each."""
    tokens = (16 + 1) * 16 + 1
    if width <= tile and height <= tile:
        return tokens
    cols, rows = _closest_grid(width, height, _tile_grids(least, most), tile)
    side = tile // 16 // 4
    return tokens + (side * cols + 1) * (side * rows)


def deepseek_ocr_2(width: int, height: int, *, tile: int = 768, least: int = 2,
                   most: int = 6) -> int:
    """DeepSeek-OCR 2: the whole page padded to 1024 x 1024 (256 tokens) and one separator,
    and, for an image over 768 px on a side, 2 to 6 crops of 768 px (144 tokens each) in the
    grid closest to its aspect."""
    crops = 0
    if max(width, height) > tile:
        grids = sorted(((i, j) for i in range(1, most + 1) for j in range(1, most + 1)
                        if least <= i * j <= most), key=lambda g: g[0] * g[1])
        cols, rows = _closest_grid(width, height, grids, tile)
        crops = cols * rows
    return 256 + 144 * crops + 1


TOKEN_RULES = {"qwen2-vl": qwen2_vl, "qwen3-vl": qwen3_vl, "glm-4.1v": glm4v,
               "internvl2.5": internvl, "idefics3": idefics3, "pixtral": pixtral,
               "llava-1.5": llava_1_5, "gpt-4o": gpt_4o, "claude": claude}
# where each rule comes from, and when it was last checked against that source
RULE_SOURCES = {
    "qwen2-vl": ("transformers 5.23 Qwen2VLImageProcessorPil, min_pixels 3136, max_pixels "
                 "12845056 (Qwen2-VL-7B-Instruct's preprocessor_config.json)", "2026-11-24"),
    "qwen3-vl": ("transformers 5.23 Qwen2VLImageProcessorPil with patch_size 16, "
                 "min_pixels 65536, max_pixels 16777216 (Qwen3-VL's preprocessor settings)",
                 "2026-11-24"),
    "glm-4.1v": ("transformers 5.23 Glm4vImageProcessorPil at its defaults (shortest_edge "
                 "12544, longest_edge 11760000)", "2026-11-24"),
    "internvl2.5": ("transformers 5.23 GotOcr2ImageProcessorPil, crop_to_patches, 1-12 tiles "
                    "of 448 (InternVL3-hf)", "2026-11-24"),
    "idefics3": ("transformers 5.23 Idefics3 image processor settings (longest_edge 1456, "
                 "364 px tiles) as SmolVLMImageProcessorPil.get_number_of_image_patches "
                 "counts them; 169 tokens a tile (Idefics3-8B)", "2026-11-24"),
    "pixtral": ("transformers 5.23 PixtralImageProcessorPil (longest_edge 1024, 16 px "
                "patches) and PixtralProcessor's [IMG_BREAK]/[IMG_END] a row", "2026-11-24"),
    "llava-1.5": ("LLaVA-1.5: 336 px CLIP-L/14, 576 tokens", "2026-11-24"),
    "gpt-4o": ("OpenAI's image pricing guide: 85 + 170 a 512 px tile at detail high",
               "2026-11-24"),
    "claude": ("Anthropic's vision guide (docs.claude.com/en/docs/vision): a long edge over "
               "1568 px or over ~1,600 tokens scaled down, aspect kept, then width x height "
               "/ 750", "2026-11-25"),
}

def fixed(tokens: int, what: str):
    """A rule that gives every image ``tokens`` (the image is resized or padded to one
    size)."""
    def rule(width: int, height: int) -> int:
        return tokens
    rule.__doc__ = what
    return rule


def _native(side: int, what: str):
    """A DeepSeek-OCR native mode: the page brought to ``side`` px square (resized at 640 px
    and under, padded above), rows of ``side / 64`` tokens with a break token each, and a
    separator."""
    rows = side // 16 // 4
    return fixed((rows + 1) * rows + 1,
                 f"DeepSeek-OCR {what} mode: every image brought to {side} x {side}, {rows} rows "
                 f"of {rows} tokens, each with a row break, and a separator "
                 f"({(rows + 1) * rows + 1}; the paper counts the {rows * rows} without "
                 "the breaks).")


def openai_tile_rule(base: int, tile: int, models: str):
    """OpenAI's tile rule with a family's own figures."""
    def rule(width: int, height: int) -> int:
        return openai_tiles(width, height, base, tile)
    rule.__doc__ = (f"OpenAI {models}, detail high: fit within 2048 x 2048, then the shortest "
                    f"side down to 768 px; {tile} tokens per 512 px tile plus {base}.")
    return rule


# rules for --models and --ratio-model that stats does not print unless asked
EXTRA_RULES = {
    "llava-onevision": llava_onevision,
    "llama-4": llama4,
    "gemma-3": fixed(256, "Gemma 3: every image resized to 896 x 896, 256 tokens (without "
                          "pan-and-scan crops)."),
    "deepseek-ocr-tiny": _native(512, "Tiny"),
    "deepseek-ocr-small": _native(640, "Small"),
    "deepseek-ocr-base": _native(1024, "Base"),
    "deepseek-ocr-large": _native(1280, "Large"),
    "deepseek-ocr-gundam": deepseek_ocr_gundam,
    "deepseek-ocr-2": deepseek_ocr_2,
    "o3": openai_tile_rule(75, 150, "o1 and o3"),
    "gpt-5": openai_tile_rule(70, 140, "gpt-5"),
    "gpt-4.1-mini": openai_patches,
    "gemini-2": gemini_2,
    "gemini-3": fixed(1120, "Gemini 3 at media_resolution high, the default for images: at "
                            "most 1,120 tokens an image (low 280, medium 560)."),
}
_DEEPSEEK = ("vLLM's DeepseekOCRProcessor.tokenize_with_images, ported from DeepSeek-OCR's "
             "own process/image_process.py (base and image sizes of the mode, crops 2-6)")
_OPENAI = "OpenAI's Images and vision guide, calculating costs"
EXTRA_SOURCES = {
    "llava-onevision": ("transformers 5.23 LlavaOnevisionProcessor._get_number_of_features "
                        "with llava-onevision-qwen2-*-ov-hf's settings (num_image_tokens 729, "
                        "vision_feature_select_strategy full, anyres_max_9, 384 px grid "
                        "pinpoints up to 6 x 6)", "2026-11-24"),
    "llama-4": ("transformers 5.23 Llama4ImageProcessor (get_best_fit over "
                "find_supported_resolutions, 336 px tiles, max_patches 16) and "
                "Llama4Processor._prompt_split_image (patch 14, pixel_shuffle_ratio 0.5)",
                "2026-11-24"),
    "gemma-3": ("transformers 5.23 Gemma3Processor image_seq_length 256; pan-and-scan off, "
                "its default", "2026-11-24"),
    **{name: (_DEEPSEEK, "2026-11-24")
       for name in ("deepseek-ocr-tiny", "deepseek-ocr-small", "deepseek-ocr-base",
                    "deepseek-ocr-large", "deepseek-ocr-gundam")},
    "deepseek-ocr-2": ("transformers 5.23 DeepseekOcr2ImageProcessorPil (768 px crops, 2-6, "
                       "over 768 px) and DeepseekOcr2Processor.replace_image_token",
                       "2026-11-24"),
    "o3": (_OPENAI + " (o1, o1-pro, o3: 75 + 150 a tile); offline, as last read, "
           "not re-fetched", "2026-11-24"),
    "gpt-5": (_OPENAI + " (gpt-5, gpt-5-chat-latest: 70 + 140 a tile); offline, as last "
              "read, not re-fetched", "2026-11-24"),
    "gpt-4.1-mini": (_OPENAI + " (patch models: 32 px patches, 1,536 at most; its worked "
                     "examples 1024 x 1024 -> 1,024 and 1800 x 2400 -> 1,452 are tests); "
                     "offline, as last read, not re-fetched", "2026-11-24"),
    "gemini-2": ("Google's Gemini API guide, image token calculation (258 a 768 px tile; "
                 "the crop is not published)", "2026-11-24"),
    "gemini-3": ("Google's Gemini 3 developer guide, media_resolution; offline, as last "
                 "read, not re-fetched", "2026-11-24"),
}

# other names of the same rules: a family's models that read images alike (Qwen2.5-VL's
# processor is Qwen2-VL's with its defaults; gpt-4o-mini reads gpt-4o's tiles, whatever it
# bills for them)
RULE_ALIASES = {"qwen2.5-vl": "qwen2-vl", "internvl3": "internvl2.5", "internvl2": "internvl2.5",
                "glyph": "glm-4.1v",
                "gpt-4o-mini": "gpt-4o", "gpt-4.1": "gpt-4o", "gpt-4.5": "gpt-4o",
                "o1": "o3", "o1-pro": "o3", "gpt-5-chat-latest": "gpt-5",
                "gpt-4.1-nano": "gpt-4.1-mini", "o4-mini": "gpt-4.1-mini",
                "gpt-5-mini": "gpt-4.1-mini", "gpt-5-nano": "gpt-4.1-mini",
                "gemini-2.0": "gemini-2", "gemini-2.5": "gemini-2"}


# the steps, in pixels, in which a page's width changes a rule's count (its patch or cell
# after merging): a target may move the page width in them when the font size alone cannot
# meet it. A rule not here counts in whole tiles or gives every image the same count, so a
# width moved by a few pixels changes nothing, or everything at once (``WHY_NOT_EXACT``).
WIDTH_STEPS = {"qwen2-vl": 28, "qwen3-vl": 32, "glm-4.1v": 28, "pixtral": 16,
               "gpt-4.1-mini": 32}
WHY_NOT_EXACT = {
    **{name: "it gives every image the same count (the image is resized to one size)"
       for name in ("llava-1.5", "gemma-3", "gemini-3", "deepseek-ocr-tiny",
                    "deepseek-ocr-small", "deepseek-ocr-base", "deepseek-ocr-large")},
    **{name: "it counts whole tiles, so its counts come in tile-sized steps"
       for name in ("internvl2.5", "idefics3", "gpt-4o", "o3", "gpt-5", "gemini-2",
                    "llava-onevision", "llama-4", "deepseek-ocr-gundam", "deepseek-ocr-2")},
    "claude": "it scales the image's area, rounded, with no steps a width can move in",
}


def width_step(name: str) -> int | None:
    """The pixels a page's width moves in for model ``name``'s rule, or None."""
    return WIDTH_STEPS.get(RULE_ALIASES.get(name, name))


def token_rule(name: str):
    """The vision-token rule of model ``name``; one line naming the known ones otherwise."""
    key = RULE_ALIASES.get(name, name)
    if key in TOKEN_RULES:
        return TOKEN_RULES[key]
    if key in EXTRA_RULES:
        return EXTRA_RULES[key]
    known = [*TOKEN_RULES, *EXTRA_RULES, *RULE_ALIASES]
    raise UsageError(f"no vision-token rule for model {name!r} (known: {', '.join(known)})"
                     f"{did_you_mean(name, known, 0.5)}")


def image_tokens(rule, images: Sequence[Any]) -> int | None:
    """The vision tokens of ``images`` (a row's entries, or ``{"width", "height"}``) under
    ``rule``; None when the model's processor refuses one of them (it has no count, not 0)."""
    counts = [rule(image["width"], image["height"]) for image in images]
    return None if None in counts else sum(counts)


def rules_for(models: list[str] | None) -> dict[str, Any]:
    """The rules of ``models`` (names or aliases, as given), or the main ones
    (``TOKEN_RULES``; ``EXTRA_RULES`` only when named)."""
    if not models:
        return dict(TOKEN_RULES)
    return {name: token_rule(name) for name in dict.fromkeys(models)}
