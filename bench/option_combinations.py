"""Every ``--modality`` and ``--probe`` combination of ``eval``, ``curve`` and ``frontier``
against a local fake endpoint, on two or three items of the shipped sample: each must run, or
stop in one line before it renders or asks anything. Prints one line a case, and at the end
how many ran, how many were refused, and any traceback.

    python bench/option_combinations.py

This sweep found three silent wrongs (2026-11-29): a frontier of no image condition that
rendered, asked and then fell on a KeyError; a curve of none that called its empty points a
success; and a probe beside --modality that curve and frontier dropped without a word.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from mmconvert.cli import main  # noqa: E402
from tests.conftest import SAMPLE  # noqa: E402
from tests.openai_server import FakeOpenAI  # noqa: E402
from tests.test_stats import minilm_folder  # noqa: E402

CONDITIONS = ("image", "blank", "text", "text-budget")


def invoke(*args) -> tuple[str, str]:
    """(what came of the command: ran, refused or a traceback; its last line)."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    last = (result.output.strip().splitlines() or [""])[-1][:140]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"traceback {result.exception!r}"[:160], last
    return ("ran" if result.exit_code == 0 else
            "refused" if len(result.output.strip().splitlines()) == 1 else
            f"exit {result.exit_code}, {len(result.output.splitlines())} lines"), last


def main_() -> None:
    fake = FakeOpenAI(answer=lambda body: "Answer: A", models=("reader",))
    url = fake.start()
    found: Counter = Counter()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            ran, _ = invoke("render", "mmlu-redux", "--source", SAMPLE, "--limit", 3,
                            "--out", out / "run")
            assert ran == "ran"
            modalities = [",".join(c) for n in (1, 2) for c in
                          itertools.combinations(CONDITIONS, n)] + [",".join(CONDITIONS)]
            heads = {"eval": ["eval", out / "run"],
                     "curve": ["curve", "mmlu-redux", "--source", SAMPLE, "--budgets", "256",
                               "--limit", 2],
                     "frontier": ["frontier", "mmlu-redux", "--source", SAMPLE, "--grid",
                                  "font_size:9", "--limit", 2]}
            for number, (command, modality, probe) in enumerate(itertools.product(
                    heads, modalities, (None, "transcribe"))):
                args = [*heads[command], "--out", out / f"case{number}", "--model", "reader",
                        "--base-url", url, "--modality", modality, "--tokenizer",
                        minilm_folder(), "--ratio-model", "qwen2.5-vl",
                        *(["--probe", probe] if probe else [])]
                fate, last = invoke(*args)
                found[fate.split(" ")[0]] += 1
                print(f"{command} --modality {modality}{f' --probe {probe}' if probe else ''}:"
                      f" {fate} | {last}", flush=True)
    finally:
        fake.stop()
    print(", ".join(f"{count} {fate}" for fate, count in sorted(found.items())))


if __name__ == "__main__":
    main_()
