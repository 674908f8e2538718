"""Token accounting's cost: text tokens per second with each tokenizer, ``stats --tokenizer``
on 10,000 items as a whole process, and vision-token rules against transformers' processors.

    python bench/token_speed.py [--items 10000]

1. Text tokens per second on 2,000 seeded paragraphs (0.9 MB) with all-MiniLM's
   tokenizer.json (Hugging Face ``tokenizers``) and tiktoken's o200k_base and cl100k_base (the
   cache files litellm's wheel ships): tokens, seconds, tokens/s.
2. ``mmconvert stats RUN --json --no-plots`` on ITEMS rendered items (short contexts), as a
   whole process, with ``--tokenizer`` (MiniLM, then tiktoken:o200k_base) against the same
   command without it (the baseline, in the same run).
3. The rules checked against transformers on 1,007 image sizes (16 px to 8k): mismatches per
   model, and microseconds a count for the rule against the processor's own counting call,
   plus the import of transformers' processor module, which a count through transformers
   would cost every process.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.runs import paragraph  # noqa: E402


def litellm_tokenizers() -> str:
    spec = importlib.util.find_spec("litellm")  # never imported: it reaches for the network
    return os.path.join(spec.submodule_search_locations[0], "litellm_core_utils", "tokenizers")


def tokens_per_second() -> None:
    from mmconvert.tokens import load_tokenizer
    from tests.test_stats import minilm_folder

    rng = random.Random(0)
    texts = [paragraph(rng) for _ in range(2000)]
    size = sum(len(t.encode()) for t in texts)
    os.environ["TIKTOKEN_CACHE_DIR"] = litellm_tokenizers()
    for spec in (str(minilm_folder()), "tiktoken:o200k_base", "tiktoken:cl100k_base"):
        tokenizer = load_tokenizer(spec)
        started = time.perf_counter()
        tokens = sum(tokenizer.count(t) for t in texts)
        seconds = time.perf_counter() - started
        name = "all-MiniLM-L6-v2 tokenizer.json" if spec == str(minilm_folder()) else spec
        print(f"  {name:<32} {tokens:>9,} tokens of {size / 1e6:.1f} MB in {seconds:.3f} s: "
              f"{tokens / seconds:,.0f} tokens/s")


def stats_on(items: int) -> None:
    from tests.test_stats import minilm_folder

    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "items.jsonl"
        source.write_text("".join(json.dumps({
            "id": f"i{k:05d}", "question": "What does the passage say?",
            "context": " ".join(paragraph(rng).split()[:30]), "options": ["yes", "no"],
            "answer": "A"}) + "\n" for k in range(items)))
        run = Path(tmp) / "run"
        subprocess.run([sys.executable, "-m", "mmconvert", "render", str(source), "--render",
                        "context", "--workers", "2", "--out", str(run)], check=True,
                       capture_output=True, cwd=ROOT)

        def stats(*extra) -> float:
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "mmconvert", "stats", str(run), "--json",
                            "--no-plots", *extra], check=True, capture_output=True, cwd=ROOT,
                           env={**os.environ, "TIKTOKEN_CACHE_DIR": litellm_tokenizers()})
            return time.perf_counter() - started

        baseline = stats()
        minilm = stats("--tokenizer", str(minilm_folder()))
        tiktoken = stats("--tokenizer", "tiktoken:o200k_base")
    print(f"  stats on {items:,} items, whole process: {baseline:.1f} s without a tokenizer "
          f"(the baseline); {minilm:.1f} s with MiniLM's (+{minilm - baseline:.1f} s); "
          f"{tiktoken:.1f} s with tiktoken:o200k_base (+{tiktoken - baseline:.1f} s)")


def rules_against_transformers() -> None:
    from mmconvert import vision_tokens as rules
    from tests.test_stats import sizes_16_to_8k

    sizes = sizes_16_to_8k()
    started = time.perf_counter()
    from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
        GotOcr2ImageProcessorPil,
    )
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil,
    )
    from transformers.models.llava_onevision.processing_llava_onevision import (
        LlavaOnevisionProcessor,
    )
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )
    imported = time.perf_counter() - started

    def refused(count):
        def safe(w, h):
            try:
                return count(w, h)
            except ValueError:  # the processor refuses sides that differ over 200-fold
                return None
        return safe

    qwen = Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=12845056)
    qwen3 = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, min_pixels=65_536,
                                     max_pixels=16_777_216)
    glm = Glm4vImageProcessorPil()
    intern = GotOcr2ImageProcessorPil(crop_to_patches=True, min_patches=1, max_patches=12,
                                      size={"height": 448, "width": 448})
    onevision = LlavaOnevisionProcessor.__new__(LlavaOnevisionProcessor)
    onevision.image_processor = LlavaOnevisionImageProcessorPil()
    onevision.num_image_tokens = 729
    onevision.vision_feature_select_strategy = "full"
    onevision.vision_aspect_ratio = "anyres_max_9"
    checks = {
        "qwen2-vl": (rules.qwen2_vl, refused(
            lambda w, h: qwen.get_number_of_image_patches(h, w, {}) // 4)),
        "qwen3-vl": (rules.qwen3_vl, refused(
            lambda w, h: qwen3.get_number_of_image_patches(h, w, {}) // 4)),
        "glm-4.1v": (rules.glm4v, refused(
            lambda w, h: glm.get_number_of_image_patches(h, w, {}) // 4)),
        "internvl2.5": (rules.internvl,
                        lambda w, h: 256 * intern.get_number_of_image_patches(h, w, {})),
        "llava-onevision": (rules.llava_onevision,
                            lambda w, h: onevision._get_number_of_features(h, w, 384, 384)),
    }
    print(f"  importing transformers' five processor modules: {imported:.2f} s")
    for name, (ours, theirs) in checks.items():
        mismatches = sum(ours(w, h) != theirs(w, h) for w, h in sizes)
        timed = []
        for count in (ours, theirs):
            started = time.perf_counter()
            for w, h in sizes:
                count(w, h)
            timed.append(1e6 * (time.perf_counter() - started) / len(sizes))
        print(f"  {name:<16} {len(sizes)} sizes, {mismatches} mismatches; {timed[0]:.1f} us a "
              f"count by the rule, {timed[1]:.1f} us by transformers")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()
    print("text tokens per second:")
    tokens_per_second()
    print("stats --tokenizer:")
    stats_on(args.items)
    print("vision-token rules against transformers' processors:")
    rules_against_transformers()


if __name__ == "__main__":
    main()
