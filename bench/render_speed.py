"""Render speed and memory of the page renderer against a ReadBench-style Pillow baseline.

    python bench/render_speed.py [--ppi 92.9] [--repeat 3]

Prints pages/s, items/s and PNG bytes per page for (a) the MCQ option blocks of the shipped
MMLU-Redux sample and (b) ~8,000-word contexts, on one worker for both renderers and on all
cores for mmconvert's converter; then both as whole processes, alternated ``--repeat``
times (``mmconvert render ITEMS --workers 1`` into a fresh run folder, against a process that
imports Pillow, reads the same JSONL and writes each page with ``Image.save``): the goals
(5x on option blocks, 8x on 8k-word contexts) are on these; then the peak RSS of rendering one
100-page context in a fresh process. The baseline is made the way ReadBench's public code makes
its pages: RGB, Liberation Sans at int(12*PPI/72) px, word wrap by measured width, one
``draw.text`` per line, 0.25 in margins, PNG saved with ``optimize=True, compress_level=3``.
"""

from __future__ import annotations

import argparse
import io
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

from mmconvert.corpora import LoadReport, LoadRequest, resolve  # noqa: E402
from mmconvert.items import Item, option_letter  # noqa: E402
from mmconvert.renderers.fonts import FONT_DIR  # noqa: E402
from mmconvert.renderers.page import PageOptions, PageRenderer  # noqa: E402

SAMPLE = ROOT / "mmconvert" / "samples" / "mmlu-redux"
VOCAB = ("the of and to in a is that for it as was with be by on not he this are or his from at "
         "which but have an they you were her she there been one all we their has would when "
         "reading benchmark model vision language token image page context question answer "
         "measure result experiment evidence quantum probability distribution").split()


class PillowBaseline:
    """ReadBench-style page images with Pillow (see the module docstring)."""

    def __init__(self, ppi: float):
        from PIL import ImageFont

        self.ppi = ppi
        self.width, self.height = round(8.27 * ppi), round(11.69 * ppi)
        self.margin = int(0.25 * ppi)
        self.font_px = int(12 * ppi / 72)
        self.font = ImageFont.truetype(str(FONT_DIR / "LiberationSans-Regular.ttf"),
                                       self.font_px)
        self.line_height = int(self.font_px * 1.2)

    def wrap(self, text: str) -> list[str]:
        limit = self.width - 2 * self.margin
        lines: list[str] = []
        for paragraph in text.split("\n"):
            line = ""
            for word in paragraph.split(" "):
                trial = f"{line} {word}" if line else word
                if self.font.getlength(trial) <= limit or not line:
                    line = trial
                else:
                    lines.append(line)
                    line = word
            lines.append(line)
        return lines

    def render(self, text: str) -> list[bytes]:
        from PIL import Image, ImageDraw

        lines = self.wrap(text)
        per_page = (self.height - 2 * self.margin) // self.line_height
        pages = []
        for start in range(0, len(lines), per_page):
            chunk = lines[start:start + per_page]
            image = Image.new("RGB", (self.width, self.height), "white")
            draw = ImageDraw.Draw(image)
            y = self.margin
            for line in chunk:
                draw.text((self.margin, y), line, font=self.font, fill="black")
                y += self.line_height
            if len(chunk) < per_page:
                image = image.crop((0, 0, self.width, y + self.margin))
            buffer = io.BytesIO()
            image.save(buffer, format="PNG", optimize=True, compress_level=3)
            pages.append(buffer.getvalue())
        return pages


def sample_items(copies: int) -> list[Item]:
    report = LoadReport()
    items = list(resolve("mmlu-redux").load(LoadRequest(source=SAMPLE), report))
    return [item for _ in range(copies) for item in items]


def long_text(words: int, seed: int) -> str:
    rng = random.Random(seed)
    out, paragraph = [], []
    for _ in range(words):
        paragraph.append(rng.choice(VOCAB))
        if len(paragraph) >= rng.randint(60, 160):
            out.append(" ".join(paragraph))
            paragraph = []
    out.append(" ".join(paragraph))
    return "\n".join(out)


def context_items(n: int, words: int) -> list[Item]:
    return [Item(id=f"ctx-{i:03d}", corpus="bench", subset="ctx", split="test",
                 question="What is it about?", context=long_text(words, i)) for i in range(n)]


def text_of(item: Item, part: str) -> str:
    if part == "options":
        return "\n".join(f"{option_letter(i)}. {o}" for i, o in enumerate(item.options))
    return item.context or ""


def ours_pages(ppi: float, part: str):
    renderer = PageRenderer(PageOptions(ppi=ppi))
    return lambda item: [page.png for page in renderer.render(item, part).pages]


def baseline_pages(ppi: float, part: str):
    baseline = PillowBaseline(ppi)
    return lambda item: baseline.render(text_of(item, part))


def time_best(render_pages, items, repeat) -> tuple[float, int, int]:
    """(best seconds of ``repeat`` passes, pages, PNG bytes) of ``render_pages(item)`` (a list
    of PNG bytes) over ``items``, after one warm-up item (fonts, caches)."""
    render_pages(items[0])
    best, pages, size = float("inf"), 0, 0
    for _ in range(repeat):
        started = time.perf_counter()
        pages = size = 0
        for item in items:
            pngs = render_pages(item)
            pages += len(pngs)
            size += sum(len(png) for png in pngs)
        best = min(best, time.perf_counter() - started)
    return best, pages, size


def time_converter(items_file: Path, workers: int, ppi: float) -> tuple[float, int, int]:
    import mmconvert

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        summary = mmconvert.convert({"corpus": str(items_file), "page": {"ppi": ppi}},
                                    out=Path(tmp) / "run", workers=workers, progress=False)
        return time.perf_counter() - started, summary.images, summary.rendered


def peak_rss_of_100_pages(ppi: float) -> tuple[int, float]:
    """(pages, peak RSS MiB) of rendering one ~100-page context in a fresh process."""
    code = (
        f"import resource, sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from bench.render_speed import context_items\n"
        "from mmconvert.renderers.page import PageOptions, PageRenderer\n"
        "item = context_items(1, 93000)[0]\n"
        f"result = PageRenderer(PageOptions(ppi={ppi!r})).render(item, 'context', want_pdf=True)\n"
        "print(len(result.pages), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    pages, kib = out.stdout.split()
    return int(pages), int(kib) / 1024


# the baseline as a whole process: argv = items.jsonl, part, out folder
BASELINE_PROCESS = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, {bench!r})
from render_speed import PillowBaseline
from mmconvert.items import option_letter
baseline = PillowBaseline({ppi!r})
out = Path(sys.argv[3])
out.mkdir(parents=True)
for line in open(sys.argv[1], encoding="utf-8"):
    row = json.loads(line)
    text = ("\n".join(f"{{option_letter(i)}}. {{o}}" for i, o in enumerate(row["options"]))
            if sys.argv[2] == "options" else row["context"])
    for number, png in enumerate(baseline.render(text), start=1):
        (out / f"{{row['id']}}_p{{number:03d}}.png").write_bytes(png)
"""


def whole_processes(items: list[Item], part: str, ppi: float,
                    repeat: int) -> tuple[list[float], list[float]]:
    """Seconds of ``mmconvert render`` and of the baseline's process over ``items`` (ids made
    distinct), alternated ``repeat`` times."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "items.jsonl"
        source.write_text("".join(json.dumps(
            {"id": f"{item.id}-{n}", "question": item.question, "options": item.options,
             "answer": item.answer, "context": item.context}) + "\n"
            for n, item in enumerate(items)), encoding="utf-8")
        script = BASELINE_PROCESS.format(bench=str(ROOT / "bench"), ppi=ppi)
        ours, theirs = [], []
        for number in range(repeat):
            commands = [
                (ours, [sys.executable, "-m", "mmconvert", "render", str(source), "--render",
                        part, "--ppi", str(ppi), "--workers", "1", "--out",
                        str(Path(tmp) / f"run-{number}")]),
                (theirs, [sys.executable, "-c", script, str(source), part,
                          str(Path(tmp) / f"pil-{number}")])]
            for times, command in commands if number % 2 == 0 else commands[::-1]:
                started = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True)
                times.append(time.perf_counter() - started)
        return ours, theirs


def row(label, items, seconds, pages, size):
    return {"case": label, "pages/s": pages / seconds, "items/s": items / seconds,
            "bytes/page": size / pages if pages else 0, "pages": pages, "seconds": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ppi", type=float, default=92.9)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--contexts", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()

    mcq = sample_items(copies=20)
    ctx = context_items(args.contexts, 8000)
    results = []
    checks = []
    for label, items, part, target in (("MCQ options (shipped sample x20)", mcq, "options", 3.0),
                                       ("8k-word contexts", ctx, "context", 6.0)):
        ours = row(f"{label}: mmconvert, 1 worker", len(items),
                   *time_best(ours_pages(args.ppi, part), items, args.repeat))
        base = row(f"{label}: Pillow baseline", len(items),
                   *time_best(baseline_pages(args.ppi, part), items, args.repeat))
        results += [ours, base]
        speedup = ours["pages/s"] / base["pages/s"]
        checks.append((f"{label}: speed-up {speedup:.2f}x (target >= {target}x)",
                       speedup >= target))
        checks.append((f"{label}: PNG bytes/page {ours['bytes/page']:.0f} vs baseline "
                       f"{base['bytes/page']:.0f}", ours["bytes/page"] <= base["bytes/page"]))

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        items_file = Path(tmp) / "ctx.jsonl"
        items_file.write_text("".join(
            json.dumps({"id": i.id, "question": i.question, "context": i.context}) + "\n"
            for i in ctx), encoding="utf-8")
        for workers in sorted({1, cores}):
            seconds, pages, items = time_converter(items_file, workers, args.ppi)
            results.append(row(f"8k-word contexts: mmconvert render end to end, {workers} "
                               f"worker(s)", items, seconds, pages, 0))

    import statistics

    whole = []
    for label, items, part, target in (("MCQ options (shipped sample x20)", mcq, "options", 5.0),
                                       ("8k-word contexts", ctx, "context", 8.0)):
        ours, theirs = whole_processes(items, part, args.ppi, args.repeat)
        ratio = statistics.median(theirs) / statistics.median(ours)
        whole.append(f"{label}, whole processes: mmconvert "
                     + ", ".join(f"{t:.2f}" for t in ours) + " s, baseline "
                     + ", ".join(f"{t:.2f}" for t in theirs) + " s")
        checks.append((f"{label}, whole processes: {ratio:.2f}x (median against median; "
                       f"target >= {target}x)", ratio >= target))

    pages, rss = peak_rss_of_100_pages(args.ppi)
    checks.append((f"peak RSS rendering a {pages}-page context: {rss:.0f} MiB (target < 300)",
                   rss < 300))

    print(f"PPI {args.ppi}, {cores} core(s), best of {args.repeat}")
    print(f"{'case':<66} {'pages/s':>9} {'items/s':>9} {'bytes/page':>11}")
    for r in results:
        size = f"{r['bytes/page']:.0f}" if r["bytes/page"] else "-"
        print(f"{r['case']:<66} {r['pages/s']:9.1f} {r['items/s']:9.2f} {size:>11}")
    print()
    for text in whole:
        print(text)
    print(f"load {os.getloadavg()[0]:.2f}")
    print()
    for text, ok in checks:
        print(f"[{'ok' if ok else 'MISS'}] {text}")
    if args.json:
        print(json.dumps({"results": results, "checks": [{"check": t, "ok": o}
                                                          for t, o in checks]}, indent=1))
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
