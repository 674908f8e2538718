"""Cost of a 4-PPI page sweep against four separate renders of the same corpus.

    python bench/sweep_speed.py [--ppi 72,92.9,150,300] [--workers 1]

For each corpus, (a) runs ``mmconvert render --ppi P`` once per PPI and (b) runs ``mmconvert
sweep CORPUS --ppi ...`` once (a base render at 92.9 PPI, then the stored layouts re-drawn at
the other PPIs), each as a fresh process, as a user would. Prints the wall times, their ratio,
and the same comparison in one process (no interpreter start-up), so the part the start-up plays
is visible. Then checks the result: every swept page is byte-identical to the separate render's,
and each page's line slots (measured on the pixels) span the same stretch of the page at every
PPI.

Corpora: the shared MMLU-Redux sample (options only, short pages) and generated long contexts
(~2,500 words, four pages each) in the generic JSONL schema.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.manifest import JsonlLog  # noqa: E402
from tests.line_slots import line_extents  # noqa: E402

REDUX = ROOT.parent / "shared" / "data" / "mmlu-redux" / "mmlu_redux"
WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from "
         "at which but have an they you were her she there been one all we their has would "
         "reading benchmark model vision language token image page context question answer "
         "measure result experiment evidence quantum probability distribution").split()


def long_corpus(path: Path, items: int, words: int) -> Path:
    rng = random.Random(0)
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(items):
            paragraphs, left = [], words
            while left > 0:
                size = min(left, rng.randint(40, 160))
                paragraphs.append(" ".join(rng.choice(WORDS) for _ in range(size)))
                left -= size
            handle.write(json.dumps({"id": f"long-{n:03d}", "context": "\n\n".join(paragraphs),
                                     "question": "Which word comes first?",
                                     "answer": ["the"]}) + "\n")
    return path


def cli(*args) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mmconvert", *map(str, args), "--no-progress"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def in_process(corpus_args: dict, ppis: list[float], work: Path) -> tuple[float, float]:
    import mmconvert
    from mmconvert.postprocess.sweep import SweepOptions, sweep

    started = time.perf_counter()
    for ppi in ppis:
        mmconvert.convert({**corpus_args, "page": {**corpus_args.get("page", {}), "ppi": ppi}},
                          out=work / f"ip-separate-{ppi:g}", progress=False, log=lambda m: None)
    separate = time.perf_counter() - started
    started = time.perf_counter()
    mmconvert.convert(corpus_args, out=work / "ip-sweep" / "base", progress=False,
                      log=lambda m: None)
    sweep(work / "ip-sweep" / "base", work / "ip-sweep", SweepOptions(ppi=ppis))
    return separate, time.perf_counter() - started


def check(work: Path, ppis: list[float]) -> tuple[int, int, bool]:
    """(pages compared byte for byte, line slots compared across PPIs, all equal)."""
    sweep = json.loads((work / "sweep" / "sweep.json").read_text())
    pages = slots = 0
    ok = True
    base_rows = JsonlLog(work / "sweep" / "base" / "manifest.jsonl").read()
    extents = {}
    for variant in sweep["variants"]:
        folder = work / "sweep" / variant["path"]
        swept = JsonlLog(folder / "manifest.jsonl").read()
        separate = JsonlLog(work / f"separate-{variant['ppi']:g}" / "manifest.jsonl").read()
        ok &= [r["images"] for r in swept] == [r["images"] for r in separate]
        pages += sum(len(r["images"]) for r in swept)
        for row in swept:
            layout = json.loads((folder / row["layout"]["path"]).read_text())
            extents[variant["ppi"], row["id"]] = [
                line_extents((folder / img["path"]).read_bytes(), img["ppi"], layout["pitch"],
                             layout["margin"]) for img in row["images"]]
    for row in base_rows:
        reference = extents[ppis[1] if len(ppis) > 1 else ppis[0], row["id"]]
        for ppi in ppis:
            for mine, theirs in zip(extents[ppi, row["id"]], reference, strict=True):
                ok &= len(mine) == len(theirs)
                for a, b in zip(mine, theirs, strict=False):
                    ok &= (a is None) == (b is None)
                    if a is not None and b is not None:
                        ok &= abs(a[0] - b[0]) < 2.5 and abs(a[1] - b[1]) < 2.5
                        slots += 1
    return pages, slots, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ppi", default="72,92.9,150,300")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--long-items", type=int, default=40)
    args = parser.parse_args()
    ppis = [float(p) for p in args.ppi.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpora = {
            "mmlu-redux options (shared sample)": (["mmlu-redux", "--source", REDUX],
                                                   {"corpus": "mmlu-redux",
                                                    "source": str(REDUX)}),
            f"long contexts ({args.long_items} x 2,500 words)": (
                [long_corpus(tmp / "long.jsonl", args.long_items, 2500), "--render",
                 "context"], {"corpus": str(tmp / "long.jsonl"),
                              "page": {"render": "context"}}),
        }
        print(f"PPIs {', '.join(f'{p:g}' for p in ppis)}; --workers {args.workers}")
        for name, (corpus, config) in corpora.items():
            work = tmp / name.split()[0]
            work.mkdir()
            separate = sum(cli("render", *corpus, "--ppi", ppi, "--out",
                               work / f"separate-{ppi:g}", "--workers", args.workers)
                           for ppi in ppis)
            swept = cli("sweep", *corpus, "--ppi", ",".join(f"{p:g}" for p in ppis), "--out",
                        work / "sweep", "--workers", args.workers)
            rows = JsonlLog(work / "sweep" / "base" / "manifest.jsonl").read()
            pages = sum(len(r["images"]) for r in rows)
            ip_separate, ip_swept = in_process(config, ppis, work)
            compared, slots, ok = check(work, ppis)
            print(f"\n{name}: {len(rows)} items, {pages} pages per PPI")
            print(f"  CLI         4 renders {separate:6.2f} s   sweep {swept:6.2f} s   "
                  f"ratio {swept / separate:.2f}")
            print(f"  in process  4 renders {ip_separate:6.2f} s   sweep {ip_swept:6.2f} s   "
                  f"ratio {ip_swept / ip_separate:.2f}")
            print(f"  {compared} pages byte-identical to the separate renders and "
                  f"{slots} line slots at the same place at every PPI: "
                  f"{'yes' if ok else 'NO'}")
            shutil.rmtree(work)


if __name__ == "__main__":
    main()
