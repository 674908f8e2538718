"""``render niah``: the lengths and depths reached against those asked, and the time to render a
32k-token haystack, as whole processes.

Builds the grid 1k, 2k, 4k, 8k, 16k, 32k × depths 0-100 in tokens of ``--tokenizer`` (default
tiktoken:o200k_base, read from TIKTOKEN_CACHE_DIR) and reports the largest shortfall of the
length (tokens under the target; a haystack never passes it) and the largest depth error
(points); then times ``mmconvert render niah --lengths 32k --depths 50`` against the same
render of a 1k haystack (the start-up baseline), one worker.

    TIKTOKEN_CACHE_DIR=... python bench/niah_speed.py [--tokenizer tiktoken:o200k_base]
        [--haystack FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LENGTHS = "1k,2k,4k,8k,16k,32k"
DEPTHS = "0,10,20,30,40,50,60,70,80,90,100"


def render(out: Path, tokenizer: str, lengths: str, depths: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mmconvert", "render", "niah", "--lengths", lengths,
                    "--depths", depths, "--length-tokenizer", tokenizer, "--workers", "1",
                    "--out", str(out)], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", default="tiktoken:o200k_base")
    parser.add_argument("--haystack", action="append", default=[],
                        help="a haystack text file (default RULER's noise); repeatable")
    args = parser.parse_args()
    from mmconvert.corpora import LoadReport, LoadRequest, resolve
    from mmconvert.corpora.niah import NiahOptions

    start = time.perf_counter()
    options = NiahOptions(lengths=LENGTHS.split(","), depths=[float(d) for d in
                                                               DEPTHS.split(",")],
                          length_tokenizer=args.tokenizer, haystack=args.haystack)
    items = resolve("niah").load(LoadRequest(options=options),
                                 LoadReport())
    built = time.perf_counter() - start
    short = max(i.metadata["niah"]["length_target"] - i.metadata["niah"]["length_reached"]
                for i in items)
    over = max(i.metadata["niah"]["length_reached"] - i.metadata["niah"]["length_target"]
               for i in items)
    depth = max(abs(i.metadata["niah"]["depth_reached"] - i.metadata["niah"]["depth"])
                for i in items)
    print(f"{len(items)} haystacks ({LENGTHS} x {DEPTHS}) built in {built:.2f} s")
    print(f"length: largest shortfall {short} tokens, largest overshoot {over} tokens")
    print(f"depth: largest error {depth:.2f} points")
    by_length: dict[str, float] = {}
    for item in items:
        niah = item.metadata["niah"]
        error = abs(niah["depth_reached"] - niah["depth"])
        by_length[niah["length"]] = max(by_length.get(niah["length"], 0.0), error)
    print("depth error by length: " + ", ".join(f"{k} {v:.2f}" for k, v in by_length.items()))
    # the gap in tokens: those before the needle against the asked share of the haystack's
    gaps = {}
    for item in items:
        niah = item.metadata["niah"]
        gap = abs(niah["tokens_before_needle"] - niah["depth"] / 100 * niah["length_reached"])
        gaps[niah["length"]] = max(gaps.get(niah["length"], 0.0), gap)
    print("largest gap between asked and reached depth, tokens, by length: "
          + ", ".join(f"{k} {v:.0f}" for k, v in gaps.items())
          + f"; flagged (over 5 points off): "
          f"{sum(1 for i in items if i.metadata['niah'].get('depth_off'))}")
    with tempfile.TemporaryDirectory() as folder:
        base = render(Path(folder) / "1k", args.tokenizer, "1k", "50")
        long = render(Path(folder) / "32k", args.tokenizer, "32k", "50")
        row = json.loads((Path(folder) / "32k" / "manifest.jsonl").read_text().splitlines()[0])
        print(f"render, whole process: 1k haystack {base:.2f} s (baseline); 32k haystack "
              f"{long:.2f} s, {len(row['images'])} pages, "
              f"{row['metadata']['niah']['length_reached']} tokens")


if __name__ == "__main__":
    main()
