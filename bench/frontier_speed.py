"""``mmconvert frontier`` as a whole process on the shared MMLU-Pro sample, scored by a local
OpenAI-compatible server whose accuracy is a known function of the image.

    python bench/frontier_speed.py [--delay 0.05] [--grid font_size:5,7,9,12,16]

The server answers an item right when its page holds at least 400 pixels a character of the
text it shows (it finds the item by the page's hash), so each point's expected accuracy is
known and checked. Printed: the points (compression for qwen2.5-vl with all-MiniLM's
tokenizer, accuracy, the front), the frontier's wall time; the baseline, in the same run, is
the same work by hand: ``mmconvert render``, ``eval`` and ``stats --tokenizer`` as separate
processes per point; then a second frontier run (as after a kill): its time and the requests
it sent (target 0).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.openai_server import FakeOpenAI  # noqa: E402
from tests.typed import typed  # noqa: E402

SAMPLE = Path("/work/shared/data/mmlu-pro/data")
FIXTURE = ROOT / "tests" / "fixtures" / "mmlu-pro" / "data"
PIXELS_PER_CHARACTER = 400


def mmconvert(*args) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mmconvert", *map(str, args)], check=True,
                   capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def server(folders: list[Path], delay: float) -> FakeOpenAI:
    """Right when the page has PIXELS_PER_CHARACTER or more, else another letter; the text
    twin always right."""
    from PIL import Image

    from mmconvert.manifest import JsonlLog
    from mmconvert.qa.checks import expected_text

    def rows():
        return [r for folder in folders for manifest in folder.glob("**/manifest.jsonl")
                for r in JsonlLog(manifest).read()]

    def answer(body):
        parts = body["messages"][-1]["content"]
        parts = [{"type": "text", "text": parts}] if isinstance(parts, str) else parts
        urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
        if not urls:
            text = " ".join(p.get("text", "") for p in parts)
            return f"Answer: {next(r['answer'] for r in rows() if r['text_prompt'] == text)}"
        pngs = [base64.b64decode(u.split(",", 1)[1]) for u in urls]
        digest = hashlib.sha256(pngs[0]).hexdigest()
        row = next(r for r in rows() if any(i["sha256"] == digest for i in r["images"]))
        area = 0
        for png in pngs:  # every page the item is shown
            with Image.open(io.BytesIO(png)) as image:
                area += image.width * image.height
        right = area / len(expected_text(typed(row))) >= PIXELS_PER_CHARACTER
        return f"Answer: {row['answer'] if right else 'Z'}"

    return FakeOpenAI(answer=answer, delay=delay, models=("reader",))


def expected_accuracy(run: Path) -> float:
    """The score the server's rule gives the run's pages, worked out from its manifest."""
    from mmconvert.manifest import JsonlLog
    from mmconvert.qa.checks import expected_text

    rows = JsonlLog(run / "manifest.jsonl").read()
    right = [sum(i["width"] * i["height"] for i in r["images"])
             / len(expected_text(typed(r)))
             >= PIXELS_PER_CHARACTER for r in rows]
    return 100 * sum(right) / len(right)


def main() -> None:
    from tests.test_stats import minilm_folder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--grid", default="font_size:5,7,9,12,16")
    args = parser.parse_args()
    source = SAMPLE if SAMPLE.exists() else FIXTURE
    tokenizer = minilm_folder()
    with tempfile.TemporaryDirectory() as tmp:
        out, by_hand = Path(tmp) / "frontier", Path(tmp) / "by-hand"
        fake = server([out, by_hand], args.delay)
        url = fake.start()
        try:
            common = ["--tokenizer", tokenizer, "--ratio-model", "qwen2.5-vl"]
            frontier = ["frontier", "mmlu-pro", "--source", source, *common, "--style",
                        "readbench", "--grid", args.grid, "--model", "reader", "--base-url",
                        url, "--out", out]
            seconds = mmconvert(*frontier)
            sent = len(fake.requests("chat"))
            found = json.loads((out / "frontier.json").read_text())
            # the same work by hand: a render, an eval and a stats per point
            field, values = args.grid.split(":")
            manual = 0.0
            for value in values.split(","):
                run = by_hand / f"{field}-{value}"
                manual += mmconvert("render", "mmlu-pro", "--source", source, "--style",
                                    "readbench", f"--{field.replace('_', '-')}", value,
                                    "--limit", "50", "--out", run)
                manual += mmconvert("eval", run, "--model", "reader", "--base-url", url,
                                    "--modality", "image", "--out", Path(f"{run}-eval"))
                manual += mmconvert("stats", run, "--tokenizer", tokenizer, "--models",
                                    "qwen2.5-vl", "--json", "--no-plots")
            checked = [expected_accuracy(out / p["run"]) for p in found["points"]]
            before = len(fake.requests("chat"))
            again = mmconvert(*frontier)
            resent = len(fake.requests("chat")) - before
        finally:
            fake.stop()
    items = found["points"][0]["items"]
    print(f"frontier on the MMLU-Pro sample: {len(found['points'])} points x {items} items, "
          f"{sent} requests at {args.delay} s: {seconds:.1f} s whole process "
          f"({seconds / len(found['points']):.1f} s a point)")
    for p in found["points"]:
        print(f"  {p['name']} {p['label']:<16} compression {p['compression']:.3f}  accuracy "
              f"{p['accuracy']:5.1f} %  [{p['accuracy_ci95'][0]:.1f}, "
              f"{p['accuracy_ci95'][1]:.1f}]{'  front' if p['on_front'] else ''}")
    agree = sum(abs(p["accuracy"] - want) < 1e-3
                for p, want in zip(found["points"], checked, strict=True))
    print(f"accuracy equal to the server's known function: {agree}/{len(checked)} points")
    print(f"baseline, by hand (render + eval + stats a point, separate processes): "
          f"{manual:.1f} s (frontier x{manual / seconds:.2f} faster)")
    print(f"second run, as after a kill: {again:.1f} s, {resent} request(s) sent")


if __name__ == "__main__":
    main()
