"""How much of a covered glyph stays visible: for each language and difficulty, the median
number of pixel rows of glyph ink left above and below the band, over every covered character
(the VCR paper: the hard setting leaves one to two pixels for most letters).

    python bench/occlude_visibility.py

English: the captions of the shared COCO sample (else the test fixture). Chinese: the COCO-CN
sentence and the sentences of the Chinese LogiQA fixture, as captions (real Chinese text; the
shared data has one Chinese caption only).
"""

from __future__ import annotations

import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.corpora import LoadReport, resolve  # noqa: E402
from mmconvert.corpora.base import load_request  # noqa: E402
from mmconvert.errors import ItemError  # noqa: E402
from mmconvert.items import Item  # noqa: E402
from mmconvert.renderers.occlude import CaptionOccluder, OccludeOptions  # noqa: E402

SHARED = Path("/work/shared/data/image-caption/coco-mini")
INK = 128  # a pixel darker than this is ink


def english() -> list[str]:
    source = SHARED if SHARED.exists() else ROOT / "tests/fixtures/coco"
    corpus = resolve("captions")
    items = corpus.load(load_request(corpus, {"source": source, "all_captions": True}),
                        LoadReport())
    return [item.context for item in items]


def chinese() -> list[str]:
    text = (ROOT / "tests/fixtures/logiqa/zh_test.txt").read_text(encoding="utf-8")
    sentences = [s for s in re.split(r"(?<=[。！？])", text) if 15 <= len(s.strip()) <= 80]
    cn = (ROOT / "tests/fixtures/coco-cn/coco-cn_ext.icap2020.txt").read_text(encoding="utf-8")
    return [line.split("\t")[1].strip() for line in cn.splitlines()] + [
        s.strip() for s in sentences]


def ink_rows(block, left: int, right: int, top: int, bottom: int) -> int:
    return sum(1 for y in range(top, bottom)
               if min(block.crop((left, y, right, y + 1)).tobytes()) < INK)


def measure(captions: list[str], language: str, difficulty: str) -> tuple[list[int], list[int]]:
    occluder = CaptionOccluder(OccludeOptions(difficulty=difficulty), language=language)
    above, below = [], []
    for number, caption in enumerate(captions):
        item = Item(id=f"v-{number:04d}", corpus="captions", subset="v", split="test",
                    language=language, context=caption)
        try:
            params, text, lines = occluder.layout(item, seed=0)
            params = occluder.choose_spans(item, 0, params, text, lines)
        except ItemError:
            continue
        block, line_height, band, _ = occluder.caption_block(lines, params)
        for span in params.spans:
            for row, line in enumerate(lines):
                top = row * line_height
                for offset in range(max(span.start, line.start), min(span.end, line.end)):
                    if text[offset].isspace():
                        continue
                    left = int(line.x_at(offset))
                    right = max(left + 1, int(line.x_at(offset + 1)))
                    above.append(ink_rows(block, left, right, top, top + band[0]))
                    below.append(ink_rows(block, left, right, top + band[1],
                                          top + line_height))
    return above, below


def main() -> None:
    sources = {"en": english(), "zh": chinese()}
    print("language difficulty  glyphs  band rows  median rows visible above / below  "
          "glyphs with none visible")
    for language, captions in sources.items():
        for difficulty in ("easy", "hard"):
            above, below = measure(captions, language, difficulty)
            occluder = CaptionOccluder(OccludeOptions(difficulty=difficulty), language=language)
            probe = Item(id="p", corpus="c", subset="s", split="t", language=language,
                         context=captions[0])
            params, _, lines = occluder.layout(probe, 0)
            _, height, band, _ = occluder.caption_block(lines, replace(params, spans=()))
            hidden = sum(1 for a, b in zip(above, below, strict=True) if a + b == 0)
            print(f"{language:<8} {difficulty:<10} {len(above):>6}  {band[0]:>2}-{band[1]:<2} "
                  f"of {height:<2}  {statistics.median(above):>14} / "
                  f"{statistics.median(below):<14}  {100 * hidden / max(1, len(above)):5.1f} %")


if __name__ == "__main__":
    main()
