"""One item, one prompt, one page, one score, on every path (issue 54).

Three lm-eval tasks, each run on every path that makes it:
- ``arc_easy``: multiple choice;
- ``gsm8k``: generation, with its five few-shot examples;
- ``mmlu_high_school_european_history``: multiple choice over passages of up to 393 words.

The paths: ``render lm-eval:TASK`` (the CLI), ``mmconvert.convert``, ``mmconvert eval`` of the
CLI's run, lm-eval's CLI and lmms-eval's CLI on ``mmconvert harness``'s tasks, and the VLMEvalKit
dataset. (``load_recipe().render()`` and the training transform take items in the generic
schema, not lm-eval docs: they are checked on the id-less JSONL items below, with the paths
that take those.)

For each doc, each path gives the sha256 of its prompt, of its pages' pixels, and the score of
one fixed reply. The reply is chosen by a real server on 127.0.0.1 from the first page's pixels
alone, so a path that drew other pixels gets another reply. Every path must agree with the CLI
on all three, for the image prompt and for the text twin's. A prompt sent as chat turns (lm-eval
sends few-shot examples as user and assistant turns) is joined with the task's own delimiters
(``target_delimiter`` " ", ``fewshot_delimiter`` "\\n\\n") before it is hashed: that is how
lm-eval joins them without a chat template.

The same run checks what each harness shows beside the parity (the tests that ran lm-eval and
lmms-eval on their own, each with its own eval, are folded in here): both twins of every task
in one call, each doc's tokens beside the harness's logs, the written YAML, gsm8k's examples in
lmms-eval's prompt, and lmms-eval 0.7.3 run without the untested-version line.

The module prints the parity table (tasks x paths, disagreements) that issue 54's note gives.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("inspect_ai")

import mmconvert  # noqa: E402
from mmconvert.harness.vlmevalkit import RenderedDataset  # noqa: E402
from mmconvert.manifest import JsonlLog  # noqa: E402
from mmconvert.scoring.spec import score_row  # noqa: E402
from tests.harness.test_lmeval_harness import (  # noqa: E402
    LM,
    ROOT,
    SECRET,
    lm_eval,
    pixels,
    render_tasks,
)
from tests.openai_server import FakeOpenAI  # noqa: E402
from tests.test_cli import run  # noqa: E402
from tests.typed import typed_rows  # noqa: E402

RECIPE = "readbench"
# lmms-eval 0.7.3 lives in an environment of its own, ``.venv-lmms-eval`` beside the
# repository's ``.venv``, made by ``scripts/install-lmms-eval.sh`` (the README's test command
# runs it); ``MMCONVERT_LMMS_EVAL_PYTHON`` names another python. Where it is missing the test
# skips, except under CI, where it fails.
LMMS_PYTHON = Path(os.environ.get("MMCONVERT_LMMS_EVAL_PYTHON")
                   or ROOT / ".venv-lmms-eval" / "bin" / "python")
TASKS = {"arc_easy": LM / "ai2_arc", "gsm8k": LM / "gsm8k",
         "mmlu_high_school_european_history": LM / "cais-mmlu"}


@pytest.fixture(scope="module")
def lmms_python() -> str:
    """The python of lmms-eval's environment (a skip where it is missing, a failure in CI)."""
    if not LMMS_PYTHON.is_file() or subprocess.run(
            [str(LMMS_PYTHON), "-c", "import lmms_eval, mmconvert"],
            capture_output=True).returncode:
        message = (f"lmms-eval is not installed at {LMMS_PYTHON}: run "
                   "scripts/install-lmms-eval.sh (the README's test command does)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(LMMS_PYTHON)


def lmms_eval(python: str, url: str, folder: Path, out: Path,
              tasks: str) -> subprocess.CompletedProcess:
    """lmms-eval's own CLI, its ``openai`` model against ``url``, on the written tasks."""
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    args = [python, "-m", "lmms_eval", "--model", "openai", "--model_args",
            f"model_version=reader-1,base_url={url},num_concurrent=1,max_retries=1",
            "--tasks", tasks, "--include_path", str(folder), "--output_path", str(out),
            "--log_samples"]
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=env,
                          cwd=folder)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def flat(messages: list[dict]) -> tuple[str, list[str]]:
    """A chat request's prompt as one text (turns joined with the task's delimiters) and its
    pages' pixel digests."""
    text, pages = "", []
    for message in messages:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        said = "".join(p["text"] for p in parts if p.get("type") == "text")
        pages += [pixels(base64.b64decode(p["image_url"]["url"].split(",", 1)[1]))
                  for p in parts if p.get("type") == "image_url"]
        text += f" {said}\n\n" if message["role"] == "assistant" else said
    return text, pages


def reply(first_page: str, gold: str) -> str:
    """The fixed reply to a page: an option letter from its digest; for a number, the gold
    number when the digest is even, one more when it is odd."""
    if gold.lstrip("-").isdigit():
        return f"So the answer is #### {int(gold) + int(first_page, 16) % 2}"
    return f"The page shows it. Answer: {'ABCD'[int(first_page, 16) % 4]}"


def gold_of(row: dict) -> str:
    answer = row["answer"]
    return answer if isinstance(answer, str) else answer[0].split("####")[-1].strip()


@pytest.fixture(scope="module")
def cli(tmp_path_factory) -> dict[str, list[dict]]:
    """Each task rendered by the CLI: its rows, with the pages' pixel digests."""
    out = {}
    for task, folder in render_tasks(tmp_path_factory, TASKS, RECIPE).items():
        # each row's JSON, with the typed row the scorer reads and its pages' digests
        out[task] = [{**row.raw, "_typed": row, "_folder": str(folder),
                      "_pages": [pixels((folder / e.path).read_bytes()) for e in row.images]}
                     for row in typed_rows(folder)]
    return out


@pytest.mark.slow
def test_every_path_gives_each_doc_the_same_prompt_pixels_and_score(
        cli, lmms_python, tmp_path, monkeypatch):
    by_page = {row["_pages"][0]: (task, row) for task, rows in cli.items() for row in rows}
    assert len(by_page) == sum(len(rows) for rows in cli.values())  # each doc its own page
    by_text = {sha(row["text_prompt"]): (task, row) for task, rows in cli.items()
               for row in rows}
    received: list[tuple[str, list[str]]] = []

    def answer(body):
        text, pages = flat(body["messages"])
        received.append((text, pages))
        if not pages:
            return "I see no image."
        _, row = by_page.get(pages[0], (None, None))
        return reply(pages[0], gold_of(row)) if row else "an unknown page"

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # (path, task, doc) -> (prompt sha256, page digests, score); the text twin's prompt apart
    found: dict[str, dict[tuple[str, str], tuple]] = defaultdict(dict)
    twins: dict[str, dict[tuple[str, str], str]] = defaultdict(dict)

    def heard(path: str, start: int, scores: dict[tuple[str, str], float]) -> None:
        """What the server heard since ``start``: each request's doc, by its pixels (an image
        prompt) or its text (a text twin: it must be some doc's text prompt)."""
        for text, pages in received[start:]:
            if pages:
                task, row = by_page.get(pages[0], ("?", {"id": f"unknown page {pages[0][:8]}"}))
                key = (task, row["id"])
                found[path][key] = (sha(text), tuple(pages), scores.get(key))
            else:
                task, row = by_text.get(sha(text), ("?", {"id": f"unknown text {sha(text)[:8]}"}))
                twins[path][(task, row["id"])] = sha(text)

    try:
        for task, rows in cli.items():
            for row in rows:
                key = (task, row["id"])
                found["render (CLI)"][key] = (
                    sha(row["prompt"]), tuple(row["_pages"]),
                    score_row(row["_typed"], reply(row["_pages"][0], gold_of(row))).value)
                twins["render (CLI)"][key] = sha(row["text_prompt"])
        # mmconvert.convert, in memory
        for task, source in TASKS.items():
            out = tmp_path / "convert" / task
            mmconvert.convert({"corpus": f"lm-eval:{task}", "source": str(source)},
                              recipe=RECIPE, out=out, progress=False, log=lambda m: None)
            for row in typed_rows(out):
                pages = [pixels((out / e["path"]).read_bytes()) for e in row["images"]]
                found["convert()"][(task, row["id"])] = (
                    sha(row["prompt"]), tuple(pages),
                    score_row(row, reply(pages[0], gold_of(row))).value)
                twins["convert()"][(task, row["id"])] = sha(row["text_prompt"])
        # mmconvert eval of the CLI's runs, image and text
        start = len(received)
        scores = {}
        for task, rows in cli.items():
            out = tmp_path / "eval" / task
            result = run("eval", rows[0]["_folder"], "--model", "reader-1", "--base-url", url,
                         "--out", out, "--modality", "image,text")
            assert result.exit_code == 0, result.output
            scores.update({(task, r["id"]): r["score"]
                           for r in JsonlLog(out / "responses.jsonl").read()
                           if r["condition"] == "image"})
        heard("eval", start, scores)
        # lm-eval's and lmms-eval's CLIs: every task and its twin in one call
        for harness, runner in (("lm-eval", None), ("lmms-eval", lmms_python)):
            folder = tmp_path / harness
            assert run("harness", harness, ",".join(TASKS), "--recipe", RECIPE, "--source", LM,
                       "--out", folder).exit_code == 0
            names = ",".join(f"mmconvert_{t}{twin}" for t in TASKS for twin in ("", "_text"))
            start = len(received)
            logs = tmp_path / f"{harness}-logs"
            done = lm_eval(url, folder, logs, names) if runner is None else \
                lmms_eval(runner, url, folder, logs, names)
            assert done.returncode == 0, done.stderr[-3000:]
            scores = {}
            for task in TASKS:
                # lm-eval: samples_<task>_<time>.jsonl; lmms-eval: <time>_samples_<task>.jsonl
                samples = [s for s in glob.glob(str(logs / "**" / "*.jsonl"), recursive=True)
                           if re.fullmatch(rf"(.*_)?samples_mmconvert_{task}(_[-0-9T.]+)?\.jsonl",
                                           Path(s).name)]
                assert len(samples) == 1, samples
                for line in Path(samples[0]).read_text().splitlines():
                    sample = json.loads(line)
                    key = (task, f"{task}-{int(sample['doc_id']):04d}")
                    # gsm8k's two filters (strict-match, flexible-extract) must read the same
                    assert scores.setdefault(key, float(sample["exact_match"])) == \
                        float(sample["exact_match"]), (harness, key)
                # each doc's pages and tokens beside the harness's logs, a line a doc
                tokens = [json.loads(line) for line in
                          (logs / f"mmconvert_tokens_{task}.jsonl").read_text().splitlines()]
                assert sorted(t["doc_id"] for t in tokens) == list(range(len(cli[task])))
                assert all(t["pages"] >= 1 and t["vision_tokens"]["qwen2-vl"] > 0
                           for t in tokens)
            heard(harness, start, scores)
            harness_checks(harness, folder, logs, done, url, tmp_path)
        # the VLMEvalKit dataset, as the kit calls it
        for task, source in TASKS.items():
            kit = RenderedDataset(f"lm-eval:{task}", RECIPE, source=source,
                                  cache_dir=tmp_path / "kit")
            replies = []
            for number in range(len(kit.data)):
                message = kit.build_prompt(number)
                pages = [pixels(Path(p["value"]).read_bytes()) for p in message
                         if p["type"] == "image"]
                row = kit.drawn(number).row
                replies.append({"index": number, "prediction": reply(pages[0], gold_of(row))})
                found["VLMEvalKit dataset"][(task, row["id"])] = (
                    sha("".join(p["value"] for p in message if p["type"] == "text")),
                    tuple(pages), None)
                twins["VLMEvalKit dataset"][(task, row["id"])] = sha(
                    RenderedDataset.build_prompt(
                        _text_twin(kit), number)[0]["value"])
            predictions = tmp_path / f"kit-{task}.jsonl"
            predictions.write_text("".join(json.dumps(r) + "\n" for r in replies))
            for key, entry in kit.evaluate(predictions)["items"].items():
                prompt, pages, _ = found["VLMEvalKit dataset"][(task, key)]
                found["VLMEvalKit dataset"][(task, key)] = (prompt, pages, entry["score"])
    finally:
        fake.stop()

    truth = found["render (CLI)"]
    table = [("path", *TASKS)]
    failures = []
    for path, docs in found.items():
        cells = []
        for task in TASKS:
            keys = [k for k in truth if k[0] == task]
            prompt = sum(docs.get(k, (None,))[0] != truth[k][0] for k in keys)
            pixels_ = sum(docs.get(k, (None, None))[1] != truth[k][1] for k in keys)
            score = sum(docs.get(k, (None, None, None))[2] != truth[k][2] for k in keys)
            twin = sum(twins[path].get(k) != twins["render (CLI)"][k] for k in keys)
            cells.append(f"{len(keys)} docs: prompt {prompt}, text twin {twin}, "
                         f"pixels {pixels_}, score {score}")
            if prompt or pixels_ or score or twin:
                failures.append(f"{path} {task}: {cells[-1]}")
        extra = sorted(set(docs) - set(truth))
        if extra:
            failures.append(f"{path}: docs no other path has: {extra[:3]}")
        table.append((path, *cells))
    print("\n" + "\n".join(" | ".join(row) for row in table))
    assert not failures, failures
    every = [entry[2] for entry in truth.values()]
    assert 0 < sum(every) < len(every)  # the fixed replies are right and wrong


def harness_checks(harness: str, folder: Path, logs: Path, done, url: str,
                   tmp_path: Path) -> None:
    """What each harness's run shows beside the parity: its tasks as written, gsm8k's prompt
    with its examples (lmms-eval), the tested version said nothing of, and a second run
    replacing the harness folder's token file (lm-eval)."""
    gsm8k = (folder / "mmconvert_gsm8k.yaml").read_text()
    if harness == "lmms-eval":
        assert "doc_to_visual: !function" in gsm8k and "num_fewshot: 0" in gsm8k
        assert "no_images" in (folder / "mmconvert_gsm8k_text.yaml").read_text()
        assert "is not the version mmconvert's tests run" not in done.stderr
        (path,) = glob.glob(str(logs / "**" / "*_samples_mmconvert_gsm8k.jsonl"),
                            recursive=True)
        first = json.loads(Path(path).read_text().splitlines()[0])
        assert first["input"].count("Question:") == 5  # gsm8k's 5 examples, as text
        assert first["input"].endswith("\n\n(see the image)\nAnswer:")
        return
    assert "doc_to_image: !function" in gsm8k and "num_fewshot: 5" in gsm8k
    kept = folder / "tokens" / "arc_easy.jsonl"
    first_run = kept.read_text().splitlines()
    again = lm_eval(url, folder, tmp_path / "lm-again", "mmconvert_arc_easy")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(kept.read_text().splitlines()) == len(first_run) == len(
        typed_rows(folder.parent / "convert" / "arc_easy"))


def _text_twin(kit: RenderedDataset) -> RenderedDataset:
    """The same dataset asked for its text twin (the drawn rows are shared)."""
    twin = object.__new__(type(kit))
    twin.__dict__.update(kit.__dict__)
    twin.prompt = "text"
    return twin


def image_digest(image) -> str:
    """``pixels`` of a Pillow image (the digest ``pixels`` gives its encoded bytes)."""
    return hashlib.sha256(f"{image.mode} {image.size}".encode() + image.tobytes()).hexdigest()


@pytest.mark.slow
def test_id_less_items_give_the_same_prompt_pixels_and_score_on_every_path(tmp_path,
                                                                           monkeypatch):
    """The id-less JSONL items (a passage with no answer, options, a number, a word, Chinese)
    with pixelworld, whose style is drawn per item from its id, on every path that takes items
    in the generic schema: the CLI, ``convert(items=)``, ``render()``, the training transform
    and its dataset (pixels: they carry no prompt), ``eval`` and the VLMEvalKit dataset. An
    item with no gold answer is unscored on every path, never 0."""
    from mmconvert.items import content_id
    from mmconvert.recipes import load_recipe
    from mmconvert.recipes.training import TrainingDataset
    from mmconvert.scoring.spec import unscorable
    from tests.test_recipes import IDLESS

    recipe = load_recipe("pixelworld")
    ids = [content_id(i.get("language"), i.get("context"), i.get("question"), i.get("options"))
           for i in IDLESS]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in IDLESS))

    def rows_of(folder: Path) -> dict[str, tuple]:
        out = {}
        for row in typed_rows(folder):
            pages = tuple(pixels((folder / e["path"]).read_bytes()) for e in row["images"]
                          if e["role"] in ("page", "prompt"))
            out[row["id"]] = (sha(row["prompt"]), pages, fixed_score(row, pages[0]), row)
        return out

    def fixed_reply(row: dict, first_page: str) -> str:
        if row.get("options"):
            return f"Answer: {'ABCD'[int(first_page, 16) % len(row['options'])]}"
        answers = row.get("answer") or []
        right = int(first_page, 16) % 2 == 0
        return f"Answer: {answers[0]}" if answers and right else "I cannot say."

    def fixed_score(row: dict, first_page: str) -> float | None:
        return None if unscorable(row) else score_row(row, fixed_reply(row, first_page)).value

    assert run("render", items, "--recipe", "pixelworld", "--out", tmp_path / "cli"
               ).exit_code == 0
    truth = rows_of(tmp_path / "cli")
    assert sorted(truth) == sorted(ids)
    by_page = {entry[1][0]: entry[3] for entry in truth.values()}
    received: list[tuple[str, list[str]]] = []

    def answer(body):
        text, pages = flat(body["messages"])
        received.append((text, pages))
        return fixed_reply(by_page[pages[0]], pages[0]) if pages else "no page"

    found: dict[str, dict[str, tuple]] = {"render (CLI)": {k: v[:3] for k, v in truth.items()}}
    mmconvert.convert({"corpus": "items"}, items=list(reversed(IDLESS)), recipe="pixelworld",
                      out=tmp_path / "api", progress=False)
    found["convert(items=)"] = {k: v[:3] for k, v in rows_of(tmp_path / "api").items()}
    found["render()"] = {k: (None, tuple(image_digest(p) for p in recipe.render(i)), None)
                         for k, i in zip(ids, IDLESS, strict=True)}
    batch = {name: [i.get(name) for i in IDLESS] for name in
             ("context", "question", "options", "answer", "language")}
    found["transform"] = {k: (None, tuple(image_digest(p) for p in pages), None)
                          for k, pages in zip(ids, recipe.transform()(batch)["images"],
                                              strict=True)}
    training = TrainingDataset(list(reversed(IDLESS)), recipe)
    found["training dataset"] = {
        k: (None, tuple(image_digest(p) for p in training[len(IDLESS) - 1 - n]["images"]),
            None) for n, k in enumerate(ids)}
    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    try:
        result = run("eval", tmp_path / "cli", "--model", "reader-1", "--base-url", url,
                     "--out", tmp_path / "eval", "--modality", "image")
        assert result.exit_code == 0, result.output
    finally:
        fake.stop()
    scores = {r["id"]: r["score"] for r in JsonlLog(tmp_path / "eval" / "responses.jsonl").read()}
    found["eval"] = {}
    for text, pages in received:
        key = by_page[pages[0]]["id"]
        found["eval"][key] = (sha(text), tuple(pages), scores.get(key))
    # eval asks nothing of an item it cannot score: it names it in results.json, unscored
    unscored = json.loads((tmp_path / "eval" / "results.json").read_text())["unscored"]
    for entry in unscored["items"]:
        assert entry["id"] not in found["eval"] and entry["reason"] == "no gold answer"
        found["eval"][entry["id"]] = (truth[entry["id"]][0], truth[entry["id"]][1], None)
    kit = RenderedDataset(IDLESS[::2] + IDLESS[1::2], "pixelworld", cache_dir=tmp_path / "kit")
    replies = []
    found["VLMEvalKit dataset"] = {}
    for number in range(len(kit.data)):
        message = kit.build_prompt(number)
        pages = tuple(pixels(Path(p["value"]).read_bytes()) for p in message
                      if p["type"] == "image")
        key = str(kit.data.iloc[number]["id"])
        replies.append({"id": key, "prediction": fixed_reply(truth[key][3], pages[0])})
        found["VLMEvalKit dataset"][key] = (sha(message[-1]["value"]), pages, None)
    predictions = tmp_path / "kit.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in replies))
    for key, entry in kit.evaluate(predictions)["items"].items():
        prompt, pages, _ = found["VLMEvalKit dataset"][key]
        found["VLMEvalKit dataset"][key] = (prompt, pages, entry["score"])

    table = []
    for path, docs in found.items():
        assert sorted(docs) == sorted(ids), path
        # render() and the transform carry no prompt and no score: those are not theirs
        carried = [part == 1 or any(docs[k][part] is not None for k in ids)
                   for part in range(3)]
        counts = [sum(docs[k][part] != truth[k][part] for k in ids) if carried[part] else 0
                  for part in range(3)]
        shown = [str(n) if carried[part] else "-" for part, n in enumerate(counts)]
        table.append(f"{path} | {len(ids)} items: prompt {shown[0]}, pixels {shown[1]}, "
                     f"score {shown[2]}")
        assert counts == [0, 0, 0], table[-1]
    print("\n" + "\n".join(table))
    assert sorted(e["id"] for e in unscored["items"]) == \
        sorted(k for k in ids if truth[k][2] is None)
    assert len(unscored["items"]) == 4 and len(received) == len(ids) - 4
    assert {truth[k][2] for k in ids} == {None, 0.0, 1.0}
