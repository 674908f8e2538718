"""lm-evaluation-harness tasks as a corpus (``render lm-eval:TASK``), checked against lm-eval's
own task objects: every doc of the tasks whose data the fixtures hold (MMLU, CMMLU, MMLU-Pro,
in the hub's layouts) gives the text, the choices and the answer lm-eval's task gives, built
by lm-eval's own loading path (its ``datasets.load_dataset`` on the same files), not ours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

from mmconvert.corpora import LoadReport, LoadRequest, resolve  # noqa: E402
from mmconvert.corpora.lmeval import task_manager  # noqa: E402
from mmconvert.items import LETTERS  # noqa: E402
from mmconvert.scoring.spec import score_row, unscorable  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.test_cli import run  # noqa: E402
from tests.typed import typed_rows  # noqa: E402

LM = FIXTURES / "lm-eval"
MMLU_PRO = [f"mmlu_pro_{c}" for c in (
    "biology", "business", "chemistry", "computer_science", "economics", "engineering",
    "health", "history", "law", "math", "other", "philosophy", "physics", "psychology")]
# task -> (the local copy, lm-eval's own builder and data files for the same data)
CASES = {
    **{f"mmlu_{s}": (LM / "cais-mmlu", "parquet", {
        split: str(LM / "cais-mmlu" / s / f"{split}-00000-of-00001.parquet")
        for split in ("test", "dev")}) for s in ("astronomy", "high_school_european_history")},
    **{f"cmmlu_{s}": (LM / "cmmlu", "csv", {
        split: str(LM / "cmmlu" / split / f"{s}.csv") for split in ("test", "dev")})
       for s in ("agronomy", "high_school_mathematics")},
    **{name: (LM / "mmlu-pro", "parquet", {
        split: str(LM / "mmlu-pro" / "data" / f"{split}-00000-of-00001.parquet")
        for split in ("test", "validation")}) for name in MMLU_PRO},
}


def reference(name: str, builder: str, files: dict[str, str]):
    """lm-eval's own task ``name``, its dataset read by lm-eval's own download (the datasets
    library's ``builder`` on ``files``) in place of the hub."""
    loaded = task_manager().load({"group": "reference", "task": [
        {"task": name, "dataset_path": builder, "dataset_name": None,
         "dataset_kwargs": {"data_files": files}}]})
    return loaded["tasks"][name]


def load(name: str, source, **request):
    report = LoadReport()
    items = resolve(f"lm-eval:{name}").load(LoadRequest(source=source, **request), report)
    return list(items), report  # given as they are read


@pytest.mark.slow
def test_every_doc_equals_what_lm_evals_own_task_gives():
    checked = docs = 0
    for name, (source, builder, files) in CASES.items():
        task = reference(name, builder, files)
        items, _ = load(name, source)
        expected = list(task.eval_docs)
        assert len(items) == len(expected), name
        for item, doc in zip(items, expected, strict=True):
            meta = item.metadata["lm_eval"]
            assert meta["task"] == name and meta["version"] == task.VERSION
            text = task.doc_to_text(doc)
            assert meta["prompt"] == task.fewshot_context(doc, num_fewshot=0)
            drawn = "\n\n".join(p for p in (item.context, item.question) if p)
            if task.config.output_type == "multiple_choice":
                choices = task.doc_to_choice(doc)
                assert item.answer == LETTERS[task.doc_to_target(doc)]
                if choices == list(LETTERS[:len(choices)]):  # options read from the prompt
                    listed = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(item.options))
                    assert f"{drawn}\n{listed}\n{meta['cue']}" == text
                    assert len(item.options) == len(choices)
                else:
                    assert item.options == choices
            else:
                assert item.answer == [str(task.doc_to_target(doc))]
                assert (f"{drawn}\n{meta['cue']}" if meta["cue"] else drawn) == text.strip()
            docs += 1
        checked += 1
    assert (checked, docs) == (18, 96)


def test_mmlu_options_are_the_hub_rows_choices():
    items, _ = load("mmlu_astronomy", LM / "cais-mmlu")
    import pyarrow.parquet as pq

    rows = pq.read_table(LM / "cais-mmlu/astronomy/test-00000-of-00001.parquet").to_pylist()
    assert [(i.question, i.options, i.answer) for i in items] == [
        (r["question"].strip(), r["choices"], LETTERS[r["answer"]]) for r in rows]


def test_a_group_renders_its_tasks_and_records_the_group(tmp_path):
    out = tmp_path / "run"
    result = run("render", "lm-eval:mmlu", "--subset", "mmlu_astronomy", "--source",
                 LM / "cais-mmlu", "--limit", "3", "--out", out)
    assert result.exit_code == 0, result.output
    rows = typed_rows(out)
    assert [r["id"] for r in rows] == [f"mmlu_astronomy-000{i}" for i in range(3)]
    meta = rows[0]["metadata"]["lm_eval"]
    assert (meta["group"], meta["version"], meta["harness"]) == ("mmlu", 1.0, "0.4.13")
    assert rows[0]["corpus"] == "lm-eval" and rows[0]["answer"] == "A"
    assert all(r["images"] for r in rows)


@pytest.mark.slow
def test_a_generation_task_is_scored_by_its_own_filter_and_metric(tmp_path):
    out = tmp_path / "run"
    assert run("render", "lm-eval:mmlu_pro_math", "--source", LM / "mmlu-pro", "--out",
               out).exit_code == 0
    row = typed_rows(out)[0]
    assert row["options"] == [] and row["answer"] == [row["metadata"]["lm_eval"]["target"][0]]
    assert unscorable(row) is None
    gold = row["answer"][0]
    wrong = next(letter for letter in "ABCD" if letter != gold)
    right = score_row(row, f"Let me think. ... so the answer is ({gold}).")
    assert (right.value, right.extra["lm_eval"]) == (1.0, {"custom-extract/exact_match": 1.0})
    assert score_row(row, f"the answer is ({wrong})").value == 0.0
    # the task's regex finds no answer: lm-eval's "[invalid]", which its metric scores 0
    said = score_row(row, f"I would pick {gold}")
    assert (said.value, said.answer, said.parsed) == (0.0, "[invalid]", False)


@pytest.mark.parametrize(("args", "expected"), [
    (["lm-eval:mmlu_astronomyy"], "did you mean 'mmlu_astronomy'?"),
    (["lm-eval:lambada_openai"], "lm-eval task lambada_openai is a loglikelihood task; "
                                 "mmconvert takes multiple_choice and generate_until tasks"),
    (["lm-eval:mmlu_anatomy", "--source", LM / "cais-mmlu"],
     "no local copy of cais/mmlu config anatomy"),
    (["lm-eval"], "lm-eval needs a task: lm-eval:TASK"),
])
def test_bad_tasks_are_one_line(tmp_path, args, expected):
    result = run("render", *args, "--out", tmp_path / "run")
    assert result.exit_code != 0
    assert expected in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_task_not_local_with_no_hub_says_to_pass_source(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_DATASETS_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "mmconvert", "render", "lm-eval:arc_easy",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert "cannot load allenai/ai2_arc config ARC-Easy from the Hugging Face hub" in lines[-1]
    assert "pass --source" in lines[-1] and "Traceback" not in done.stderr


def test_the_rows_record_the_task_in_json(tmp_path):
    out = tmp_path / "run"
    assert run("render", "lm-eval:cmmlu_agronomy", "--source", LM / "cmmlu", "--language",
               "zh", "--limit", "1", "--out", out).exit_code == 0
    row = typed_rows(out)[0]
    assert row["language"] == "zh" and row["metadata"]["lm_eval"]["cue"] == "答案："
    assert row["options"] == ["农业生产工具", "土地", "劳动力", "资金"] and row["answer"] == "B"


@pytest.mark.slow
def test_the_task_index_is_kept_and_indexed_again_when_it_cannot_be_trusted(tmp_path,
                                                                            monkeypatch):
    """lm-eval indexes its tasks in about 6 s on every call: the index is kept in the cache
    folder under lm-eval's version and its task folder's listing (a file for each
    installation), read back as lm-eval made it, and made again when the file is unreadable or
    another's; a task alone is built over
    its own folder, with the docs and prompts the whole index's manager gives."""
    import lm_eval

    from mmconvert.corpora.lmeval import dataset_source, index_file, manager_for, task_index

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    task_index.cache_clear()
    # another environment's lm-eval keeps its index beside this one's, and keeps it
    other = index_file(tmp_path / "mmconvert", Path("/elsewhere/lm_eval/tasks"))
    other.parent.mkdir(parents=True)
    other.write_text("another installation's index")
    try:
        built = task_index()
        kept = index_file(tmp_path / "mmconvert", Path(lm_eval.__file__).parent / "tasks")
        assert kept.is_file() and kept != other
        assert other.read_text() == "another installation's index"
        assert set(built) == set(task_manager().task_index)
        assert built["arc_easy"][0] == "TASK" and built["mmlu"][0] == "GROUP"
        task_index.cache_clear()
        assert task_index() == built
        # a kept index is read without importing lm_eval.tasks (datasets, pandas: a second),
        # so a name it has not (a typo) is refused at once
        import os
        import subprocess
        import sys

        fresh = subprocess.run(
            [sys.executable, "-c", "import sys; from mmconvert.corpora.lmeval import task_index;"
             " print('arc_easy' in task_index(), 'lm_eval.tasks' in sys.modules)"],
            capture_output=True, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
        assert fresh.stdout.split() == ["True", "False"], fresh.stderr
        for broken in ("not json", json.dumps({"key": "another lm-eval",
                                               "entries": {"x": ["TASK", None, []]}})):
            kept.write_text(broken)
            task_index.cache_clear()
            assert task_index() == built
        assert manager_for(["arc_easy"]) is not task_manager()
        assert manager_for(["mmlu"]) is task_manager()  # a group: the whole index
        with dataset_source(LM / "ai2_arc"):
            alone = manager_for(["arc_easy"]).load(["arc_easy"])["tasks"]["arc_easy"]
            whole = task_manager().load(["arc_easy"])["tasks"]["arc_easy"]
        docs = list(alone.test_docs())
        assert docs == list(whole.test_docs()) and len(docs) == 6
        assert [alone.doc_to_text(d) for d in docs] == [whole.doc_to_text(d) for d in docs]
    finally:
        task_index.cache_clear()


def test_one_source_layout_for_render_and_harness(tmp_path):
    """Issue 53: harness --source took a folder of datasets (ai2_arc/ above ARC-Easy/), and
    render lm-eval:TASK --source only the dataset's own folder. Both take either now."""
    pages = []
    for number, source in enumerate((LM, LM / "ai2_arc", LM / "ai2_arc" / "ARC-Easy")):
        out = tmp_path / f"r{number}"
        result = run("render", "lm-eval:arc_easy", "--source", source, "--limit", 2,
                     "--out", out)
        assert result.exit_code == 0, result.output
        pages.append([(out / e["path"]).read_bytes() for row in
                      typed_rows(out) for e in row["images"]])
        written = run("harness", "lm-eval", "arc_easy", "--recipe", "readbench", "--source",
                      source, "--out", tmp_path / f"h{number}")
        assert written.exit_code == 0, written.output
    assert pages[0] == pages[1] == pages[2]


def test_a_few_shot_split_too_short_is_one_line(tmp_path):
    import shutil

    import pyarrow.parquet as pq

    copy = tmp_path / "gsm8k" / "main"
    shutil.copytree(LM / "gsm8k" / "main", copy)
    train = next(copy.glob("train-*.parquet"))
    pq.write_table(pq.read_table(train).slice(0, 2), train)
    result = run("render", "lm-eval:gsm8k", "--source", tmp_path, "--limit", 1, "--out",
                 tmp_path / "out")
    assert result.exit_code != 0
    assert result.output == ("Error: lm-eval task gsm8k: its 5 few-shot example(s) are drawn "
                             "from split 'train', which has 2 row(s) here; it needs 5 (a local "
                             "copy with that split whole)\n")
