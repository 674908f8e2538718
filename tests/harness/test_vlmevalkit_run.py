"""VLMEvalKit end to end: the kit's own ``run.py`` (``--config``, ``--mode all``) runs a
``RenderedDataset`` with its OpenAI-compatible model (``GPT4V``) against a real server on
127.0.0.1, and reports the score the truth gives.

The server knows each page only by its pixels: it decodes the JPEG the kit sends, finds the
rendered page nearest to it (``render --recipe``'s PNG; the nearest by far), and answers that
item's gold letter, a wrong letter, or nothing readable, by a rule fixed in advance. So the
truth (the share right, the unparsed) is known before the kit runs, and the kit's score must
equal it. The test also measures what the kit's JPEG re-encoding does to the pages.

VLMEvalKit is not on PyPI, and CI reaches only the package registries, so this runs where
``scripts/install-vlmevalkit.sh CHECKOUT`` has made ``.venv-vlmevalkit``
(``MMCONVERT_VLMEVALKIT_PYTHON`` names another python); elsewhere it skips, saying so.
"""

from __future__ import annotations

import base64
import glob
import io
import json
import os
import subprocess
from pathlib import Path

import numpy
import pytest
from PIL import Image

from mmconvert.manifest import JsonlLog
from tests.conftest import SAMPLE
from tests.openai_server import FakeOpenAI
from tests.test_cli import run

ROOT = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("MMCONVERT_VLMEVALKIT_PYTHON")
              or ROOT / ".venv-vlmevalkit" / "bin" / "python")
SECRET = "sk-test-never-written-0123456789"
ITEMS = 9


def checkout() -> Path:
    """The VLMEvalKit checkout the environment reads (without importing the kit)."""
    if not PYTHON.is_file():
        pytest.skip(f"VLMEvalKit is not installed at {PYTHON} (it is not on PyPI): run "
                    "scripts/install-vlmevalkit.sh CHECKOUT")
    found = subprocess.run(
        [str(PYTHON), "-c", "import importlib.util as u; print(u.find_spec('vlmeval').origin)"],
        capture_output=True, text=True)
    if found.returncode:
        pytest.skip(f"{PYTHON} has no vlmeval: run scripts/install-vlmevalkit.sh CHECKOUT")
    return Path(found.stdout.strip()).parents[1]


def page(data: bytes) -> numpy.ndarray:
    image = Image.open(io.BytesIO(data))
    return numpy.asarray(image.convert("RGB"), dtype=numpy.int16)


@pytest.mark.slow
def test_vlmevalkit_s_run_py_scores_a_rendered_dataset_as_the_truth_says(tmp_path):
    kit = checkout()
    rendered = tmp_path / "render"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--recipe", "readbench",
               "--limit", str(ITEMS), "--out", rendered).exit_code == 0
    rows = JsonlLog(rendered / "manifest.jsonl").read()
    pages = [(number, page((rendered / e["path"]).read_bytes()))
             for number, row in enumerate(rows) for e in row["images"]]
    # the rule, fixed before the kit runs: right on items 0, 3, 6; no letter on 1, 4, 7;
    # a wrong letter on 2, 5, 8
    kinds = ["right", "unparsed", "wrong"]
    errors: list[tuple[float, float, bool]] = []  # (mean error, runner-up's, changed)
    prompts: dict[int, str] = {}

    def answer(body):
        content = body["messages"][-1]["content"]
        sent = [page(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
                for part in content if part.get("type") == "image_url"]
        assert sent, "the kit sent no page"
        distances = sorted(
            (float(numpy.abs(known - sent[0]).mean()) if known.shape == sent[0].shape
             else float("inf"), number) for number, known in pages)
        (error, number), (runner_up, _) = distances[0], distances[1]
        known = dict(pages)[number]
        errors.append((error, runner_up, bool(numpy.any(known != sent[0]))))
        prompts[number] = "".join(part["text"] for part in content if part["type"] == "text")
        gold = rows[number]["answer"]
        kind = kinds[number % 3]
        if kind == "right":
            return f"The page asks it. Answer: {gold}"
        if kind == "wrong":
            return f"Answer: {'ABCD'[('ABCD'.index(gold) + 1) % 4]}"
        return "I cannot tell."

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    try:
        config = {"model": {"reader": {"class": "GPT4V", "model": "reader-1",
                                       "api_base": f"{url}/chat/completions",
                                       "img_detail": "high", "retry": 1,
                                       "temperature": 0}},
                  "data": {"mmconvert-redux": {
                      "class": "RenderedDataset", "corpus": "mmlu-redux",
                      "recipe": "readbench", "source": str(SAMPLE), "limit": ITEMS,
                      "name": "mmconvert-redux", "cache_dir": str(tmp_path / "pages")}}}
        (tmp_path / "config.json").write_text(json.dumps(config))  # no key in it
        env = {**os.environ, "OPENAI_API_KEY": SECRET, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [str(PYTHON), str(ROOT / "tests" / "harness" / "vlmevalkit_run.py"), str(kit),
             "--config", str(tmp_path / "config.json"), "--work-dir", str(tmp_path / "work"),
             "--mode", "all", "--api-nproc", "1"],
            capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    finally:
        fake.stop()
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    # the key reaches disk only where the kit itself writes it: its OpenAI wrapper logs it
    # ("Using API Base: ...; API Key: ...", vlmeval/api/gpt.py), which the guide warns of
    holding = [line for p in glob.glob(str(tmp_path / "**" / "*"), recursive=True)
               if Path(p).is_file() and Path(p).suffix in (".json", ".log", ".tsv", ".csv",
                                                           ".txt", ".jsonl")
               for line in Path(p).read_text(errors="replace").splitlines() if SECRET in line]
    assert holding and all("; API Key: " in line for line in holding), holding
    # every item asked once, each JPEG nearest its own page by far
    assert len(errors) == ITEMS
    assert all(error * 4 < runner_up for error, runner_up, _ in errors), errors
    assert prompts == {number: row["prompt"] for number, row in enumerate(rows)}  # as render's
    # the kit's report: run.py logs the dict RenderedDataset.evaluate returns
    truth = {"score": round(100 * 3 / ITEMS, 4), "n": ITEMS, "unscored": 0, "unparsed": 3}
    said = done.stdout + done.stderr
    for key, value in truth.items():
        assert f'"{key}": {json.dumps(value)}' in said, (key, said[-3000:])
    changed = sum(c for _, _, c in errors)
    mean = sum(e for e, _, _ in errors) / len(errors)
    print(f"VLMEvalKit's JPEG: {changed} of {len(errors)} pages' pixels change; mean absolute "
          f"error {mean:.3f} of 255")
