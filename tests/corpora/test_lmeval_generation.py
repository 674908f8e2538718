"""lm-eval generation tasks, asked and scored as lm-eval asks and scores them: the text twin
is the task's own few-shot prompt (whose examples show the form its filters read), the image
prompt the same with the drawn question in the image, and every reply's score, filter by
filter, is what lm-eval's own task objects give on the same reply (cut where the task's stop
sequences cut it), on five tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

from mmconvert.scoring.spec import score_row  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.test_cli import run  # noqa: E402
from tests.typed import typed_rows  # noqa: E402

LM = FIXTURES / "lm-eval"


def gsm8k_replies(doc):
    number = doc["answer"].split("####")[-1].strip()
    return [doc["answer"], f"Let me see.\n#### {number}", "#### 999",
            f"It is {number}.", "I do not know.",
            f"#### {number}\n\nQuestion: and then? Answer: #### 1"]


def alias_replies(answers):
    return [answers[0], f" {answers[0].upper()}.", f"The answer is {answers[0]}", "Nope",
            f"{answers[0]}\nmore text"]


TASKS = {
    "gsm8k": (LM / "gsm8k", gsm8k_replies),
    "nq_open": (LM / "nq_open", lambda doc: alias_replies(doc["answer"])),
    "triviaqa": (LM / "trivia_qa", lambda doc: alias_replies(doc["answer"]["aliases"])),
    "bbh_fewshot_boolean_expressions": (LM / "bbh", lambda doc: [
        doc["target"], f" {doc['target']}", "True" if doc["target"] == "False" else "False",
        "It depends.", f"{doc['target']}\n\nQ: next"]),
    "mmlu_pro_math": (LM / "mmlu-pro", lambda doc: [
        f"Let me think... the answer is ({doc['answer']}).", "the answer is (J).",
        f"I would pick {doc['answer']}", f"The answer is ({doc['answer']})"]),
}


def lm_eval_own(task, doc, reply: str) -> dict[str, float]:
    """lm-eval's own filters and process_results on ``reply``, as its task scores a response
    that the server stopped at the task's stop sequences."""
    from lm_eval.api.instance import Instance

    until = (task.config.generation_kwargs or {}).get("until") or []
    for stop in [until] if isinstance(until, str) else until:
        reply = reply.split(stop)[0]
    request = Instance(request_type="generate_until", doc=doc, arguments=("", {}), idx=0)
    request.resps = [reply]
    for pipeline in task._filters:
        pipeline.apply([request])
    return {f"{name}/{metric}": float(value)
            for name, kept in request.filtered_resps.items()
            for metric, value in task.process_results(doc, [kept]).items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_reply_scores_what_lm_eval_s_own_objects_give(name, tmp_path):
    from mmconvert.corpora.lmeval import dataset_source, task_manager

    source, replies = TASKS[name]
    out = tmp_path / "run"
    result = run("render", f"lm-eval:{name}", "--source", source, "--limit", 4, "--out", out)
    assert result.exit_code == 0, result.output
    rows = typed_rows(out)
    with dataset_source(source):
        task = task_manager().load([name])["tasks"][name]
    split = rows[0]["metadata"]["lm_eval"]["split"]
    docs = list({task.config.test_split: task.test_docs,
                 task.config.validation_split: task.validation_docs}[split]())
    shots = task.config.num_fewshot or 0
    # lm-eval builds every doc's context in order, after seeding the few-shot sampler
    task.set_fewshot_seed(seed=1234)
    contexts = [task.fewshot_context(doc, num_fewshot=shots) for doc in docs]
    compared = 0
    for row in rows:
        meta = row["metadata"]["lm_eval"]
        doc = docs[meta["doc"]]
        # the text twin is lm-eval's own prompt; the image prompt the same, the question drawn
        assert row["text_prompt"] == contexts[meta["doc"]]
        assert row["prompt"].endswith("(see the image)" + row["text_prompt"].split(
            row["question"].strip())[-1])
        assert meta["num_fewshot"] == shots and meta["primary"][0] == meta["filters"][0]
        for reply in replies(doc):
            ours = score_row(row, reply)
            theirs = lm_eval_own(task, doc, reply)
            assert ours.extra["lm_eval"] == theirs, (reply, ours.extra, theirs)
            assert ours.value == theirs["/".join(meta["primary"])]
            compared += 1
    assert compared >= 12


@pytest.mark.slow
def test_an_exports_own_scorer_gives_lm_eval_s_own_scores_from_its_folder(tmp_path):
    """An export of an lm-eval generation task scores each reply with the copies written into
    it (``score.py``, ``mmconvert_answers.py`` and the ``lm_eval_scoring.py`` it loads from
    beside itself), and each score is what lm-eval's own task objects give."""
    import importlib.util
    import json

    from mmconvert.corpora.lmeval import dataset_source, task_manager

    out = tmp_path / "run"
    assert run("render", "lm-eval:gsm8k", "--source", LM / "gsm8k", "--limit", 2, "--out",
               out).exit_code == 0
    export = tmp_path / "export"
    result = run("export", out, "--format", "jsonl", "--out", export)
    assert result.exit_code == 0, result.output
    loaded = importlib.util.spec_from_file_location("export_score", export / "score.py")
    tool = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(tool)
    with dataset_source(LM / "gsm8k"):
        task = task_manager().load(["gsm8k"])["tasks"]["gsm8k"]
    docs = list(task.test_docs())
    rows = typed_rows(out)
    compared = 0
    for turn in range(len(gsm8k_replies(docs[0]))):
        replies = {row["id"]: gsm8k_replies(docs[row["metadata"]["lm_eval"]["doc"]])[turn]
                   for row in rows}
        predictions = tmp_path / f"predictions-{turn}.jsonl"
        predictions.write_text("".join(json.dumps({"id": key, "response": reply}) + "\n"
                                       for key, reply in replies.items()))
        scored = tool.score_file(str(predictions))
        for row in rows:
            theirs = lm_eval_own(task, docs[row["metadata"]["lm_eval"]["doc"]],
                                 replies[row["id"]])
            assert scored[row["id"]]["extra"]["lm_eval"] == theirs
            assert scored[row["id"]]["score"] == theirs["strict-match/exact_match"]
            compared += 1
    assert compared == 12
    beside = tool.answers()._beside("lm_eval_scoring")
    assert Path(beside.__file__).parent == export, beside.__file__


@pytest.mark.slow
def test_gsm8k_every_filter_in_results_and_the_primary_named(tmp_path):
    """results.json reports strict-match and flexible-extract per condition and names the
    primary; a reply in the task's own form ('#### 31') scores on strict-match."""
    pytest.importorskip("inspect_ai")
    import json

    from tests.openai_server import FakeOpenAI

    out = tmp_path / "run"
    assert run("render", "lm-eval:gsm8k", "--source", LM / "gsm8k", "--limit", 2, "--out",
               out).exit_code == 0
    rows = typed_rows(out)
    gold = {row["text_prompt"]: row["answer"][0].split("####")[-1].strip() for row in rows}

    def answer(body):
        content = body["messages"][-1]["content"]
        text = content if isinstance(content, str) else " ".join(
            p["text"] for p in content if p.get("type") == "text")
        if text in gold:  # text: right, in the task's form
            return f"Step by step.\n#### {gold[text]}"
        return "The total is 7 apples."  # image: no '####', and the wrong number

    fake = FakeOpenAI(answer=answer, models=("reader",))
    url = fake.start()
    try:
        result = run("eval", out, "--model", "reader", "--base-url", url, "--out",
                     tmp_path / "ev")
    finally:
        fake.stop()
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "ev" / "results.json").read_text())
    lm = results["scoring"]["lm_eval"]
    assert lm["primary"] == "strict-match/exact_match"
    assert lm["text"] == {"strict-match/exact_match": 100.0,
                          "flexible-extract/exact_match": 100.0}
    assert lm["image"] == {"strict-match/exact_match": 0.0,
                           "flexible-extract/exact_match": 0.0}
    assert results["overall"]["text"]["score"] == 100.0
    assert results["scoring"]["by_subset"] == {"gsm8k": "lm-eval:gsm8k"}
