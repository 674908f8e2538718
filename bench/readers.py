"""Both real readers' transcription precision against vision tokens (issue 55's figures): the
shared MMLU-Redux sample drawn with ``readbench`` over PPI, with the four ``deepseek-ocr-*``
recipes (DeepSeek-OCR's modes), and with ``glyph`` at three vision budgets, each read by
``ocr/tesseract`` and ``ocr/rapidocr`` through ``mmconvert eval --probe transcribe``; and each
reader's seconds per page (the evaluation's wall time over the pages it read, inspect_ai's
start included).

Vision tokens are Qwen2.5-VL's rule for the pages (``--ratio-model qwen2.5-vl``); compression
is o200k text tokens over them. DeepSeek-OCR's own figures on Fox (its paper's table: about
97 % precision below 10x compression, about 60 % at 20x) are printed beside the table as a
reference for what a reading model reaches, not as a comparison of models: the readers here
read other pages, with other text.

    python bench/readers.py [--source ../shared/data/mmlu-redux] [--limit 30] [--out DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mmconvert.manifest import JsonlLog  # noqa: E402

READERS = ("ocr/tesseract", "ocr/rapidocr")
DEEPSEEK_FOX = "DeepSeek-OCR on Fox (its paper): ~97 % precision below 10x, ~60 % at 20x"


def mmconvert(*args: object) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "mmconvert", *map(str, args)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"mmconvert {' '.join(map(str, args))}: {done.stderr[-1500:]}")
    return done


def configurations(source: Path, limit: int) -> list[tuple[str, list[str]]]:
    base = ["render", "mmlu-redux", "--source", source, "--limit", limit]
    out = [(f"readbench {ppi} PPI", [*base, "--recipe", "readbench", "--ppi", ppi])
           for ppi in ("40", "60", "92.9", "150")]
    # the same geometry with nonce words: what the readers' priors (if any) supplied
    out += [(f"readbench {ppi} PPI nonce", [*base, "--recipe", "readbench", "--ppi", ppi,
                                            "--nonce", "1"]) for ppi in ("60", "92.9")]
    out += [(name, [*base, "--recipe", name]) for name in
            ("deepseek-ocr-tiny", "deepseek-ocr-small", "deepseek-ocr-base", "deepseek-ocr-large")]
    out += [(f"glyph {budget} tokens", [*base, "--recipe", "glyph", "--vision-budget", budget,
                                        "--ratio-model", "qwen2.5-vl", "--tokenizer",
                                        "tiktoken:o200k_base"])
            for budget in ("64", "100", "256")]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "data" /
                        "mmlu-redux")
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "readers")
    given = parser.parse_args()
    spec = importlib.util.find_spec("litellm")  # tiktoken's files, as the tests read them
    os.environ["TIKTOKEN_CACHE_DIR"] = os.path.join(spec.submodule_search_locations[0],
                                                    "litellm_core_utils", "tokenizers")
    rows = []
    for label, render in configurations(given.source, given.limit):
        run = given.out / label.replace(" ", "_")
        if not (run / "manifest.jsonl").is_file():
            mmconvert(*render, "--out", run)
        pages = sum(len([e for e in row["images"] if e.get("role") == "page"])
                    for row in JsonlLog(run / "manifest.jsonl").read())
        for reader in READERS:
            folder = given.out / "evals" / f"{label.replace(' ', '_')}-{reader[4:]}"
            shutil.rmtree(folder, ignore_errors=True)  # its cache would answer every page
            start = time.perf_counter()
            mmconvert("eval", run, "--model", reader, "--probe", "transcribe", "--tokenizer",
                      "tiktoken:o200k_base", "--ratio-model", "qwen2.5-vl", "--out", folder,
                      "--no-progress")
            seconds = time.perf_counter() - start
            results = json.loads((folder / "results.json").read_text())
            read = results["overall"]["transcribe"]
            compression = results["compression"]
            rows.append({"config": label, "reader": reader, "n": read["n"],
                         "precision": read["score"], "edit_distance": read["edit_distance"],
                         "vision_tokens": compression["vision_tokens_per_item"]["qwen2.5-vl"]
                         ["mean"],
                         "compression": compression["ratio"]["qwen2.5-vl"]["mean"],
                         "seconds_per_page": round(seconds / max(pages, 1), 3)})
            print(json.dumps(rows[-1]), flush=True)
    (given.out / "readers.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n| configuration | reader | n | vision tokens | compression | precision | "
          "edit distance | s/page |\n|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['config']} | {r['reader']} | {r['n']} | {r['vision_tokens']:.0f} | "
              f"{r['compression']:.2f} | {r['precision']:.1f} | {r['edit_distance']:.1f} | "
              f"{r['seconds_per_page']:.2f} |")
    print(f"\nreference, not a comparison: {DEEPSEEK_FOX}")
    plot(rows, given.out / "readers.png")


def plot(rows: list[dict], path: Path) -> None:
    from mmconvert.plots import pyplot, save_plot

    plt = pyplot()
    if plt is None:  # no matplotlib: the table alone
        return
    figure, ax = plt.subplots(figsize=(7, 5))
    for number, reader in enumerate(READERS):
        for family, marker in (("readbench", "o"), ("deepseek", "s"), ("glyph", "^")):
            found = [r for r in rows if r["reader"] == reader and r["config"].startswith(family)]
            if found:
                ax.scatter([r["vision_tokens"] for r in found], [r["precision"] for r in found],
                           marker=marker, color=f"C{number}", label=f"{reader}: {family}")
    ax.set_xscale("log")
    ax.set_xlabel("vision tokens an item (Qwen2.5-VL's rule)")
    ax.set_ylabel("transcription precision (Fox's, %)")
    ax.set_ylim(0, 105)
    ax.set_title(f"Real readers on MMLU-Redux pages\n({DEEPSEEK_FOX}: a reference)",
                 fontsize=9)
    ax.legend(fontsize=7)
    save_plot(figure, path)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
