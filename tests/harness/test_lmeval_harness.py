"""``mmconvert harness lm-eval``: tasks lm-eval's own CLI runs with its ``local-chat-completions``
backend against a real OpenAI-compatible server on 127.0.0.1, on local copies of arc_easy, an
mmlu_* task and gsm8k: the README's example (both twins in one call), a backend that sends no
images or too few (one line), the harness as written, lmms-eval's few-shot prompts, and the
original task built over lm-eval's own dataset. That every doc's prompt, pixels and score
equal every other path's is ``test_parity.py``'s, which runs lm-eval and lmms-eval too."""

from __future__ import annotations

import base64
import glob
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("inspect_ai")

from mmconvert.manifest import JsonlLog  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.openai_server import FakeOpenAI  # noqa: E402
from tests.test_cli import run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LM = FIXTURES / "lm-eval"
TASKS = {"arc_easy": LM / "ai2_arc", "mmlu_astronomy": LM / "cais-mmlu", "gsm8k": LM / "gsm8k"}
RECIPE = "readbench"
SECRET = "sk-test-never-written-0123456789"


def pixels(data: bytes) -> str:
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return hashlib.sha256(f"{image.mode} {image.size}".encode() + image.tobytes()).hexdigest()


def images_of(body: dict) -> list[str]:
    content = body["messages"][-1]["content"]
    return [pixels(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
            for part in (content if isinstance(content, list) else [])
            if part.get("type") == "image_url"]


def render_tasks(tmp_path_factory, tasks: dict[str, Path], recipe: str) -> dict[str, Path]:
    """Each task rendered by the CLI (``render lm-eval:TASK --source ... --recipe``): its
    run folder, by task."""
    out = {}
    for task, source in tasks.items():
        folder = tmp_path_factory.mktemp("render") / task
        result = run("render", f"lm-eval:{task}", "--source", source, "--recipe", recipe,
                     "--out", folder)
        assert result.exit_code == 0, result.output
        out[task] = folder
    return out


@pytest.fixture(scope="module")
def renders(tmp_path_factory) -> dict[str, Path]:
    """Each task rendered by the CLI with the recipe, as the harness draws it."""
    return render_tasks(tmp_path_factory, TASKS, RECIPE)


@pytest.fixture(scope="module")
def server(renders):
    """Answers by the pixels of the pages it is sent, whoever sends them: an option letter
    from their hash; for gsm8k the right number when that hash is even, a wrong one else."""
    gold: dict[str, str] = {}
    for folder in renders.values():
        for row in JsonlLog(folder / "manifest.jsonl").read():
            key = pixels((folder / row["images"][0]["path"]).read_bytes())
            answer = row["answer"]
            gold[key] = answer if isinstance(answer, str) else \
                answer[0].split("####")[-1].strip()
    received: list[list[str]] = []

    def answer(body):
        seen = images_of(body)
        received.append(seen)
        if not seen:
            return "I see no image."
        value = gold[seen[0]]
        odd = int(seen[0], 16) % 2
        if value.isdigit():
            return f"Reading the image... #### {int(value) + odd}"
        return f"The image shows it. Answer: {'ABCD'[int(seen[0], 16) % 4]}"

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    yield url, received
    fake.stop()


def lm_eval(url: str, folder: Path, out: Path, tasks: str, *more: str,
            model: str = "local-chat-completions",
            max_images: int = 4) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "lm_eval", "--model", model, "--tasks", tasks,
            "--include_path", str(folder), "--output_path", str(out), "--log_samples"]
    if model == "local-chat-completions":
        args += ["--apply_chat_template", "--model_args",
                 f"model=reader-1,base_url={url}/chat/completions,max_images={max_images},"
                 "num_concurrent=1,max_retries=1"]
    return subprocess.run(args + list(more), capture_output=True, text=True, timeout=600,
                          env=env, cwd=folder)


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("harness")
    result = run("harness", "lm-eval", ",".join(TASKS), "--recipe", RECIPE, "--source", LM,
                 "--out", folder)
    assert result.exit_code == 0, result.output
    return folder


@pytest.mark.slow
def test_a_backend_without_images_or_too_few_is_one_line(server, harness, tmp_path):
    url, _ = server
    # the completions endpoint, where the chat one was meant: prompts as text, no images
    done = lm_eval(url, harness, tmp_path / "a", "mmconvert_arc_easy",
                   "--model_args", f"model=reader-1,base_url={url}/completions,"
                   "tokenizer_backend=None,tokenized_requests=False",
                   model="local-completions")
    lines = [line for line in done.stderr.splitlines() if line.startswith("mmconvert harness")]
    assert done.returncode != 0 and lines == [
        "mmconvert harness: --model local-completions sends no images; mmconvert_arc_easy "
        "needs one of "
        "local-chat-completions, openai-chat-completions, hf-multimodal, vllm-vlm (its "
        "_text twin takes any)"], done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    # a doc of more pages than max_images: every doc here has one page, so a recipe that
    # draws options on pages of a few lines makes more
    many = tmp_path / "recipe.yaml"
    many.write_text("name: short-pages\nrenderer: page\nstyle: readbench\n"
                    "options: {page_height: 1.2in, crop: none}\n", encoding="utf-8")
    folder = tmp_path / "h"
    assert run("harness", "lm-eval", "arc_easy", "--recipe", many, "--source", LM,
               "--out", folder).exit_code == 0
    done = lm_eval(url, folder, tmp_path / "b", "mmconvert_arc_easy", max_images=1)
    said = [line for line in done.stderr.splitlines() if line.startswith("mmconvert harness")]
    assert done.returncode != 0 and len(said) == 1, done.stderr[-2000:]
    assert re.match(r"mmconvert harness: arc_easy doc \d+ has \d+ pages and the backend's "
                    r"max_images is 1: give max_images=\d+ or more", said[0])
    assert "Traceback" not in done.stderr


def test_the_harness_writes_both_tasks_of_each_and_refuses_what_it_cannot(harness, tmp_path):
    record = json.loads((harness / "harness.json").read_text())
    assert sorted(record["tasks"]) == sorted(TASKS) and record["recipe"] == RECIPE
    assert record["recipe_fingerprint"] == "identical"
    for task in TASKS:
        for name in (f"mmconvert_{task}.yaml", f"mmconvert_{task}_text.yaml"):
            assert (harness / name).is_file()
    image = (harness / "mmconvert_gsm8k.yaml").read_text()
    assert "doc_to_image: !function" in image and "strict-match" in image
    assert "num_fewshot: 5" in image and "fewshot_config:" in image
    text = (harness / "mmconvert_gsm8k_text.yaml").read_text()
    assert "doc_to_image" not in text
    for args, said in [
        (("harness", "lm-eval", "arc_eazy", "--recipe", RECIPE), "lm-eval has no task, group "
                                                                 "or tag 'arc_eazy'"),
        (("harness", "lm-eval", "arc_easy", "--recipe", "readbnech"), "no recipe 'readbnech'"),
        (("harness", "lm-eval", "arc_easy", "--recipe", RECIPE, "--source", FIXTURES / "coco"),
         "no local copy of allenai/ai2_arc"),
        (("harness", "lm-eval", "lambada_openai", "--recipe", RECIPE),
         "lm-eval task lambada_openai is a loglikelihood task; mmconvert takes "
         "multiple_choice and generate_until tasks"),
        (("harness", "lmms-eval", "gsm8k,acp_app_gen", "--recipe", RECIPE),
         "lm-eval task acp_app_gen: its filter 'acp_grammar_parse' uses "
         "'ACP_grammar_filter', which lmms-eval does not have (it has take_first, regex,"),
    ]:
        result = run(*args, "--out", tmp_path / "x")
        assert result.exit_code != 0 and said in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
        assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_the_readme_s_example_runs_both_twins_in_one_call(renders, server, harness,
                                                          tmp_path):
    """Issue 54: `--tasks mmconvert_arc_easy,mmconvert_arc_easy_text` in one lm_eval call
    stopped in lm-eval 0.4.13's generate_until ("not enough values to unpack (expected 3,
    got 2)"): its API model reads a batch's first request to decide whether the batch carries
    images, and the two twins' requests differ. Each twin's requests are now sent as a batch
    of their own; each scores as it does alone."""
    url, received = server
    both = lm_eval(url, harness, tmp_path / "both",
                   "mmconvert_arc_easy,mmconvert_arc_easy_text")
    assert both.returncode == 0, both.stderr[-3000:]
    alone = {}
    for task in ("mmconvert_arc_easy", "mmconvert_arc_easy_text"):
        done = lm_eval(url, harness, tmp_path / task, task)
        assert done.returncode == 0, done.stderr[-3000:]
        alone[task] = done
    def scores(folder: Path, task: str) -> dict:
        (path,) = glob.glob(str(folder / "**" / f"samples_{task}_[0-9]*.jsonl"), recursive=True)
        return {(r["doc_id"], r["filter"]): r["exact_match"] for r in
                map(json.loads, Path(path).read_text().splitlines())}

    for task in ("mmconvert_arc_easy", "mmconvert_arc_easy_text"):
        assert scores(tmp_path / "both", task) == scores(tmp_path / task, task) != {}, task


def test_lmms_eval_prompts_hold_the_few_shot_examples_lm_eval_gives_each_doc(renders,
                                                                             tmp_path):
    """Issue 54: lmms-eval's twin set the few-shot seed before every doc, so every doc had
    the first doc's examples (7 of 8 gsm8k prompts differed from lm-eval's and render's).
    Asked in any order, each doc's prompt is now render lm-eval:gsm8k's, which is lm-eval's."""
    import random

    from mmconvert.harness.runtime import Harness

    folder = tmp_path / "lmms"
    result = run("harness", "lmms-eval", "gsm8k", "--recipe", RECIPE, "--source", LM,
                 "--out", folder)
    assert result.exit_code == 0, result.output
    rendered = {row["metadata"]["lm_eval"]["doc"]: row["metadata"]["prompts"]["text"]
                for row in JsonlLog(renders["gsm8k"] / "manifest.jsonl").read()}
    harness = Harness(folder, "gsm8k")
    docs = list(enumerate(harness.original.test_docs()))
    assert len(docs) == len(rendered) >= 4
    for order in (docs, docs[::-1], random.Random(7).sample(docs, len(docs))):
        prompts = {number: harness.lmms_text_prompt(doc) for number, doc in order}
        assert prompts == rendered
    assert len(set(rendered.values())) == len(rendered)
    examples = {text.rsplit("Question:", 1)[0] for text in rendered.values()}
    assert len(examples) > 1  # the docs' few-shot examples differ, as in lm-eval's run


def test_inside_lm_eval_the_original_task_is_built_over_lm_eval_s_own_dataset(harness):
    """Issue 54, part 6: the runtime built each original task a second time inside lm-eval (a
    TaskManager over its folder, its dataset loaded again). Asked by lm-eval's own task
    object, it now takes that object's dataset: nothing is indexed or loaded twice, and the
    docs and prompts are the ones the TaskManager's copy gives."""
    import datasets
    from lm_eval.tasks import TaskManager

    from mmconvert.harness import runtime
    from mmconvert.harness.runtime import Harness

    written = TaskManager(include_defaults=False, include_path=str(harness)).load(
        ["mmconvert_gsm8k"])["tasks"]["mmconvert_gsm8k"]
    loads = []
    real = datasets.load_dataset
    datasets.load_dataset = lambda *a, **k: loads.append(a) or real(*a, **k)
    try:
        doc = next(iter(written.test_docs()))
        prompt = written.doc_to_text(doc)  # lm-eval asks: the runtime builds the original
    finally:
        datasets.load_dataset = real
    shared = runtime.harness(harness, "gsm8k")
    assert type(shared.original).__name__ == "Shared" and loads == []
    assert shared.original.dataset is written.dataset
    alone = Harness(harness, "gsm8k")  # outside lm-eval: the TaskManager's copy
    assert type(alone.original).__name__ != "Shared"
    assert list(alone.original.test_docs()) == list(shared.original.test_docs())
    assert prompt == alone.image_prompt(doc)
    assert runtime.harness(harness, "gsm8k") is shared  # one per task and process
