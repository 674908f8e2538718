"""Speed of the caption occluder: captions/s on one worker for English easy and hard with NER,
both PNGs written, split into spaCy / drawing / PNG encoding; the same run with two workers
(its manifest and images must be byte-identical); and, as the baseline in the same run, a
Pillow-only build of the caption image alone (wrap by measured width, draw, cover), which is
what the public VCR code does per caption.

    python bench/occlude_speed.py [--source DIR] [--items 300]

The source is a COCO-style folder (default: the shared COCO sample when present, else the
test fixture); its captions are repeated under new ids up to --items.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.corpora import LoadReport, resolve  # noqa: E402
from mmconvert.corpora.base import load_request  # noqa: E402
from mmconvert.renderers import occlude as occlude_module  # noqa: E402
from mmconvert.renderers.occlude import (  # noqa: E402
    CaptionOccluder,
    OccludeJob,  # noqa: E402
    OccludeOptions,
)

SHARED = Path("/work/shared/data/image-caption/coco-mini")


def caption_options(parser: argparse.ArgumentParser, items: int) -> None:
    """``--source`` (the shared COCO sample when present, else the test fixture) and
    ``--items``, as the occlusion benches take them."""
    parser.add_argument("--source", type=Path,
                        default=SHARED if SHARED.exists() else ROOT / "tests/fixtures/coco")
    parser.add_argument("--items", type=int, default=items)


def load_items(source: Path, count: int):
    corpus = resolve("captions")
    items = corpus.load(load_request(corpus, {"source": source, "all_captions": True}),
                        LoadReport())
    out = []
    while len(out) < count:
        for item in items:
            out.append(replace(item, id=f"{item.id}-r{len(out)}"))
    return out[:count]


class Clock:
    """Wraps a function and adds the time spent in it."""

    def __init__(self, fn):
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


def split_timing(items, difficulty: str) -> dict[str, float]:
    occluder = CaptionOccluder(OccludeOptions(difficulty=difficulty))
    chooser = occluder.chooser("en")
    spacy_clock = Clock(chooser.choose)
    chooser.choose = spacy_clock
    tagging = Clock(chooser.prepare)  # the group's nlp.pipe call
    chooser.prepare = tagging
    encode_clock = Clock(occlude_module.encode_png)
    occlude_module.encode_png = encode_clock
    done = dropped = 0
    started = time.perf_counter()
    try:
        for index, item in enumerate(items):
            if index % OccludeJob.batch == 0:  # as a worker does: a group's captions at once
                occluder.prepare(items[index:index + OccludeJob.batch], 0)
            try:
                occluder.render(item, seed=0)
                done += 1
            except occlude_module.ItemError:
                dropped += 1
    finally:
        occlude_module.encode_png = encode_clock.fn
    total = time.perf_counter() - started
    spacy = spacy_clock.seconds + tagging.seconds
    return {"items": done, "dropped": dropped, "total": total, "spacy": spacy,
            "encode": encode_clock.seconds, "draw": total - spacy - encode_clock.seconds}


def end_to_end(source: Path, limit: int, difficulty: str, workers: int, out: Path):
    from mmconvert.converter import convert

    started = time.perf_counter()
    summary = convert({"corpus": "captions", "source": str(source), "all_captions": True,
                       "limit": limit, "on_error": "skip", "renderer": "occlude",
                       "occlude": {"difficulty": difficulty}},
                      out=out, workers=workers, overwrite=True, progress=False, log=lambda m: 0)
    return time.perf_counter() - started, summary.rendered


def folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "run.json"):
        digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def pillow_baseline(items, font_path: Path) -> float:
    """Captions/s of a Pillow-only caption image (no photo, no PNG): wrap words by measured
    width at 300 px, draw at 20 px, cover the middle of one 5-word span."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(font_path), 20)
    scratch = ImageDraw.Draw(Image.new("RGB", (10, 10)))
    box = scratch.textbbox((0, 0), "hg", font=font)
    pitch = int((box[3] - box[1]) * 1.2)
    started = time.perf_counter()
    for item in items:
        lines, line = [], ""
        for word in item.context.split():
            trial = f"{line} {word}".strip()
            if scratch.textbbox((0, 0), trial, font=font)[2] <= 300:
                line = trial
            else:
                lines.append(line)
                line = word
        lines = (lines + [line])[:5]
        image = Image.new("RGB", (300, pitch * len(lines) + 1), "white")
        pen = ImageDraw.Draw(image)
        for row, text in enumerate(lines):
            pen.text((0, row * pitch), text, font=font, fill="black")
        words = lines[0].split()
        span = " ".join(words[:5])
        right = pen.textbbox((0, 0), span, font=font)[2]
        pen.rectangle((0, 0.46 * pitch, right, 0.77 * pitch), fill="white")
    return len(items) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    caption_options(parser, 300)
    args = parser.parse_args()
    items = load_items(args.source, args.items)
    print(f"{len(items)} English captions from {args.source} (repeated under new ids)")
    warm = CaptionOccluder()  # load spaCy and the fonts once
    for item in items[:20]:
        try:
            warm.render(item, seed=0)
        except occlude_module.ItemError:
            continue

    for difficulty in ("easy", "hard"):
        t = split_timing(items, difficulty)
        rate = t["items"] / t["total"]
        each = {k: 1000 * t[k] / len(items) for k in ("spacy", "draw", "encode")}
        print(f"  {difficulty}: {rate:6.1f} captions/s in process ({t['dropped']} without an "
              "eligible span or over the height limit); per caption: spaCy "
              f"{each['spacy']:.2f} ms, drawing {each['draw']:.2f} ms, PNG encoding "
              f"{each['encode']:.2f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        digests = {}
        for workers in (1, 2):
            out = Path(tmp) / f"w{workers}"
            seconds, done = end_to_end(args.source, args.items, "hard", workers, out)
            digests[workers] = folder_digest(out)
            print(f"  mmconvert occlude --workers {workers}: {done / seconds:6.1f} captions/s "
                  f"end to end (load, spaCy, draw, encode, write both PNGs and the manifest)")
        print(f"  same output for --workers 1 and 2: {digests[1] == digests[2]}")

    font = ROOT / "mmconvert/renderers/fonts/LiberationSans-Regular.ttf"
    print(f"  baseline, Pillow caption image alone: {pillow_baseline(items, font):6.1f} "
          "captions/s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
