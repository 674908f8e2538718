"""Calibrate the OCR check: Tesseract on our own renders of the ../shared/data samples.

    python bench/ocr_calibration.py [--data ../shared/data] [--limit 40] [--jobs 2]

Renders each sample with the real CLI (``mmconvert render`` at 92.9 PPI, ``mmconvert occlude``
for captions) into a temporary folder, runs ``mmconvert qa check --checks ocr`` with the shipped
thresholds, and prints per corpus and language: items, pages,
the check's measure (letters and digits the engine reads, insertions free) as mean / p95 / max,
the plain CER over every character (white space dropped), seconds per page and the items the
shipped thresholds reject (all of them are false alarms: these pages are right). The last lines
propose thresholds: the highest measure seen per renderer and language, doubled, at least 2 %.
The figures are the calibration behind mmconvert/qa/thresholds.json (docs/design/qa.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.manifest import JsonlLog  # noqa: E402
from mmconvert.qa.checks import ocr_statistics  # noqa: E402

# (label, command, corpus, source below the data folder, extra flags)
RUNS = [
    ("mmlu-redux", "render", "mmlu-redux", "mmlu-redux/mmlu_redux", []),
    ("mmlu", "render", "mmlu", "mmlu/data", ["--split", "test"]),
    ("mmlu-pro", "render", "mmlu-pro", "mmlu-pro/data", []),
    ("logiqa en (all)", "render", "logiqa", "logiqa", ["--language", "en", "--render", "all"]),
    ("logiqa2 en (all)", "render", "logiqa2", "logiqa2/logiqa", ["--language", "en",
                                                                  "--render", "all"]),
    ("babilong (context)", "render", "babilong", "babilong/tasks_1-20_v1-2", []),
    ("ceval-zhtw", "render", "ceval-zhtw", "ceval-exam-zhtw/val", []),
    ("ceval-zhtw (all)", "render", "ceval-zhtw", "ceval-exam-zhtw/val", ["--render", "all"]),
    ("cmmlu", "render", "cmmlu", "cmmlu/data", ["--split", "test"]),
    ("logiqa zh (all)", "render", "logiqa", "logiqa", ["--language", "zh", "--render", "all"]),
    # our own multilingual sample (bench/data): Arabic, Persian, Hebrew, Hindi, Bengali, Tamil,
    # Thai, Greek, Russian; a local file, so no --source
    ("scripts (options)", "render", str(ROOT / "bench/data/scripts.jsonl"), None, []),
    ("scripts (all)", "render", str(ROOT / "bench/data/scripts.jsonl"), None,
     ["--render", "all"]),
    ("coco captions (occlude)", "occlude", "captions", "image-caption/coco-mini",
     ["--on-error", "skip"]),
    # COCO-CN's captions name COCO images, which the coco-mini sample holds
    ("coco-cn captions (occlude)", "occlude", "captions", "coco-cn", ["--on-error", "skip"]),
    # the document renderer: the samples' questions typeset by Chromium, and documents of our
    # own (bench/document_speed.py's: a table, a code block and a formula each)
    ("mmlu-redux (document)", "render", "mmlu-redux", "mmlu-redux/mmlu_redux",
     ["--renderer", "document"]),
    ("mmlu-pro (document, all)", "render", "mmlu-pro", "mmlu-pro/data",
     ["--renderer", "document", "--render", "all"]),
    ("logiqa en (document, all)", "render", "logiqa", "logiqa",
     ["--language", "en", "--render", "all", "--renderer", "document"]),
    ("cmmlu (document, all)", "render", "cmmlu", "cmmlu/data",
     ["--split", "test", "--render", "all", "--renderer", "document"]),
    ("our documents (document)", "render", None, "documents",
     ["--renderer", "document", "--render", "context"]),
]


def mmconvert(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mmconvert", *args], capture_output=True,
                          text=True, cwd=ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=40, help="items per corpus")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", help="run only labels containing this")
    args = parser.parse_args()
    worst: dict[tuple[str, str], float] = defaultdict(float)
    print(f"{'corpus':<28}{'items':>6}{'pages':>6}  {'check mean/p95/max':<22}"
          f"{'CER all chars mean/max':<24}{'s/page':>7}  flagged at the shipped threshold")
    with tempfile.TemporaryDirectory() as tmp:
        for label, command, corpus, source, extra in RUNS:
            if args.only and args.only not in label:
                continue
            path = args.data / source if source else Path(corpus)
            if source == "coco-cn":
                path = coco_cn(args.data, Path(tmp))
            if source == "documents":
                path = our_documents(Path(tmp), args.limit)
                corpus, source = str(path), None
            if not path.exists():
                print(f"{label:<28} (no data at {path})")
                continue
            out = Path(tmp) / label.replace(" ", "_").replace("(", "").replace(")", "")
            ppi = ["--ppi", "92.9"] if command == "render" else []
            where = ["--source", str(path)] if source else []
            made = mmconvert(command, corpus, *where, *ppi, "--limit",
                             str(args.limit), "--out", str(out), *extra)
            if made.returncode != 0:
                print(f"{label:<28} render failed: {made.stderr.strip()[-200:]}")
                continue
            checked = mmconvert("qa", "check", str(out), "--checks", "ocr", "--jobs",
                                str(args.jobs), "--no-progress")
            if checked.returncode != 0:
                print(f"{label:<28} check failed: {checked.stderr.strip()[-200:]}")
                continue
            details = [e["detail"] for e in JsonlLog(out / "qa.jsonl").read()]
            rows = JsonlLog(out / "manifest.jsonl").read()
            measure = ocr_statistics([d["cer"] for d in details])
            plain = ocr_statistics([d.get("cer_all_characters", d["cer"]) for d in details])
            pages = sum(1 for r in rows for i in r["images"] if i["role"] in ("page",
                                                                              "text_only"))
            seconds = sum(d["seconds"] for d in details) / max(1, pages)
            renderer = rows[0]["renderer"]["name"]
            for detail in details:  # per language: the first of the engine's languages
                key = (renderer, detail["engine"].split()[-1].split("+")[0])
                worst[key] = max(worst[key], detail["cer"])
            flagged = sum(e["verdict"] == "reject" for e in JsonlLog(out / "qa.jsonl").read())
            print(f"{label:<28}{len(rows):>6}{pages:>6}  "
                  + f"{measure['mean']:.3f}/{measure['p95']:.3f}/{measure['max']:.3f}".ljust(22)
                  + f"{plain['mean']:.3f}/{plain['max']:.3f}".ljust(24)
                  + f"{seconds:>7.2f}  {flagged}")
    print("\nproposed max_cer (highest measure seen x 2, at least 0.02):")
    for (renderer, lang), value in sorted(worst.items()):
        print(f"  {renderer:<8} {lang:<8} {max(0.02, round(2 * value + 0.005, 2)):.2f}"
              f"   (highest seen {value:.3f})")


def our_documents(tmp: Path, count: int) -> Path:
    import json
    import random

    from bench.document_speed import short_item

    rng = random.Random(0)
    path = tmp / "documents.jsonl"
    path.write_text("".join(json.dumps(short_item(rng, k)) + "\n" for k in range(count)),
                    encoding="utf-8")
    return path


def coco_cn(data: Path, tmp: Path) -> Path:
    folder = tmp / "coco-cn-source"
    folder.mkdir(exist_ok=True)
    for name in ("coco-cn_ext.icap2020.txt",):
        (folder / name).write_bytes((data / "image-caption/coco-cn" / name).read_bytes())
    (folder / "train2017").symlink_to(data / "image-caption/coco-mini/train2017")
    return folder / "coco-cn_ext.icap2020.txt"


if __name__ == "__main__":
    main()
