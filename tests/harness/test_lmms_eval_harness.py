"""``mmconvert harness lmms-eval``: the same tasks written for lmms-eval, run by lmms-eval's own
CLI and task loader with its ``openai`` backend against the real OpenAI-compatible server on
127.0.0.1. Each doc's score equals ``mmconvert eval``'s on the same server rule and the pages the
server received are ``mmconvert render --recipe``'s, pixel for pixel.

lmms-eval 0.7.3 lives in an environment of its own, ``.venv-lmms-eval`` beside the repository's
``.venv``, made by ``scripts/install-lmms-eval.sh`` (the README's test command runs it): lmms-eval
runs with that environment's python (``MMCONVERT_LMMS_EVAL_PYTHON`` names another). Where it is
missing the tests skip, except under CI, where they fail."""

from __future__ import annotations

import glob
import json
import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("inspect_ai")

from mmconvert.manifest import JsonlLog  # noqa: E402
from tests.harness.test_lmeval_harness import (  # noqa: E402,F401 (fixtures)
    LM,
    RECIPE,
    ROOT,
    SECRET,
    TASKS,
    eval_scores,
    pixels,
    renders,
    server,
)
from tests.test_cli import run  # noqa: E402

PYTHON = Path(os.environ.get("MMCONVERT_LMMS_EVAL_PYTHON")
              or ROOT / ".venv-lmms-eval" / "bin" / "python")


@pytest.fixture(scope="module")
def lmms_python() -> str:
    """The python of lmms-eval's environment (a skip where it is missing, a failure in CI)."""
    if not PYTHON.is_file() or subprocess.run(
            [str(PYTHON), "-c", "import lmms_eval, mmconvert"], capture_output=True).returncode:
        message = (f"lmms-eval is not installed at {PYTHON}: run scripts/install-lmms-eval.sh "
                   "(the README's test command does)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(PYTHON)


def lmms_eval(python: str, url: str, folder: Path, out: Path,
              tasks: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    args = [python, "-m", "lmms_eval", "--model", "openai", "--model_args",
            f"model_version=reader-1,base_url={url},num_concurrent=1,max_retries=1",
            "--tasks", tasks, "--include_path", str(folder), "--output_path", str(out),
            "--log_samples"]
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=env,
                          cwd=folder)


@pytest.mark.slow
def test_lmms_eval_runs_the_image_tasks_and_scores_them_as_mmconvert_eval_does(
        renders, server, lmms_python, tmp_path, monkeypatch):  # noqa: F811 (fixtures)
    url, received = server
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    folder = tmp_path / "tasks"
    result = run("harness", "lmms-eval", ",".join(TASKS), "--recipe", RECIPE, "--source", LM,
                 "--out", folder)
    assert result.exit_code == 0, result.output
    gsm8k = (folder / "mmconvert_gsm8k.yaml").read_text()
    assert "doc_to_visual: !function" in gsm8k and "num_fewshot: 0" in gsm8k
    assert "no_images" in (folder / "mmconvert_gsm8k_text.yaml").read_text()
    evaluated = eval_scores(renders, url, tmp_path)
    sent_by_eval = len(received)
    logs = tmp_path / "lmms"
    # each image task and its text twin in one call, as the README's example runs them
    done = lmms_eval(lmms_python, url, folder, logs,
                     ",".join(f"mmconvert_{t}{twin}" for t in TASKS for twin in ("", "_text")))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "is not the version mmconvert's tests run" not in done.stderr  # the tested one
    for task in TASKS:
        samples = glob.glob(str(logs / "**" / f"*_samples_mmconvert_{task}.jsonl"),
                            recursive=True)
        assert len(samples) == 1, samples
        rows = [json.loads(line) for line in Path(samples[0]).read_text().splitlines()]
        # a row per doc and filter (gsm8k: strict-match and flexible-extract read the same
        # number from the server's replies)
        scores = [(f"{task}-{int(r['doc_id']):04d}", float(r["exact_match"])) for r in rows]
        assert {doc for doc, _ in scores} == set(evaluated[task]), task
        assert all(evaluated[task][doc] == score for doc, score in scores), task
        tokens = [json.loads(line) for line in
                  (logs / f"mmconvert_tokens_{task}.jsonl").read_text().splitlines()]
        assert sorted(t["doc_id"] for t in tokens) == sorted({int(r["doc_id"]) for r in rows})
        twin = glob.glob(str(logs / "**" / f"*_samples_mmconvert_{task}_text.jsonl"),
                         recursive=True)
        assert len(twin) == 1, twin  # the text twin ran in the same call, without pages
        twins = [json.loads(line) for line in Path(twin[0]).read_text().splitlines()]
        assert sorted({int(r["doc_id"]) for r in twins}) == sorted({int(r["doc_id"]) for r in rows})
        assert not any("(see the image)" in r["input"] for r in twins)
    # gsm8k's prompt holds its few-shot examples, as lm-eval writes them, the doc's question
    # (what render lm-eval:gsm8k draws) replaced by the image
    first = json.loads(Path(glob.glob(str(logs / "**" / "*_samples_mmconvert_gsm8k.jsonl"),
                                      recursive=True)[0]).read_text().splitlines()[0])
    assert first["input"].count("Question:") == 5  # gsm8k's 5 examples, as text
    assert first["input"].endswith("\n\n(see the image)\nAnswer:")
    cli = {pixels((f / e["path"]).read_bytes()) for f in renders.values()
           for row in JsonlLog(f / "manifest.jsonl").read() for e in row["images"]}
    by_harness = [page for pages in received[sent_by_eval:] for page in pages]
    assert by_harness and set(by_harness) == cli
    every = [s for task in evaluated.values() for s in task.values()]
    assert 0 < sum(every) < len(every)
