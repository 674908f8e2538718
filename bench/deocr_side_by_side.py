"""The same Markdown through VTCBench's DeOCR renderer and through ``render --renderer
document``, side by side: a table, code with math, and prose with a list and a quote.

DeOCR (pypi ``deocr``) needs ``playwright<1.56``, so it runs in a Python of its own:

    python3 -m venv /tmp/deocr && /tmp/deocr/bin/pip install deocr 'playwright<1.56' pymupdf
    python bench/deocr_side_by_side.py --deocr-python /tmp/deocr/bin/python --out /tmp/side

DeOCR launches the Chromium Playwright downloads; here its launch is given Debian's
(``chromium``, the one mmconvert uses), since nothing is downloaded. DeOCR draws at its
defaults (896 x 896 px pages at 96 dpi, 20 px margins, the machine's fonts); mmconvert with
``--style vtcbench`` (the same page at 96 PPI). Printed for each: pages, what of the source's
markup is left as text in the PDF's text layer (dollar signs, backticks, pipes, LaTeX
commands), the colours in the pages (code coloured or not), and the seconds taken; written:
``OUT/<id>.png``, DeOCR's first page left and mmconvert's right.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DOCUMENTS = {
    "table": ("## Results\n\n| model | score | note |\n|:--|--:|:-:|\n| Qwen2.5-VL | 71.2 | "
              "**best** |\n| GLM-4.1V | 68.0 | ~~old~~ |\n\nA list:\n\n1. first\n2. second with "
              "`inline code`\n\n- [x] done\n- [ ] todo"),
    "code-math": ("```python\ndef loss(x, y):\n    return (x - y) ** 2  # squared\n```\n\n"
                  "Inline math $\\mathcal{L} = \\frac{1}{n}\\sum_i (x_i - y_i)^2$ and display:"
                  "\n\n$$\\int_0^1 x^2\\,dx = \\frac{1}{3}$$\n\nAlso \\(a^2 + b^2 = c^2\\)."),
    "prose": ("# A note\n\nThe *quick* brown fox jumps over the **lazy** dog. " * 3
              + "\n\n> a quote with a [link](https://example.com)\n\n- one\n- two\n- three"),
}

# run in DeOCR's Python: its markdown2image with Debian's Chromium, timed, the PDF kept
DRIVER = r"""
import json, sys, time
from playwright.sync_api import BrowserType
launch = BrowserType.launch
BrowserType.launch = lambda self, **kw: launch(self, executable_path=sys.argv[2],
                                               args=["--no-sandbox", "--disable-gpu"], **kw)
from deocr.engine.args import RenderArgs
from deocr.engine.playwright.sync_api import markdown2image
out = {}
for name, md in json.loads(open(sys.argv[1]).read()).items():
    started = time.perf_counter()
    pages = markdown2image(md, root=sys.argv[3] + "/" + name,
                           render_args=RenderArgs(saveImage=True, savePDF=True,
                                                  save_format="png", save_kwargs={}))
    out[name] = {"pages": [str(p) for p in pages], "seconds": time.perf_counter() - started}
print(json.dumps(out))
"""


def leftover(text: str) -> dict[str, int]:
    """The source's markup left as text: what a typesetter should have drawn."""
    return {"$": text.count("$"), "`": text.count("`"), "|": text.count("|"),
            "\\latex": len(re.findall(r"\\[a-zA-Z]+", text)), "**": text.count("**")}


def colours(path: Path) -> int:
    """Distinct saturated colours in a page (coloured code, coloured backgrounds)."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as image:
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3).astype(int)
    saturated = pixels[pixels.max(axis=1) - pixels.min(axis=1) > 40]
    return len({tuple(p) for p in saturated})


def pdf_text(path: Path) -> str:
    import pymupdf

    with pymupdf.open(path) as doc:
        return "".join(page.get_text() for page in doc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deocr-python", required=True, type=Path)
    parser.add_argument("--out", type=Path, default=Path("deocr-side-by-side"))
    args = parser.parse_args()
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not args.deocr_python.is_file() or chromium is None:
        sys.exit("needs --deocr-python (a Python with deocr and playwright<1.56) and Debian's "
                 "chromium")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source = tmp / "docs.json"
        source.write_text(json.dumps(DOCUMENTS))
        started = time.perf_counter()
        done = subprocess.run([str(args.deocr_python), "-c", DRIVER, str(source), chromium,
                               str(tmp / "deocr")], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"DeOCR failed: {done.stderr.strip()[-400:]}")
        deocr = json.loads(done.stdout.strip().splitlines()[-1])
        deocr_seconds = time.perf_counter() - started
        items = tmp / "items.jsonl"
        items.write_text("".join(json.dumps({"id": k, "question": "?", "context": v}) + "\n"
                                 for k, v in DOCUMENTS.items()))
        ours = tmp / "ours"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mmconvert", "render", str(items), "--renderer",
                        "document", "--render", "context", "--style", "vtcbench", "--color",
                        "rgb", "--out", str(ours)], check=True, capture_output=True, cwd=ROOT)
        ours_seconds = time.perf_counter() - started
        rows = {json.loads(line)["id"]: json.loads(line) for line in
                (ours / "manifest.jsonl").read_text().split("\n") if line}
        print(f"DeOCR 0.3.2 (whole process, {len(DOCUMENTS)} documents): {deocr_seconds:.1f} s; "
              f"mmconvert: {ours_seconds:.1f} s")
        from PIL import Image

        for name in DOCUMENTS:
            theirs = [Path(p) for p in deocr[name]["pages"]]
            their_pdf = next(Path(theirs[0]).parent.glob("*.pdf"))
            row = rows[name]
            mine = [ours / image["path"] for image in row["images"]]
            print(f"{name}: DeOCR {len(theirs)} page(s), markup left "
                  f"{leftover(pdf_text(their_pdf))}, {colours(theirs[0])} colours; mmconvert "
                  f"{len(mine)} page(s), markup left {leftover(pdf_text(ours / row['pdf']))}, "
                  f"{colours(mine[0])} colours")
            with Image.open(theirs[0]) as left, Image.open(mine[0]) as right:
                both = Image.new("RGB", (left.width + right.width + 20,
                                         max(left.height, right.height)), "#888888")
                both.paste(left.convert("RGB"), (0, 0))
                both.paste(right.convert("RGB"), (left.width + 20, 0))
                both.save(args.out / f"{name}.png")
        print(f"side by side (DeOCR left, mmconvert right): {args.out}/*.png")


if __name__ == "__main__":
    main()
